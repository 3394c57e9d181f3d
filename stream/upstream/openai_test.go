package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// promptly bounds how long Stream may take to return after its context is
// cancelled.
const promptly = time.Second

var (
	_ upstream.Upstream = (*upstream.OpenAI)(nil)
	_ upstream.Upstream = (*upstream.Sim)(nil)
)

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func newOpenAI(t *testing.T, baseURL, key string) *upstream.OpenAI {
	t.Helper()
	o, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: baseURL, APIKey: key})
	if err != nil {
		t.Fatalf("NewOpenAI(%q): %v", baseURL, err)
	}
	return o
}

func ask(prompt string) upstream.Request {
	return upstream.Request{Model: "m-1", Messages: []upstream.Message{{Role: "user", Content: prompt}}}
}

// running is a Stream call in progress on its own goroutine.
type running struct {
	out  chan upstream.Chunk
	errc chan error
}

func start(ctx context.Context, up upstream.Upstream, req upstream.Request) *running {
	r := &running{out: make(chan upstream.Chunk), errc: make(chan error, 1)}
	go func() { r.errc <- up.Stream(ctx, req, r.out) }()
	return r
}

// next receives one chunk, failing the test if Stream returns first.
func (r *running) next(t *testing.T) string {
	t.Helper()
	select {
	case c := <-r.out:
		return c.Text
	case err := <-r.errc:
		t.Fatalf("Stream returned %v before the expected chunk", err)
	case <-time.After(10 * time.Second):
		t.Fatal("no chunk within 10s")
	}
	return ""
}

// rest collects chunks until Stream returns. out is unbuffered, so every
// chunk sent has been received when the error arrives. It is safe to call
// from any goroutine.
func (r *running) rest(t *testing.T) ([]string, error) {
	t.Helper()
	var got []string
	for {
		select {
		case c := <-r.out:
			if c.Text == "" {
				t.Error("Stream sent an empty chunk")
			}
			got = append(got, c.Text)
		case err := <-r.errc:
			return got, err
		case <-time.After(10 * time.Second):
			// Not t.Fatal: rest may run on a goroutine of the test's.
			return got, errors.New("test: Stream did not return within 10s")
		}
	}
}

// returnsWithin waits for Stream's result for at most d.
func (r *running) returnsWithin(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case err := <-r.errc:
		return err
	case <-time.After(d):
		t.Fatalf("Stream did not return within %v of the cancel", d)
	}
	return nil
}

func collect(t *testing.T, ctx context.Context, up upstream.Upstream, req upstream.Request) ([]string, error) {
	t.Helper()
	return start(ctx, up, req).rest(t)
}

func TestOpenAIRelaysExactText(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	chunks := []string{"Héllo", ",", " wörld", " 🌍", "\n", "  ", `"quoted"`, "\ttab", "data: fake\n\n", "[DONE]", " <b>&amp;</b>", "\\", "end."}
	srv.SetScript(upstreamtest.Script{Chunks: chunks})
	o := newOpenAI(t, srv.URL(), "sk-test")

	req := upstream.Request{
		Model:     "m-1",
		Messages:  []upstream.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}},
		MaxTokens: 100,
	}
	got, err := collect(t, testCtx(t), o, req)
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if !reflect.DeepEqual(got, chunks) {
		t.Errorf("got chunks %q; expected %q", got, chunks)
	}

	last := srv.LastRequest()
	if last.Model != "m-1" || !last.Stream || last.MaxTokens != 100 {
		t.Errorf("got request model=%q stream=%v max_tokens=%d; expected m-1, true, 100", last.Model, last.Stream, last.MaxTokens)
	}
	wantMsgs := []upstreamtest.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hi"}}
	if !reflect.DeepEqual(last.Messages, wantMsgs) {
		t.Errorf("got messages %+v; expected %+v", last.Messages, wantMsgs)
	}
	if h := last.Header.Get("Authorization"); h != "Bearer sk-test" {
		t.Errorf("got Authorization %q; expected %q", h, "Bearer sk-test")
	}
	if h := last.Header.Get("Accept"); h != "text/event-stream" {
		t.Errorf("got Accept %q; expected text/event-stream", h)
	}
	if h := last.Header.Get("Content-Type"); h != "application/json" {
		t.Errorf("got Content-Type %q; expected application/json", h)
	}
	if n := srv.Completed(); n != 1 {
		t.Errorf("server completed %d answers; expected 1", n)
	}
}

