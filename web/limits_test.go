package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// front is a sluice HTTP front served the way cmd/sluice serves it:
// Server.HTTPServer on Server.Listen, over real TCP.
type front struct {
	Addr string
	URL  string
	ln   *web.Listener
}

// newFront serves another front for e's orchestrator and cache with cfg.
func newFront(t *testing.T, e *env, cfg web.Config) *front {
	t.Helper()
	s := web.New(cfg, e.Orch, e.Cache)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.HTTPServer()
	l := s.Listen(ln)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close() // closes the listener and every connection
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
		_ = l.Close() // waits for its goroutines
	})
	return &front{Addr: ln.Addr().String(), URL: "http://" + ln.Addr().String(), ln: l}
}

// dial opens a raw TCP connection to f, closed at the end of the test.
func (f *front) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", f.Addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// rawResponse reads one response from c within d.
func rawResponse(t *testing.T, c net.Conn, d time.Duration) (*http.Response, string) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no response within %v: %v", d, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// closedWithin reports whether the server closes c (or answers and
// closes) within d; it reads and discards whatever comes.
func closedWithin(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, c)
	var ne net.Error
	return !(errors.As(err, &ne) && ne.Timeout())
}

// timed returns how long f takes.
func timed(f func()) time.Duration {
	t0 := time.Now()
	f()
	return time.Since(t0)
}

// bystander measures a /healthz and a cache hit, by a well-behaved client
// on its own connection.
func bystander(t *testing.T, f *front, prompt string) (healthz, hit time.Duration) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	healthz = timed(func() {
		resp, err := client.Get(f.URL + "/healthz")
		if err != nil {
			t.Fatalf("bystander /healthz: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("bystander /healthz: %d", resp.StatusCode)
		}
	})
	hit = timed(func() {
		resp, err := client.Post(f.URL+"/v1/stream", "application/json", strings.NewReader(`{"prompt":`+jsonString(prompt)+`}`))
		if err != nil {
			t.Fatalf("bystander cache hit: %v", err)
		}
		defer resp.Body.Close()
		r := summarise(t, readEvents(t, resp.Body))
		if c, _ := r.Meta["cache"].(map[string]any); c["status"] != "hit" {
			t.Fatalf("bystander's repeat was not a cache hit: %v", r.Meta)
		}
	})
	return healthz, hit
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestSlowBodiesAreCut opens connections that declare a body and send it
// one byte every 100 ms. Each is answered 408 and closed within the body
// timeout (before: never cut, ~21k of them took the server down), while a
// bystander's /healthz and cache hit stay fast.
func TestSlowBodiesAreCut(t *testing.T) {
	const slow, bodyTimeout = 50, 500 * time.Millisecond
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"cached ", "answer"}})
	f := newFront(t, e, web.Config{BodyTimeout: bodyTimeout})
	const prompt = "what is in zone B?"
	e.stream(map[string]any{"prompt": prompt}) // fills the cache

	start := time.Now()
	conns := make([]net.Conn, slow)
	for i := range conns {
		c := f.dial(t)
		fmt.Fprintf(c, "POST /v1/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{")
		conns[i] = c
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() { // the slow sender: a byte every 100 ms until cut
			defer wg.Done()
			tick := time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
					_ = c.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := c.Write([]byte(" ")); err != nil {
						return
					}
				}
			}
		}()
	}
	defer func() { cancel(); wg.Wait() }()

	h, hit := bystander(t, f, prompt)
	t.Logf("%d slow bodies: bystander /healthz %v, cache hit %v", slow, h, hit)
	if h > time.Second || hit > time.Second {
		t.Errorf("bystander slowed down: /healthz %v, cache hit %v", h, hit)
	}
	for i, c := range conns {
		resp, body := rawResponse(t, c, bodyTimeout+3*time.Second)
		if resp.StatusCode != http.StatusRequestTimeout || !strings.Contains(body, `"request_timeout"`) {
			t.Fatalf("slow body %d: %d %s; want 408 request_timeout", i, resp.StatusCode, body)
		}
		if !closedWithin(c, 3*time.Second) {
			t.Fatalf("slow body %d: connection still open after its 408", i)
		}
	}
	took := time.Since(start)
	t.Logf("all %d slow bodies answered 408 and closed %v after they started (body timeout %v)", slow, took, bodyTimeout)
	if took > bodyTimeout+4*time.Second {
		t.Fatalf("slow bodies cut after %v; the bound is %v", took, bodyTimeout)
	}
	e.waitIdle()
}

