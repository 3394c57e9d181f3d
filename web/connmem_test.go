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
	"github.com/sluice-dev/sluice/stream/upstream"
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
		awaitMeta(t, c)
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

// TestOpenStreamMemory opens n POST /v1/stream streams, each its own task
// (no cache, distinct prompts) on the built-in simulated model, which
// waits far longer than the test for its first token, and measures what
// each open stream costs the server (connection, task, upstream call), as
// heap plus goroutine stacks over n: scenario 5's stream (docs/
// performance.md). With a producer goroutine per upstream call (4
// goroutines per stream) it cost 40-43 KiB (heap 22-24 KiB, stacks 18-20
// KiB); with the call on the task's goroutine (3), 34.5-36 KiB (heap
// 19.5-21 KiB, stacks 14.3-16 KiB: the task's stack, 2.5 KiB used while
// it waits, fits in 4 KiB), and the bound is 37 KiB. Of that,
// net/http's own connection state is ~12.5 KiB of heap (buffers of 4 KiB
// read, 4 KiB write, 2 KiB chunking; headers) and 10 KiB of stacks (the
// handler's 8 KiB, close detection's 2 KiB). A -race build has larger
// frames (61-62 KiB before, 49-51 after) and its bound is 56 KiB.
func TestOpenStreamMemory(t *testing.T) {
	const n = 500
	limit := int64(37 << 10)
	if raceEnabled {
		limit = 56 << 10
	}
	sim := upstream.NewSim(upstream.SimConfig{TTFTMedian: time.Hour, TTFTSigma: -1})
	e := newEnv(t, envOpts{Upstream: sim, Orch: orchestrator.Config{
		Budget: 2 * n, TTFTTimeout: time.Hour, TotalTimeout: time.Hour,
	}})
	f := newFront(t, e, web.Config{})

	var heap, stacks, goroutines [2]int64
	used := func(i int) uint64 {
		// Twice: the second empties the pools' victim caches (net/http's
		// buffers), which would otherwise be counted before and reused
		// after.
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		heap[i], stacks[i], goroutines[i] = int64(m.HeapAlloc), int64(m.StackInuse), int64(runtime.NumGoroutine())
		return m.HeapAlloc + m.StackInuse
	}
	// The clients' sockets are closed together: a cleanup per socket
	// would be charged to the server.
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	open := func(i int) {
		c, err := net.DialTimeout("tcp", f.Addr, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
		body := fmt.Sprintf(`{"prompt":"open stream %d","nocache":true}`, i)
		fmt.Fprintf(c, "POST /v1/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		// Wait for the meta event: the task runs and the write loop is
		// parked.
		awaitMeta(t, c)
	}
	// One stream first, so that lazily built state (pools, the route's
	// first use) is not charged to the n.
	conns = make([]net.Conn, 0, n+1)
	open(-1)
	waitInFlight := func(want int64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for sim.Stats().InFlight != want {
			if time.Now().After(deadline) {
				t.Fatalf("simulated model: %d streams in flight, want %d", sim.Stats().InFlight, want)
			}
			time.Sleep(time.Millisecond) // polling a counter: nothing signals it
		}
	}
	waitInFlight(1)
	before := used(0)
	for i := range n {
		open(i)
	}
	// Every task is in its upstream call, waiting for the first token.
	waitInFlight(n + 1)
	after := used(1)
	per := (int64(after) - int64(before)) / n
	t.Logf("%d open streams waiting for a first token: %d bytes each (heap %d + stacks %d; limit %d), %d goroutines each", n, per,
		(heap[1]-heap[0])/n, (stacks[1]-stacks[0])/n, limit, (goroutines[1]-goroutines[0])/n)
	if per > limit {
		t.Fatalf("an open stream costs %d bytes; want <= %d", per, limit)
	}
	runtime.KeepAlive(conns)
}

// awaitMeta reads c until the stream's meta event is whole: the server's
// write loop is then parked.
func awaitMeta(t *testing.T, c net.Conn) {
	t.Helper()
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
}