func TestOpenAINoKeyNoAuthorization(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	o := newOpenAI(t, srv.URL(), "")
	got, err := collect(t, testCtx(t), o, ask("hi"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if want := upstreamtest.DefaultChunks; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q; expected %q", got, want)
	}
	if h, ok := srv.LastRequest().Header["Authorization"]; ok {
		t.Errorf("got Authorization %q; expected none", h)
	}
	if mt := srv.LastRequest().MaxTokens; mt != 0 {
		t.Errorf("got max_tokens %d; expected it omitted", mt)
	}
}

// TestOpenAIMaxTokensCut: an answer the upstream ends with finish_reason
// "length" is whole as far as it goes and reported as ErrLength.
func TestOpenAIMaxTokensCut(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	srv.SetScript(upstreamtest.Script{Chunks: []string{"a", "b", "c", "d"}})
	o := newOpenAI(t, srv.URL(), "")
	req := ask("hi")
	req.MaxTokens = 2
	got, err := collect(t, testCtx(t), o, req)
	if !errors.Is(err, upstream.ErrLength) || !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("got %q, %v; expected [a b], ErrLength", got, err)
	}
}

func TestOpenAIDropsKeepAlives(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	chunks := []string{"one", " two", " three"}
	srv.SetScript(upstreamtest.Script{
		Chunks:            chunks,
		TTFT:              50 * time.Millisecond,
		Gap:               20 * time.Millisecond,
		KeepAlives:        true,
		KeepAliveInterval: 2 * time.Millisecond,
	})
	o := newOpenAI(t, srv.URL(), "")
	got, err := collect(t, testCtx(t), o, ask("hi"))
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if !reflect.DeepEqual(got, chunks) {
		t.Errorf("got %q; expected %q (keep-alives must not become chunks)", got, chunks)
	}
	if srv.KeepAlivesSent() < 2 {
		t.Errorf("server sent %d keep-alives; the test needs at least a comment and an empty chunk", srv.KeepAlivesSent())
	}
}

func TestOpenAIStatusErrors(t *testing.T) {
	t.Parallel()
	date := time.Now().Add(30 * time.Second).UTC().Format(http.TimeFormat)
	tests := []struct {
		name       string
		status     int
		retryAfter string
		min, max   time.Duration
	}{
		{"429 seconds", http.StatusTooManyRequests, "7", 7 * time.Second, 7 * time.Second},
		{"429 date", http.StatusTooManyRequests, date, 25 * time.Second, 31 * time.Second},
		{"429 garbage", http.StatusTooManyRequests, "soon", 0, 0},
		{"503", http.StatusServiceUnavailable, "", 0, 0},
		{"401", http.StatusUnauthorized, "", 0, 0},
		{"500 retry", http.StatusInternalServerError, "2", 2 * time.Second, 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := upstreamtest.NewServer(t)
			srv.SetScript(upstreamtest.Script{Status: tt.status, RetryAfter: tt.retryAfter})
			o := newOpenAI(t, srv.URL(), "")
			got, err := collect(t, testCtx(t), o, ask("hi"))
			if len(got) != 0 {
				t.Errorf("got chunks %q; expected none", got)
			}
			var se *upstream.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("got %v (%T); expected *upstream.StatusError", err, err)
			}
			if se.Code != tt.status {
				t.Errorf("got Code %d; expected %d", se.Code, tt.status)
			}
			if se.RetryAfter < tt.min || se.RetryAfter > tt.max {
				t.Errorf("got RetryAfter %v; expected within [%v, %v]", se.RetryAfter, tt.min, tt.max)
			}
			if !strings.Contains(se.Body, "scripted") {
				t.Errorf("got Body %q; expected the error JSON", se.Body)
			}
		})
	}
}

