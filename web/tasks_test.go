package web_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// tol is the scheduling tolerance for "a timeout fires on time" on a
// shared two-core machine running the race detector.
const tol = 400 * time.Millisecond

func chunks(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d ", prefix, i)
	}
	return out
}

func TestStreamRelaysExactTextInOrder(t *testing.T) {
	e := newEnv(t, envOpts{})
	want := []string{"Hello", ", wörld", " — 你好", "\nline two", " data: not a field", "."}
	e.Up.SetScript(upstreamtest.Script{Chunks: want, Gap: time.Millisecond})
	resp, r := e.stream(map[string]any{"prompt": "say hello", "nocache": true})
	if got := strings.Join(want, ""); r.Text != got {
		t.Fatalf("text %q, want %q", r.Text, got)
	}
	if r.Terminal.Type != "done" {
		t.Fatalf("terminal %+v", r.Terminal)
	}
	id := resp.Header.Get("X-Task-Id")
	if id == "" || r.Meta["id"] != id {
		t.Fatalf("X-Task-Id %q, meta %v", id, r.Meta)
	}
	// Delta ids are 1..N without a gap.
	n := 0
	for _, ev := range r.Events {
		if ev.Type == "delta" {
			n++
			if ev.ID != strconv.Itoa(n) {
				t.Fatalf("delta %d has id %q", n, ev.ID)
			}
		}
	}
	v := e.waitFinal(id)
	if v.Status != orchestrator.StatusDone || v.FinishReason != "stop" || v.Text != r.Text || v.Chunks != len(want) {
		t.Fatalf("task view %+v", v)
	}
	if v.FirstTokenMs == nil || v.TotalMs == nil {
		t.Fatalf("timings missing: %+v", v)
	}
	if resp.Header.Get("X-Cache") != "BYPASS" {
		t.Fatalf("X-Cache %q for nocache", resp.Header.Get("X-Cache"))
	}
	e.waitIdle()
}

func TestAsyncTaskPollAndEvents(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks(20, "w"), Gap: 2 * time.Millisecond})
	var created struct {
		ID, Status, URL string
		EventsURL       string `json:"events_url"`
	}
	st, hdr := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "async please"}, &created)
	if st != http.StatusAccepted || created.ID == "" || hdr.Get("Location") != created.URL || created.EventsURL != created.URL+"/events" {
		t.Fatalf("POST /v1/tasks: %d %+v %v", st, created, hdr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := e.do(ctx, http.MethodGet, created.EventsURL, nil)
	defer resp.Body.Close()
	r := summarise(t, readEvents(t, resp.Body))
	v := e.waitFinal(created.ID)
	if r.Text != strings.Join(chunks(20, "w"), "") || v.Text != r.Text || v.Status != orchestrator.StatusDone {
		t.Fatalf("events %q, task %+v", r.Text, v)
	}
}

// TestBudgetNeverExceeded fires more interactive requests than the budget
// and checks that the upstream never sees more than the budget at once,
// that the rest are refused with 503 overloaded + Retry-After before any
// byte of a stream, and that every slot comes back.
func TestBudgetNeverExceeded(t *testing.T) {
	const budget = 3
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: budget}})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks(10, "c"), Gap: 20 * time.Millisecond})
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[int]int{}
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": fmt.Sprint("q", i), "nocache": true})
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			mu.Lock()
			codes[resp.StatusCode]++
			mu.Unlock()
			if resp.StatusCode == http.StatusServiceUnavailable {
				if resp.Header.Get("Retry-After") == "" || !strings.Contains(string(body), `"code":"overloaded"`) ||
					resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("refusal: %v %s", resp.Header, body)
				}
			}
		}()
	}
	wg.Wait()
	if codes[200] == 0 || codes[503] == 0 || codes[200]+codes[503] != 20 {
		t.Fatalf("status counts %v", codes)
	}
	if m := e.Up.MaxInFlight(); m > budget {
		t.Fatalf("upstream saw %d concurrent streams, budget %d", m, budget)
	}
	e.waitIdle()
	if st := e.Orch.Gates()[0].Stats(); st.RejectedTotal != int64(codes[503]) {
		t.Fatalf("rejected_total %d, refusals %d", st.RejectedTotal, codes[503])
	}
}

