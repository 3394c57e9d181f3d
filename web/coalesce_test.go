package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// Issue 15 (C): coalescing. Identical cacheable requests share one
// generation: one slot, one upstream call, the same transcript for all.

// coalesced is one client's view of a coalesced stream.
type coalesced struct {
	status    int
	taskID    string
	joined    bool   // X-Sluice-Coalesced: true
	metaJoin  bool   // the meta event's "coalesced"
	afterMeta string // every event after meta (ids, types, data): what must be byte-identical
	result    streamResult
	body      []byte // an error body
}

func readCoalesced(t *testing.T, resp *http.Response) coalesced {
	t.Helper()
	defer resp.Body.Close()
	c := coalesced{status: resp.StatusCode, taskID: resp.Header.Get("X-Task-Id"), joined: resp.Header.Get("X-Sluice-Coalesced") == "true"}
	if resp.StatusCode != http.StatusOK {
		c.body, _ = io.ReadAll(resp.Body)
		return c
	}
	c.result = summarise(t, readEvents(t, resp.Body))
	c.metaJoin, _ = c.result.Meta["coalesced"].(bool)
	var b strings.Builder
	for _, ev := range c.result.Events[1:] {
		b.WriteString(ev.ID + "|" + ev.Type + "|" + ev.Data + "\n")
	}
	c.afterMeta = b.String()
	return c
}

// pollUntil polls cond (a counter nothing signals) until it holds.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func chunksN(n int) []string {
	c := make([]string, n)
	for i := range c {
		c[i] = "w" + strconv.Itoa(i+1) + " "
	}
	return c
}

// N identical requests that arrive while the first waits for a slot
// (budget 1, held by another request) join it: /v1/budget shows one slot
// in flight and one request waiting at the gate, never more; once the
// slot is free, one upstream call serves all N, and every client reads
// the same task, the same deltas and the same terminal event.
func TestCoalesceJoinersWaitForBudgetAndShareOneCall(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1, AcquireTimeout: 20 * time.Second}})
	chunks := chunksN(12)
	e.Up.SetHandler(func(req upstreamtest.ChatRequest, _ int) upstreamtest.Script {
		if req.Prompt() == "blocker" {
			return upstreamtest.Script{StallBeforeHeaders: true}
		}
		return upstreamtest.Script{Chunks: chunks, Gap: 5 * time.Millisecond}
	})
	var blocker struct{ ID string }
	if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "blocker", "nocache": true}, &blocker); st != http.StatusAccepted {
		t.Fatalf("blocker: %d", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Up.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}

	const n = 8
	body := map[string]any{"prompt": "the shared question", "temperature": 0.3}
	out := make([]coalesced, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = readCoalesced(t, e.do(ctx, http.MethodPost, "/v1/stream", body)) })
	}
	pollUntil(t, "every request waiting on the one generation", func() bool { return e.Orch.CoalesceStats().Waiting == n })
	var budget struct {
		InFlight  int `json:"in_flight"`
		Upstreams []struct {
			Waiting int `json:"waiting"`
		}
		Coalesce orchestrator.CoalesceStats
	}
	if st, _ := e.doJSON(http.MethodGet, "/v1/budget", nil, &budget); st != http.StatusOK {
		t.Fatalf("budget: %d", st)
	}
	if budget.InFlight != 1 || budget.Upstreams[0].Waiting != 1 || budget.Coalesce.Generations != 1 || budget.Coalesce.Waiting != n {
		t.Fatalf("budget while %d identical requests wait: %+v; want in_flight 1, one waiting at the gate, one generation with %d waiting", n, budget, n)
	}
	if st, _ := e.doJSON(http.MethodDelete, "/v1/tasks/"+blocker.ID, nil, nil); st != http.StatusOK {
		t.Fatalf("cancel blocker: %d", st)
	}
	wg.Wait()

	joined := 0
	for i, c := range out {
		if c.status != http.StatusOK || c.result.Terminal.Type != "done" {
			t.Fatalf("client %d: %d %s %+v", i, c.status, c.body, c.result.Terminal)
		}
		if c.taskID != out[0].taskID {
			t.Fatalf("client %d has task %s, client 0 %s: a joiner gets the same task", i, c.taskID, out[0].taskID)
		}
		if c.afterMeta != out[0].afterMeta {
			t.Fatalf("client %d's stream differs from client 0's:\n%s\nvs\n%s", i, c.afterMeta, out[0].afterMeta)
		}
		if c.joined != c.metaJoin {
			t.Fatalf("client %d: header coalesced %v, meta coalesced %v", i, c.joined, c.metaJoin)
		}
		if c.joined {
			joined++
		}
	}
	if want := strings.Join(chunks, ""); out[0].result.Text != want || out[0].result.Deltas != len(chunks) {
		t.Fatalf("text %q (%d deltas), want %q", out[0].result.Text, out[0].result.Deltas, want)
	}
	if joined != n-1 {
		t.Fatalf("%d clients say they joined, want %d (all but the leader)", joined, n-1)
	}
	if got := e.Up.Requests(); got != 2 {
		t.Fatalf("the upstream saw %d calls, want 2 (the blocker and one for the %d identical requests)", got, n)
	}
	if temp := e.Up.LastRequest().Temperature; temp == nil || *temp != 0.3 {
		t.Fatalf("temperature upstream: %v, want 0.3", temp)
	}
	v := e.waitFinal(out[0].taskID)
	if v.Joined != n-1 {
		t.Fatalf("task record joined %d, want %d", v.Joined, n-1)
	}
	e.waitIdle()
	if st := e.Orch.CoalesceStats(); st.Generations != 0 || st.Waiting != 0 {
		t.Fatalf("coalescing table after the end: %+v, want empty", st)
	}
}

