package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// These tests run the official OpenAI Go SDK, unchanged, against a
// running sluice (the harness env) in front of the fake upstream.

// oaiClient returns an SDK client whose base URL is sluice's /v1/.
func oaiClient(e *env, opts ...option.RequestOption) openai.Client {
	return openai.NewClient(append([]option.RequestOption{
		option.WithBaseURL(e.URL + "/v1/"), option.WithAPIKey("x"),
		option.WithMaxRetries(0), option.WithHTTPClient(e.HTTP),
		option.WithRequestTimeout(30 * time.Second),
	}, opts...)...)
}

func oaiParams(q string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "sim-1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("be brief"), openai.UserMessage(q)},
	}
}

func oaiCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// oaiStream reads a whole SDK stream: the content, the finish reasons
// seen, the usage chunk (nil without one) and the first chunk's role.
type oaiStreamed struct {
	Text, Role string
	Finish     []string
	Usage      *openai.CompletionUsage
	ID         string
	Chunks     int
}

func oaiReadStream(t *testing.T, s interface {
	Next() bool
	Current() openai.ChatCompletionChunk
	Err() error
	Close() error
}) (oaiStreamed, error) {
	t.Helper()
	defer s.Close()
	var r oaiStreamed
	for s.Next() {
		c := s.Current()
		r.Chunks++
		r.ID = c.ID
		if c.Object != "chat.completion.chunk" {
			t.Errorf("object %q", c.Object)
		}
		if len(c.Choices) == 0 {
			if c.JSON.Usage.Valid() {
				u := c.Usage
				r.Usage = &u
			}
			continue
		}
		ch := c.Choices[0]
		if ch.Delta.Role != "" {
			r.Role = ch.Delta.Role
		}
		r.Text += ch.Delta.Content
		if ch.FinishReason != "" {
			r.Finish = append(r.Finish, ch.FinishReason)
		}
	}
	return r, s.Err()
}

func TestOpenAISDKNonStreaming(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"Zone A", " holds", " 42 units", " of SKU-10234."}})
	c := oaiClient(e)
	var resp *http.Response
	cc, err := c.Chat.Completions.New(oaiCtx(t), oaiParams("how many SKU-10234 in zone A?"), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	id := resp.Header.Get("X-Task-Id")
	if id == "" || cc.ID != "chatcmpl-"+id {
		t.Fatalf("id %q, X-Task-Id %q", cc.ID, id)
	}
	if got := resp.Header.Get("X-Cache"); got != "MISS" {
		t.Errorf("X-Cache %q, want MISS", got)
	}
	if cc.Object != "chat.completion" || cc.Model != "sim-1" || cc.Created == 0 {
		t.Errorf("object %q model %q created %d", cc.Object, cc.Model, cc.Created)
	}
	if len(cc.Choices) != 1 {
		t.Fatalf("%d choices", len(cc.Choices))
	}
	ch := cc.Choices[0]
	if want := "Zone A holds 42 units of SKU-10234."; ch.Message.Content != want {
		t.Errorf("content %q, want %q", ch.Message.Content, want)
	}
	if ch.Message.Role != "assistant" || ch.FinishReason != "stop" {
		t.Errorf("role %q finish %q", ch.Message.Role, ch.FinishReason)
	}
	if cc.Usage.CompletionTokens != 4 || cc.Usage.TotalTokens != cc.Usage.PromptTokens+4 {
		t.Errorf("usage %+v", cc.Usage)
	}
	// The task API sees the same task and text.
	v := e.waitFinal(id)
	if v.Text != ch.Message.Content || v.Status != orchestrator.StatusDone {
		t.Errorf("task %+v", v)
	}
	// The upstream got the conversation.
	if got := e.Up.LastRequest().Messages; len(got) != 2 || got[1].Content != "how many SKU-10234 in zone A?" {
		t.Errorf("upstream messages %+v", got)
	}

	// The same question again is a cache hit with the same answer.
	cc2, err := c.Chat.Completions.New(oaiCtx(t), oaiParams("how many SKU-10234 in zone A?"), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Cache") != "HIT" || resp.Header.Get("X-Cache-Kind") != "exact" {
		t.Errorf("second call: X-Cache %q kind %q", resp.Header.Get("X-Cache"), resp.Header.Get("X-Cache-Kind"))
	}
	if cc2.Choices[0].Message.Content != ch.Message.Content || e.Up.Requests() != 1 {
		t.Errorf("hit: %q, upstream requests %d", cc2.Choices[0].Message.Content, e.Up.Requests())
	}
}

