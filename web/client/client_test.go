package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/web"
	"github.com/sluice-dev/sluice/web/client"
	"github.com/sluice-dev/sluice/web/client/clienttest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve runs a real sluice (web.New over an orchestrator, the cache and
// the simulated upstream) until the test ends, and returns its URL.
func serve(t *testing.T, oc orchestrator.Config, wc web.Config, sim upstream.SimConfig) string {
	t.Helper()
	if sim.TTFTMedian == 0 {
		sim.TTFTMedian = 10 * time.Millisecond
	}
	if sim.GapMedian == 0 {
		sim.GapMedian = 3 * time.Millisecond
	}
	sim.TTFTSigma, sim.GapSigma = -1, -1
	if oc.DefaultModel == "" {
		oc.DefaultModel = "sim"
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := cache.New(cache.Config{})
	orch, err := orchestrator.New(oc, orchestrator.Deps{Upstream: upstream.NewSim(sim), Cache: c, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	wc.Logger = log
	srv := httptest.NewServer(web.New(wc, orch, c))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := orch.Shutdown(ctx); err != nil {
			t.Errorf("orchestrator shutdown: %v", err)
		}
		srv.Close()
	})
	return srv.URL
}

func newClient(t *testing.T, server, apiKey string) *client.Client {
	t.Helper()
	c, err := client.New(server, apiKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// collect is a FollowOptions that records the events and the text.
type collect struct {
	events []client.Event
	text   strings.Builder
}

func (c *collect) onEvent(ev client.Event) {
	c.events = append(c.events, ev)
	if ev.Type == "delta" {
		var d client.Delta
		if err := json.Unmarshal(ev.Data, &d); err == nil {
			c.text.WriteString(d.Text)
		}
	}
}

func (c *collect) types() []string {
	var out []string
	for _, ev := range c.events {
		if len(out) == 0 || out[len(out)-1] != string(ev.Type) {
			out = append(out, string(ev.Type))
		}
	}
	return out
}

func TestTaskCreateFollowPoll(t *testing.T) {
	srv := serve(t, orchestrator.Config{}, web.Config{}, upstream.SimConfig{})
	c := newClient(t, srv, "")
	ctx := testContext(t)

	created, h, err := c.CreateTask(ctx, client.TaskRequest{Prompt: "how many SKU-10234 are left in zone A?", Namespace: "client-test"})
	if err != nil {
		t.Fatal(err)
	}
	if created.ID == "" || created.EventsURL != "/v1/tasks/"+created.ID+"/events" || h.Get("X-Cache") != "MISS" {
		t.Fatalf("created %+v, X-Cache %q", created, h.Get("X-Cache"))
	}
	var got collect
	res, err := c.Follow(ctx, created.EventsURL, client.FollowOptions{OnEvent: got.onEvent})
	if err != nil {
		t.Fatal(err)
	}
	if ts := got.types(); strings.Join(ts, " ") != "meta delta done" {
		t.Errorf("event types %v, want meta, deltas, done", ts)
	}
	var end client.End
	if err := json.Unmarshal(res.End.Data, &end); err != nil || res.End.Type != "done" || end.FinishReason != "stop" || end.FirstTokenMs == nil {
		t.Errorf("end %s %s: %+v %v", res.End.Type, res.End.Data, end, err)
	}
	var meta client.Meta
	if err := json.Unmarshal(got.events[0].Data, &meta); err != nil || meta.ID != created.ID || meta.Namespace != "client-test" {
		t.Errorf("meta %+v %v", meta, err)
	}
	v, err := c.Task(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != orchestrator.StatusDone || v.Text == "" || v.Text != got.text.String() || res.LastSeq != v.Chunks || end.Chunks != v.Chunks {
		t.Errorf("task %+v, followed %q (last seq %d)", v, got.text.String(), res.LastSeq)
	}

	// Following from a delta on gives the rest only.
	var rest collect
	if _, err := c.Follow(ctx, created.EventsURL, client.FollowOptions{After: 2, OnEvent: rest.onEvent}); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(v.Text, rest.text.String()) || len(rest.text.String()) >= len(v.Text) || rest.events[1].ID != "3" {
		t.Errorf("after 2: %q of %q (first delta id %q)", rest.text.String(), v.Text, rest.events[1].ID)
	}

	// The answer is cached now; the cache explains it and counts it.
	x, err := c.CacheLookup(ctx, "how many SKU-10234 are left in zone A?", "client-test", "")
	if err != nil || x.Decision != "hit" || x.Kind != "exact" {
		t.Errorf("lookup %+v %v", x, err)
	}
	st, err := c.CacheStats(ctx)
	if err != nil || len(st.Namespaces) != 1 || st.Namespaces[0].Name != "client-test" || st.Namespaces[0].Entries != 1 || st.Threshold <= 0 {
		t.Errorf("stats %+v %v", st, err)
	}
	b, err := c.Budget(ctx)
	acq, rel := b.Totals()
	if err != nil || len(b.Upstreams) != 1 || b.Limit == 0 || b.InFlight != 0 || acq != 1 || rel != 1 || b.Upstreams[0].Breaker == "" {
		t.Errorf("budget %+v %v", b, err)
	}
}

func TestAPIErrorsAreTyped(t *testing.T) {
	// One slot, no queue, and a first token that takes long.
	srv := serve(t, orchestrator.Config{Budget: 1, QueueLimit: -1, TTFTTimeout: 30 * time.Second},
		web.Config{APIKeys: map[string]string{"k1": "tenant1"}}, upstream.SimConfig{TTFTMedian: 20 * time.Second})
	ctx := testContext(t)

	var ae *client.APIError
	_, _, err := newClient(t, srv, "").CreateTask(ctx, client.TaskRequest{Prompt: "no key"})
	if !errors.As(err, &ae) || ae.Status != http.StatusUnauthorized || ae.Code != "unauthorized" || ae.Message == "" {
		t.Errorf("no key: %#v", err)
	}

	c := newClient(t, srv, "k1")
	_, err = c.Task(ctx, "00000000-0000-0000-0000-000000000000")
	if !errors.As(err, &ae) || ae.Status != http.StatusNotFound || ae.Code != "not_found" || !strings.HasPrefix(err.Error(), "not_found: ") {
		t.Errorf("unknown task: %#v", err)
	}
	_, _, err = c.CreateTask(ctx, client.TaskRequest{Prompt: "q", Namespace: "a b"})
	if !errors.As(err, &ae) || ae.Status != http.StatusBadRequest || ae.Code != "invalid_request" || !strings.Contains(ae.Message, cache.NamespacePattern) {
		t.Errorf("bad namespace: %#v", err)
	}

	held, _, err := c.CreateTask(ctx, client.TaskRequest{Prompt: "hold the slot", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.CreateTask(ctx, client.TaskRequest{Prompt: "one more", NoCache: true})
	if !errors.As(err, &ae) || ae.Status != http.StatusServiceUnavailable || ae.Code != "overloaded" || ae.RetryAfter < time.Second ||
		!strings.Contains(err.Error(), "(retry after ") {
		t.Errorf("overloaded: %#v", err)
	}
	v, err := c.Cancel(ctx, held.ID)
	if err != nil || v.Status != orchestrator.StatusCancelled {
		t.Errorf("cancel: %+v %v", v, err)
	}
}

func TestAPIErrorOfAnotherServer(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "bad gateway from a proxy", http.StatusBadGateway)
	}))
	defer ts.Close()
	_, err := newClient(t, ts.URL, "").Budget(testContext(t))
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Status != http.StatusBadGateway || ae.Code != "" || ae.Message != "bad gateway from a proxy" ||
		err.Error() != "HTTP 502: bad gateway from a proxy" {
		t.Errorf("%#v", err)
	}
	if _, err := client.New("ftp://x", "", nil); err == nil {
		t.Error("ftp URL accepted")
	}
}

func TestFollowResumesWithLastEventID(t *testing.T) {
	for _, clean := range []bool{false, true} {
		t.Run(map[bool]string{false: "dropped", true: "closed"}[clean], func(t *testing.T) {
			srv := serve(t, orchestrator.Config{}, web.Config{}, upstream.SimConfig{GapMedian: 5 * time.Millisecond})
			ctx := testContext(t)
			created, _, err := newClient(t, srv, "").CreateTask(ctx, client.TaskRequest{Prompt: "resume me please", NoCache: true})
			if err != nil {
				t.Fatal(err)
			}
			p := &clienttest.CutProxy{Target: srv, After: 3, Clean: clean}
			ps := httptest.NewServer(p)
			defer ps.Close()
			c := newClient(t, ps.URL, "")
			var got collect
			type resume struct {
				after int
				err   error
			}
			var resumes []resume
			res, err := c.Follow(ctx, created.EventsURL, client.FollowOptions{
				OnEvent:  got.onEvent,
				OnResume: func(after int, _ time.Duration, err error) { resumes = append(resumes, resume{after, err}) },
			})
			if err != nil {
				t.Fatal(err)
			}
			v, err := c.Task(ctx, created.ID)
			if err != nil {
				t.Fatal(err)
			}
			if got.text.String() != v.Text || res.End.Type != "done" || v.Status != orchestrator.StatusDone || res.Reconnects != 1 {
				t.Errorf("followed %q (%s, %d reconnects)\ntask     %q (%s)", got.text.String(), res.End.Type, res.Reconnects, v.Text, v.Status)
			}
			// The meta event came once, though every connection starts with it.
			if n := strings.Count(strings.Join(got.types(), " "), "meta"); n != 1 || got.events[0].Type != "meta" {
				t.Errorf("event types %v", got.types())
			}
			if ids := p.LastEventIDs(); len(ids) != 2 || ids[0] != "" || ids[1] != "3" {
				t.Errorf("Last-Event-ID per connection %q, want [\"\" \"3\"]", ids)
			}
			if len(resumes) != 1 || resumes[0].after != 3 || (resumes[0].err == nil) != clean {
				t.Errorf("resumes %+v", resumes)
			}
		})
	}
}

func TestFollowGivesUp(t *testing.T) {
	// A server that always ends the stream cleanly before its end.
	var conns atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conns.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "event: meta\ndata: {}\n\n")
	}))
	defer ts.Close()
	_, err := newClient(t, ts.URL, "").Follow(testContext(t), "/v1/tasks/x/events", client.FollowOptions{Tries: 2, MaxBackoff: time.Millisecond})
	if !errors.Is(err, client.ErrKeptClosing) || conns.Load() != 3 {
		t.Errorf("err %v after %d connections, want ErrKeptClosing after 3", err, conns.Load())
	}

	// An unknown task is no stream to resume.
	srv := serve(t, orchestrator.Config{}, web.Config{}, upstream.SimConfig{})
	var ae *client.APIError
	_, err = newClient(t, srv, "").Follow(testContext(t), client.TaskPath("00000000-0000-0000-0000-000000000000")+"/events", client.FollowOptions{})
	if !errors.As(err, &ae) || ae.Code != "not_found" {
		t.Errorf("unknown task: %#v", err)
	}

	// The caller's end ends it with the caller's error.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := newClient(t, srv, "").Follow(ctx, "/v1/tasks/x/events", client.FollowOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestEventReaderReadsPOSTStreams(t *testing.T) {
	srv := serve(t, orchestrator.Config{}, web.Config{}, upstream.SimConfig{})
	c := newClient(t, srv, "")
	ctx := testContext(t)

	resp, err := c.OpenStream(ctx, http.MethodPost, "/v1/stream", client.TaskRequest{Prompt: "stream this", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	var got collect
	er := client.NewEventReader(resp.Body)
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got.onEvent(ev)
	}
	resp.Body.Close()
	if ts := got.types(); strings.Join(ts, " ") != "meta delta done" || got.text.String() == "" {
		t.Errorf("/v1/stream: types %v text %q", ts, got.text.String())
	}

	chat := map[string]any{"messages": []client.Message{{Role: "user", Content: "stream this"}}, "stream": true}
	resp, err = c.OpenStream(ctx, http.MethodPost, "/v1/chat/completions", chat)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var text strings.Builder
	er = client.NewEventReader(resp.Body)
	for {
		ev, err := er.Next()
		if err != nil {
			t.Fatalf("chat stream ended before [DONE]: %v", err)
		}
		if string(ev.Data) == "[DONE]" {
			break
		}
		var ch struct {
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if err := json.Unmarshal(ev.Data, &ch); err != nil {
			t.Fatalf("chunk %q: %v", ev.Data, err)
		}
		for _, c := range ch.Choices {
			text.WriteString(c.Delta.Content)
		}
	}
	if text.String() != got.text.String() {
		t.Errorf("chat text %q, /v1/stream text %q", text.String(), got.text.String())
	}
}