// Requests that differ in one generation parameter, or in the tenant or
// namespace, never share a generation, even while the first streams; nor
// do nocache requests. The same pair without the difference does.
func TestCoalesceOnlyIdenticalRequests(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{APIKeys: map[string]string{"key-a": "a", "key-b": "b"}}})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunksN(3), StallAfterChunks: 1})
	authA := []string{"Authorization", "Bearer key-a"}
	authB := []string{"Authorization", "Bearer key-b"}
	base := func() map[string]any {
		return map[string]any{"prompt": "same words", "temperature": 0.2, "max_tokens": 50, "model": "m1", "namespace": "ns1"}
	}
	with := func(k string, v any) map[string]any {
		b := base()
		if v == nil {
			delete(b, k)
		} else {
			b[k] = v
		}
		return b
	}
	cases := []struct {
		name       string
		first, sec map[string]any
		hdr2       []string
		calls      int
	}{
		{"identical", base(), base(), authA, 1},
		{"temperature", base(), with("temperature", 0.9), authA, 2},
		{"temperature absent", base(), with("temperature", nil), authA, 2},
		{"top_p", base(), with("top_p", 0.5), authA, 2},
		{"seed", base(), with("seed", 7), authA, 2},
		{"stop", base(), with("stop", "END"), authA, 2},
		{"max_tokens", base(), with("max_tokens", 51), authA, 2},
		{"model", base(), with("model", "m2"), authA, 2},
		{"namespace", base(), with("namespace", "ns2"), authA, 2},
		{"tenant", base(), base(), authB, 2},
		{"nocache", with("nocache", true), with("nocache", true), authA, 2},
		{"system message", map[string]any{"messages": []map[string]string{{"role": "user", "content": "q"}}},
			map[string]any{"messages": []map[string]string{{"role": "system", "content": "be terse"}, {"role": "user", "content": "q"}}}, authA, 2},
	}
	for i, c := range cases {
		// Each case asks its own question, so that no case joins another.
		q := "case " + strconv.Itoa(i) + " "
		for _, b := range []map[string]any{c.first, c.sec} {
			if p, ok := b["prompt"].(string); ok {
				b["prompt"] = q + p
			}
		}
		before := e.Up.Requests()
		var first, second struct{ ID string }
		if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", c.first, &first, authA...); st != http.StatusAccepted {
			t.Fatalf("%s: first: %d", c.name, st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		// The first is streaming (one chunk out, then stalled) when the
		// second comes.
		if err := e.Up.Wait(ctx, func(s *upstreamtest.Server) bool { return s.Requests() == before+1 && s.InFlight() >= 1 }); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		pollUntil(t, c.name+": first delta", func() bool { return e.Orch.GetAny(first.ID).Transcript().Len() >= 1 })
		st, hdr := e.doJSON(http.MethodPost, "/v1/tasks", c.sec, &second, c.hdr2...)
		if st != http.StatusAccepted {
			t.Fatalf("%s: second: %d", c.name, st)
		}
		if c.calls == 1 {
			if second.ID != first.ID || hdr.Get("X-Sluice-Coalesced") != "true" {
				t.Fatalf("%s: second got task %s (first %s), coalesced %q: want the same task", c.name, second.ID, first.ID, hdr.Get("X-Sluice-Coalesced"))
			}
		} else {
			if second.ID == first.ID || hdr.Get("X-Sluice-Coalesced") != "" {
				t.Fatalf("%s: the second request joined the first (%s)", c.name, second.ID)
			}
			if err := e.Up.WaitRequests(ctx, before+2); err != nil {
				t.Fatalf("%s: no second upstream call: %v", c.name, err)
			}
		}
		cancel()
		e.doJSON(http.MethodDelete, "/v1/tasks/"+first.ID, nil, nil, authA...)
		if second.ID != first.ID {
			e.doJSON(http.MethodDelete, "/v1/tasks/"+second.ID, nil, nil, c.hdr2...)
		}
		if got := e.Up.Requests() - before; got != c.calls {
			t.Fatalf("%s: %d upstream calls, want %d", c.name, got, c.calls)
		}
	}
	// The temperature went upstream as it was sent.
	var temps []string
	for _, r := range e.Up.Received() {
		if r.Temperature != nil {
			temps = append(temps, strconv.FormatFloat(*r.Temperature, 'f', -1, 64))
		}
	}
	if !strings.Contains(strings.Join(temps, ","), "0.9") {
		t.Fatalf("temperatures upstream: %v, want 0.9 among them", temps)
	}
	e.waitIdle()
}