func TestOpenAISDKStreaming(t *testing.T) {
	want := []string{"Pick", " list", ":", " aisle 3,", " shelf 4", ", bin 12", "."}
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: want, TTFT: 20 * time.Millisecond, Gap: 5 * time.Millisecond})
	c := oaiClient(e)

	p := oaiParams("where is order 77?")
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	p.MaxTokens = openai.Int(100)
	var resp *http.Response
	r, err := oaiReadStream(t, c.Chat.Completions.NewStreaming(oaiCtx(t), p, option.WithResponseInto(&resp)))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Header.Get("Content-Type"); got != "text/event-stream" {
		t.Errorf("content type %q", got)
	}
	if r.Text != strings.Join(want, "") {
		t.Errorf("text %q, want %q", r.Text, strings.Join(want, ""))
	}
	if r.Role != "assistant" || len(r.Finish) != 1 || r.Finish[0] != "stop" {
		t.Errorf("role %q finish %v", r.Role, r.Finish)
	}
	// role chunk + one per delta + finish chunk + usage chunk.
	if r.Chunks != len(want)+3 {
		t.Errorf("%d chunks, want %d", r.Chunks, len(want)+3)
	}
	if r.Usage == nil || r.Usage.CompletionTokens != int64(len(want)) {
		t.Errorf("usage %+v", r.Usage)
	}
	id := resp.Header.Get("X-Task-Id")
	if r.ID != "chatcmpl-"+id {
		t.Errorf("chunk id %q, task %q", r.ID, id)
	}
	if v := e.waitFinal(id); v.Text != r.Text {
		t.Errorf("task text %q, streamed %q", v.Text, r.Text)
	}
	if got := e.Up.LastRequest().MaxTokens; got != 100 {
		t.Errorf("upstream max_tokens %d, want 100", got)
	}

	// A cache hit streams the same text; without include_usage there is
	// no usage chunk.
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{}
	r2, err := oaiReadStream(t, c.Chat.Completions.NewStreaming(oaiCtx(t), p, option.WithResponseInto(&resp)))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Header.Get("X-Cache") != "HIT" || r2.Text != r.Text || r2.Usage != nil {
		t.Errorf("hit: X-Cache %q text %q usage %v", resp.Header.Get("X-Cache"), r2.Text, r2.Usage)
	}
}

// TestOpenAIRawStreamFormat checks the wire format byte by byte: data
// lines only, the role chunk first, [DONE] last.
func TestOpenAIRawStreamFormat(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"a", "b"}})
	resp := e.do(oaiCtx(t), http.MethodPost, "/v1/chat/completions",
		`{"model":"sim-1","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":[{"type":"text","text":"raw?"}]}]}`)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n\n"), "\n\n")
	if len(lines) != 6 {
		t.Fatalf("%d events:\n%s", len(lines), raw)
	}
	for i, l := range lines {
		if !strings.HasPrefix(l, "data: ") {
			t.Errorf("event %d %q is not a data line", i, l)
		}
	}
	checks := []string{
		`"delta":{"role":"assistant","content":""}`, `"delta":{"content":"a"}`, `"delta":{"content":"b"}`,
		`"delta":{},"logprobs":null,"finish_reason":"stop"`, `"choices":[],"usage":{"prompt_tokens":`, `[DONE]`,
	}
	for i, c := range checks {
		if !strings.Contains(lines[i], c) {
			t.Errorf("event %d %q lacks %q", i, lines[i], c)
		}
	}
}

