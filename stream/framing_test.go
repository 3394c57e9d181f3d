package stream_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream"
)

// textFraming is a Holder that writes one line per event and refuses an
// "error" end with a 503.
type textFraming struct{}

func (textFraming) Open(b *bytes.Buffer) { b.WriteString("open\n") }
func (textFraming) Delta(b *bytes.Buffer, seq int, text string) {
	fmt.Fprintf(b, "delta %d %s\n", seq, text)
}
func (textFraming) End(b *bytes.Buffer, end *stream.End) { fmt.Fprintf(b, "end %s\n", end.Event) }
func (textFraming) KeepAlive(b *bytes.Buffer)            { b.WriteString("keep-alive\n") }
func (textFraming) Refuse(w http.ResponseWriter, end *stream.End) bool {
	if end.Event != "error" {
		return false
	}
	http.Error(w, "refused: "+end.Code, http.StatusServiceUnavailable)
	return true
}

func TestTaskEventsWire(t *testing.T) {
	tr := stream.NewFinishedTranscript([]string{"a", "b"}, stream.End{Event: "done", FinishReason: "stop", FirstTokenMs: 1, TotalMs: 2})
	w := httptest.NewRecorder()
	c := stream.Conn{Framing: stream.TaskEvents{Meta: []byte(`{"id":"x"}`)}}
	st := c.Serve(context.Background(), w, tr, 0)
	want := "event: meta\ndata: {\"id\":\"x\"}\n\n" +
		"id: 1\nevent: delta\ndata: {\"text\":\"a\"}\n\n" +
		"id: 2\nevent: delta\ndata: {\"text\":\"b\"}\n\n" +
		"event: done\ndata: {\"finish_reason\":\"stop\",\"first_token_ms\":1,\"total_ms\":2,\"chunks\":2}\n\n"
	if w.Code != 200 || w.Body.String() != want || w.Header().Get("Content-Type") != "text/event-stream" {
		t.Errorf("%d %q\nwant %q", w.Code, w.Body.String(), want)
	}
	if st.Reason != stream.CloseEnd || st.Events != 4 || st.Cursor != 2 || st.Bytes != int64(len(want)) {
		t.Errorf("stats %+v", st)
	}
}

func TestHolderRefusesBeforeAnyByte(t *testing.T) {
	tr := stream.NewTranscript()
	tr.Finish(stream.End{Event: "error", Code: "upstream_error"})
	w := httptest.NewRecorder()
	c := stream.Conn{Framing: textFraming{}}
	st := c.Serve(context.Background(), w, tr, 0)
	if w.Code != http.StatusServiceUnavailable || w.Body.String() != "refused: upstream_error\n" {
		t.Errorf("%d %q", w.Code, w.Body.String())
	}
	if st.Reason != stream.CloseEnd || st.Events != 0 || st.Bytes != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestHolderStartsWithTheFirstDelta(t *testing.T) {
	tr := stream.NewTranscript()
	tr.Append("a")
	tr.Finish(stream.End{Event: "error", Code: "upstream_error"})
	w := httptest.NewRecorder()
	c := stream.Conn{Framing: textFraming{}}
	st := c.Serve(context.Background(), w, tr, 0)
	if want := "open\ndelta 1 a\nend error\n"; w.Code != 200 || w.Body.String() != want {
		t.Errorf("%d %q, want 200 %q", w.Code, w.Body.String(), want)
	}
	if st.Reason != stream.CloseEnd || st.Events != 3 {
		t.Errorf("stats %+v", st)
	}
}

// signalWriter is a ResponseWriter safe to read while Serve writes; it
// signals its first write.
type signalWriter struct {
	mu    sync.Mutex
	h     http.Header
	code  int
	body  bytes.Buffer
	wrote chan struct{}
}

func (s *signalWriter) Header() http.Header { return s.h }
func (s *signalWriter) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.code = code
}
func (s *signalWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.body.Len() == 0 {
		close(s.wrote)
	}
	return s.body.Write(p)
}
func (s *signalWriter) Flush() {}

// TestHolderStartsAtTheFirstHeartbeat: a first event later than the
// heartbeat sends the status line with a keep-alive; an error end after
// that is streamed, not refused.
func TestHolderStartsAtTheFirstHeartbeat(t *testing.T) {
	tr := stream.NewTranscript()
	w := &signalWriter{h: http.Header{}, wrote: make(chan struct{})}
	c := stream.Conn{Config: stream.ConnConfig{Heartbeat: time.Millisecond}, Framing: textFraming{}}
	done := make(chan stream.ConnStats)
	go func() { done <- c.Serve(context.Background(), w, tr, 0) }()
	select {
	case <-w.wrote:
	case <-time.After(10 * time.Second):
		t.Fatal("no keep-alive")
	}
	tr.Finish(stream.End{Event: "error", Code: "ttft_timeout"})
	st := <-done
	w.mu.Lock()
	defer w.mu.Unlock()
	body := w.body.String()
	if w.code != 200 || !bytes.HasPrefix(w.body.Bytes(), []byte("open\nkeep-alive\n")) || !bytes.HasSuffix(w.body.Bytes(), []byte("keep-alive\nend error\n")) {
		t.Errorf("%d %q", w.code, body)
	}
	if st.Reason != stream.CloseEnd || st.Pings == 0 || st.Events != 2 {
		t.Errorf("stats %+v", st)
	}
}