// A client that comes after the generation has produced output replays
// what was produced from delta 1, then follows live: its stream is the
// leader's, byte for byte.
func TestCoalesceLateJoinerReplaysThenFollows(t *testing.T) {
	e := newEnv(t, envOpts{})
	chunks := chunksN(30)
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks, Gap: 10 * time.Millisecond})
	body := map[string]any{"prompt": "late joiner"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := e.do(ctx, http.MethodPost, "/v1/stream", body)
	id := first.Header.Get("X-Task-Id")
	tr := e.Orch.GetAny(id).Transcript()
	pollUntil(t, "five deltas", func() bool { return tr.Len() >= 5 })
	second := e.do(ctx, http.MethodPost, "/v1/stream", body)
	// It joined while the answer was still being written.
	if n := tr.Len(); n >= len(chunks) {
		t.Skipf("the answer was complete (%d deltas) before the second request was admitted", n)
	}
	a, b := readCoalesced(t, first), readCoalesced(t, second)
	if !b.joined || !b.metaJoin || b.taskID != id || a.joined {
		t.Fatalf("late joiner: task %s (leader %s), coalesced %v/%v; leader coalesced %v", b.taskID, id, b.joined, b.metaJoin, a.joined)
	}
	if b.afterMeta != a.afterMeta || b.result.Text != strings.Join(chunks, "") || b.result.Events[1].ID != "1" {
		t.Fatalf("the late joiner's stream differs from the leader's:\n%s\nvs\n%s", b.afterMeta, a.afterMeta)
	}
	if n := e.Up.Requests(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want 1", n)
	}
}

// The first client leaving (a stream that said "detach": false) does not
// cut the others: the generation goes on for the joiner. When every
// client that shared it has left, the generation is cancelled.
func TestCoalesceLeaderLeavingDoesNotCutJoiners(t *testing.T) {
	e := newEnv(t, envOpts{})
	chunks := chunksN(40)
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks, Gap: 15 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	readDeltas := func(resp *http.Response, n int) {
		t.Helper()
		got := 0
		for ev, err := range sse.Read(resp.Body, nil) {
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type == "delta" {
				if got++; got == n {
					return
				}
			}
		}
		t.Fatalf("stream ended after %d deltas", got)
	}

	// 1: the leader leaves, the joiner reads everything.
	body := map[string]any{"prompt": "leaving leader", "detach": false}
	lctx, leave := context.WithCancel(ctx)
	leader := e.do(lctx, http.MethodPost, "/v1/stream", body)
	id := leader.Header.Get("X-Task-Id")
	joiner := e.do(ctx, http.MethodPost, "/v1/stream", body)
	if joiner.Header.Get("X-Task-Id") != id || joiner.Header.Get("X-Sluice-Coalesced") != "true" {
		t.Fatalf("joiner: task %s (leader %s)", joiner.Header.Get("X-Task-Id"), id)
	}
	readDeltas(leader, 2)
	leave()
	leader.Body.Close()
	j := readCoalesced(t, joiner)
	if j.result.Terminal.Type != "done" || j.result.Text != strings.Join(chunks, "") {
		t.Fatalf("joiner after the leader left: %+v %q", j.result.Terminal, j.result.Text)
	}
	if v := e.waitFinal(id); v.Status != orchestrator.StatusDone {
		t.Fatalf("task %s", v.Status)
	}

	// 2: both leave: the task is cancelled and its slot freed.
	body = map[string]any{"prompt": "everyone leaves", "detach": false}
	c1, leave1 := context.WithCancel(ctx)
	c2, leave2 := context.WithCancel(ctx)
	r1 := e.do(c1, http.MethodPost, "/v1/stream", body)
	r2 := e.do(c2, http.MethodPost, "/v1/stream", body)
	id = r1.Header.Get("X-Task-Id")
	if r2.Header.Get("X-Task-Id") != id {
		t.Fatalf("second did not join: %s vs %s", r2.Header.Get("X-Task-Id"), id)
	}
	readDeltas(r1, 1)
	readDeltas(r2, 1)
	leave1()
	r1.Body.Close()
	// One left: the task goes on for the other.
	tr := e.Orch.GetAny(id).Transcript()
	n := tr.Len()
	pollUntil(t, "more deltas after the first left", func() bool { return tr.Len() > n+2 })
	leave2()
	r2.Body.Close()
	if v := e.waitFinal(id); v.Status != orchestrator.StatusPartial && v.Status != orchestrator.StatusCancelled {
		t.Fatalf("task after every client left: %s, want cancelled (partial)", v.Status)
	}
	e.waitIdle()
}

