package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"
	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// env is one sluice under test: the real HTTP handler on a real
// listener, in front of a fault-injecting fake upstream.
type env struct {
	t     testing.TB
	URL   string // sluice's base URL
	Up    *upstreamtest.Server
	Orch  *orchestrator.Orchestrator
	Cache *cache.Cache
	HTTP  *http.Client
	Srv   *httptest.Server
	logs  *testWriter // where the server's log goes (-v only)
}

type envOpts struct {
	Orch     orchestrator.Config
	Web      web.Config
	Upstream upstream.Upstream // default: the OpenAI client to the fake
	// Wrap, when set, wraps the upstream (e.g. to count calls).
	Wrap     func(upstream.Upstream) upstream.Upstream
	NoCache  bool // run without a cache
	Observer orchestrator.Observer
	Shared   orchestrator.Shared // shared state with other instances; nil: none
	// CacheLog, when set, shares the cache with other instances through
	// it (cache.Cache.Share), stopped when the test ends.
	CacheLog cache.ChangeLog
	Leases   pipeline.Leases // the fleet budget; nil: a local one
	// Routes, when set, are the upstreams (Deps.Routes) in place of
	// Upstream; env.Up is then unused.
	Routes []orchestrator.RouteSpec
	// SendBuffer, when set, fixes the kernel send buffer of the server's
	// accepted connections (SO_SNDBUF, which turns off its autotuning):
	// for tests of a reader that reads nothing a finished answer that
	// could otherwise sit whole in a send buffer autotuned up to
	// net.ipv4.tcp_wmem's maximum, which differs from machine to machine.
	SendBuffer int
}

func newEnv(t testing.TB, o envOpts) *env {
	t.Helper()
	e := &env{t: t, Up: upstreamtest.NewServer(t)}
	up := o.Upstream
	if up == nil {
		var err error
		up, err = upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: e.Up.URL(), Name: "fake"})
		if err != nil {
			t.Fatal(err)
		}
	}
	if o.Wrap != nil {
		up = o.Wrap(up)
	}
	e.logs = &testWriter{}
	if testing.Verbose() {
		e.logs.t = t
	}
	log := slog.New(slog.NewTextHandler(e.logs, nil))
	var c orchestrator.Cache
	if !o.NoCache {
		e.Cache = cache.New(cache.Config{})
		c = e.Cache
		if o.CacheLog != nil {
			stop, err := e.Cache.Share(context.Background(), o.CacheLog, cache.ShareConfig{Block: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(stop)
		}
	}
	deps := orchestrator.Deps{Upstream: up, Cache: c, Logger: log, Observer: o.Observer, Shared: o.Shared, Leases: o.Leases}
	if o.Routes != nil {
		deps.Upstream, deps.Routes = nil, o.Routes
	}
	orch, err := orchestrator.New(o.Orch, deps)
	if err != nil {
		t.Fatal(err)
	}
	e.Orch = orch
	o.Web.Logger = log
	e.Srv = httptest.NewUnstartedServer(web.New(o.Web, orch, e.Cache))
	if o.SendBuffer > 0 {
		e.Srv.Listener = sendBufferListener{Listener: e.Srv.Listener, size: o.SendBuffer}
	}
	e.Srv.Start()
	e.URL = e.Srv.URL
	e.HTTP = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := orch.Shutdown(ctx); err != nil {
			t.Errorf("orchestrator shutdown: %v", err)
		}
		e.HTTP.CloseIdleConnections()
		e.Srv.Close()
	})
	return e
}

// testWriter sends the server's log to a test's log, or nowhere while
// t is nil. The lock is held while logging, so a logTo that swaps t out
// returns only once no write uses the old t any more.
type testWriter struct {
	mu sync.Mutex
	t  testing.TB
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.t != nil {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// logTo sends the server's log to t (with -v) until the returned func
// is called, which sends it nowhere. A fuzz target calls it with the
// inner *testing.T: the engine panics on f.Log inside the fuzz body.
func (e *env) logTo(t testing.TB) (stop func()) { //nolint:thelper // t may be nil (logs go nowhere); it is a log sink, not a helper's test
	set := func(t testing.TB) { //nolint:thelper // the same
		e.logs.mu.Lock()
		e.logs.t = t
		e.logs.mu.Unlock()
	}
	if testing.Verbose() {
		set(t)
	}
	return func() { set(nil) }
}

// do sends a request with a JSON body (nil for none) and returns the
// response; the caller closes its body.
func (e *env) do(ctx context.Context, method, path string, body any, hdr ...string) *http.Response {
	e.t.Helper()
	return e.doOn(ctx, e.HTTP, method, path, body, hdr...)
}

// doStuck is do on a connection of its own whose receive buffer is small
// and fixed (stuckDial): for a reader that reads nothing.
func (e *env) doStuck(ctx context.Context, method, path string, body any, hdr ...string) *http.Response {
	e.t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: stuckDial}}
	e.t.Cleanup(c.CloseIdleConnections)
	return e.doOn(ctx, c, method, path, body, hdr...)
}

// sendBufferListener sets each accepted connection's send buffer.
type sendBufferListener struct {
	net.Listener
	size int
}

func (l sendBufferListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok && err == nil {
		if err := tc.SetWriteBuffer(l.size); err != nil {
			c.Close()
			return nil, err
		}
	}
	return c, err
}