func TestOpenAIStatusErrorBodyIsBounded(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After-Ms", "1500")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, strings.Repeat("x", 10_000))
	}))
	t.Cleanup(ts.Close)
	_, err := collect(t, testCtx(t), newOpenAI(t, ts.URL, ""), ask("hi"))
	var se *upstream.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("got %v; expected *upstream.StatusError", err)
	}
	if len(se.Body) != 512 || se.RetryAfter != 1500*time.Millisecond {
		t.Errorf("got body of %d bytes, RetryAfter %v; expected 512 bytes, 1.5s", len(se.Body), se.RetryAfter)
	}
}

func TestOpenAIDropMidStreamIsTruncated(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	srv.SetScript(upstreamtest.Script{Chunks: []string{"a", "b", "c", "d", "e"}, DropAfterChunks: 3})
	o := newOpenAI(t, srv.URL(), "")
	got, err := collect(t, testCtx(t), o, ask("hi"))
	if !errors.Is(err, upstream.ErrTruncated) {
		t.Errorf("got error %v; expected ErrTruncated", err)
	}
	var ce *upstream.ConnectError
	if errors.As(err, &ce) {
		t.Errorf("got a ConnectError %v after output; expected only ErrTruncated", err)
	}
	if want := []string{"a", "b", "c"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q; expected %q", got, want)
	}
}

func TestOpenAINoDoneAfterFinishReasonIsComplete(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	chunks := []string{"x", "y"}
	srv.SetScript(upstreamtest.Script{Chunks: chunks, NoDone: true})
	o := newOpenAI(t, srv.URL(), "")
	got, err := collect(t, testCtx(t), o, ask("hi"))
	if err != nil || !reflect.DeepEqual(got, chunks) {
		t.Errorf("got %q, %v; expected %q, nil", got, err, chunks)
	}
}

func TestOpenAIStreamErrorObject(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	srv.SetScript(upstreamtest.Script{Chunks: []string{"par", "tial"}, StreamError: "model overloaded"})
	o := newOpenAI(t, srv.URL(), "")
	got, err := collect(t, testCtx(t), o, ask("hi"))
	var ae *upstream.APIError
	if !errors.As(err, &ae) || ae.Message != "model overloaded" || ae.Type != "server_error" {
		t.Fatalf("got %v; expected an *APIError with the server's message and type", err)
	}
	if !errors.Is(err, upstream.ErrTruncated) {
		t.Errorf("got %v; expected it to be ErrTruncated too", err)
	}
	if want := []string{"par", "tial"}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %q; expected %q", got, want)
	}
}

