package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// Several upstreams (issue 15), end to end: sluice over two scripted HTTP
// upstreams, "a" then "b" for the model "m" (asked for as "m-at-b" at b),
// and b alone for "solo".

type twoUpstreams struct {
	*env
	A, B *upstreamtest.Server
}

func newTwoUpstreams(t *testing.T, cfg orchestrator.Config, specA, specB orchestrator.RouteSpec, obs ...orchestrator.Observer) *twoUpstreams {
	t.Helper()
	tu := &twoUpstreams{A: upstreamtest.NewServer(t), B: upstreamtest.NewServer(t)}
	for _, x := range []struct {
		spec *orchestrator.RouteSpec
		srv  *upstreamtest.Server
		name string
	}{{&specA, tu.A, "a"}, {&specB, tu.B, "b"}} {
		up, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: x.srv.URL(), Name: x.name})
		if err != nil {
			t.Fatal(err)
		}
		x.spec.Name, x.spec.Upstream = x.name, up
	}
	cfg.DefaultModel = "m"
	cfg.Models = map[string][]orchestrator.Target{
		"m":    {{Upstream: "a"}, {Upstream: "b", Model: "m-at-b"}},
		"solo": {{Upstream: "b"}},
	}
	o := envOpts{Orch: cfg, Routes: []orchestrator.RouteSpec{specA, specB}, NoCache: true}
	if len(obs) > 0 {
		o.Observer = obs[0]
	}
	tu.env = newEnv(t, o)
	return tu
}

// TestRoutesBreakerOpenFallsBack: a's upstream fails (503) before any
// output. The first request falls back to b inside its task once a's
// retry is spent; that opens a's circuit, and later requests go to b at
// admission without reaching a. Every client sees 200 and b's whole
// answer, and meta, the task record and b's request say who served.
func TestRoutesBreakerOpenFallsBack(t *testing.T) {
	fb := &fallbackCounter{endCounter: endCounter{ends: map[string]int{}}, n: map[string]int{}}
	tu := newTwoUpstreams(t, orchestrator.Config{RetryBackoff: 10 * time.Millisecond},
		orchestrator.RouteSpec{BreakerMinCalls: 2, BreakerCoolDown: time.Minute}, orchestrator.RouteSpec{}, fb)
	tu.A.SetScript(upstreamtest.Script{Status: 503})
	tu.B.SetScript(upstreamtest.Script{Chunks: []string{"from ", "b"}})

	for i := range 4 {
		resp, res := tu.stream(map[string]any{"prompt": "q", "model": "m"})
		if res.Terminal.Type != "done" || res.Text != "from b" {
			t.Fatalf("request %d: %s %q, want done \"from b\"", i, res.Terminal.Type, res.Text)
		}
		id := resp.Header.Get("X-Task-Id")
		if v := tu.waitFinal(id); v.Upstream != "b" || v.Status != orchestrator.StatusDone || v.Text != "from b" {
			t.Fatalf("request %d: task %+v, want done on b", i, v)
		}
		if res.Meta["upstream"] != "b" {
			// The first one fell back within its task, before its first
			// token and within Config.FallbackHold: meta waited for it.
			t.Fatalf("request %d: meta %v, want upstream b", i, res.Meta)
		}
	}
	if st := tu.Orch.Breakers()[0].State(); st != pipeline.BreakerOpen {
		t.Fatalf("a's circuit is %v after 2 failures", st)
	}
	if n := tu.A.Requests(); n != 2 {
		t.Fatalf("a got %d requests, want 2 (the first request and its one retry; then the circuit is open)", n)
	}
	if n, m := tu.B.Requests(), tu.B.LastRequest().Model; n != 4 || m != "m-at-b" {
		t.Fatalf("b got %d requests for model %q, want 4 for m-at-b", n, m)
	}
	fb.mu.Lock()
	if fb.n["a upstream_error"] != 1 || fb.n["a breaker_open"] != 3 || len(fb.n) != 2 {
		t.Errorf("fallbacks %v, want a's upstream_error once then breaker_open 3 times", fb.n)
	}
	fb.mu.Unlock()
	// An async task queues on b too.
	var acc struct{ ID string }
	if st, _ := tu.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "q2"}, &acc); st != http.StatusAccepted {
		t.Fatalf("POST /v1/tasks: %d", st)
	}
	if v := tu.waitFinal(acc.ID); v.Upstream != "b" || v.Text != "from b" {
		t.Fatalf("async task %+v, want done on b", v)
	}
	tu.waitIdle()
}

