package web_test

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// TestIdleStreamMemory opens n event streams on a running task that sends
// nothing (its upstream stalls) and measures what each costs the server,
// as heap plus goroutine stacks over n. The clients are bare sockets that
// hold no buffers of their own. Before buffers were taken per write
// burst, each connection kept a ~64 KiB buffer from its first byte and a
// 16 KiB stack: 108 KiB in all. Now: ~27 KiB (heap ~16.5 KiB, of which
// net/http's own buffers are 10 KiB, and 8+2 KiB of stacks). A -race build
// has larger frames, the handler's stack stays at 16 KiB, and the bound
// is 40 KiB there.
func TestIdleStreamMemory(t *testing.T) {
	const n = 500
	limit := int64(32 << 10)
	if raceEnabled {
		limit = 40 << 10
	}
	e := newEnv(t, envOpts{Orch: orchestrator.Config{TTFTTimeout: time.Minute}})
	e.Up.SetScript(upstreamtest.Script{StallAfterHeaders: true})
	f := newFront(t, e, web.Config{})
	var created struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "idle", "nocache": true}, &created)

	var heap, stacks, goroutines [2]int64
	used := func(i int) uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		heap[i], stacks[i], goroutines[i] = int64(m.HeapAlloc), int64(m.StackInuse), int64(runtime.NumGoroutine())
		return m.HeapAlloc + m.StackInuse
	}
	// One stream first, so that lazily built state (pools, the route's
	// first use) is not charged to the n.
	open := func() net.Conn {
		c := f.dial(t)
		fmt.Fprintf(c, "GET /v1/tasks/%s/events HTTP/1.1\r\nHost: x\r\n\r\n", created.ID)
		// Wait for the meta event: the write loop is then parked.
		buf := make([]byte, 4096)
		var got []byte
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		for !bytes.Contains(got, []byte("event: meta")) || !bytes.Contains(got, []byte("\n\n")) {
			k, err := c.Read(buf)
			if err != nil {
				t.Fatalf("reading the stream's start: %v (%q)", err, got)
			}
			got = append(got, buf[:k]...)
		}
		return c
	}
	open()
	before := used(0)
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = open()
	}
	after := used(1)
	per := (int64(after) - int64(before)) / n
	t.Logf("%d idle event streams: %d bytes each (heap %d + stacks %d; limit %d), %d goroutines each", n, per,
		(heap[1]-heap[0])/n, (stacks[1]-stacks[0])/n, limit, (goroutines[1]-goroutines[0])/n)
	if per > limit {
		t.Fatalf("an idle event stream costs %d bytes; want <= %d", per, limit)
	}
	runtime.KeepAlive(conns)
	e.Orch.Cancel("", created.ID)
	e.waitFinal(created.ID)
}
