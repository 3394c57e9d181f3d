package web_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"github.com/openai/openai-go/packages/ssestream"
	"github.com/openai/openai-go/responses"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// These tests run openai-go's Responses client (package responses),
// unchanged, against a running sluice.

// stepUpstream streams first, then waits for release (or the end of the
// call) before streaming rest: a task that is running for as long as the
// test wants.
type stepUpstream struct {
	first, rest []string
	release     chan struct{}
}

func (stepUpstream) Name() string { return "step" }

func (s stepUpstream) Stream(ctx context.Context, _ upstream.Request, out chan<- upstream.Chunk) error {
	send := func(cs []string) error {
		for _, c := range cs {
			select {
			case out <- upstream.Chunk{Text: c}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	if err := send(s.first); err != nil {
		return err
	}
	select {
	case <-s.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	return send(s.rest)
}

func respParams(q string) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:        "sim-1",
		Instructions: openai.String("be brief"),
		Input:        responses.ResponseNewParamsInputUnion{OfString: openai.String(q)},
	}
}

// respEvent is one streamed event as the SDK decoded it.
type respEvent struct {
	Type string
	Seq  int64
	Raw  string
	ev   responses.ResponseStreamEventUnion
}

// respRead reads an SDK event stream to its end (or until stop says so),
// skipping keep-alives.
func respRead(t *testing.T, s *ssestream.Stream[responses.ResponseStreamEventUnion], stop func([]respEvent) bool) ([]respEvent, error) {
	t.Helper()
	defer s.Close()
	var evs []respEvent
	for s.Next() {
		ev := s.Current()
		if ev.Type == "keepalive" {
			continue
		}
		evs = append(evs, respEvent{Type: ev.Type, Seq: ev.SequenceNumber, Raw: ev.RawJSON(), ev: ev})
		if stop != nil && stop(evs) {
			return evs, nil
		}
	}
	return evs, s.Err()
}

// respCheck checks the shape of a whole event stream that starts at
// sequence number first: numbers are consecutive integers (no merging
// happens at these sizes), the types come in the documented order, and
// the text of the deltas is the text of the final response. It returns
// the deltas' text and the final response.
func respCheck(t *testing.T, evs []respEvent, first int64, terminal string) (string, responses.Response) {
	t.Helper()
	var text string
	for i, ev := range evs {
		if ev.Seq != first+int64(i) {
			t.Fatalf("event %d (%s) has sequence_number %d, want %d", i, ev.Type, ev.Seq, first+int64(i))
		}
		if ev.Type == "response.output_text.delta" {
			text += ev.ev.Delta.OfString
		}
	}
	want := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
	if first == 0 {
		for i, typ := range want {
			if evs[i].Type != typ {
				t.Fatalf("event %d is %s, want %s", i, evs[i].Type, typ)
			}
		}
		if id := evs[0].ev.Response.ID; id == "" || evs[0].ev.Response.Status != "in_progress" {
			t.Fatalf("response.created: %s", evs[0].Raw)
		}
	}
	n := len(evs)
	tail := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", terminal}
	for i, typ := range tail {
		if evs[n-4+i].Type != typ {
			t.Fatalf("event %d is %s, want %s", n-4+i, evs[n-4+i].Type, typ)
		}
	}
	final := evs[n-1].ev.Response
	if evs[n-4].ev.Text != final.OutputText() {
		t.Fatalf("output_text.done %q, final response %q", evs[n-4].ev.Text, final.OutputText())
	}
	return text, final
}

func TestResponsesGoSDK(t *testing.T) {
	answer := []string{"Zone A", " holds", " 42 units", " of SKU-10234", " — \"quoted\"", " ünïcode."}
	want := strings.Join(answer, "")
	e := newEnv(t, envOpts{Orch: orchestrator.Config{
		Budget: 1, AcquireTimeout: 100 * time.Millisecond, IdleTimeout: 300 * time.Millisecond, TTFTTimeout: 5 * time.Second, RetryAfter: 2 * time.Second,
	}})
	e.Up.SetHandler(func(req upstreamtest.ChatRequest, _ int) upstreamtest.Script {
		q := req.Prompt()
		switch {
		case strings.Contains(q, "hold"):
			return upstreamtest.Script{StallAfterHeaders: true}
		case strings.Contains(q, "partial"):
			return upstreamtest.Script{Chunks: []string{"Cut", " here", " and", " never"}, StallAfterChunks: 2}
		case strings.Contains(q, "slow"):
			return upstreamtest.Script{Chunks: answer, Gap: 30 * time.Millisecond}
		}
		return upstreamtest.Script{Chunks: answer}
	})
	c := oaiClient(e)

	t.Run("non-streaming: exact text, the id is the task id", func(t *testing.T) {
		var hr *http.Response
		r, err := c.Responses.New(oaiCtx(t), respParams("how many in zone A?"), option.WithResponseInto(&hr))
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != hr.Header.Get("X-Task-Id") || r.Object != "response" || r.Status != "completed" || r.Model != "sim-1" {
			t.Fatalf("response %s (X-Task-Id %s)", r.RawJSON(), hr.Header.Get("X-Task-Id"))
		}
		if r.OutputText() != want || r.Instructions.OfString != "be brief" || r.Usage.OutputTokens != int64(len(answer)) {
			t.Fatalf("response %s", r.RawJSON())
		}
		if v := e.waitFinal(r.ID); v.Text != want || v.Status != orchestrator.StatusDone {
			t.Fatalf("task view of the response: %+v", v)
		}
		if got := e.Up.LastRequest().Messages; len(got) != 2 || got[0].Role != "system" || got[0].Content != "be brief" || got[1].Content != "how many in zone A?" {
			t.Fatalf("upstream messages %+v", got)
		}
		g, err := c.Responses.Get(oaiCtx(t), r.ID, responses.ResponseGetParams{})
		if err != nil || g.Status != "completed" || g.OutputText() != want {
			t.Fatalf("GET: %v %+v", err, g)
		}
	})

	t.Run("streaming: events, replay and every resume", func(t *testing.T) {
		evs, err := respRead(t, c.Responses.NewStreaming(oaiCtx(t), respParams("where is order 77?")), nil)
		if err != nil {
			t.Fatal(err)
		}
		text, final := respCheck(t, evs, 0, "response.completed")
		if text != want || final.Status != "completed" || final.OutputText() != want || len(evs) != 8+len(answer) {
			t.Fatalf("%d events, text %q, final %s", len(evs), text, final.RawJSON())
		}
		id := final.ID
		// Replay: the same events.
		again, err := respRead(t, c.Responses.GetStreaming(oaiCtx(t), id, responses.ResponseGetParams{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(again) != len(evs) {
			t.Fatalf("replay: %d events, want %d", len(again), len(evs))
		}
		for i := range evs {
			if again[i].Raw != evs[i].Raw {
				t.Fatalf("replay event %d:\n%s\nwant\n%s", i, again[i].Raw, evs[i].Raw)
			}
		}
		// Resume after every event: exactly the rest.
		for after := range len(evs) - 1 {
			rest, err := respRead(t, c.Responses.GetStreaming(oaiCtx(t), id, responses.ResponseGetParams{StartingAfter: openai.Int(int64(after))}), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rest) != len(evs)-after-1 {
				t.Fatalf("starting_after %d: %d events, want %d", after, len(rest), len(evs)-after-1)
			}
			for i := range rest {
				if rest[i].Raw != evs[after+1+i].Raw {
					t.Fatalf("starting_after %d, event %d: %s", after, i, rest[i].Raw)
				}
			}
		}
	})

	t.Run("resume after a cut while running: no duplicate, no gap", func(t *testing.T) {
		// The client drops the stream after two deltas; the task goes on.
		evs, err := respRead(t, c.Responses.NewStreaming(oaiCtx(t), respParams("slow answer, cut")), func(evs []respEvent) bool {
			return evs[len(evs)-1].Type == "response.output_text.delta" && evs[len(evs)-1].Seq == 5
		})
		if err != nil {
			t.Fatal(err)
		}
		id := evs[0].ev.Response.ID
		if st := e.Orch.GetAny(id).Status(); st != orchestrator.StatusRunning {
			t.Logf("the task is %s at the resume (the machine was slow)", st)
		}
		rest, err := respRead(t, c.Responses.GetStreaming(oaiCtx(t), id, responses.ResponseGetParams{StartingAfter: openai.Int(5)}), nil)
		if err != nil {
			t.Fatal(err)
		}
		whole := append(evs, rest...)
		text, final := respCheck(t, whole, 0, "response.completed")
		if text != want || final.OutputText() != want {
			t.Fatalf("cut and resumed: %q", text)
		}
	})

	t.Run("background: queued, polled, done", func(t *testing.T) {
		p := respParams("background question")
		p.Background = openai.Bool(true)
		p.Metadata = map[string]string{"order": "77"}
		r, err := c.Responses.New(oaiCtx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		if (r.Status != "queued" && r.Status != "in_progress" && r.Status != "completed") || !r.Background || r.Metadata["order"] != "77" {
			t.Fatalf("background answer %s", r.RawJSON())
		}
		e.waitFinal(r.ID)
		g, err := c.Responses.Get(oaiCtx(t), r.ID, responses.ResponseGetParams{})
		if err != nil || g.Status != "completed" || g.OutputText() != want {
			t.Fatalf("GET: %v %s", err, g.RawJSON())
		}
		// Background with stream: the stream of the queued task.
		evs, err := respRead(t, c.Responses.NewStreaming(oaiCtx(t), responses.ResponseNewParams{
			Model: "sim-1", Background: openai.Bool(true),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("background streamed")},
		}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if text, _ := respCheck(t, evs, 0, "response.completed"); text != want {
			t.Fatalf("background stream %q", text)
		}
	})

	t.Run("cut answer: incomplete with the partial text and the notice", func(t *testing.T) {
		r, err := c.Responses.New(oaiCtx(t), respParams("partial answer"))
		if err != nil {
			t.Fatal(err)
		}
		v := e.waitFinal(r.ID)
		if r.Status != "incomplete" || r.IncompleteDetails.Reason == "" || v.Status != orchestrator.StatusPartial ||
			!strings.HasPrefix(r.OutputText(), "Cut here\n\n[") || !strings.HasSuffix(r.OutputText(), "]") {
			t.Fatalf("cut answer %s (task %+v)", r.RawJSON(), v)
		}
		evs, err := respRead(t, c.Responses.GetStreaming(oaiCtx(t), r.ID, responses.ResponseGetParams{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		text, final := respCheck(t, evs, 0, "response.incomplete")
		if text != r.OutputText() || final.Status != "incomplete" {
			t.Fatalf("streamed cut answer %q, final %s", text, final.RawJSON())
		}
	})

	t.Run("cancel: cancelled, and again", func(t *testing.T) {
		p := responses.ResponseNewParams{Model: "sim-1", Background: openai.Bool(true),
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hold, then cancel")}}
		r, err := c.Responses.New(oaiCtx(t), p)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			cr, err := c.Responses.Cancel(oaiCtx(t), r.ID)
			if err != nil || cr.Status != "cancelled" || cr.ID != r.ID {
				t.Fatalf("cancel: %v %s", err, cr.RawJSON())
			}
		}
		if v := e.waitFinal(r.ID); v.Status != orchestrator.StatusCancelled {
			t.Fatalf("task after cancel: %+v", v)
		}
		evs, err := respRead(t, c.Responses.GetStreaming(oaiCtx(t), r.ID, responses.ResponseGetParams{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, final := respCheck(t, evs, 0, "response.failed"); final.Status != "cancelled" {
			t.Fatalf("stream of a cancelled response ends %s", final.RawJSON())
		}
		if err := c.Responses.Delete(oaiCtx(t), r.ID); err != nil {
			t.Fatal(err)
		}
		e.waitIdle()
	})

	t.Run("overload: a 503 error object, streamed or not", func(t *testing.T) {
		e.waitIdle()
		ctx, cancel := context.WithCancel(context.Background())
		held := make(chan struct{})
		go func() {
			defer close(held)
			s := c.Responses.NewStreaming(ctx, respParams("hold the slot"))
			for s.Next() {
			}
			s.Close()
		}()
		defer func() { cancel(); <-held; e.waitIdle() }()
		deadline := time.Now().Add(10 * time.Second)
		for e.Orch.Gates()[0].Stats().InFlight == 0 {
			if time.Now().After(deadline) {
				t.Fatal("the slot was never taken")
			}
			time.Sleep(5 * time.Millisecond) // polling a counter: nothing signals it
		}
		check := func(err error, what string) {
			t.Helper()
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusServiceUnavailable || ae.Code != "overloaded" || ae.Response.Header.Get("Retry-After") == "" {
				t.Fatalf("%s: %v", what, err)
			}
		}
		_, err := c.Responses.New(oaiCtx(t), respParams("one more"))
		check(err, "not streamed")
		_, err = respRead(t, c.Responses.NewStreaming(oaiCtx(t), respParams("one more, streamed")), nil)
		check(err, "streamed")
	})

	t.Run("unsupported features: a 400 each", func(t *testing.T) {
		for name, p := range map[string]responses.ResponseNewParams{
			"tools": {Model: "sim-1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("q")},
				Tools: []responses.ToolUnionParam{responses.ToolParamOfFunction("f", map[string]any{"type": "object"}, false)}},
			"previous_response_id": {Model: "sim-1", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("q")},
				PreviousResponseID: openai.String("resp_1")},
		} {
			_, err := c.Responses.New(oaiCtx(t), p)
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || !strings.Contains(ae.Message, name+" is not supported") || ae.Param != name {
				t.Fatalf("%s: %v", name, err) // the SDK's error names the param
			}
		}
	})

	t.Run("one id on both doors", func(t *testing.T) {
		var created struct{ ID string }
		if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "task door"}, &created); st != http.StatusAccepted {
			t.Fatalf("POST /v1/tasks: %d", st)
		}
		e.waitFinal(created.ID)
		g, err := c.Responses.Get(oaiCtx(t), created.ID, responses.ResponseGetParams{})
		if err != nil || g.ID != created.ID || g.OutputText() != want {
			t.Fatalf("a task on the Responses door: %v %s", err, g.RawJSON())
		}
		r, err := c.Responses.New(oaiCtx(t), respParams("responses door"))
		if err != nil {
			t.Fatal(err)
		}
		if ev := e.events(r.ID, 0); ev.Text != want || ev.Meta["id"] != r.ID {
			t.Fatalf("a response on the task door: %+v", ev)
		}
		if _, err := c.Responses.Get(oaiCtx(t), "00000000-0000-4000-8000-000000000000", responses.ResponseGetParams{}); err == nil {
			t.Fatal("unknown id: no error")
		} else if ae := (*openai.Error)(nil); !errors.As(err, &ae) || ae.StatusCode != http.StatusNotFound {
			t.Fatalf("unknown id: %v", err)
		}
	})
}

// TestResponsesAcrossInstances: a response created on A is resumed on B
// with starting_after, after completion and while it runs on A; B never
// calls its own upstream.
func TestResponsesAcrossInstances(t *testing.T) {
	storeA, another := redistest.New(t)
	up := stepUpstream{first: []string{"one ", "two "}, rest: []string{"three ", "four"}, release: make(chan struct{})}
	a := newEnv(t, envOpts{Shared: storeA, Upstream: up, NoCache: true})
	b := newEnv(t, envOpts{Shared: another(), Web: web.Config{}})
	ca, cb := oaiClient(a), oaiClient(b)
	const want = "one two three four"

	p := responses.ResponseNewParams{Model: "sim-1", Background: openai.Bool(true),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("shared response")}}
	r, err := ca.Responses.New(oaiCtx(t), p)
	if err != nil {
		t.Fatal(err)
	}

	// While running on A (its upstream waits for release after two
	// deltas): B resumes after the first delta (sequence number 4).
	s := cb.Responses.GetStreaming(oaiCtx(t), r.ID, responses.ResponseGetParams{StartingAfter: openai.Int(4)})
	var live []respEvent
	for s.Next() {
		ev := s.Current()
		if ev.Type == "keepalive" {
			continue
		}
		live = append(live, respEvent{Type: ev.Type, Seq: ev.SequenceNumber, Raw: ev.RawJSON(), ev: ev})
		if len(live) == 1 {
			if ev.Type != "response.output_text.delta" || ev.SequenceNumber != 5 || ev.Delta.OfString != "two " {
				t.Fatalf("first event on B after 4: %s", ev.RawJSON())
			}
			if st := a.Orch.GetAny(r.ID).Status(); st != orchestrator.StatusRunning {
				t.Fatalf("A's task is %s while B follows it", st)
			}
			close(up.release)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	text, final := respCheck(t, live, 5, "response.completed")
	if text != "two three four" || final.OutputText() != want {
		t.Fatalf("B live after 4: %q, final %q", text, final.OutputText())
	}

	// After completion: the whole stream on B is A's, event for event,
	// and every resume on B is its rest.
	a.waitFinal(r.ID)
	whole, err := respRead(t, ca.Responses.GetStreaming(oaiCtx(t), r.ID, responses.ResponseGetParams{}), nil)
	if err != nil {
		t.Fatal(err)
	}
	respCheck(t, whole, 0, "response.completed")
	for _, after := range []int{0, 3, 5, 8, 10} {
		rest, err := respRead(t, cb.Responses.GetStreaming(oaiCtx(t), r.ID, responses.ResponseGetParams{StartingAfter: openai.Int(int64(after))}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(rest) != len(whole)-after-1 {
			t.Fatalf("B after %d: %d events, want %d", after, len(rest), len(whole)-after-1)
		}
		for i := range rest {
			if rest[i].Raw != whole[after+1+i].Raw {
				t.Fatalf("B after %d, event %d: %s\nwant %s", after, i, rest[i].Raw, whole[after+1+i].Raw)
			}
		}
	}
	g, err := cb.Responses.Get(oaiCtx(t), r.ID, responses.ResponseGetParams{})
	if err != nil || g.Status != "completed" || g.OutputText() != want {
		t.Fatalf("GET on B: %v %s", err, g.RawJSON())
	}
	if n := b.Up.Requests(); n != 0 {
		t.Fatalf("B called its own upstream %d times", n)
	}
}

// TestResponsesKeepAlivesAndFailures: openai-go reads keep-alive events
// (they repeat the last sequence number and are not part of the
// sequence); a failure before any output is an HTTP error the SDK
// raises, streamed or not.
func TestResponsesKeepAlivesAndFailures(t *testing.T) {
	t.Run("keep-alives", func(t *testing.T) {
		want := []string{"Dock 4", " is", " free", " after", " 14:00."}
		up := gatedUpstream{chunks: want, gate: make(chan error, 1)}
		e := newEnv(t, envOpts{
			Upstream: up, NoCache: true,
			Orch: orchestrator.Config{TTFTTimeout: time.Minute},
			Web:  web.Config{Conn: stream.ConnConfig{Heartbeat: time.Millisecond}},
		})
		c := oaiClient(e)
		s := c.Responses.NewStreaming(oaiCtx(t), respParams("when is dock 4 free?"))
		defer s.Close()
		var evs []respEvent
		keepAlives := 0
		for s.Next() {
			ev := s.Current()
			if ev.Type == "keepalive" {
				keepAlives++
				if ev.SequenceNumber != int64(len(evs)-1) {
					t.Fatalf("keep-alive after %d events has sequence_number %d", len(evs), ev.SequenceNumber)
				}
				if keepAlives == 20 {
					up.gate <- nil
				}
				continue
			}
			evs = append(evs, respEvent{Type: ev.Type, Seq: ev.SequenceNumber, Raw: ev.RawJSON(), ev: ev})
		}
		if err := s.Err(); err != nil {
			t.Fatal(err)
		}
		if text, _ := respCheck(t, evs, 0, "response.completed"); text != strings.Join(want, "") || keepAlives < 20 {
			t.Fatalf("text %q after %d keep-alives", text, keepAlives)
		}
	})

	t.Run("failure before any output", func(t *testing.T) {
		e := newEnv(t, envOpts{})
		e.Up.SetScript(upstreamtest.Script{Status: http.StatusBadRequest})
		c := oaiClient(e)
		check := func(err error, what string) {
			t.Helper()
			var ae *openai.Error
			if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadGateway || ae.Code != orchestrator.CodeUpstreamError {
				t.Fatalf("%s: %v", what, err)
			}
		}
		_, err := c.Responses.New(oaiCtx(t), respParams("fails"))
		check(err, "not streamed")
		_, err = respRead(t, c.Responses.NewStreaming(oaiCtx(t), respParams("fails, streamed")), nil)
		check(err, "streamed")
		// Retrieved later, it is a failed response whose stream ends with
		// response.failed.
		var created struct{ ID string }
		if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "fails, background"}, &created); st != http.StatusAccepted {
			t.Fatalf("POST /v1/tasks: %d", st)
		}
		e.waitFinal(created.ID)
		g, err := c.Responses.Get(oaiCtx(t), created.ID, responses.ResponseGetParams{})
		if err != nil || g.Status != "failed" || g.Error.Code != orchestrator.CodeUpstreamError {
			t.Fatalf("GET: %v %s", err, g.RawJSON())
		}
		evs, err := respRead(t, c.Responses.GetStreaming(oaiCtx(t), created.ID, responses.ResponseGetParams{}), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, final := respCheck(t, evs, 0, "response.failed"); final.Status != "failed" || final.Error.Code != orchestrator.CodeUpstreamError {
			t.Fatalf("stream of a failed response ends %s", final.RawJSON())
		}
	})
}