// When the leader is refused (no slot within the acquire timeout), the
// requests that joined it get the same refusal: 503 overloaded with
// Retry-After, and no upstream call.
func TestCoalesceJoinersShareTheLeadersRefusal(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1, AcquireTimeout: 2 * time.Second}})
	e.Up.SetHandler(func(upstreamtest.ChatRequest, int) upstreamtest.Script {
		return upstreamtest.Script{StallBeforeHeaders: true}
	})
	var blocker struct{ ID string }
	if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "blocker", "nocache": true}, &blocker); st != http.StatusAccepted {
		t.Fatalf("blocker: %d", st)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.Up.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	const n = 4
	out := make([]coalesced, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out[i] = readCoalesced(t, e.do(ctx, http.MethodPost, "/v1/chat/completions",
				map[string]any{"model": "m", "messages": []map[string]string{{"role": "user", "content": "refused together"}}}))
		})
	}
	pollUntil(t, "all waiting", func() bool { return e.Orch.CoalesceStats().Waiting == n })
	wg.Wait()
	for i, c := range out {
		var body struct{ Error struct{ Code string } }
		_ = json.Unmarshal(c.body, &body)
		if c.status != http.StatusServiceUnavailable || body.Error.Code != "overloaded" {
			t.Fatalf("client %d: %d %s, want 503 overloaded", i, c.status, c.body)
		}
	}
	if got := e.Up.Requests(); got != 1 {
		t.Fatalf("the upstream saw %d calls, want only the blocker's", got)
	}
	e.doJSON(http.MethodDelete, "/v1/tasks/"+blocker.ID, nil, nil)
	e.waitIdle()
}

// Async and OpenAI-door joiners: identical POST /v1/tasks share one task
// (and one call); identical chat completions (streamed) share one
// X-Task-Id and the same chunks.
func TestCoalesceAsyncAndOpenAIDoor(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunksN(10), TTFT: 500 * time.Millisecond, Gap: 5 * time.Millisecond})
	const n = 5
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			var v struct{ ID string }
			if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "async shared"}, &v); st != http.StatusAccepted {
				t.Errorf("POST /v1/tasks: %d", st)
			}
			ids[i] = v.ID
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("async identical requests got tasks %v, want one", ids)
		}
	}
	if v := e.waitFinal(ids[0]); v.Status != orchestrator.StatusDone || v.Joined != n-1 {
		t.Fatalf("async task: %s joined %d", v.Status, v.Joined)
	}
	if got := e.Up.Requests(); got != 1 {
		t.Fatalf("%d upstream calls, want 1", got)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bodies := make([]string, n)
	tasks := make([]string, n)
	for i := range n {
		wg.Go(func() {
			resp := e.do(ctx, http.MethodPost, "/v1/chat/completions", map[string]any{"stream": true,
				"messages": []map[string]string{{"role": "user", "content": "chat shared"}}, "seed": 42})
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			bodies[i], tasks[i] = string(b), resp.Header.Get("X-Task-Id")
		})
	}
	wg.Wait()
	for i := range n {
		if tasks[i] != tasks[0] || bodies[i] != bodies[0] || !strings.HasSuffix(bodies[i], "data: [DONE]\n\n") {
			t.Fatalf("chat %d: task %s body %q; chat 0: task %s body %q", i, tasks[i], bodies[i], tasks[0], bodies[0])
		}
	}
	if got := e.Up.Requests(); got != 2 {
		t.Fatalf("%d upstream calls, want 2", got)
	}
	if s := e.Up.LastRequest().Seed; s == nil || *s != 42 {
		t.Fatalf("seed upstream: %v", s)
	}
}