func TestInteractiveWaitsFIFOForBudget(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1, AcquireTimeout: 20 * time.Second}})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks(5, "x"), Gap: 30 * time.Millisecond})
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": fmt.Sprint("wait", i), "nocache": true})
			defer resp.Body.Close()
			if resp.StatusCode != 200 {
				errs <- fmt.Errorf("request %d: status %d", i, resp.StatusCode)
				return
			}
			io.Copy(io.Discard, resp.Body)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if e.Up.MaxInFlight() != 1 {
		t.Fatalf("max in flight %d", e.Up.MaxInFlight())
	}
	e.waitIdle()
}

func TestAsyncQueueBoundAndCancelFreesSlot(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1, QueueLimit: 2}})
	e.Up.SetHandler(func(req upstreamtest.ChatRequest, n int) upstreamtest.Script {
		if req.Prompt() == "stall" {
			return upstreamtest.Script{StallAfterHeaders: true}
		}
		return upstreamtest.Script{}
	})
	type created struct{ ID, Status string }
	var first, q1, q2 created
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "stall"}, &first)
	if first.Status != "running" {
		t.Fatalf("first task %+v", first)
	}
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "q1"}, &q1)
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "q2"}, &q2)
	if q1.Status != "queued" || q2.Status != "queued" {
		t.Fatalf("queued tasks %+v %+v", q1, q2)
	}
	var refusal struct{ Error struct{ Code string } }
	st, hdr := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "q3"}, &refusal)
	if st != 503 || refusal.Error.Code != "overloaded" || hdr.Get("Retry-After") == "" {
		t.Fatalf("queue full: %d %+v", st, refusal)
	}
	var budget struct {
		InFlight int `json:"in_flight"`
		Queued   int
	}
	e.doJSON(http.MethodGet, "/v1/budget", nil, &budget)
	if budget.InFlight != 1 || budget.Queued != 2 {
		t.Fatalf("budget %+v", budget)
	}
	// DELETE frees the slot at once: the queued tasks then run to the end.
	var v orchestrator.View
	if st, _ := e.doJSON(http.MethodDelete, "/v1/tasks/"+first.ID, nil, &v); st != 200 || v.Status != orchestrator.StatusCancelled || v.FinishReason != "cancelled" {
		t.Fatalf("DELETE: %d %+v", st, v)
	}
	for _, id := range []string{q1.ID, q2.ID} {
		if v := e.waitFinal(id); v.Status != orchestrator.StatusDone {
			t.Fatalf("queued task ended %+v", v)
		}
	}
	e.waitIdle()
	if err := e.Up.WaitIdle(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("the cancelled upstream call is still open: %v", err)
	}
}