func TestOpenAISDKPartialAnswer(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{IdleTimeout: 150 * time.Millisecond}})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"First", " second", " third", " never"}, StallAfterChunks: 3})
	c := oaiClient(e)

	t.Run("streaming", func(t *testing.T) {
		p := oaiParams("cut me, streaming")
		var resp *http.Response
		r, err := oaiReadStream(t, c.Chat.Completions.NewStreaming(oaiCtx(t), p, option.WithResponseInto(&resp)))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(r.Text, "First second third\n\n[") || !strings.Contains(r.Text, "cut short") {
			t.Errorf("text %q", r.Text)
		}
		if len(r.Finish) != 1 || r.Finish[0] != "length" {
			t.Errorf("finish %v", r.Finish)
		}
		v := e.waitFinal(resp.Header.Get("X-Task-Id"))
		if v.Status != orchestrator.StatusPartial || v.Text != "First second third" {
			t.Errorf("task %+v", v)
		}
	})
	t.Run("non-streaming", func(t *testing.T) {
		cc, err := c.Chat.Completions.New(oaiCtx(t), oaiParams("cut me, whole"))
		if err != nil {
			t.Fatal(err)
		}
		ch := cc.Choices[0]
		if ch.FinishReason != "length" || !strings.HasPrefix(ch.Message.Content, "First second third\n\n[The answer was cut short") {
			t.Errorf("finish %q content %q", ch.FinishReason, ch.Message.Content)
		}
	})
}

// oaiAPIError asserts that err is the SDK's own *openai.Error.
func oaiAPIError(t *testing.T, err error, status int, code string) *openai.Error {
	t.Helper()
	var ae *openai.Error
	if !errors.As(err, &ae) {
		t.Fatalf("error %T %v, want *openai.Error", err, err)
	}
	if ae.StatusCode != status || ae.Code != code || ae.Message == "" {
		t.Errorf("status %d code %q message %q, want %d %q", ae.StatusCode, ae.Code, ae.Message, status, code)
	}
	return ae
}

func TestOpenAISDKOverloaded(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1, RetryAfter: 2 * time.Second}})
	e.Up.SetScript(upstreamtest.Script{StallAfterHeaders: true})
	c := oaiClient(e)
	// Hold the only slot with a stalled streaming call.
	hold, cancel := context.WithCancel(context.Background())
	defer cancel()
	// NewStreaming returns once the headers arrive, which sluice holds
	// back until the first token: run it aside.
	heldDone := make(chan struct{})
	go func() {
		defer close(heldDone)
		_ = c.Chat.Completions.NewStreaming(hold, oaiParams("hold the slot")).Close()
	}()
	if err := e.Up.WaitInFlight(oaiCtx(t), 1); err != nil {
		t.Fatal(err)
	}

	_, err := c.Chat.Completions.New(oaiCtx(t), oaiParams("one more, please"))
	ae := oaiAPIError(t, err, http.StatusServiceUnavailable, "overloaded")
	if ae.Type != "server_error" || ae.Response.Header.Get("Retry-After") != "2" {
		t.Errorf("type %q Retry-After %q", ae.Type, ae.Response.Header.Get("Retry-After"))
	}
	s := c.Chat.Completions.NewStreaming(oaiCtx(t), oaiParams("and streamed"))
	_, err = oaiReadStream(t, s)
	oaiAPIError(t, err, http.StatusServiceUnavailable, "overloaded")

	cancel()
	<-heldDone
	e.Up.Close() // end the stall so the slot is freed
	e.waitIdle()
}

func TestOpenAISDKFailuresBeforeOutput(t *testing.T) {
	for _, tc := range []struct {
		name   string
		orch   orchestrator.Config
		script upstreamtest.Script
		status int
		code   string
	}{
		{"upstream error", orchestrator.Config{RetryBackoff: time.Millisecond, BreakerMinCalls: -1}, upstreamtest.Script{Status: 500}, 502, "upstream_error"},
		{"ttft timeout", orchestrator.Config{TTFTTimeout: 100 * time.Millisecond, MaxRetries: -1}, upstreamtest.Script{StallAfterHeaders: true}, 504, "ttft_timeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOpts{Orch: tc.orch})
			e.Up.SetScript(tc.script)
			c := oaiClient(e)
			var resp *http.Response
			_, err := c.Chat.Completions.New(oaiCtx(t), oaiParams("fail whole"), option.WithResponseInto(&resp))
			ae := oaiAPIError(t, err, tc.status, tc.code)
			if id := ae.Response.Header.Get("X-Task-Id"); id == "" || e.waitFinal(id).Status != orchestrator.StatusFailed {
				t.Errorf("X-Task-Id %q", id)
			}
			_, err = oaiReadStream(t, c.Chat.Completions.NewStreaming(oaiCtx(t), oaiParams("fail streamed")))
			oaiAPIError(t, err, tc.status, tc.code)
		})
	}
}