// TestRoutesAllBreakersOpen: both upstreams fail; the first request tries
// a then b and ends upstream_error; then both circuits are open and a
// request is refused before its stream with 503 upstream_unavailable.
func TestRoutesAllBreakersOpen(t *testing.T) {
	br := orchestrator.RouteSpec{BreakerMinCalls: 1, BreakerCoolDown: time.Minute}
	tu := newTwoUpstreams(t, orchestrator.Config{MaxRetries: -1}, br, br)
	tu.A.SetScript(upstreamtest.Script{Status: 500})
	tu.B.SetScript(upstreamtest.Script{Status: 503})

	var acc struct{ ID string }
	if st, _ := tu.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "q"}, &acc); st != http.StatusAccepted {
		t.Fatalf("POST /v1/tasks: %d", st)
	}
	v := tu.waitFinal(acc.ID)
	if v.Status != orchestrator.StatusFailed || v.Error == nil || v.Error.Code != orchestrator.CodeUpstreamError {
		t.Fatalf("task %+v, want failed upstream_error", v)
	}
	// a's 500 is not retryable: no fallback, b never asked.
	if tu.A.Requests() != 1 || tu.B.Requests() != 0 {
		t.Fatalf("a %d, b %d requests; want 1 and 0 (a 500 is not a reason to fall back)", tu.A.Requests(), tu.B.Requests())
	}
	if st, _ := tu.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "q", "model": "solo"}, &acc); st != http.StatusAccepted {
		t.Fatalf("POST /v1/tasks: %d", st)
	}
	if v := tu.waitFinal(acc.ID); v.Status != orchestrator.StatusFailed || v.Upstream != "b" {
		t.Fatalf("task %+v, want failed on b", v)
	}
	var body errorBody
	st, hdr := tu.doJSON(http.MethodPost, "/v1/stream", map[string]any{"prompt": "q"}, &body)
	if st != http.StatusServiceUnavailable || body.Error.Code != "upstream_unavailable" || hdr.Get("Retry-After") == "" {
		t.Fatalf("with both circuits open: %d %+v Retry-After %q; want 503 upstream_unavailable with Retry-After", st, body, hdr.Get("Retry-After"))
	}
	tu.waitIdle()
}

// TestRoutesBudgetFullOnBoth: budget 1 each. The first stream holds a's
// slot, the second falls back to b's, the third is refused 503 overloaded
// with Retry-After before any byte; /v1/budget shows both upstreams.
func TestRoutesBudgetFullOnBoth(t *testing.T) {
	one := orchestrator.RouteSpec{Budget: 1}
	tu := newTwoUpstreams(t, orchestrator.Config{}, one, one)
	slow := upstreamtest.Script{Chunks: []string{"x", "y"}, TTFT: time.Minute}
	tu.A.SetScript(slow)
	tu.B.SetScript(slow)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var ids []string
	for i := range 2 {
		// Distinct prompts: identical ones would share one generation.
		resp := tu.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": fmt.Sprintf("q%d", i)})
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("stream: %d", resp.StatusCode)
		}
		ids = append(ids, resp.Header.Get("X-Task-Id"))
	}
	if err := tu.A.WaitInFlight(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := tu.B.WaitInFlight(ctx, 1); err != nil {
		t.Fatal(err)
	}
	var body errorBody
	st, hdr := tu.doJSON(http.MethodPost, "/v1/stream", map[string]any{"prompt": "q2"}, &body)
	if st != http.StatusServiceUnavailable || body.Error.Code != "overloaded" || hdr.Get("Retry-After") == "" {
		t.Fatalf("third stream: %d %+v; want 503 overloaded with Retry-After", st, body)
	}
	var budget struct {
		Limit     int `json:"limit"`
		InFlight  int `json:"in_flight"`
		Upstreams []struct {
			Upstream string `json:"upstream"`
			InFlight int    `json:"in_flight"`
			Limit    int    `json:"limit"`
		} `json:"upstreams"`
	}
	tu.doJSON(http.MethodGet, "/v1/budget", nil, &budget)
	if len(budget.Upstreams) != 2 || budget.Upstreams[0].Upstream != "a" || budget.Upstreams[1].Upstream != "b" ||
		budget.Upstreams[0].InFlight != 1 || budget.Upstreams[1].InFlight != 1 || budget.Limit != 2 || budget.InFlight != 2 {
		t.Fatalf("/v1/budget %+v, want a and b with 1 of 1 in flight each", budget)
	}
	for i, id := range ids {
		if v := tu.Orch.GetAny(id).View(); v.Upstream != []string{"a", "b"}[i] {
			t.Fatalf("stream %d runs on %q", i, v.Upstream)
		}
		tu.doJSON(http.MethodDelete, "/v1/tasks/"+id, nil, nil)
	}
	tu.waitIdle()
}