func ctxT(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestTimeouts checks the watchdogs end to end: what a client of the SSE
// stream reads when the first token or the next chunk does not come. The
// other ways an upstream can stall, and the total cap, are cases of
// orchestrator's TestTimeouts.
func TestTimeouts(t *testing.T) {
	const ttft, idle, total = 300 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond
	cases := []struct {
		name       string
		script     upstreamtest.Script
		status     orchestrator.Status
		reason     string
		event      string
		text       string
		firesAfter time.Duration // from acceptance
	}{
		{"keep-alives only", upstreamtest.Script{StallAfterHeaders: true, KeepAlives: true}, orchestrator.StatusFailed, "ttft_timeout", "error", "", ttft},
		{"stall mid-stream", upstreamtest.Script{Chunks: []string{"a", "b", "c", "d"}, StallAfterChunks: 2, KeepAlives: true}, orchestrator.StatusPartial, "idle_timeout", "partial", "ab", idle},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{Orch: orchestrator.Config{TTFTTimeout: ttft, IdleTimeout: idle, TotalTimeout: total}})
			e.Up.SetScript(tc.script)
			start := time.Now()
			resp, r := e.stream(map[string]any{"prompt": "t", "nocache": true})
			took := time.Since(start)
			if r.Terminal.Type != tc.event {
				t.Fatalf("terminal %+v", r.Terminal)
			}
			v := e.waitFinal(resp.Header.Get("X-Task-Id"))
			if v.Status != tc.status || v.FinishReason != tc.reason {
				t.Fatalf("task %+v", v)
			}
			if tc.text != "" && v.Text != tc.text {
				t.Fatalf("text %q, want %q", v.Text, tc.text)
			}
			if tc.status == orchestrator.StatusPartial {
				if !strings.Contains(r.Terminal.Data, `"notice":"The answer was cut short`) || !strings.Contains(r.Terminal.Data, `"code":"`+tc.reason+`"`) || v.Text == "" || v.Text != r.Text {
					t.Fatalf("partial without notice or text: %+v / %q", r.Terminal, v.Text)
				}
			} else if v.Error == nil || v.Error.Code != "ttft_timeout" {
				t.Fatalf("error %+v", v.Error)
			}
			// On time: not before its bound, not much after.
			lo := tc.firesAfter
			if tc.reason == "idle_timeout" {
				lo = idle // measured from the last chunk, which came at once
			}
			if took < lo || took > lo+tol {
				t.Fatalf("ended after %v, want %v (+%v)", took, lo, tol)
			}
			e.waitIdle()
			if err := e.Up.WaitIdle(ctxT(t, 5*time.Second)); err != nil {
				t.Fatalf("upstream call not cancelled: %v", err)
			}
		})
	}
}

func TestRequestDeadlineIsClampedToServerCap(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{TotalTimeout: 600 * time.Millisecond}})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks(100, "d"), Gap: 50 * time.Millisecond})
	start := time.Now()
	_, r := e.stream(map[string]any{"prompt": "long", "nocache": true, "deadline_ms": 60000})
	if took := time.Since(start); r.Terminal.Type != "partial" || took > 600*time.Millisecond+tol {
		t.Fatalf("deadline_ms above the cap must be clamped: %v %+v", took, r.Terminal)
	}
	start = time.Now()
	_, r = e.stream(map[string]any{"prompt": "short", "nocache": true, "deadline_ms": 200})
	if took := time.Since(start); r.Terminal.Type != "partial" || took > 200*time.Millisecond+tol {
		t.Fatalf("deadline_ms below the cap must apply: %v %+v", took, r.Terminal)
	}
}

// TestUpstreamFailures checks an upstream failure and a retry end to end;
// what is retried and what is not is orchestrator's TestUpstreamFailures.
func TestUpstreamFailures(t *testing.T) {
	cases := []struct {
		name     string
		script   func(n int) upstreamtest.Script
		status   orchestrator.Status
		reason   string
		text     string
		requests int // upstream requests made: 2 means one retry
		retries  int
	}{
		{"dropped mid-stream: partial, not retried", func(int) upstreamtest.Script {
			return upstreamtest.Script{Chunks: []string{"a", "b", "c"}, DropAfterChunks: 2}
		}, orchestrator.StatusPartial, "upstream_error", "ab", 1, 0},
		{"503 once, then ok: one retry", func(n int) upstreamtest.Script {
			if n == 1 {
				return upstreamtest.Script{Status: 503}
			}
			return upstreamtest.Script{Chunks: []string{"ok"}}
		}, orchestrator.StatusDone, "stop", "ok", 2, 1},
		{"502 twice: at most one retry", func(int) upstreamtest.Script {
			return upstreamtest.Script{Status: 502}
		}, orchestrator.StatusFailed, "upstream_error", "", 2, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{Orch: orchestrator.Config{RetryBackoff: 20 * time.Millisecond, TotalTimeout: 10 * time.Second}})
			e.Up.SetHandler(func(_ upstreamtest.ChatRequest, n int) upstreamtest.Script { return tc.script(n) })
			resp, r := e.stream(map[string]any{"prompt": "f", "nocache": true})
			v := e.waitFinal(resp.Header.Get("X-Task-Id"))
			if v.Status != tc.status || v.FinishReason != tc.reason || v.Text != tc.text || v.Retries != tc.retries {
				t.Fatalf("task %+v", v)
			}
			if e.Up.Requests() != tc.requests {
				t.Fatalf("upstream requests %d, want %d", e.Up.Requests(), tc.requests)
			}
			if r.Text != v.Text {
				t.Fatalf("stream text %q != task text %q", r.Text, v.Text)
			}
			if tc.status == orchestrator.StatusFailed && (r.Terminal.Type != "error" || v.Error == nil || v.Error.Code != "upstream_error") {
				t.Fatalf("failure shape: %+v %+v", r.Terminal, v.Error)
			}
			e.waitIdle()
		})
	}
}

