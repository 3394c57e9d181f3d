package web

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
)

// Config configures the HTTP front. The zero value works.
type Config struct {
	// MaxBody is the request body limit in bytes. default: 1 MiB
	MaxBody int64
	// Conn is the per-connection SSE policy (heartbeat, send buffer,
	// slow-reader limit).
	Conn stream.ConnConfig
	// APIKeys maps API keys to tenants; empty turns auth off.
	APIKeys map[string]string
	// TokenSecret signs the events tokens of events_url. Instances that
	// share tasks must share it. default: random, this process only
	TokenSecret []byte
	// Logger receives logs. default: slog.Default()
	Logger *slog.Logger
	// Ready, when set, is asked by /readyz for other dependencies (Redis);
	// it returns nil when they are reachable.
	Ready func(ctx context.Context) error
	// Models, when set, lists the upstream's models for GET /v1/models
	// (bounded by ctx). default: the default model only
	Models func(ctx context.Context) ([]string, error)
	// Metrics, when set, serves GET /metrics.
	Metrics http.Handler
	// MetricsKey, when set, is the bearer key GET /metrics requires (the
	// API keys do not open it: it shows every tenant's traffic).
	// default: none, /metrics is open.
	MetricsKey string
	// ConnObserver, when set, observes SSE connections.
	ConnObserver ConnObserver
	// FallbackHold is how long a task API event stream of a model with
	// several upstreams waits for the task's first delta (or its end)
	// before its status line and meta event, so that a fallback to the
	// next upstream before the first token is named by meta's upstream.
	// Only such streams wait, and only until the first delta.
	// default: 1s; negative: none.
	FallbackHold time.Duration

	// Connection limits (see HTTPServer and Listen). Each bounds what a
	// client without a key can hold.

	// ReadHeaderTimeout bounds reading a request's headers.
	// default: 10s
	ReadHeaderTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from the handler's
	// start; past it the request gets 408. default: 10s; negative: none.
	BodyTimeout time.Duration
	// MaxHeaderBytes bounds a request's headers (beyond: 431).
	// default: 64 KiB
	MaxHeaderBytes int
	// IdleConnTimeout closes a keep-alive connection idle this long.
	// default: 2m
	IdleConnTimeout time.Duration
	// MaxConns is the most connections served at once; beyond it a
	// connection gets 503 overloaded. default: 10000; negative: no cap.
	MaxConns int
	// OpsConns are the connections beyond MaxConns kept for GET /healthz,
	// /readyz and /metrics. default: 16
	OpsConns int
	// TriageTimeout is how long a connection beyond MaxConns may take to
	// send its request line. default: 1s
	TriageTimeout time.Duration
}

