package web

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
)

// Defaults of the connection limits in Config.
const (
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout       = 10 * time.Second
	DefaultMaxHeaderBytes    = 64 << 10
	DefaultIdleConnTimeout   = 2 * time.Minute
	DefaultMaxConns          = 10000
	DefaultOpsConns          = 16
	DefaultTriageTimeout     = time.Second
)

// opsPaths are the endpoints that keep working beyond MaxConns, on the
// OpsConns reserved connections: probes and scrapes must see an overloaded
// server, not time out on it.
var opsPaths = map[string]bool{"/healthz": true, "/readyz": true, "/metrics": true}

// errBodyTimeout answers a request whose body did not arrive within
// BodyTimeout.
var errBodyTimeout = &apiError{Status: http.StatusRequestTimeout, Code: "request_timeout",
	Message: "the request body did not arrive in time"}

// errTooManyConns answers a connection beyond MaxConns.
var errTooManyConns = &apiError{Status: http.StatusServiceUnavailable, Code: orchestrator.CodeOverloaded,
	Message: "the server has too many open connections; retry later", RetryAfter: time.Second}

// HTTPServer returns an http.Server for s with the connection limits of
// its Config: ReadHeaderTimeout, MaxHeaderBytes, IdleConnTimeout, and the
// marking of the reserved connections of a Listener (see Listen). Serve it
// on s.Listen(ln). The body timeout is applied by s itself, per request.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		IdleTimeout:       s.cfg.IdleConnTimeout,
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			if _, ok := c.(*opsConn); ok {
				return context.WithValue(ctx, opsConnKey{}, true)
			}
			return ctx
		},
	}
}

// opsConnKey marks, in a request's context, a connection accepted beyond
// MaxConns for an operations endpoint.
type opsConnKey struct{}

// limitRequest applies the per-request limits before routing: a request
// that came on a reserved operations connection may only reach an
// operations endpoint (and the connection closes after it), and a body
// must arrive within BodyTimeout. It returns false when it has answered.
func (s *Server) limitRequest(w http.ResponseWriter, r *http.Request) bool {
	if r.Context().Value(opsConnKey{}) != nil {
		w.Header().Set("Connection", "close")
		if !opsPaths[r.URL.Path] {
			writeError(w, errTooManyConns)
			return false
		}
	}
	if s.cfg.BodyTimeout > 0 && r.ContentLength != 0 && r.Body != nil && r.Body != http.NoBody {
		rc := http.NewResponseController(w)
		if rc.SetReadDeadline(time.Now().Add(s.cfg.BodyTimeout)) == nil {
			r.Body = &deadlineBody{ReadCloser: r.Body, rc: rc}
		}
	}
	return true
}

// deadlineBody is a request body read under a deadline. At its end the
// deadline is lifted: the server then watches the connection for the
// client going away, and a stream answering this request may last far
// longer than the body took. A read past the deadline fails with
// errBodyTimeout; the deadline also bounds the server's draining of a
// body the handler did not read.
type deadlineBody struct {
	io.ReadCloser
	rc   *http.ResponseController
	done bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF) && !b.done:
		b.done = true
		_ = b.rc.SetReadDeadline(time.Time{}) // supported: it was set before
	case errors.Is(err, os.ErrDeadlineExceeded):
		err = errBodyTimeout
	}
	return n, err
}