func TestCircuitBreaker(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{BreakerMinCalls: 2, BreakerCoolDown: 500 * time.Millisecond, MaxRetries: -1}})
	e.Up.SetScript(upstreamtest.Script{Status: 500})
	for range 2 {
		_, r := e.stream(map[string]any{"prompt": "b", "nocache": true})
		if r.Terminal.Type != "error" {
			t.Fatalf("terminal %+v", r.Terminal)
		}
	}
	var body struct{ Error struct{ Code string } }
	st, hdr := e.doJSON(http.MethodPost, "/v1/stream", map[string]any{"prompt": "b", "nocache": true}, &body)
	if st != 503 || body.Error.Code != "upstream_unavailable" || hdr.Get("Retry-After") == "" {
		t.Fatalf("open circuit: %d %+v %v", st, body, hdr)
	}
	if e.Up.Requests() != 2 {
		t.Fatalf("an open circuit must not call the upstream: %d requests", e.Up.Requests())
	}
	if st, _ := e.doJSON(http.MethodGet, "/readyz", nil, nil); st != 503 {
		t.Fatalf("/readyz %d with the only circuit open", st)
	}
	if st, _ := e.doJSON(http.MethodGet, "/healthz", nil, nil); st != 200 {
		t.Fatalf("/healthz %d", st)
	}
	// After the cool-down one probe goes through; its success closes it.
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"back"}})
	deadline := time.Now().Add(5 * time.Second)
	for e.Orch.Breakers()[0].State() == 1 { // open
		if time.Now().After(deadline) {
			t.Fatal("breaker never half-opened")
		}
		time.Sleep(10 * time.Millisecond) // waiting out a cool-down is waiting for the clock
	}
	_, r := e.stream(map[string]any{"prompt": "b", "nocache": true})
	if r.Terminal.Type != "done" || r.Text != "back" {
		t.Fatalf("probe: %+v", r)
	}
	if s := e.Orch.Breakers()[0].State().String(); s != "closed" {
		t.Fatalf("breaker %s after a good probe", s)
	}
	if st, _ := e.doJSON(http.MethodGet, "/readyz", nil, nil); st != 200 {
		t.Fatalf("/readyz %d after recovery", st)
	}
}

