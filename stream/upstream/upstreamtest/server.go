package upstreamtest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream"
)

// DefaultChunks is the answer streamed when a Script leaves Chunks nil.
var DefaultChunks = []string{"Hello", " from", " streamtest", "."}

// DefaultKeepAliveInterval is the pause between two keep-alives when a
// Script sets KeepAlives but no KeepAliveInterval.
const DefaultKeepAliveInterval = 10 * time.Millisecond

// Message is one chat message of a ChatRequest.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// ChatRequest is the parsed body of one POST /v1/chat/completions request.
type ChatRequest struct {
	Model     string    `json:"model"`
	Messages  []Message `json:"messages"`
	Stream    bool      `json:"stream"`
	MaxTokens int       `json:"max_tokens,omitempty"`
	// The sampling parameters, as sent (nil: absent).
	upstream.Sampling

	// N is the request's number on its Server, starting at 1.
	N int `json:"-"`
	// Header holds the request's HTTP headers (Authorization, Accept, ...).
	Header http.Header `json:"-"`
}

// Prompt returns the content of the last user message, or "" if there is
// none.
func (r ChatRequest) Prompt() string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == "user" {
			return r.Messages[i].Content
		}
	}
	return ""
}

// Script decides how the Server answers one request. The zero Script
// streams DefaultChunks at once and ends with a finish_reason and [DONE].
//
// Misbehaviours apply in this order: DropBeforeHeaders, StallBeforeHeaders,
// Status, StallAfterHeaders, then per chunk StallAfterChunks and
// DropAfterChunks, then StreamError or the normal end (NoDone).
type Script struct {
	// Chunks is the content to stream, one chat.completion.chunk each.
	// nil means DefaultChunks; an empty non-nil slice streams no content.
	// A request's max_tokens, when smaller, cuts the answer to that many
	// chunks and the finish_reason becomes "length".
	Chunks []string
	// TTFT is the delay between the headers (and the role-only first
	// chunk) and the first content chunk.
	TTFT time.Duration
	// Gap is the delay between two content chunks.
	Gap time.Duration

	// DropBeforeHeaders reads the request, then closes the connection
	// without any response, as a crashed upstream would.
	DropBeforeHeaders bool
	// StallBeforeHeaders reads the request and then never answers, until
	// the client goes away or the Server is closed.
	StallBeforeHeaders bool
	// Status, when neither 0 nor 200, answers that status with an OpenAI
	// error JSON body instead of a stream.
	Status int
	// RetryAfter is sent as the Retry-After header with Status.
	RetryAfter string
	// StallAfterHeaders sends 200 and the SSE headers, flushes them, and
	// then sends nothing (but keep-alives, if KeepAlives is set).
	StallAfterHeaders bool
	// StallAfterChunks, when positive, sends that many content chunks and
	// then stalls like StallAfterHeaders. Zero or negative: off (use
	// StallAfterHeaders to stall before the first chunk).
	StallAfterChunks int
	// DropAfterChunks, when positive, sends that many content chunks and
	// then closes the connection abruptly, without the end of the chunked
	// body and without [DONE]. Zero or negative: off.
	DropAfterChunks int
	// KeepAlives makes every wait after the headers (TTFT, gaps, stalls)
	// send, every KeepAliveInterval, alternately a ": keep-alive" SSE
	// comment and a chunk with empty content. Neither is content.
	KeepAlives bool
	// KeepAliveInterval is the pause between two keep-alives.
	// default: DefaultKeepAliveInterval
	KeepAliveInterval time.Duration
	// NoDone ends a complete stream after the finish_reason chunk, without
	// the final "data: [DONE]", as some servers do.
	NoDone bool
	// StreamError, when set, is sent after the chunks as an OpenAI error
	// object ({"error": {"message": StreamError, ...}}) in place of the
	// finish_reason chunk and [DONE].
	StreamError string
}