// TestRoutesFreeSlotBeforeWaiting: a's budget is full and its acquire
// timeout long; b has room: a stream goes to b at once, without waiting
// for a nor counting a rejection there.
func TestRoutesFreeSlotBeforeWaiting(t *testing.T) {
	tu := newTwoUpstreams(t, orchestrator.Config{},
		orchestrator.RouteSpec{Budget: 1, AcquireTimeout: 10 * time.Second}, orchestrator.RouteSpec{})
	tu.A.SetScript(upstreamtest.Script{Chunks: []string{"a"}, TTFT: time.Minute})
	tu.B.SetScript(upstreamtest.Script{Chunks: []string{"b"}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	held := tu.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": "held"})
	defer held.Body.Close()
	// Its first token is a minute away: the status line waited
	// FallbackHold (1s) for it, no more.
	if d := time.Since(start); d < 900*time.Millisecond || d > 3*time.Second {
		t.Fatalf("the stream's headers came after %s, want about 1s (web.Config.FallbackHold)", d)
	}
	if err := tu.A.WaitInFlight(ctx, 1); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	_, res := tu.stream(map[string]any{"prompt": "q"})
	if res.Text != "b" || res.Meta["upstream"] != "b" || time.Since(start) > 2*time.Second {
		t.Fatalf("%q on %v after %s, want b at once", res.Text, res.Meta["upstream"], time.Since(start))
	}
	if st := tu.Orch.Gates()[0].Stats(); st.RejectedTotal != 0 {
		t.Fatalf("a counted %d rejections", st.RejectedTotal)
	}
	tu.doJSON(http.MethodDelete, "/v1/tasks/"+held.Header.Get("X-Task-Id"), nil, nil)
	tu.waitIdle()
}

// TestRoutesNoFallbackAfterOutput: a drops its stream after one chunk.
// The answer stays partial with that chunk; b is never asked.
func TestRoutesNoFallbackAfterOutput(t *testing.T) {
	tu := newTwoUpstreams(t, orchestrator.Config{}, orchestrator.RouteSpec{}, orchestrator.RouteSpec{})
	tu.A.SetScript(upstreamtest.Script{Chunks: []string{"first ", "second"}, DropAfterChunks: 1})
	tu.B.SetScript(upstreamtest.Script{Chunks: []string{"b"}})
	resp, res := tu.stream(map[string]any{"prompt": "q"})
	if res.Terminal.Type != "partial" || res.Text != "first " {
		t.Fatalf("%s %q, want partial \"first \"", res.Terminal.Type, res.Text)
	}
	if v := tu.waitFinal(resp.Header.Get("X-Task-Id")); v.Upstream != "a" || v.Status != orchestrator.StatusPartial {
		t.Fatalf("task %+v, want partial on a", v)
	}
	if n := tu.B.Requests(); n != 0 {
		t.Fatalf("b got %d requests after a's output", n)
	}
	tu.waitIdle()
}

// TestRoutesModels: /v1/models lists the configured models; an unknown
// model is 400 invalid_request on every door, before any upstream call.
func TestRoutesModels(t *testing.T) {
	tu := newTwoUpstreams(t, orchestrator.Config{}, orchestrator.RouteSpec{}, orchestrator.RouteSpec{})
	var list struct {
		Data []struct{ ID string } `json:"data"`
	}
	tu.doJSON(http.MethodGet, "/v1/models", nil, &list)
	if len(list.Data) != 2 || list.Data[0].ID != "m" || list.Data[1].ID != "solo" {
		t.Fatalf("/v1/models %+v, want m and solo", list)
	}
	for _, path := range []string{"/v1/stream", "/v1/tasks"} {
		var body errorBody
		st, _ := tu.doJSON(http.MethodPost, path, map[string]any{"prompt": "q", "model": "gpt-nope"}, &body)
		if st != http.StatusBadRequest || body.Error.Code != "invalid_request" || !strings.Contains(body.Error.Message, "gpt-nope") ||
			!strings.Contains(body.Error.Message, "solo") {
			t.Fatalf("%s unknown model: %d %+v", path, st, body)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := tu.do(ctx, http.MethodPost, "/v1/chat/completions", map[string]any{
		"model": "gpt-nope", "messages": []map[string]string{{"role": "user", "content": "q"}}})
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(raw), `"param":"model"`) {
		t.Fatalf("chat completions unknown model: %d %s", resp.StatusCode, raw)
	}
	if tu.A.Requests()+tu.B.Requests() != 0 {
		t.Fatal("an unknown model reached an upstream")
	}
	// "solo" goes to b under its own name.
	_, res := tu.stream(map[string]any{"prompt": "q", "model": "solo"})
	if res.Terminal.Type != "done" || res.Meta["upstream"] != "b" || tu.B.LastRequest().Model != "solo" {
		t.Fatalf("solo: %s meta %v model at b %q", res.Terminal.Type, res.Meta, tu.B.LastRequest().Model)
	}
}

// errorBody is the contract's error JSON.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// fallbackCounter counts Observer.Fallback calls by "upstream reason".
type fallbackCounter struct {
	endCounter
	mu sync.Mutex
	n  map[string]int
}

var _ orchestrator.FallbackObserver = (*fallbackCounter)(nil)

func (f *fallbackCounter) Fallback(upstream, reason string) {
	f.mu.Lock()
	f.n[upstream+" "+reason]++
	f.mu.Unlock()
}