func TestClientDisconnect(t *testing.T) {
	for _, detach := range []bool{true, false} {
		t.Run(fmt.Sprint("detach=", detach), func(t *testing.T) {
			e := newEnv(t, envOpts{})
			e.Up.SetScript(upstreamtest.Script{Chunks: chunks(10, "z"), Gap: 30 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			body := map[string]any{"prompt": "leave", "nocache": true}
			if !detach {
				body["detach"] = false
			}
			resp := e.do(ctx, http.MethodPost, "/v1/stream", body)
			id := resp.Header.Get("X-Task-Id")
			br := bufio.NewReader(resp.Body)
			for { // read until the first delta, then leave
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if strings.HasPrefix(line, "event: delta") {
					break
				}
			}
			cancel()
			resp.Body.Close()
			v := e.waitFinal(id)
			if detach && (v.Status != orchestrator.StatusDone || v.Text != strings.Join(chunks(10, "z"), "")) {
				t.Fatalf("a detached task must finish: %+v", v)
			}
			if !detach && v.Status != orchestrator.StatusCancelled {
				t.Fatalf("detach:false must cancel on disconnect: %+v", v)
			}
			e.waitIdle()
		})
	}
}

// TestResumeWithLastEventID drops the connection mid-stream and resumes
// with Last-Event-ID: no delta is repeated and none is lost, while the
// task is still running and after it has finished.
func TestResumeWithLastEventID(t *testing.T) {
	e := newEnv(t, envOpts{})
	want := chunks(60, "r")
	e.Up.SetScript(upstreamtest.Script{Chunks: want, Gap: 5 * time.Millisecond})
	var created struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "resume", "nocache": true}, &created)
	path := "/v1/tasks/" + created.ID + "/events"

	got := ""
	last := "0"
	for round := 0; round < 100; round++ {
		ctx, cancel := context.WithCancel(context.Background())
		resp := e.do(ctx, http.MethodGet, path, nil, "Last-Event-ID", last)
		br := bufio.NewReader(resp.Body)
		deltas, ended := 0, false
		var ev struct{ id, typ string }
		for !ended && deltas < 7 {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			line = strings.TrimRight(line, "\n")
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.typ = line[7:]
			case strings.HasPrefix(line, "data: ") && ev.typ == "delta":
				var d struct{ Text string }
				if err := jsonUnmarshal(line[6:], &d); err != nil {
					t.Fatal(err)
				}
				seq, _ := strconv.Atoi(ev.id)
				prev, _ := strconv.Atoi(last)
				if seq <= prev {
					t.Fatalf("delta %d repeated after Last-Event-ID %s", seq, last)
				}
				got += d.Text
				last = ev.id
				deltas++
			case strings.HasPrefix(line, "data: ") && (ev.typ == "done" || ev.typ == "partial" || ev.typ == "error"):
				ended = true
			case line == "":
				ev = struct{ id, typ string }{}
			}
		}
		cancel()
		resp.Body.Close()
		if ended {
			break
		}
	}
	if got != strings.Join(want, "") {
		t.Fatalf("resumed text differs:\n got %q\nwant %q", got, strings.Join(want, ""))
	}
}

func TestHeartbeatsBeforeFirstToken(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{Conn: stream.ConnConfig{Heartbeat: 50 * time.Millisecond}}})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"late"}, TTFT: 400 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": "hb", "nocache": true})
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	before, _, found := strings.Cut(string(raw), "event: delta")
	if !found {
		t.Fatalf("no delta in %q", raw)
	}
	if n := strings.Count(before, ": ping\n\n"); n < 3 {
		t.Fatalf("%d heartbeats before the first token (400ms at 50ms), want >= 3:\n%s", n, before)
	}
}

// connRecorder records closed connections' stats.
type connRecorder struct {
	mu     sync.Mutex
	closed []stream.ConnStats
	ch     chan stream.ConnStats
}

func (c *connRecorder) ConnOpened()                         {}
func (c *connRecorder) ConnWrote(bytes, events, merged int) {}
func (c *connRecorder) ConnClosed(st stream.ConnStats) {
	c.mu.Lock()
	c.closed = append(c.closed, st)
	c.mu.Unlock()
	select {
	case c.ch <- st:
	default:
	}
}

