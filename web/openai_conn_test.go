package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// connCounter is a web.ConnObserver that keeps everything it is told.
type connCounter struct {
	mu             sync.Mutex
	opened, writes int
	events, bytes  int
	closed         chan stream.ConnStats
}

func newConnCounter() *connCounter { return &connCounter{closed: make(chan stream.ConnStats, 16)} }

func (c *connCounter) ConnOpened() {
	c.mu.Lock()
	c.opened++
	c.mu.Unlock()
}

func (c *connCounter) ConnWrote(bytes, events, merged int) {
	c.mu.Lock()
	c.writes++
	c.events += events
	c.bytes += bytes
	c.mu.Unlock()
}

func (c *connCounter) ConnClosed(st stream.ConnStats) { c.closed <- st }

// next waits for the next closed connection.
func (c *connCounter) next(t *testing.T) stream.ConnStats {
	t.Helper()
	select {
	case st := <-c.closed:
		return st
	case <-time.After(20 * time.Second):
		t.Fatal("no connection closed")
	}
	return stream.ConnStats{}
}

func (c *connCounter) counts() (opened, writes, events, bytes int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opened, c.writes, c.events, c.bytes
}

// chatStreamBody is a streaming chat completions request.
func chatStreamBody(q string) map[string]any {
	return map[string]any{"stream": true, "messages": []map[string]string{{"role": "user", "content": q}}, "sluice": map[string]any{"nocache": true}}
}

// chatContent reads a chat completion stream to its end and returns the
// content and the number of content chunks.
func chatContent(t *testing.T, body io.Reader) (text string, chunks int) {
	t.Helper()
	sc := bufio.NewScanner(body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct{ Content string }
			}
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			t.Fatalf("chunk %.100q: %v", data, err)
		}
		if len(ch.Choices) == 1 && ch.Choices[0].Delta.Content != "" {
			text += ch.Choices[0].Delta.Content
			chunks++
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return text, chunks
}

// TestOpenAIStreamsAreSSEConnections: a chat completion stream runs the
// task API's write loop, so the connection metrics count it and it closes
// with a reason: the end, the client leaving, or a slow reader cut at the
// write timeout (a repeat then catches up with merged deltas).
func TestOpenAIStreamsAreSSEConnections(t *testing.T) {
	t.Run("end", func(t *testing.T) {
		rec := newConnCounter()
		e := newEnv(t, envOpts{Web: web.Config{ConnObserver: rec}})
		e.Up.SetScript(upstreamtest.Script{Chunks: []string{"Bay", " 7", " is", " open."}})
		resp := e.do(oaiCtx(t), http.MethodPost, "/v1/chat/completions", chatStreamBody("which bay?"))
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%d %v", resp.StatusCode, err)
		}
		st := rec.next(t)
		// The role chunk, four deltas, the end (finish chunk and [DONE]).
		if st.Reason != stream.CloseEnd || st.Events != 6 || st.Cursor != 4 || st.Bytes != int64(len(raw)) {
			t.Errorf("closed %+v (%d bytes read)", st, len(raw))
		}
		opened, writes, events, bytes := rec.counts()
		if opened != 1 || writes == 0 || events != st.Events || bytes != len(raw) {
			t.Errorf("opened %d, %d writes of %d events and %d bytes", opened, writes, events, bytes)
		}
	})

	t.Run("client gone", func(t *testing.T) {
		rec := newConnCounter()
		e := newEnv(t, envOpts{Web: web.Config{ConnObserver: rec}})
		e.Up.SetScript(upstreamtest.Script{Chunks: []string{"first", " never"}, StallAfterChunks: 1})
		ctx, cancel := context.WithCancel(oaiCtx(t))
		resp := e.do(ctx, http.MethodPost, "/v1/chat/completions", chatStreamBody("leave early"))
		br := bufio.NewReader(resp.Body)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("before the first delta: %v", err)
			}
			if strings.Contains(line, `"content":"first"`) {
				break
			}
		}
		cancel()
		resp.Body.Close()
		if st := rec.next(t); st.Reason != stream.CloseClientGone || st.Cursor != 1 {
			t.Errorf("closed %+v, want client_gone at cursor 1", st)
		}
		e.Orch.Cancel("", resp.Header.Get("X-Task-Id"))
		e.waitFinal(resp.Header.Get("X-Task-Id"))
	})

	t.Run("slow consumer", func(t *testing.T) {
		rec := newConnCounter()
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
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		// The stuck reader reads nothing. The Idempotency-Key lets a
		// repeat attach to its task.
		stuck := e.doStuck(ctx, http.MethodPost, "/v1/chat/completions", chatStreamBody("big"), "Idempotency-Key", "slow-1")
		defer stuck.Body.Close()
		id := stuck.Header.Get("X-Task-Id")
		if v := e.waitFinal(id); v.Status != orchestrator.StatusDone || v.Chunks != len(want) {
			t.Fatalf("task %v, %d chunks", v.Status, v.Chunks)
		}
		if st := rec.next(t); st.Reason != stream.CloseSlowConsumer {
			t.Fatalf("stuck connection closed with %v (%v)", st.Reason, st.Err)
		}
		// A repeat, 12 MB behind, catches up with merged deltas.
		resp := e.do(oaiCtx(t), http.MethodPost, "/v1/chat/completions", chatStreamBody("big"), "Idempotency-Key", "slow-1")
		// Read it all first: the reader must keep up with the 300ms
		// slow-reader limit, even under -race.
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		text, chunks := chatContent(t, bytes.NewReader(raw))
		if resp.Header.Get("X-Task-Id") != id || text != strings.Join(want, "") {
			t.Fatalf("repeat of task %s: %d bytes of content, want %d", resp.Header.Get("X-Task-Id"), len(text), len(strings.Join(want, "")))
		}
		st := rec.next(t)
		if st.Reason != stream.CloseEnd || st.Merges == 0 || chunks >= len(want) {
			t.Errorf("catch-up: closed %+v, %d content chunks for %d deltas", st, chunks, len(want))
		}
		if opened, _, _, _ := rec.counts(); opened != 2 {
			t.Errorf("%d connections opened, want 2", opened)
		}
		e.waitIdle()
	})
}