// TestOpenAIParsesRawBodies feeds the client hand-written bodies, to pin
// down its SSE and JSON parsing at the edges.
func TestOpenAIParsesRawBodies(t *testing.T) {
	t.Parallel()
	chunk := func(content string) string {
		return fmt.Sprintf(`{"object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, content)
	}
	const finish = `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
	big := strings.Repeat("é", 100_000) // 200 KB, over go-sse's 64 KB default.
	tests := []struct {
		name        string
		contentType string
		body        string
		want        []string
		wantErr     error // nil, ErrTruncated, or a sentinel
		wantAPI     bool
	}{
		{
			name: "finish then EOF",
			body: "data: " + chunk("a") + "\n\ndata: " + chunk("b") + "\n\ndata: " + finish + "\n\n",
			want: []string{"a", "b"},
		},
		{
			name:    "clean EOF without finish",
			body:    "data: " + chunk("a") + "\n\n",
			want:    []string{"a"},
			wantErr: upstream.ErrTruncated,
		},
		{
			name:    "DONE without its blank line is not dispatched",
			body:    "data: " + chunk("a") + "\n\ndata: [DONE]",
			want:    []string{"a"},
			wantErr: upstream.ErrTruncated,
		},
		{
			name: "CRLF, comments, ids, event names, role and null content",
			body: ": hello\r\n\r\nid: 1\r\ndata: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":null}}]}\r\n\r\n" +
				"event: message\r\nid: 2\r\ndata: " + chunk("a") + "\r\n\r\n: ping\r\n\r\ndata:" + chunk("b") + "\r\n\r\ndata: [DONE]\r\n\r\n",
			want: []string{"a", "b"},
		},
		{
			name: "JSON split over data lines",
			body: "data: {\"choices\":\ndata: [{\"delta\":{\"content\":\"joined\"}}]}\n\ndata: [DONE]\n\n",
			want: []string{"joined"},
		},
		{
			name: "usage chunk without choices, empty data, content with finish",
			body: "data:\n\ndata: {\"choices\":[],\"usage\":{\"total_tokens\":3}}\n\n" +
				"data: {\"choices\":[{\"delta\":{\"content\":\"last\"},\"finish_reason\":\"length\"}]}\n\n",
			want:    []string{"last"},
			wantErr: upstream.ErrLength,
		},
		{
			name: "event larger than 64 KB",
			body: "data: " + chunk(big) + "\n\ndata: [DONE]\n\n",
			want: []string{big},
		},
		{
			name:    "malformed JSON",
			body:    "data: " + chunk("a") + "\n\ndata: {not json\n\n",
			want:    []string{"a"},
			wantErr: upstream.ErrTruncated,
		},
		{
			name:    "error object with numeric code",
			body:    "data: " + chunk("a") + "\n\ndata: {\"error\":{\"message\":\"boom\",\"code\":500}}\n\n",
			want:    []string{"a"},
			wantErr: upstream.ErrTruncated,
			wantAPI: true,
		},
		{
			name:    "error event with plain data",
			body:    "event: error\ndata: upstream exploded\n\n",
			wantErr: upstream.ErrTruncated,
			wantAPI: true,
		},
		{
			name:        "JSON object instead of a stream",
			contentType: "application/json; charset=utf-8",
			body:        `{"object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"whole"},"finish_reason":"stop"}]}`,
			want:        []string{"whole"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				ct := tt.contentType
				if ct == "" {
					ct = "text/event-stream"
				}
				w.Header().Set("Content-Type", ct)
				_, _ = io.WriteString(w, tt.body)
			}))
			t.Cleanup(ts.Close)
			got, err := collect(t, testCtx(t), newOpenAI(t, ts.URL+"/v1", ""), ask("hi"))
			if tt.wantErr == nil && err != nil {
				t.Errorf("got error %v; expected nil", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("got error %v; expected %v", err, tt.wantErr)
			}
			var ae *upstream.APIError
			if errors.As(err, &ae) != tt.wantAPI {
				t.Errorf("got error %v; expected an *APIError: %v", err, tt.wantAPI)
			}
			if !reflect.DeepEqual(got, tt.want) && (len(got) != 0 || len(tt.want) != 0) {
				t.Errorf("got %d chunks %.80q; expected %d chunks %.80q", len(got), got, len(tt.want), tt.want)
			}
		})
	}
}