// TestSlowReaderDoesNotSlowUpstream opens a stream and never reads it
// while the upstream sends far more than the socket buffers hold: the
// task still finishes at the upstream's pace, the stuck connection is
// cut at the slow-reader limit, and a resumed reader gets every byte.
func TestSlowReaderDoesNotSlowUpstream(t *testing.T) {
	rec := &connRecorder{ch: make(chan stream.ConnStats, 8)}
	e := newEnv(t, envOpts{Web: web.Config{
		Conn:         stream.ConnConfig{MaxPendingBytes: 16 << 10, WriteTimeout: 300 * time.Millisecond},
		ConnObserver: rec,
	}, Orch: orchestrator.Config{MaxAnswerBytes: 16 << 20}, SendBuffer: 64 << 10}) // over the 1 MiB default
	big := strings.Repeat("x", 4000)
	want := make([]string, 3000) // 12 MB: far more than the fixed socket buffers
	for i := range want {
		want[i] = fmt.Sprintf("%05d%s", i, big)
	}
	e.Up.SetScript(upstreamtest.Script{Chunks: want})
	var created struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "big", "nocache": true}, &created)

	// The stuck reader: open the events stream and read nothing.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stuck := e.doStuck(ctx, http.MethodGet, "/v1/tasks/"+created.ID+"/events", nil)
	defer stuck.Body.Close()

	v := e.waitFinal(created.ID) // the upstream is never held back
	if v.Status != orchestrator.StatusDone || v.Chunks != len(want) {
		t.Fatalf("task %+v", v.Status)
	}
	select {
	case st := <-rec.ch:
		if st.Reason != stream.CloseSlowConsumer {
			t.Fatalf("stuck connection closed with %v (%v)", st.Reason, st.Err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the stuck connection was never cut")
	}
	// A fresh reader catches up from the transcript (merged deltas).
	rctx, rcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer rcancel()
	resp := e.do(rctx, http.MethodGet, "/v1/tasks/"+created.ID+"/events", nil)
	defer resp.Body.Close()
	r := summarise(t, readEvents(t, resp.Body))
	if r.Text != strings.Join(want, "") {
		t.Fatalf("catch-up text differs (len %d vs %d)", len(r.Text), len(strings.Join(want, "")))
	}
	if r.Deltas >= len(want) {
		t.Fatalf("a reader 12 MB behind must get merged deltas, got %d events for %d deltas", r.Deltas, len(want))
	}
	e.waitIdle()
}

func TestPanicInUpstreamReleasesSlot(t *testing.T) {
	e := newEnv(t, envOpts{Upstream: panicky{}, Orch: orchestrator.Config{MaxRetries: -1}})
	for range 3 {
		resp, r := e.stream(map[string]any{"prompt": "p", "nocache": true})
		if r.Terminal.Type != "error" {
			t.Fatalf("terminal %+v", r.Terminal)
		}
		if v := e.waitFinal(resp.Header.Get("X-Task-Id")); v.Status != orchestrator.StatusFailed {
			t.Fatalf("task %+v", v)
		}
	}
	e.waitIdle()
}

type panicky struct{}

func (panicky) Name() string { return "panicky" }
func (panicky) Stream(context.Context, upstream.Request, chan<- upstream.Chunk) error {
	panic("upstream client bug")
}

func TestShutdownEndsRunningTasks(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"a", "b"}, StallAfterChunks: 1})
	var created struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "s", "nocache": true}, &created)
	task := e.Orch.GetAny(created.ID)
	for task.Transcript().Read(0, 0).Last() == 0 {
		select {
		case <-task.Transcript().Read(0, 0).Changed:
		case <-time.After(5 * time.Second):
			t.Fatal("no first chunk")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.Orch.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	v := task.View()
	if v.Status != orchestrator.StatusPartial || v.Text != "a" {
		t.Fatalf("after shutdown: %+v", v)
	}
	var body struct{ Error struct{ Code string } }
	if st, _ := e.doJSON(http.MethodPost, "/v1/stream", map[string]any{"prompt": "late"}, &body); st != 503 {
		t.Fatalf("after shutdown: %d %+v", st, body)
	}
}

// TestWriteDeadlineDoesNotOutliveTheStream: the slow-reader deadline set
// on a stream's writes must not stay on the keep-alive connection, where
// it would break the next response sent on it.
func TestWriteDeadlineDoesNotOutliveTheStream(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{Conn: stream.ConnConfig{WriteTimeout: 100 * time.Millisecond}}})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"a"}})
	for _, path := range []string{"/v1/stream", "/v1/chat/completions"} {
		body := map[string]any{"prompt": "keep-alive", "nocache": true}
		if path == "/v1/chat/completions" {
			body = map[string]any{"stream": true, "messages": []map[string]string{{"role": "user", "content": "keep-alive"}}, "sluice": map[string]any{"nocache": true}}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp := e.do(ctx, http.MethodPost, path, body)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		time.Sleep(300 * time.Millisecond) // let the stale deadline pass: the clock is the subject here
		// The client reuses the idle connection for the next request (a
		// POST, which the client does not silently retry elsewhere).
		var ex struct{ Decision string }
		if st, _ := e.doJSON(http.MethodPost, "/v1/cache/lookup", map[string]any{"q": "anything"}, &ex); st != 200 || ex.Decision == "" {
			t.Fatalf("after %s: POST /v1/cache/lookup on the reused connection: %d %+v", path, st, ex)
		}
	}
}