// TestOpenAIHeartbeatBeforeFirstToken: a first token later than the
// heartbeat commits the 200 with pings; the answer is still whole, and a
// failure after that arrives in the stream as an error the SDK raises.
func TestOpenAIHeartbeatBeforeFirstToken(t *testing.T) {
	e := newEnv(t, envOpts{
		Orch: orchestrator.Config{TTFTTimeout: 300 * time.Millisecond, MaxRetries: -1},
		Web:  web.Config{Conn: stream.ConnConfig{Heartbeat: 30 * time.Millisecond}},
	})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"late", " but", " whole"}, TTFT: 150 * time.Millisecond})
	c := oaiClient(e)
	resp := e.do(oaiCtx(t), http.MethodPost, "/v1/chat/completions", `{"stream":true,"messages":[{"role":"user","content":"slow?"}]}`)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	// The role chunk, then keep-alives: chunks with empty content.
	evs := strings.Split(string(raw), "\n\n")
	keepAlive := `"delta":{"content":""},"logprobs":null,"finish_reason":null}]}`
	if resp.StatusCode != 200 || len(evs) < 3 || !strings.Contains(evs[0], `"delta":{"role":"assistant","content":""}`) ||
		!strings.HasPrefix(evs[1], "data: {") || !strings.HasSuffix(evs[1], keepAlive) ||
		!strings.HasPrefix(evs[2], "data: {") || !strings.HasSuffix(evs[2], keepAlive) ||
		!strings.HasSuffix(string(raw), "data: [DONE]\n\n") {
		t.Errorf("%d %q", resp.StatusCode, raw)
	}
	r, err := oaiReadStream(t, c.Chat.Completions.NewStreaming(oaiCtx(t), oaiParams("slow, via the SDK")))
	if err != nil || r.Text != "late but whole" {
		t.Errorf("text %q err %v", r.Text, err)
	}

	e.Up.SetScript(upstreamtest.Script{StallAfterHeaders: true})
	_, err = oaiReadStream(t, c.Chat.Completions.NewStreaming(oaiCtx(t), oaiParams("never answered")))
	if err == nil || !strings.Contains(err.Error(), "ttft_timeout") {
		t.Errorf("err %v, want an in-stream ttft_timeout error", err)
	}
}

func TestOpenAISluiceOptions(t *testing.T) {
	e := newEnv(t, envOpts{})
	c := oaiClient(e)
	var resp *http.Response
	_, err := c.Chat.Completions.New(oaiCtx(t), oaiParams("options?"), option.WithResponseInto(&resp),
		option.WithJSONSet("sluice", map[string]any{"namespace": "wms-prod", "nocache": true}))
	if err != nil {
		t.Fatal(err)
	}
	v := e.waitFinal(resp.Header.Get("X-Task-Id"))
	if resp.Header.Get("X-Cache") != "BYPASS" || v.Namespace != "wms-prod" || v.Cache.Status != "bypass" {
		t.Errorf("X-Cache %q task %+v", resp.Header.Get("X-Cache"), v)
	}
	_, err = c.Chat.Completions.New(oaiCtx(t), oaiParams("options?"), option.WithResponseInto(&resp),
		option.WithHeader("X-Sluice-Namespace", "wms-test"), option.WithHeader("X-Sluice-NoCache", "true"))
	if err != nil {
		t.Fatal(err)
	}
	v = e.waitFinal(resp.Header.Get("X-Task-Id"))
	if resp.Header.Get("X-Cache") != "BYPASS" || v.Namespace != "wms-test" {
		t.Errorf("X-Cache %q task %+v", resp.Header.Get("X-Cache"), v)
	}
	_, err = c.Chat.Completions.New(oaiCtx(t), oaiParams("options?"), option.WithHeader("X-Sluice-Namespace", "bad namespace!"))
	oaiAPIError(t, err, http.StatusBadRequest, "invalid_request")
}