func TestOpenAICancelWhileStalled(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script upstreamtest.Script
		// ready waits until the client is in the phase under test, and
		// returns the chunks received so far.
		ready func(t *testing.T, srv *upstreamtest.Server, r *running) []string
	}{
		{
			name:   "before headers",
			script: upstreamtest.Script{StallBeforeHeaders: true},
			ready: func(t *testing.T, srv *upstreamtest.Server, _ *running) []string {
				t.Helper()
				if err := srv.WaitInFlight(testCtx(t), 1); err != nil {
					t.Fatal(err)
				}
				return nil
			},
		},
		{
			name:   "after headers",
			script: upstreamtest.Script{StallAfterHeaders: true},
			ready: func(t *testing.T, srv *upstreamtest.Server, _ *running) []string {
				t.Helper()
				if err := srv.WaitInFlight(testCtx(t), 1); err != nil {
					t.Fatal(err)
				}
				return nil
			},
		},
		{
			name:   "after headers with keep-alives",
			script: upstreamtest.Script{StallAfterHeaders: true, KeepAlives: true, KeepAliveInterval: time.Millisecond},
			ready: func(t *testing.T, srv *upstreamtest.Server, _ *running) []string {
				t.Helper()
				// Keep-alives flowing means the client is reading the body.
				if err := srv.Wait(testCtx(t), func(s *upstreamtest.Server) bool { return s.KeepAlivesSent() >= 4 }); err != nil {
					t.Fatal(err)
				}
				return nil
			},
		},
		{
			name:   "after chunks",
			script: upstreamtest.Script{Chunks: []string{"a", "b", "c"}, StallAfterChunks: 2},
			ready: func(t *testing.T, _ *upstreamtest.Server, r *running) []string {
				t.Helper()
				return []string{r.next(t), r.next(t)}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := upstreamtest.NewServer(t)
			srv.SetScript(tt.script)
			o := newOpenAI(t, srv.URL(), "")
			ctx, cancel := context.WithCancel(testCtx(t))
			defer cancel()
			r := start(ctx, o, ask("hi"))
			before := tt.ready(t, srv, r)

			began := time.Now()
			cancel()
			err := r.returnsWithin(t, promptly)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("got %v; expected context.Canceled", err)
			}
			t.Logf("returned %v after the cancel (%d chunks before)", time.Since(began), len(before))
			// The server notices the client leaving and ends the handler.
			if err := srv.WaitIdle(testCtx(t)); err != nil {
				t.Errorf("server handler still running after the client left: %v", err)
			}
		})
	}
}

func TestOpenAIDeadlineWhileStalled(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	srv.SetScript(upstreamtest.Script{StallBeforeHeaders: true})
	o := newOpenAI(t, srv.URL(), "")
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	_, err := collect(t, ctx, o, ask("hi"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("got %v; expected context.DeadlineExceeded", err)
	}
}

func TestOpenAIDoesNotBlockOnOutAfterCancel(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	o := newOpenAI(t, srv.URL(), "")
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	r := start(ctx, o, ask("hi")) // nobody reads r.out.
	if err := srv.WaitRequests(testCtx(t), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := r.returnsWithin(t, promptly); !errors.Is(err, context.Canceled) {
		t.Errorf("got %v; expected context.Canceled", err)
	}
}

func TestOpenAIConnectErrors(t *testing.T) {
	t.Parallel()
	t.Run("refused", func(t *testing.T) {
		t.Parallel()
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		_, err = collect(t, testCtx(t), newOpenAI(t, "http://"+addr+"/v1", ""), ask("hi"))
		var ce *upstream.ConnectError
		if !errors.As(err, &ce) {
			t.Fatalf("got %v (%T); expected *upstream.ConnectError", err, err)
		}
		if errors.Is(err, upstream.ErrTruncated) {
			t.Errorf("got %v; a connect error is not a truncation", err)
		}
	})
	t.Run("dropped before headers", func(t *testing.T) {
		t.Parallel()
		srv := upstreamtest.NewServer(t)
		srv.SetScript(upstreamtest.Script{DropBeforeHeaders: true})
		_, err := collect(t, testCtx(t), newOpenAI(t, srv.URL(), ""), ask("hi"))
		var ce *upstream.ConnectError
		if !errors.As(err, &ce) {
			t.Fatalf("got %v (%T); expected *upstream.ConnectError", err, err)
		}
		if n := srv.Requests(); n != 1 {
			t.Errorf("server saw %d requests; expected 1 (no hidden retry)", n)
		}
	})
}

func TestOpenAIConcurrentStreams(t *testing.T) {
	t.Parallel()
	const n = 16
	srv := upstreamtest.NewServer(t)
	ctx := testCtx(t)
	// Hold every request until all have arrived, so that they overlap.
	srv.SetHandler(func(req upstreamtest.ChatRequest, _ int) upstreamtest.Script {
		_ = srv.WaitRequests(ctx, n)
		return upstreamtest.Script{Chunks: []string{req.Prompt(), " ok"}, Gap: time.Millisecond}
	})
	o := newOpenAI(t, srv.URL(), "")
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			prompt := fmt.Sprintf("q%d", i)
			got, err := collect(t, ctx, o, ask(prompt))
			if err != nil || !reflect.DeepEqual(got, []string{prompt, " ok"}) {
				t.Errorf("stream %d: got %q, %v", i, got, err)
			}
		})
	}
	wg.Wait()
	if m := srv.MaxInFlight(); m < 2 || m > n {
		t.Errorf("MaxInFlight = %d; expected within [2, %d]", m, n)
	}
	if c := srv.Completed(); c != n {
		t.Errorf("Completed = %d; expected %d", c, n)
	}
}