// TestLastEventIDAheadOfTheTask: a Last-Event-ID beyond what the task has
// (no delta yet) is not an error: the stream waits and ends normally.
func TestLastEventIDAheadOfTheTask(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{TTFTTimeout: 300 * time.Millisecond}})
	e.Up.SetScript(upstreamtest.Script{StallAfterHeaders: true})
	var created struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "ahead", "nocache": true}, &created)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := e.do(ctx, http.MethodGet, "/v1/tasks/"+created.ID+"/events", nil, "Last-Event-ID", "3")
	defer resp.Body.Close()
	r := summarise(t, readEvents(t, resp.Body))
	if r.Terminal.Type != "error" || r.Deltas != 0 {
		t.Fatalf("stream %+v", r.Events)
	}
}

// TestReadyzChecksTheUpstream: /readyz is 503 while the upstream does not
// accept connections, before any request has failed, and 200 when it does.
func TestReadyzChecksTheUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/v1"
	ln.Close()
	down, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: closed})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOpts{Upstream: down})
	var body struct{ Status, Reason string }
	if st, _ := e.doJSON(http.MethodGet, "/readyz", nil, &body); st != 503 || !strings.Contains(body.Reason, "unreachable") {
		t.Fatalf("/readyz with the upstream down: %d %+v", st, body)
	}
	if st, _ := e.doJSON(http.MethodGet, "/healthz", nil, nil); st != 200 {
		t.Fatalf("/healthz: %d", st)
	}
	up := newEnv(t, envOpts{}) // the fake upstream listens
	if st, _ := up.doJSON(http.MethodGet, "/readyz", nil, &body); st != 200 || body.Status != "ready" {
		t.Fatalf("/readyz with the upstream up: %d %+v", st, body)
	}
}

// TestStuckReaderOfAnAnswerIsCut: a client that asks for a large answer
// as one JSON body (a task poll, a response, a cache-free completion) and
// reads nothing has its connection closed after the slow-reader limit, as
// on the event streams: it cannot hold the handler and the body for ever.
func TestStuckReaderOfAnAnswerIsCut(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{Conn: stream.ConnConfig{WriteTimeout: 300 * time.Millisecond}},
		Orch: orchestrator.Config{MaxAnswerBytes: 16 << 20}, SendBuffer: 64 << 10})
	big := strings.Repeat("y", 4000)
	chunks := make([]string, 1000) // 4 MB: far more than the fixed socket buffers (64 KiB sent, 16 KiB received)
	for i := range chunks {
		chunks[i] = big
	}
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks})
	var created struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "big", "nocache": true}, &created)
	if v := e.waitFinal(created.ID); v.Status != orchestrator.StatusDone {
		t.Fatalf("task %s", v.Status)
	}
	u, err := url.Parse(e.URL)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/v1/tasks/" + created.ID, "/v1/responses/" + created.ID} {
		conn, err := stuckDial(context.Background(), "tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path); err != nil {
			t.Fatal(err)
		}
		// Not reading is the behaviour under test: the server's writes
		// stall, and after the limit it closes the connection.
		time.Sleep(1500 * time.Millisecond)
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := io.Copy(io.Discard, conn)
		conn.Close()
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatalf("%s: the connection stayed open (read %d bytes, then waited 20 s)", path, n)
		}
		if n >= 4_000_000 {
			t.Fatalf("%s: the whole answer came (%d bytes): the stuck reader was not cut", path, n)
		}
	}
}