// Server is a fake OpenAI-compatible upstream on an httptest.Server. It is
// safe for concurrent use.
type Server struct {
	ts        *httptest.Server
	done      chan struct{} // closed by Close; ends every stall.
	closeOnce sync.Once

	requests    atomic.Int64
	inFlight    atomic.Int64
	maxInFlight atomic.Int64
	completed   atomic.Int64
	keepAlives  atomic.Int64

	mu       sync.Mutex // protects the fields below.
	script   Script
	handler  func(req ChatRequest, n int) Script
	received []ChatRequest
	changed  chan struct{} // closed and replaced on every counter change.
}

// NewServer starts a Server and closes it when the test ends.
func NewServer(t testing.TB) *Server {
	t.Helper()
	s := &Server{
		done:    make(chan struct{}),
		changed: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/chat/completions", s.serveChat)
	mux.HandleFunc("GET /v1/models", s.serveModels)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, "", "streamtest: no route "+r.Method+" "+r.URL.Path)
	})
	s.ts = httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// URL returns the server's OpenAI base URL, ending in "/v1".
func (s *Server) URL() string { return s.ts.URL + "/v1" }

// Client returns an HTTP client configured for the server.
func (s *Server) Client() *http.Client { return s.ts.Client() }

// Close ends every stall, then shuts the server down and waits for its
// handlers to return. It is safe to call more than once.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.done)
		s.ts.Close()
	})
}

// CloseClientConnections closes every open client connection, as a
// restarting upstream would.
func (s *Server) CloseClientConnections() { s.ts.CloseClientConnections() }

// SetScript makes every following request follow sc. It replaces any
// function set with SetHandler.
func (s *Server) SetScript(sc Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.handler = sc, nil
}

// SetHandler makes every following request follow the Script that f
// returns for it; n is the request's number, starting at 1. f may be called
// concurrently. SetHandler(nil) goes back to the Script set by SetScript.
func (s *Server) SetHandler(f func(req ChatRequest, n int) Script) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.handler = f
}

// Requests returns how many chat completion requests arrived.
func (s *Server) Requests() int { return int(s.requests.Load()) }

// InFlight returns how many requests are being answered now.
func (s *Server) InFlight() int { return int(s.inFlight.Load()) }

// MaxInFlight returns the largest InFlight observed.
func (s *Server) MaxInFlight() int { return int(s.maxInFlight.Load()) }

// Completed returns how many answers were sent whole: a stream up to its
// normal end (with or without [DONE]) or a chat.completion object. Error
// statuses, stream errors, stalls and drops do not count.
func (s *Server) Completed() int { return int(s.completed.Load()) }

// KeepAlivesSent returns how many keep-alives (comments and empty chunks)
// the server sent.
func (s *Server) KeepAlivesSent() int { return int(s.keepAlives.Load()) }

// LastRequest returns the most recent request, or the zero ChatRequest.
func (s *Server) LastRequest() ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.received) == 0 {
		return ChatRequest{}
	}
	return s.received[len(s.received)-1]
}

// Received returns every request so far, in arrival order.
func (s *Server) Received() []ChatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ChatRequest(nil), s.received...)
}

// Wait blocks until cond(s) is true, re-checking it on every change of the
// server's counters, or until ctx is done (ctx's error).
func (s *Server) Wait(ctx context.Context, cond func(*Server) bool) error {
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond(s) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// WaitInFlight waits until at least n requests are being answered.
func (s *Server) WaitInFlight(ctx context.Context, n int) error {
	return s.Wait(ctx, func(s *Server) bool { return s.InFlight() >= n })
}

// WaitIdle waits until no request is being answered, that is until every
// handler has returned.
func (s *Server) WaitIdle(ctx context.Context) error {
	return s.Wait(ctx, func(s *Server) bool { return s.InFlight() == 0 })
}

// WaitRequests waits until at least n requests have arrived.
func (s *Server) WaitRequests(ctx context.Context, n int) error {
	return s.Wait(ctx, func(s *Server) bool { return s.Requests() >= n })
}

// notify wakes every Wait.
func (s *Server) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.changed)
	s.changed = make(chan struct{})
}

