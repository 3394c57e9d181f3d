package upstreamtest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

func post(t *testing.T, ctx context.Context, s *upstreamtest.Server, body string) (*http.Response, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/chat/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	return s.Client().Do(req)
}

func TestStreamedAnswerFormat(t *testing.T) {
	t.Parallel()
	s := upstreamtest.NewServer(t)
	resp, err := post(t, t.Context(), s, `{"model":"m","messages":[{"role":"user","content":"q"}],"stream":true}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	body := string(b)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("got Content-Type %q", ct)
	}
	for _, want := range []string{`"object":"chat.completion.chunk"`, `"role":"assistant"`, `"content":" streamtest"`, `"finish_reason":"stop"`, "data: [DONE]\n\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Errorf("body does not end with [DONE]:\n%s", body)
	}
	if s.Completed() != 1 || s.Requests() != 1 || s.LastRequest().Prompt() != "q" || s.LastRequest().N != 1 {
		t.Errorf("counters: completed %d, requests %d, last %+v", s.Completed(), s.Requests(), s.LastRequest())
	}
}

func TestObjectAnswer(t *testing.T) {
	t.Parallel()
	s := upstreamtest.NewServer(t)
	s.SetScript(upstreamtest.Script{Chunks: []string{"a", "b", "c"}})
	resp, err := post(t, t.Context(), s, `{"model":"m","messages":[],"max_tokens":2}`)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var obj struct {
		Object  string
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&obj); err != nil {
		t.Fatal(err)
	}
	if obj.Object != "chat.completion" || len(obj.Choices) != 1 || obj.Choices[0].Message.Content != "ab" || obj.Choices[0].FinishReason != "length" {
		t.Errorf("got %+v; expected a chat.completion with content ab, finish_reason length", obj)
	}
}

func TestHandlerNumbersRequests(t *testing.T) {
	t.Parallel()
	s := upstreamtest.NewServer(t)
	s.SetHandler(func(req upstreamtest.ChatRequest, n int) upstreamtest.Script {
		if n == 1 {
			return upstreamtest.Script{Status: http.StatusTooManyRequests, RetryAfter: "1"}
		}
		return upstreamtest.Script{}
	})
	for i, want := range []int{http.StatusTooManyRequests, http.StatusOK} {
		resp, err := post(t, t.Context(), s, `{"stream":true}`)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("request %d: got %d; expected %d", i+1, resp.StatusCode, want)
		}
		if want == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("got Retry-After %q; expected 1", resp.Header.Get("Retry-After"))
		}
	}
	if got := len(s.Received()); got != 2 {
		t.Errorf("got %d received requests; expected 2", got)
	}
}

func TestBadRequests(t *testing.T) {
	t.Parallel()
	s := upstreamtest.NewServer(t)
	resp, err := post(t, t.Context(), s, `{not json`)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("bad JSON: got %d; expected 400", resp.StatusCode)
	}
	resp, err = s.Client().Get(s.URL() + "/chat/completions")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: got %d; expected 405", resp.StatusCode)
	}
	resp, err = s.Client().Get(s.URL() + "/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /models: got %d; expected 200", resp.StatusCode)
	}
}

// TestCloseEndsStalls proves that Close does not wait for a stalled
// handler's client: the server's done channel ends every stall.
func TestCloseEndsStalls(t *testing.T) {
	t.Parallel()
	for _, sc := range []upstreamtest.Script{
		{StallBeforeHeaders: true},
		{StallAfterHeaders: true, KeepAlives: true},
		{StallAfterChunks: 1, Chunks: []string{"a", "b"}},
	} {
		s := upstreamtest.NewServer(t)
		s.SetScript(sc)
		errc := make(chan error, 1)
		go func() {
			resp, err := post(t, context.Background(), s, `{"stream":true}`)
			if err == nil {
				_, err = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			errc <- err
		}()
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		if err := s.WaitInFlight(ctx, 1); err != nil {
			t.Fatal(err)
		}
		cancel()
		began := time.Now()
		s.Close()
		if d := time.Since(began); d > time.Second {
			t.Errorf("%+v: Close took %v", sc, d)
		}
		if s.InFlight() != 0 {
			t.Errorf("%+v: %d handlers still in flight after Close", sc, s.InFlight())
		}
		select {
		case <-errc:
		case <-time.After(5 * time.Second):
			t.Fatalf("%+v: client still blocked after Close", sc)
		}
	}
}