// Listen wraps ln with the connection cap of s's Config: at most MaxConns
// connections are served at once. A connection beyond them is given
// TriageTimeout to send its request line: a GET of /healthz, /readyz or
// /metrics is served on one of OpsConns reserved connections (one request,
// then it closes); anything else gets a 503 overloaded with Retry-After at
// once and is closed. Over-cap connections are answered by at most
// 4×OpsConns goroutines at a time; beyond those they get the 503 without
// waiting for their request.
//
// NOTE: golang.org/x/net/netutil.LimitListener caps connections by not
// accepting beyond the cap, so the kernel's backlog fills, clients hang
// until their own timeout and a probe cannot tell overload from death.
// Answering 503 needs the connection accepted, hence this wrapper.
func (s *Server) Listen(ln net.Listener) *Listener {
	l := &Listener{
		Listener: ln,
		max:      s.cfg.MaxConns,
		opsMax:   int64(s.cfg.OpsConns),
		triage:   make(chan struct{}, 4*max(s.cfg.OpsConns, 1)),
		timeout:  s.cfg.TriageTimeout,
		accepted: make(chan accepted),
		opsc:     make(chan net.Conn),
		done:     make(chan struct{}),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l
}

// Listener is a net.Listener with a cap on open connections that answers
// 503 beyond it (see Server.Listen). Its methods are safe for concurrent
// use.
type Listener struct {
	net.Listener
	max     int   // negative: no cap
	opsMax  int64 // reserved operations connections
	timeout time.Duration
	triage  chan struct{} // semaphore of the goroutines answering over-cap connections

	open    atomic.Int64 // connections served within max
	ops     atomic.Int64 // reserved operations connections open
	refused atomic.Int64 // connections answered 503

	accepted chan accepted // from acceptLoop
	opsc     chan net.Conn // triaged operations connections
	done     chan struct{} // closed by Close
	once     sync.Once
	wg       sync.WaitGroup // acceptLoop and the triage goroutines
}

type accepted struct {
	c   net.Conn
	err error
}

// ListenerStats are the counters of a Listener.
type ListenerStats struct {
	Open    int   // connections served within MaxConns
	Ops     int   // reserved operations connections open
	Refused int64 // connections answered 503 (or closed) for being over the cap
}

// Stats returns the listener's counters.
func (l *Listener) Stats() ListenerStats {
	return ListenerStats{Open: int(l.open.Load()), Ops: int(l.ops.Load()), Refused: l.refused.Load()}
}

// ConnCounts returns the open, reserved and refused connection counts
// (for metrics.ConnSource).
func (l *Listener) ConnCounts() (open, reserved int, refused int64) {
	st := l.Stats()
	return st.Open, st.Ops, st.Refused
}

// acceptLoop owns the wrapped listener's Accept. It hands every result to
// Accept, so an accept error (such as EMFILE) still reaches the http
// server, which backs off.
func (l *Listener) acceptLoop() {
	defer l.wg.Done()
	for {
		c, err := l.Listener.Accept()
		select {
		case l.accepted <- accepted{c, err}:
		case <-l.done:
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return
			}
		}
	}
}

// Accept returns the next connection to serve: one within the cap, or a
// reserved operations connection.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		select {
		case a := <-l.accepted:
			if a.err != nil {
				return nil, a.err
			}
			if l.max < 0 || l.open.Add(1) <= int64(l.max) {
				return &countedConn{Conn: a.c, n: &l.open}, nil
			}
			l.open.Add(-1)
			l.refuse(a.c)
		case c := <-l.opsc:
			return c, nil
		case <-l.done:
			return nil, net.ErrClosed
		}
	}
}

// Close closes the listener and waits for the goroutines answering
// over-cap connections (each within TriageTimeout plus half a second).
func (l *Listener) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.Listener.Close()
	})
	l.wg.Wait()
	return err
}

// refuse answers an over-cap connection: triaged in its own goroutine
// while there is room, else a 503 at once.
func (l *Listener) refuse(c net.Conn) {
	select {
	case l.triage <- struct{}{}:
		l.wg.Add(1)
		go l.triageConn(c)
	default:
		l.refused.Add(1)
		_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = c.Write(overCapResponse)
		c.Close()
	}
}

// overCapResponse is the raw HTTP answer to an over-cap connection.
var overCapResponse = func() []byte {
	var body bytes.Buffer
	rec := &rawResponse{h: http.Header{}, body: &body}
	writeError(rec, errTooManyConns)
	var b bytes.Buffer
	b.WriteString("HTTP/1.1 " + strconv.Itoa(rec.status) + " " + http.StatusText(rec.status) + "\r\n")
	rec.h.Set("Connection", "close")
	rec.h.Set("Content-Length", strconv.Itoa(body.Len()))
	_ = rec.h.Write(&b)
	b.WriteString("\r\n")
	b.Write(body.Bytes())
	return b.Bytes()
}()

// rawResponse records a response written by writeError.
type rawResponse struct {
	h      http.Header
	status int
	body   *bytes.Buffer
}

func (r *rawResponse) Header() http.Header         { return r.h }
func (r *rawResponse) Write(p []byte) (int, error) { return r.body.Write(p) }
func (r *rawResponse) WriteHeader(code int)        { r.status = code }