// SLUICE_COALESCE=off (MaxCoalesced < 0): identical requests each make
// their own call.
func TestCoalesceOff(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{MaxCoalesced: -1}})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunksN(3), StallAfterChunks: 1})
	var a, b struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "off"}, &a)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := e.Up.WaitRequests(ctx, 1); err != nil {
		t.Fatal(err)
	}
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "off"}, &b)
	if a.ID == b.ID {
		t.Fatal("coalescing is off, yet the second request joined the first")
	}
	if err := e.Up.WaitRequests(ctx, 2); err != nil {
		t.Fatal(err)
	}
	e.doJSON(http.MethodDelete, "/v1/tasks/"+a.ID, nil, nil)
	e.doJSON(http.MethodDelete, "/v1/tasks/"+b.ID, nil, nil)
	e.waitIdle()
}

// Bad sampling parameters are a 400 invalid_request naming the field.
func TestSamplingParametersValidated(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, c := range []struct {
		field string
		v     any
	}{
		{"temperature", 2.5}, {"temperature", -1}, {"top_p", 1.5}, {"presence_penalty", 3},
		{"frequency_penalty", -3}, {"stop", []string{"a", "b", "c", "d", "e"}}, {"stop", 5}, {"stop", ""}, {"seed", "x"},
	} {
		for _, path := range []string{"/v1/tasks", "/v1/chat/completions"} {
			var body struct {
				Error struct{ Code, Message string }
			}
			req := map[string]any{"prompt": "p", c.field: c.v}
			if path == "/v1/chat/completions" {
				req = map[string]any{"messages": []map[string]string{{"role": "user", "content": "p"}}, c.field: c.v}
			}
			st, _ := e.doJSON(http.MethodPost, path, req, &body)
			if st != http.StatusBadRequest || !strings.Contains(body.Error.Message, c.field) {
				t.Fatalf("%s %s=%v: %d %+v, want 400 naming the field", path, c.field, c.v, st, body)
			}
		}
	}
	if n := e.Up.Requests(); n != 0 {
		t.Fatalf("%d upstream calls for bad requests", n)
	}
}