// setDefaults fills the zero connection limits.
func (c *Config) setDefaults() {
	c.Conn = c.Conn.WithDefaults()
	if c.FallbackHold == 0 {
		c.FallbackHold = time.Second
	}
	if c.MaxBody <= 0 {
		c.MaxBody = 1 << 20
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.BodyTimeout == 0 {
		c.BodyTimeout = DefaultBodyTimeout
	}
	if c.MaxHeaderBytes <= 0 {
		c.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if c.IdleConnTimeout <= 0 {
		c.IdleConnTimeout = DefaultIdleConnTimeout
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.OpsConns <= 0 {
		c.OpsConns = DefaultOpsConns
	}
	if c.TriageTimeout <= 0 {
		c.TriageTimeout = DefaultTriageTimeout
	}
}

// ConnObserver receives per-connection SSE events for metrics.
type ConnObserver interface {
	ConnOpened()
	ConnClosed(st stream.ConnStats)
	ConnWrote(bytes, events, merged int)
}

// Server is sluice's HTTP handler.
type Server struct {
	cfg    Config
	orch   *orchestrator.Orchestrator
	cache  *cache.Cache // may be nil: cache off
	mux    *http.ServeMux
	secret []byte // signs events_url tokens
	log    *slog.Logger
}

// New returns the HTTP handler for o and c (c may be nil).
func New(cfg Config, o *orchestrator.Orchestrator, c *cache.Cache) *Server {
	cfg.setDefaults()
	s := &Server{cfg: cfg, orch: o, cache: c, mux: http.NewServeMux(), log: cfg.Logger}
	s.secret = cfg.TokenSecret
	if len(s.secret) == 0 {
		s.secret = make([]byte, 32)
		_, _ = rand.Read(s.secret) // crypto/rand never fails on supported platforms
	}
	s.routes()
	return s
}

// ServeHTTP routes the request. Unknown paths and methods get the
// contract's JSON errors; a panic in a handler becomes a JSON 500 (and
// is logged with its stack) instead of a dropped connection.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer func() {
		if p := recover(); p != nil {
			if err, ok := p.(error); ok && errors.Is(err, http.ErrAbortHandler) {
				panic(p)
			}
			s.log.Error("handler panicked", "path", r.URL.Path, "panic", p, "stack", string(debug.Stack()))
			writeError(w, &apiError{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error"})
		}
	}()
	if !s.limitRequest(w, r) {
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		s.fallback(w, r)
		return
	}
	s.mux.ServeHTTP(w, r)
	s.lingerBody(w, r)
}

// fallback turns the mux's plain-text 404 and 405 into JSON errors.
func (s *Server) fallback(w http.ResponseWriter, r *http.Request) {
	rec := &headerRecorder{h: http.Header{}}
	s.mux.ServeHTTP(rec, r)
	if allow := rec.h.Get("Allow"); allow != "" {
		w.Header().Set("Allow", allow)
	}
	if rec.status == http.StatusMethodNotAllowed {
		writeError(w, &apiError{Status: http.StatusMethodNotAllowed, Code: codeMethod, Message: r.Method + " is not allowed on " + r.URL.Path})
		return
	}
	writeError(w, notFound("no such endpoint: "+r.Method+" "+r.URL.Path))
}

type headerRecorder struct {
	h      http.Header
	status int
}

func (h *headerRecorder) Header() http.Header         { return h.h }
func (h *headerRecorder) Write(b []byte) (int, error) { return len(b), nil } // the mux's text body is replaced
func (h *headerRecorder) WriteHeader(code int)        { h.status = code }

// authenticate returns the request's tenant. With auth off every request
// is the empty tenant; ok is false when the key is missing or wrong.
func (s *Server) authenticate(r *http.Request) (tenant string, ok bool) {
	if len(s.cfg.APIKeys) == 0 {
		return "", true
	}
	scheme, key, found := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if found && strings.EqualFold(scheme, "Bearer") { // the scheme is case-insensitive (RFC 7235)
		for k, t := range s.cfg.APIKeys {
			if hmac.Equal([]byte(k), []byte(strings.TrimSpace(key))) {
				return t, true
			}
		}
	}
	return "", false
}

// errUnauthorized is the answer to a missing or wrong key; the caller also
// sets the WWW-Authenticate header (challenge).
var errUnauthorized = &apiError{Status: http.StatusUnauthorized, Code: codeUnauthorized,
	Message: "a valid API key is required: Authorization: Bearer KEY"}

// challenge also closes the connection after the 401, at once: the
// server would otherwise read up to 256 KiB of the request's body, before
// answering (keep-alive) or before closing, so a client without a key
// could hold a connection by sending a body slowly. The read deadline in
// the past makes that read fail at once; the answer is still written.
func challenge(w http.ResponseWriter) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now()) // unsupported (a recorder): nothing to cut
}

// tenant authenticates the request; ok is false when a 401 has been
// written.
func (s *Server) tenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	t, ok := s.authenticate(r)
	if !ok {
		challenge(w)
		writeError(w, errUnauthorized)
	}
	return t, ok
}

// authed wraps a handler that needs the caller's tenant.
func (s *Server) authed(h func(w http.ResponseWriter, r *http.Request, tenant string)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if t, ok := s.tenant(w, r); ok {
			h(w, r, t)
		}
	}
}

// eventsToken grants reading one task's events without a header, for
// browsers' EventSource when auth is on.
func (s *Server) eventsToken(tenant, id string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(tenant))
	m.Write([]byte{0})
	m.Write([]byte(id))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil)[:18])
}

// tokenTenant returns the tenant whose events token for task id is tok.
// It checks every configured tenant (a handful) before anything is looked
// up, so a made-up token costs no lookup.
func (s *Server) tokenTenant(id, tok string) (string, bool) {
	seen := map[string]bool{}
	for _, tenant := range s.cfg.APIKeys {
		if seen[tenant] {
			continue
		}
		seen[tenant] = true
		if hmac.Equal([]byte(tok), []byte(s.eventsToken(tenant, id))) {
			return tenant, true
		}
	}
	return "", false
}