// TestBodyTimeoutDoesNotCutStreams: the body deadline is lifted once the
// body has arrived, so an answer that streams longer than the body
// timeout is delivered whole.
func TestBodyTimeoutDoesNotCutStreams(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"a", "b", "c", "d", "e"}, Gap: 150 * time.Millisecond})
	f := newFront(t, e, web.Config{BodyTimeout: 200 * time.Millisecond})
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Post(f.URL+"/v1/stream", "application/json", strings.NewReader(`{"prompt":"slow answer","nocache":true}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	r := summarise(t, readEvents(t, resp.Body))
	if r.Text != "abcde" || r.Terminal.Type != "done" {
		t.Fatalf("stream longer than the body timeout: text %q, terminal %q", r.Text, r.Terminal.Type)
	}
}

// TestSlowHeadersAreCut: a client sending a header line every 100 ms is
// closed at the header timeout.
func TestSlowHeadersAreCut(t *testing.T) {
	e := newEnv(t, envOpts{})
	const timeout = 400 * time.Millisecond
	f := newFront(t, e, web.Config{ReadHeaderTimeout: timeout})
	c := f.dial(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n")
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if _, err := fmt.Fprintf(c, "X-Slow-%d: y\r\n", i); err != nil {
					return
				}
			}
		}
	}()
	defer func() { cancel(); <-done }()
	if d := timed(func() {
		if !closedWithin(c, timeout+3*time.Second) {
			t.Fatalf("slow headers not cut within %v", timeout+3*time.Second)
		}
	}); d > timeout+time.Second {
		t.Fatalf("slow headers cut after %v (header timeout %v)", d, timeout)
	}
}

// TestUnauthorizedBodyIsNotRead: with auth on, a request without a key is
// answered 401 at once, without waiting for its body, and the connection
// closes (before: the server drained up to 256 KiB of body first, so a
// slow unauthenticated body held the connection).
func TestUnauthorizedBodyIsNotRead(t *testing.T) {
	e := newEnv(t, envOpts{})
	f := newFront(t, e, web.Config{APIKeys: map[string]string{"k1": "a"}, BodyTimeout: time.Minute})
	for _, path := range []string{"POST /v1/stream", "POST /v1/tasks", "POST /v1/chat/completions", "POST /v1/responses",
		"GET /v1/responses/00000000-0000-4000-8000-000000000000"} {
		c := f.dial(t)
		fmt.Fprintf(c, "%s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{\"stream\":", path)
		var resp *http.Response
		d := timed(func() { resp, _ = rawResponse(t, c, 2*time.Second) })
		if resp.StatusCode != http.StatusUnauthorized || !resp.Close {
			t.Fatalf("%s: %d, close %v; want 401 and Connection: close", path, resp.StatusCode, resp.Close)
		}
		if !closedWithin(c, 2*time.Second) {
			t.Fatalf("%s: connection still open after the 401", path)
		}
		t.Logf("%s: 401 after %v with 99990 body bytes unsent", path, d)
	}
}

// TestOverCapConnectionsGet503: beyond MaxConns a connection gets a fast
// 503 overloaded with Retry-After (before: accepted until the file limit,
// then accept failed and clients hung); /healthz, /readyz and /metrics
// still answer on the reserved connections, and a reserved connection
// cannot be used for anything else.
func TestOverCapConnectionsGet503(t *testing.T) {
	const maxConns = 5
	e := newEnv(t, envOpts{})
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "sluice_up 1\n") })
	f := newFront(t, e, web.Config{MaxConns: maxConns, OpsConns: 2, ReadHeaderTimeout: time.Minute, Metrics: metrics})
	held := make([]net.Conn, maxConns)
	for i := range held {
		held[i] = f.dial(t) // silent: each holds a slot for the header timeout
	}
	// Accepting is asynchronous: wait until the listener counts them.
	deadline := time.Now().Add(5 * time.Second)
	for f.ln.Stats().Open < maxConns {
		if time.Now().After(deadline) {
			t.Fatalf("listener counts %d open connections; want %d", f.ln.Stats().Open, maxConns)
		}
		time.Sleep(5 * time.Millisecond) // polling a counter: nothing signals an accept
	}

	c := f.dial(t)
	fmt.Fprintf(c, "GET /v1/budget HTTP/1.1\r\nHost: x\r\n\r\n")
	var resp *http.Response
	var body string
	d := timed(func() { resp, body = rawResponse(t, c, 2*time.Second) })
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
		!strings.Contains(body, `"overloaded"`) || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("over the cap: %d %v %s; want 503 overloaded with Retry-After", resp.StatusCode, resp.Header, body)
	}
	if d > 500*time.Millisecond {
		t.Errorf("the 503 took %v", d)
	}
	t.Logf("over-cap connection answered 503 in %v", d)

	// A silent over-cap connection gets its 503 once the triage time is
	// up.
	c = f.dial(t)
	d = timed(func() { resp, body = rawResponse(t, c, 3*time.Second) })
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, `"overloaded"`) {
		t.Fatalf("silent over-cap connection: %d %s; want 503 overloaded", resp.StatusCode, body)
	}
	t.Logf("silent over-cap connection answered 503 in %v (triage timeout %v)", d, web.DefaultTriageTimeout)

	for _, path := range []string{"/healthz", "/readyz", "/metrics"} {
		c := f.dial(t)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
		resp, body := rawResponse(t, c, 3*time.Second)
		if resp.StatusCode != http.StatusOK && path != "/readyz" { // readiness depends on the fake upstream
			t.Fatalf("%s over the cap: %d %s", path, resp.StatusCode, body)
		}
		if resp.StatusCode == http.StatusServiceUnavailable && strings.Contains(body, "connections") {
			t.Fatalf("%s over the cap refused: %s", path, body)
		}
		// A reserved connection serves one request: asking it for more
		// finds it closed.
		fmt.Fprintf(c, "GET /v1/budget HTTP/1.1\r\nHost: x\r\n\r\n")
		if !closedWithin(c, 2*time.Second) {
			t.Fatalf("reserved connection for %s stays open", path)
		}
	}
	if st := f.ln.Stats(); st.Refused < 1 {
		t.Fatalf("stats %+v: no refusal counted", st)
	}

	// Slots come back when connections close.
	for _, h := range held {
		h.Close()
	}
	deadline = time.Now().Add(5 * time.Second)
	for f.ln.Stats().Open > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("listener still counts %d open connections", f.ln.Stats().Open)
		}
		time.Sleep(5 * time.Millisecond) // polling a counter: nothing signals a close
	}
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	r, err := client.Get(f.URL + "/v1/budget")
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("after the held connections closed: %v %v", r, err)
	}
	r.Body.Close()
}

// TestHeaderOverLimitGets431: headers beyond MaxHeaderBytes are refused
// with 431 (before: 1 MB headers were read whole; 1,000 such clients took
// the process from 14 MB to 2.5 GB).
func TestHeaderOverLimitGets431(t *testing.T) {
	e := newEnv(t, envOpts{})
	f := newFront(t, e, web.Config{})
	c := f.dial(t)
	go func() { // the server may stop reading before all is sent
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 256<<10))
	}()
	resp, _ := rawResponse(t, c, 5*time.Second)
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("256 KiB header: %d; want 431", resp.StatusCode)
	}
	// Just under the default limit is fine.
	c = f.dial(t)
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", 60<<10))
	if resp, _ := rawResponse(t, c, 5*time.Second); resp.StatusCode != http.StatusOK {
		t.Fatalf("60 KiB header: %d; want 200", resp.StatusCode)
	}
}