func (s *Server) enter() {
	n := s.inFlight.Add(1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	s.notify()
}

func (s *Server) leave() {
	s.inFlight.Add(-1)
	s.notify()
}

func (s *Server) complete() {
	s.completed.Add(1)
	s.notify()
}

// accept numbers and records req and returns its Script.
func (s *Server) accept(req *ChatRequest) Script {
	s.mu.Lock()
	req.N = int(s.requests.Add(1))
	s.received = append(s.received, *req)
	sc, f := s.script, s.handler
	s.mu.Unlock()
	s.notify()
	if f != nil {
		sc = f(*req, req.N)
	}
	return sc
}

func (s *Server) serveModels(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"streamtest","object":"model","owned_by":"streamtest"}]}`)
}

func (s *Server) serveChat(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeError(w, http.StatusMethodNotAllowed, "", "streamtest: use POST")
		return
	}
	// Read the whole body, so that the server notices at once when the
	// client goes away (it watches the connection only after the body).
	body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
	if err != nil {
		return
	}
	var req ChatRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "", "streamtest: bad JSON body: "+err.Error())
		return
	}
	req.Header = r.Header.Clone()
	sc := s.accept(&req)

	s.enter()
	defer s.leave()
	ctx := r.Context()

	if sc.DropBeforeHeaders {
		// The server closes the connection without a response and logs
		// nothing for this panic.
		panic(http.ErrAbortHandler)
	}
	if sc.StallBeforeHeaders {
		select {
		case <-ctx.Done():
		case <-s.done:
		}
		return
	}
	if sc.Status != 0 && sc.Status != http.StatusOK {
		writeError(w, sc.Status, sc.RetryAfter, fmt.Sprintf("streamtest: scripted %d %s", sc.Status, http.StatusText(sc.Status)))
		return
	}
	if sc.KeepAliveInterval <= 0 {
		sc.KeepAliveInterval = DefaultKeepAliveInterval
	}
	chunks, finish := sc.Chunks, "stop"
	if chunks == nil {
		chunks = DefaultChunks
	}
	if req.MaxTokens > 0 && len(chunks) > req.MaxTokens {
		chunks, finish = chunks[:req.MaxTokens], "length"
	}
	model := req.Model
	if model == "" {
		model = "streamtest"
	}
	a := &answer{
		s:      s,
		ctx:    ctx,
		sc:     sc,
		w:      w,
		rc:     http.NewResponseController(w),
		id:     fmt.Sprintf("chatcmpl-streamtest-%d", req.N),
		model:  model,
		now:    time.Now().Unix(),
		chunks: chunks,
		finish: finish,
	}
	if req.Stream {
		a.stream()
	} else {
		a.object()
	}
}

// answer is one response in progress; it is owned by its handler.
type answer struct {
	s      *Server
	ctx    context.Context
	sc     Script
	w      http.ResponseWriter
	rc     *http.ResponseController
	sse    bool // whether keep-alives may be written.
	id     string
	model  string
	now    int64
	chunks []string
	finish string
}

func (a *answer) stream() {
	h := a.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	a.w.WriteHeader(http.StatusOK)
	if a.rc.Flush() != nil {
		return
	}
	a.sse = true
	if a.sc.StallAfterHeaders {
		a.pause(-1)
		return
	}
	if a.chunk(map[string]string{"role": "assistant", "content": ""}, nil) != nil {
		return
	}
	if !a.pause(a.sc.TTFT) {
		return
	}
	for i := 0; ; i++ {
		if a.sc.StallAfterChunks > 0 && i == a.sc.StallAfterChunks {
			a.pause(-1)
			return
		}
		if a.sc.DropAfterChunks > 0 && i == a.sc.DropAfterChunks {
			// Everything so far was flushed; the server now closes the
			// connection without ending the chunked body.
			panic(http.ErrAbortHandler)
		}
		if i == len(a.chunks) {
			break
		}
		if i > 0 && !a.pause(a.sc.Gap) {
			return
		}
		if a.chunk(map[string]string{"content": a.chunks[i]}, nil) != nil {
			return
		}
	}
	if a.sc.StreamError != "" {
		_ = a.data(errorBody("server_error", a.sc.StreamError))
		return
	}
	if a.chunk(map[string]string{}, &a.finish) != nil {
		return
	}
	if !a.sc.NoDone {
		if a.write("data: [DONE]\n\n") != nil {
			return
		}
	}
	a.s.complete()
}

func (a *answer) object() {
	if a.sc.StallAfterHeaders {
		a.w.Header().Set("Content-Type", "application/json")
		a.w.WriteHeader(http.StatusOK)
		if a.rc.Flush() == nil {
			a.pause(-1)
		}
		return
	}
	delay := a.sc.TTFT
	if n := len(a.chunks); n > 1 {
		delay += time.Duration(n-1) * a.sc.Gap
	}
	if !a.pause(delay) {
		return
	}
	if a.sc.DropAfterChunks > 0 {
		panic(http.ErrAbortHandler)
	}
	if a.sc.StallAfterChunks > 0 {
		a.pause(-1)
		return
	}
	obj := map[string]any{
		"id":      a.id,
		"object":  "chat.completion",
		"created": a.now,
		"model":   a.model,
		"choices": []any{map[string]any{
			"index":         0,
			"message":       map[string]string{"role": "assistant", "content": strings.Join(a.chunks, "")},
			"finish_reason": a.finish,
		}},
		"usage": map[string]int{"prompt_tokens": 1, "completion_tokens": len(a.chunks), "total_tokens": 1 + len(a.chunks)},
	}
	a.w.Header().Set("Content-Type", "application/json")
	if json.NewEncoder(a.w).Encode(obj) == nil {
		a.s.complete()
	}
}

// pause waits d (forever when d is negative) and reports whether the
// answer should go on: false when the client went away, the server is
// closing, or a keep-alive could not be written.
func (a *answer) pause(d time.Duration) bool {
	if d == 0 {
		select {
		case <-a.ctx.Done():
			return false
		case <-a.s.done:
			return false
		default:
			return true
		}
	}
	var fire <-chan time.Time
	if d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		fire = t.C
	}
	var tick <-chan time.Time
	if a.sse && a.sc.KeepAlives {
		tk := time.NewTicker(a.sc.KeepAliveInterval)
		defer tk.Stop()
		tick = tk.C
	}
	comment := true
	for {
		select {
		case <-fire:
			return true
		case <-a.ctx.Done():
			return false
		case <-a.s.done:
			return false
		case <-tick:
			var err error
			if comment {
				err = a.write(": keep-alive\n\n")
			} else {
				err = a.chunk(map[string]string{"content": ""}, nil)
			}
			if err != nil {
				return false
			}
			comment = !comment
			a.s.keepAlives.Add(1)
			a.s.notify()
		}
	}
}

func (a *answer) chunk(delta map[string]string, finish *string) error {
	return a.data(map[string]any{
		"id":      a.id,
		"object":  "chat.completion.chunk",
		"created": a.now,
		"model":   a.model,
		"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
	})
}

func (a *answer) data(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return a.write("data: " + string(b) + "\n\n")
}

func (a *answer) write(s string) error {
	if _, err := io.WriteString(a.w, s); err != nil {
		return err
	}
	return a.rc.Flush()
}

func errorBody(typ, msg string) map[string]any {
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": nil}}
}

// writeError answers an OpenAI-style error object.
func writeError(w http.ResponseWriter, status int, retryAfter, msg string) {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(errorBody(typ, msg))
}