func TestOpenAIModelsAndBadInput(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{MaxBody: 4096}})
	c := oaiClient(e)
	page, err := c.Models.List(oaiCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "sim-1" || page.Data[0].OwnedBy != "sluice" || page.Data[0].Object != "model" {
		t.Errorf("models %+v", page.Data)
	}

	_, err = c.Chat.Completions.New(oaiCtx(t), openai.ChatCompletionNewParams{Model: "sim-1", Messages: []openai.ChatCompletionMessageParamUnion{}})
	oaiAPIError(t, err, http.StatusBadRequest, "invalid_request")
	_, err = c.Chat.Completions.New(oaiCtx(t), oaiParams(strings.Repeat("x", 5000)))
	oaiAPIError(t, err, http.StatusRequestEntityTooLarge, "payload_too_large")

	for _, tc := range []struct {
		body, ct string
		status   int
		code     string
	}{
		{`{"messages":[{"role":"user","content":"hi"}],"n":2}`, "application/json", 400, "invalid_request"},
		{`{"messages":"hi"}`, "application/json", 400, "invalid_request"},
		{`{"model":"sim-1"}`, "application/json", 400, "invalid_request"},
		{`{"messages":[{"role":"user","content":"hi"}],"stream":"yes"}`, "application/json", 400, "invalid_request"},
		{`{"messages":[{"role":"user","content":"hi"}]`, "application/json", 400, "invalid_request"},
		{`messages=hi`, "text/plain", 415, "unsupported_media_type"},
	} {
		var out struct {
			Error struct{ Message, Type, Code string } `json:"error"`
		}
		st, _ := e.doJSON(http.MethodPost, "/v1/chat/completions", tc.body, &out, "Content-Type", tc.ct)
		if st != tc.status || out.Error.Code != tc.code || out.Error.Type != "invalid_request_error" || out.Error.Message == "" {
			t.Errorf("%s: %d %+v, want %d %s", tc.body, st, out, tc.status, tc.code)
		}
	}
}

func TestOpenAIAuth(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{APIKeys: map[string]string{"k1": "tenantA"}}})
	anon := oaiClient(e)
	_, err := anon.Chat.Completions.New(oaiCtx(t), oaiParams("who am I?"))
	oaiAPIError(t, err, http.StatusUnauthorized, "unauthorized")
	_, err = anon.Models.List(oaiCtx(t))
	oaiAPIError(t, err, http.StatusUnauthorized, "unauthorized")

	var resp *http.Response
	keyed := oaiClient(e, option.WithAPIKey("k1"))
	cc, err := keyed.Chat.Completions.New(oaiCtx(t), oaiParams("who am I?"), option.WithResponseInto(&resp))
	if err != nil {
		t.Fatal(err)
	}
	if cc.Choices[0].Message.Content != strings.Join(upstreamtest.DefaultChunks, "") {
		t.Errorf("content %q", cc.Choices[0].Message.Content)
	}
	if tk := e.Orch.GetAny(resp.Header.Get("X-Task-Id")); tk == nil || tk.Tenant != "tenantA" {
		t.Errorf("task %+v", tk)
	}
}

func TestOpenAISDKCircuitOpen(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{MaxRetries: -1, BreakerMinCalls: 1, BreakerCoolDown: time.Minute}})
	e.Up.SetScript(upstreamtest.Script{Status: 500})
	c := oaiClient(e)
	_, err := c.Chat.Completions.New(oaiCtx(t), oaiParams("break it"))
	oaiAPIError(t, err, http.StatusBadGateway, "upstream_error")
	_, err = c.Chat.Completions.New(oaiCtx(t), oaiParams("and again"))
	ae := oaiAPIError(t, err, http.StatusServiceUnavailable, "upstream_unavailable")
	if ae.Response.Header.Get("Retry-After") == "" {
		t.Error("no Retry-After")
	}
	_, err = oaiReadStream(t, c.Chat.Completions.NewStreaming(oaiCtx(t), oaiParams("streamed")))
	oaiAPIError(t, err, http.StatusServiceUnavailable, "upstream_unavailable")
}