func TestNewOpenAI(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "ftp://h/v1", "http://", "localhost:8080", "://x", "/v1"} {
		if _, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: bad}); err == nil {
			t.Errorf("NewOpenAI(%q) = nil error; expected an error", bad)
		}
	}
	o, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: "http://127.0.0.1:11434/v1/"})
	if err != nil {
		t.Fatal(err)
	}
	if o.Name() != "127.0.0.1:11434" {
		t.Errorf("got Name %q; expected the host", o.Name())
	}
	o, err = upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: "https://api.example.com/v1", Name: "primary"})
	if err != nil || o.Name() != "primary" {
		t.Errorf("got %v, %v; expected Name primary", o, err)
	}
}

func TestOpenAITrailingSlashBaseURL(t *testing.T) {
	t.Parallel()
	srv := upstreamtest.NewServer(t)
	got, err := collect(t, testCtx(t), newOpenAI(t, srv.URL()+"/", ""), ask("hi"))
	if err != nil || !reflect.DeepEqual(got, upstreamtest.DefaultChunks) {
		t.Errorf("got %q, %v; expected the default answer", got, err)
	}
}

// TestOpenAIModels: Models lists the upstream's GET /models in its order,
// with the key; a non-200 is a *StatusError, a closed port a
// *ConnectError.
func TestOpenAIModels(t *testing.T) {
	t.Parallel()
	auth := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" {
			http.NotFound(w, r)
			return
		}
		auth <- r.Header.Get("Authorization")
		io.WriteString(w, `{"object":"list","data":[{"id":"qwen3:8b"},{"id":""},{"id":"llama3.2"}]}`)
	}))
	defer srv.Close()
	o, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: srv.URL + "/v1", APIKey: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.Models(testCtx(t))
	if err != nil || !reflect.DeepEqual(got, []string{"qwen3:8b", "llama3.2"}) {
		t.Fatalf("models %q, %v", got, err)
	}
	if a := <-auth; a != "Bearer k1" {
		t.Errorf("authorization %q", a)
	}

	o404, _ := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: srv.URL + "/nothing"})
	var se *upstream.StatusError
	if _, err := o404.Models(testCtx(t)); !errors.As(err, &se) || se.Code != 404 {
		t.Errorf("404: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	oDead, _ := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: "http://" + dead + "/v1"})
	var ce *upstream.ConnectError
	if _, err := oDead.Models(testCtx(t)); !errors.As(err, &ce) {
		t.Errorf("closed port: %v, want a ConnectError", err)
	}
}
