package web_test

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// TestStuckReadersDoNotGrowMemory opens many event streams on one large
// answer and reads none of them. Each connection may hold at most its send
// buffer; the answer itself is held once, in the transcript. A design that
// queued each connection's events (or copied the answer per reader) would
// grow by readers × answer size instead.
func TestStuckReadersDoNotGrowMemory(t *testing.T) {
	const readers, buffer = 20, 32 << 10
	e := newEnv(t, envOpts{Web: web.Config{Conn: stream.ConnConfig{MaxPendingBytes: buffer, WriteTimeout: time.Minute}},
		Orch: orchestrator.Config{MaxAnswerBytes: 16 << 20}}) // over the 1 MiB default
	line := strings.Repeat("m", 1000)
	answer := make([]string, 8000) // 8 MB
	for i := range answer {
		answer[i] = fmt.Sprintf("%05d%s", i, line)
	}
	size := len(strings.Join(answer, ""))
	e.Up.SetScript(upstreamtest.Script{Chunks: answer})

	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var created struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "memory", "nocache": true}, &created)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var bodies []*http.Response
	for range readers {
		resp := e.do(ctx, http.MethodGet, "/v1/tasks/"+created.ID+"/events", nil)
		bodies = append(bodies, resp) // never read
	}
	if v := e.waitFinal(created.ID); v.Status != orchestrator.StatusDone {
		t.Fatalf("task %+v", v.Status)
	}
	after := heap()
	grown := int64(after) - int64(before)
	// The transcript once (plus the upstream client's and the fake's
	// transient copies), each connection's buffer, and slack for the
	// runtime: far below readers × answer.
	limit := int64(3*size + readers*4*buffer + 8<<20)
	t.Logf("answer %d bytes, %d stuck readers: heap grew by %d bytes (limit %d; unbounded would be ~%d)",
		size, readers, grown, limit, readers*size)
	if grown > limit {
		t.Fatalf("heap grew by %d bytes with %d stuck readers of a %d-byte answer (limit %d)", grown, readers, size, limit)
	}
	cancel()
	for _, b := range bodies {
		b.Body.Close()
	}
	e.waitIdle()
}