// stuckDial dials with a 16 KiB receive buffer, set before the connection
// is made, which also turns off the kernel's receive-buffer autotuning. A
// reader that reads nothing then stalls the server's writes after its
// send buffer (at most net.core.wmem_max, 4 MiB by default) and this
// buffer, on any machine: with autotuning, a loopback receive buffer grows
// to net.ipv4.tcp_rmem's maximum, 32 MiB on some machines, more than the
// 12 MB answers that the slow-reader tests send.
func stuckDial(ctx context.Context, network, addr string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 16<<10)
		}); err != nil {
			return err
		}
		return serr
	}}
	return d.DialContext(ctx, network, addr)
}

func (e *env) doOn(ctx context.Context, c *http.Client, method, path string, body any, hdr ...string) *http.Response {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		switch b := body.(type) {
		case string:
			r = strings.NewReader(b)
		default:
			buf, err := json.Marshal(b)
			if err != nil {
				e.t.Fatal(err)
			}
			r = bytes.NewReader(buf)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, e.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

// doJSON sends a request and decodes the JSON answer into out (if not
// nil), returning the status.
func (e *env) doJSON(method, path string, body, out any, hdr ...string) (int, http.Header) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := e.do(ctx, method, path, body, hdr...)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			e.t.Fatalf("%s %s: %d %q: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode, resp.Header
}

// event is one SSE event as a client sees it.
type event struct {
	ID, Type, Data string
}

// readEvents parses an SSE body with go-sse until it ends.
func readEvents(t testing.TB, body io.Reader) []event {
	t.Helper()
	var out []event
	var lastID string
	for ev, err := range sse.Read(body, &sse.ReadConfig{MaxEventSize: 1 << 20}) {
		if err != nil {
			t.Fatalf("reading events: %v", err)
		}
		id := ""
		if ev.LastEventID != lastID {
			id = ev.LastEventID
			lastID = ev.LastEventID
		}
		out = append(out, event{ID: id, Type: ev.Type, Data: ev.Data})
	}
	return out
}

// streamResult summarises one event stream.
type streamResult struct {
	Events   []event
	Text     string
	Deltas   int
	LastSeq  string
	Terminal event
	Meta     map[string]any
}

func summarise(t testing.TB, evs []event) streamResult {
	t.Helper()
	var r streamResult
	r.Events = evs
	terminals := 0
	for i, ev := range evs {
		switch ev.Type {
		case "meta":
			if i != 0 {
				t.Fatalf("meta is event %d, must be first", i)
			}
			if err := json.Unmarshal([]byte(ev.Data), &r.Meta); err != nil {
				t.Fatal(err)
			}
		case "delta":
			var d struct{ Text string }
			if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
				t.Fatal(err)
			}
			r.Text += d.Text
			r.Deltas++
			r.LastSeq = ev.ID
		case "done", "partial", "error":
			terminals++
			r.Terminal = ev
			if i != len(evs)-1 {
				t.Fatalf("terminal event %q is not the last", ev.Type)
			}
		default:
			t.Fatalf("unexpected event %q", ev.Type)
		}
	}
	if terminals != 1 {
		t.Fatalf("%d terminal events, want exactly 1: %+v", terminals, evs)
	}
	return r
}

// stream POSTs body to /v1/stream and reads the whole event stream.
func (e *env) stream(body any) (*http.Response, streamResult) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	resp := e.do(ctx, http.MethodPost, "/v1/stream", body)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		e.t.Fatalf("POST /v1/stream: %d %s", resp.StatusCode, raw)
	}
	return resp, summarise(e.t, readEvents(e.t, resp.Body))
}

// waitFinal polls a task until it is final; hdr are extra request
// headers (name, value, ...).
func (e *env) waitFinal(id string, hdr ...string) orchestrator.View {
	e.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		var v orchestrator.View
		if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+id, nil, &v, hdr...); st != http.StatusOK {
			e.t.Fatalf("GET task %s: %d", id, st)
		}
		if v.Status.Final() {
			return v
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("task %s not final: %+v", id, v)
		}
		t := e.Orch.GetAny(id)
		select {
		case <-t.Done():
		case <-time.After(time.Second):
		}
	}
}

// waitIdle waits until no slot is held and nothing waits in any gate.
func (e *env) waitIdle() {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		idle := true
		for _, g := range e.Orch.Gates() {
			st := g.Stats()
			if st.InFlight != 0 || st.Waiting != 0 || st.AcquiredTotal != st.ReleasedTotal {
				idle = false
			}
		}
		if idle {
			return
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("gate not idle: %+v", e.Orch.Gates()[0].Stats())
		}
		time.Sleep(5 * time.Millisecond) // polling a counter: nothing signals "idle"
	}
}

// countingUpstream counts the upstream calls in progress on sluice's
// side: from the call to its return, which is when sluice has closed the
// connection. (The fake server's own count can lag behind a cancellation
// by the time it takes to notice the closed connection.)
type countingUpstream struct {
	upstream.Upstream
	mu       sync.Mutex
	cur, max int
}

func (c *countingUpstream) Stream(ctx context.Context, req upstream.Request, out chan<- upstream.Chunk) error {
	c.mu.Lock()
	c.cur++
	c.max = max(c.max, c.cur)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.cur--
		c.mu.Unlock()
	}()
	return c.Upstream.Stream(ctx, req, out)
}

func (c *countingUpstream) Max() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.max
}

func (c *countingUpstream) Current() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}