// triageConn reads an over-cap connection's request line: an operations
// request is handed to Accept on a reserved connection, anything else
// gets the 503.
func (l *Listener) triageConn(c net.Conn) {
	defer l.wg.Done()
	defer func() { <-l.triage }()
	_ = c.SetDeadline(time.Now().Add(l.timeout))
	br := bufio.NewReaderSize(c, 512)
	line, err := br.ReadSlice('\n')
	if err == nil && isOpsRequest(line) {
		if l.ops.Add(1) <= l.opsMax {
			_ = c.SetDeadline(time.Time{})
			oc := &opsConn{countedConn: countedConn{Conn: c, n: &l.ops}, r: io.MultiReader(bytes.NewReader(append([]byte(nil), line...)), br)}
			select {
			case l.opsc <- oc:
			case <-l.done:
				oc.Close()
			}
			return
		}
		l.ops.Add(-1)
	}
	l.refused.Add(1)
	_ = c.SetWriteDeadline(time.Now().Add(time.Second)) // the triage deadline may have passed
	_, _ = c.Write(overCapResponse)
	// Close gently: a close with unread request bytes would reset the
	// connection and could destroy the 503 before the client reads it.
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(c, 64<<10))
	}
	c.Close()
}

// isOpsRequest reports whether an HTTP/1 request line is a GET or HEAD of
// an operations endpoint.
func isOpsRequest(line []byte) bool {
	method, rest, ok := bytes.Cut(line, []byte(" "))
	if !ok || !(string(method) == http.MethodGet || string(method) == http.MethodHead) {
		return false
	}
	target, _, _ := bytes.Cut(rest, []byte(" "))
	path, _, _ := bytes.Cut(target, []byte("?"))
	return opsPaths[string(path)]
}

// countedConn is a connection counted in n until it is closed.
type countedConn struct {
	net.Conn
	n    *atomic.Int64
	once sync.Once
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.n.Add(-1) })
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection: net/http sends its FIN this
// way before a lingering close, so the wrapper must not hide it.
func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// opsConn is a reserved operations connection whose request line has
// already been read (r replays it).
type opsConn struct {
	countedConn
	r io.Reader
}

func (c *opsConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// KeyedHandler returns h behind a bearer key: a request without
// "Authorization: Bearer key" gets the contract's 401. An empty key
// returns h itself. It guards GET /metrics (Config.MetricsKey), also on
// a separate metrics address.
func KeyedHandler(key string, h http.Handler) http.Handler {
	if key == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		if !strings.EqualFold(scheme, "Bearer") || !hmac.Equal([]byte(strings.TrimSpace(got)), []byte(key)) {
			challenge(w)
			writeError(w, &apiError{Status: http.StatusUnauthorized, Code: codeUnauthorized,
				Message: "the metrics key is required: Authorization: Bearer KEY"})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// lingerKey marks, in a request's headers, a body refused before it was
// read. It cannot come from the wire: a header name holds no space.
const lingerKey = "Sluice refused-body"

// refusedUnread marks r's body as refused before it was read (or cut at
// the limit): once the answer is out, lingerBody drops what is left.
func refusedUnread(r *http.Request) { r.Header[lingerKey] = nil }

// lingerBody reads and drops, after the answer has gone out, what a client
// still sends of a body refused before it was read: up to 16 × MaxBody,
// within BodyTimeout (10s when off); then the connection closes as the
// answer said. Without it net/http closes at once, and a client still
// writing its body (a Go client sending 2 MiB to a 1 MiB limit) most often
// sees its write fail with a reset or a broken pipe instead of reading the
// 413. A body declared larger than the bound is not waited for.
func (s *Server) lingerBody(w http.ResponseWriter, r *http.Request) {
	if _, ok := r.Header[lingerKey]; !ok {
		return
	}
	limit := 16 * s.cfg.MaxBody
	if r.ContentLength > limit {
		return
	}
	rc := http.NewResponseController(w)
	if rc.Flush() != nil {
		return
	}
	wait := s.cfg.BodyTimeout
	if wait <= 0 {
		wait = DefaultBodyTimeout
	}
	_ = rc.SetReadDeadline(time.Now().Add(wait))
	_, _ = io.CopyN(io.Discard, r.Body, limit)
}