// The cache keeps its semantics: it answers by question and context, not
// by sampling parameters (stop sequences, which cut the answer, are part
// of the context), so once a generation is done a request that differs
// only in temperature is a hit (nocache is the way to sample afresh). Every door forwards its sampling parameters upstream.
func TestSamplingForwardedCacheUnchanged(t *testing.T) {
	e := newEnv(t, envOpts{})
	resp, r := e.stream(map[string]any{"prompt": "sampled", "temperature": 0.2, "top_p": 0.9, "stop": []string{"END", "STOP"},
		"seed": 5, "presence_penalty": 0.5, "frequency_penalty": -0.5})
	if resp.Header.Get("X-Cache") != "MISS" || r.Terminal.Type != "done" {
		t.Fatalf("first: %s %+v", resp.Header.Get("X-Cache"), r.Terminal)
	}
	got := e.Up.LastRequest()
	if got.Temperature == nil || *got.Temperature != 0.2 || got.TopP == nil || *got.TopP != 0.9 || strings.Join(got.Stop, ",") != "END,STOP" ||
		got.Seed == nil || *got.Seed != 5 || got.PresencePenalty == nil || *got.PresencePenalty != 0.5 || got.FrequencyPenalty == nil || *got.FrequencyPenalty != -0.5 {
		t.Fatalf("upstream request: %+v", got)
	}
	// The cache does not key on sampling parameters, but for stop (an
	// answer cut at a stop sequence is another answer): the same stop set
	// with every other parameter changed is a hit.
	resp, _ = e.stream(map[string]any{"prompt": "sampled", "temperature": 0.9, "stop": []string{"STOP", "END"}})
	if resp.Header.Get("X-Cache") != "HIT" || e.Up.Requests() != 1 {
		t.Fatalf("same question and stop, other temperature, after the first ended: X-Cache %s, %d upstream calls; want a hit",
			resp.Header.Get("X-Cache"), e.Up.Requests())
	}
	// No sampling parameter sent: none forwarded (the upstream's defaults).
	e.stream(map[string]any{"prompt": "plain", "nocache": true})
	if got := e.Up.LastRequest(); got.Temperature != nil || got.TopP != nil || got.Stop != nil || got.Seed != nil {
		t.Fatalf("a request without sampling parameters forwarded %+v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rr := e.do(ctx, http.MethodPost, "/v1/responses", map[string]any{"input": "responses sampled", "temperature": 0.7, "top_p": 0.3})
	_, _ = io.Copy(io.Discard, rr.Body)
	rr.Body.Close()
	if got := e.Up.LastRequest(); rr.StatusCode != http.StatusOK || got.Temperature == nil || *got.Temperature != 0.7 || got.TopP == nil || *got.TopP != 0.3 {
		t.Fatalf("responses door: %d, upstream %+v", rr.StatusCode, got)
	}
}

// An interactive request of the batch class (X-Sluice-Priority: batch)
// that joins an async task still queued waits with it; when the queue wait
// runs out, the chat door answers the task's end as 503 queue_timeout with
// Retry-After, before any output.
func TestCoalesceInteractiveJoinsQueuedTask(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1, MaxQueueWait: 300 * time.Millisecond}})
	e.Up.SetScript(upstreamtest.Script{StallBeforeHeaders: true})
	hold, err := e.Orch.Gates()[0].Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	var queued struct{ ID, Status string }
	if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "queued together"}, &queued); st != http.StatusAccepted || queued.Status != "queued" {
		t.Fatalf("async: %d %+v", st, queued)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// The same class (batch): the priority class is part of what makes
	// two requests identical.
	resp := e.do(ctx, http.MethodPost, "/v1/chat/completions", map[string]any{"stream": true,
		"messages": []map[string]string{{"role": "user", "content": "queued together"}}}, "X-Sluice-Priority", "batch")
	c := readCoalesced(t, resp)
	var body struct{ Error struct{ Code string } }
	_ = json.Unmarshal(c.body, &body)
	if c.taskID != queued.ID || !c.joined || c.status != http.StatusServiceUnavailable || body.Error.Code != "queue_timeout" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("chat joiner of a queued task: task %s (async %s) joined %v, %d %s", c.taskID, queued.ID, c.joined, c.status, c.body)
	}
	if n := e.Up.Requests(); n != 0 {
		t.Fatalf("%d upstream calls, want none", n)
	}
}

// A leader ("detach": false) that leaves while it waits for budget holds
// no share of the task: the joiner waiting with it gets the slot, the
// whole answer and a done end; the leader's leaving cancels nothing.
func TestCoalesceLeaderLeavesDuringBudgetWait(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1, AcquireTimeout: 20 * time.Second}})
	chunks := chunksN(5)
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks, Gap: 5 * time.Millisecond})
	hold, err := e.Orch.Gates()[0].Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	body := map[string]any{"prompt": "leader gives up", "detach": false}
	lctx, leave := context.WithCancel(ctx)
	lerr := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(lctx, http.MethodPost, e.URL+"/v1/stream", strings.NewReader(`{"prompt":"leader gives up","detach":false}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.HTTP.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		lerr <- err
	}()
	pollUntil(t, "the leader waiting", func() bool { return e.Orch.CoalesceStats().Waiting == 1 })
	jres := make(chan coalesced, 1)
	go func() { jres <- readCoalesced(t, e.do(ctx, http.MethodPost, "/v1/stream", body)) }()
	pollUntil(t, "the joiner waiting", func() bool { return e.Orch.CoalesceStats().Waiting == 2 })
	leave()
	if err := <-lerr; err == nil {
		t.Fatal("the leader's request did not fail when it left")
	}
	pollUntil(t, "the leader gone", func() bool { return e.Orch.CoalesceStats().Waiting == 1 })
	hold.Release()
	j := <-jres
	if j.status != http.StatusOK || j.result.Terminal.Type != "done" || j.result.Text != strings.Join(chunks, "") {
		t.Fatalf("joiner after the leader left during the wait: %d %s %+v %q", j.status, j.body, j.result.Terminal, j.result.Text)
	}
	if v := e.waitFinal(j.taskID); v.Status != orchestrator.StatusDone {
		t.Fatalf("task %s", v.Status)
	}
	if n := e.Up.Requests(); n != 1 {
		t.Fatalf("%d upstream calls, want 1", n)
	}
}
