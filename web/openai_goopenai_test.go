package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/web"
)

// These tests run github.com/sashabaranov/go-openai, the most used
// community Go client, unchanged, against a running sluice. Its stream
// reader counts every line that is not a data line as an empty message
// (300 of them in a row are an error) and glues such lines to a
// following {"error": ...}, which then does not parse: keep-alives must
// be chunks, not SSE comments.

// gatedUpstream holds every answer until the test sends on gate: nil
// streams chunks, an error fails the attempt with it.
type gatedUpstream struct {
	chunks []string
	gate   chan error
}

func (gatedUpstream) Name() string { return "gated" }

func (g gatedUpstream) Stream(ctx context.Context, _ upstream.Request, out chan<- upstream.Chunk) error {
	select {
	case err := <-g.gate:
		if err != nil {
			return err
		}
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, c := range g.chunks {
		select {
		case out <- upstream.Chunk{Text: c}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// goOpenAI returns a go-openai client whose base URL is sluice's /v1.
func goOpenAI(e *env) *goopenai.Client {
	cfg := goopenai.DefaultConfig("x")
	cfg.BaseURL = e.URL + "/v1"
	cfg.HTTPClient = e.HTTP
	return goopenai.NewClientWithConfig(cfg)
}

func goOpenAIRequest(q string) goopenai.ChatCompletionRequest {
	return goopenai.ChatCompletionRequest{
		Model:    "sim-1",
		Messages: []goopenai.ChatCompletionMessage{{Role: goopenai.ChatMessageRoleUser, Content: q}},
		Stream:   true,
	}
}

// goOpenAIRead reads a go-openai stream to its end. After keepAlives
// keep-alive chunks (empty content, no role, no finish reason) it sends
// release on gate. It returns the content, the finish reasons, the
// keep-alives seen and the error that ended the stream (nil at [DONE]).
func goOpenAIRead(ctx context.Context, t *testing.T, s *goopenai.ChatCompletionStream, keepAlives int, gate chan<- error, release error) (text string, finish []string, seen int, err error) {
	t.Helper()
	defer s.Close()
	for {
		ch, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return text, finish, seen, nil
		}
		if err != nil {
			return text, finish, seen, err
		}
		if len(ch.Choices) != 1 {
			t.Fatalf("chunk with %d choices: %+v", len(ch.Choices), ch)
		}
		c := ch.Choices[0]
		text += c.Delta.Content
		if c.FinishReason != "" {
			finish = append(finish, string(c.FinishReason))
		}
		if c.Delta.Content == "" && c.Delta.Role == "" && c.FinishReason == "" {
			seen++
			if seen == keepAlives {
				select {
				case gate <- release:
				case <-ctx.Done():
					t.Fatalf("the upstream never took the gate: %v", ctx.Err())
				}
			}
		}
	}
}

// TestGoOpenAIReadsKeepAlives: more keep-alives than go-openai accepts
// empty messages in a row (300), then the answer: the client reads it
// whole.
func TestGoOpenAIReadsKeepAlives(t *testing.T) {
	want := []string{"Dock 4", " is", " free", " after", " 14:00."}
	up := gatedUpstream{chunks: want, gate: make(chan error, 1)}
	e := newEnv(t, envOpts{
		Upstream: up, NoCache: true,
		Orch: orchestrator.Config{TTFTTimeout: time.Minute},
		Web:  web.Config{Conn: stream.ConnConfig{Heartbeat: time.Millisecond}},
	})
	ctx := oaiCtx(t)
	s, err := goOpenAI(e).CreateChatCompletionStream(ctx, goOpenAIRequest("when is dock 4 free?"))
	if err != nil {
		t.Fatal(err)
	}
	const keepAlives = 301
	text, finish, seen, err := goOpenAIRead(ctx, t, s, keepAlives, up.gate, nil)
	if err != nil {
		t.Fatalf("after %d keep-alives: %v", seen, err)
	}
	if text != strings.Join(want, "") || len(finish) != 1 || finish[0] != "stop" {
		t.Errorf("text %q finish %v, want %q [stop]", text, finish, strings.Join(want, ""))
	}
	if seen < keepAlives {
		t.Errorf("%d keep-alives, want >= %d", seen, keepAlives)
	}
	e.waitIdle()
}

// TestGoOpenAIErrorAfterKeepAlives: a task that fails after keep-alives
// committed the 200 ends the stream with an in-stream error, which
// go-openai raises as its *APIError (before keep-alives were chunks, it
// reported "unexpected end of JSON input"). A failure before any byte is
// an HTTP error status.
func TestGoOpenAIErrorAfterKeepAlives(t *testing.T) {
	orch := orchestrator.Config{TTFTTimeout: time.Minute, MaxRetries: -1, BreakerMinCalls: -1}
	t.Run("after keep-alives", func(t *testing.T) {
		up := gatedUpstream{gate: make(chan error, 1)}
		e := newEnv(t, envOpts{Upstream: up, NoCache: true, Orch: orch,
			Web: web.Config{Conn: stream.ConnConfig{Heartbeat: 5 * time.Millisecond}}})
		ctx := oaiCtx(t)
		s, err := goOpenAI(e).CreateChatCompletionStream(ctx, goOpenAIRequest("fail late"))
		if err != nil {
			t.Fatal(err)
		}
		_, _, seen, err := goOpenAIRead(ctx, t, s, 5, up.gate, &upstream.StatusError{Code: 500, Body: "boom"})
		var ae *goopenai.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("after %d keep-alives: error %T %v, want *openai.APIError", seen, err, err)
		}
		if ae.Code != "upstream_error" || ae.Type != "server_error" || ae.Message == "" {
			t.Errorf("error %+v", ae)
		}
		e.waitIdle()
	})
	t.Run("before any byte", func(t *testing.T) {
		up := gatedUpstream{gate: make(chan error, 1)}
		up.gate <- &upstream.StatusError{Code: 500, Body: "boom"}
		e := newEnv(t, envOpts{Upstream: up, NoCache: true, Orch: orch})
		_, err := goOpenAI(e).CreateChatCompletionStream(oaiCtx(t), goOpenAIRequest("fail early"))
		var ae *goopenai.APIError
		if !errors.As(err, &ae) {
			t.Fatalf("error %T %v, want *openai.APIError", err, err)
		}
		if ae.HTTPStatusCode != http.StatusBadGateway || ae.Code != "upstream_error" {
			t.Errorf("status %d code %v, want 502 upstream_error", ae.HTTPStatusCode, ae.Code)
		}
		e.waitIdle()
	})
}
