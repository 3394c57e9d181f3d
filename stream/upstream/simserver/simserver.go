// Package simserver serves the simulated model over HTTP as a standalone
// OpenAI-compatible server ("sluice sim-upstream"): chat completions
// (streamed and not), the model list and embeddings, with log-normal
// delays, a concurrency capacity beyond which it slows down and then
// answers 429, and injected faults (500s, streams cut mid-answer).
//
// The words are the built-in simulated model's (upstream.Sim.Answer), so
// the same request gets the same text from sluice's SLUICE_UPSTREAM=sim and
// from this server; the pacing is this package's, because it depends on
// the load the server carries.
package simserver

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// z99 is the standard normal's 99th percentile: a log-normal delay with
// median m and shape sigma has its p99 at m·e^(sigma·z99).
const z99 = 2.3263478740408408

// Config configures the server. The zero value answers at once (no
// delays), with the simulated model's answer length, no capacity limit and
// no faults.
type Config struct {
	// TTFT is the median delay before the first chunk; 0: none.
	TTFT time.Duration
	// TTFTP99 is the 99th percentile of that delay (log-normal between
	// the two); at most TTFT: every delay is exactly TTFT.
	TTFTP99 time.Duration
	// Gap is the median delay between two chunks; 0: none.
	Gap time.Duration
	// GapP99 is the 99th percentile of the gaps, like TTFTP99.
	GapP99 time.Duration
	// Chunks is the length of every answer in chunks (words); 0: the
	// simulated model's, 20 to 80 depending on the question.
	Chunks int
	// Seed varies the answers (upstream.SimConfig.Seed).
	Seed uint64
	// Capacity is the number of requests served at full speed at once;
	// 0: unlimited. Beyond it, up to Capacity+Overflow requests are
	// served, every delay stretched by in-flight/Capacity (the model
	// shares its throughput); beyond that a request is answered 429.
	Capacity int
	// Overflow is how many requests beyond Capacity are served slowly
	// before the 429s; negative: none (429 right past Capacity). When
	// the capacity changes at run time (Server.SetCapacity) the overflow
	// changes in proportion.
	// default: 0, which means Capacity
	Overflow int
	// TTFTSlope, when positive, stretches the first chunk's delay beyond
	// Capacity by 1 + TTFTSlope·(n−Capacity)/Capacity instead of
	// n/Capacity (which is TTFTSlope 1): a model that queues the excess
	// requests before their first token (4 doubles the TTFT at
	// 1.25·Capacity). The gaps keep the n/Capacity stretch.
	// default: 0, the n/Capacity stretch
	TTFTSlope float64
	// ErrorRate is the share of chat requests answered 500 at once.
	ErrorRate float64
	// DropRate is the share of streamed answers cut mid-answer (the
	// connection is closed without [DONE]).
	DropRate float64
	// Models are the model ids GET /v1/models lists; the first answers
	// requests that name none. default: ["sim-1"]
	Models []string
	// FastModels are further model ids, listed too, answered at once:
	// no delays, no capacity, no faults. A probe beside a slow load (a
	// cache hit needs one answer that completes) asks for one of them.
	FastModels []string
}

// Stats are the server's counters since it started.
type Stats struct {
	Capacity     int   `json:"capacity"`       // now (0: unlimited)
	Requests     int64 `json:"requests"`       // chat completion requests received
	InFlight     int64 `json:"in_flight"`      // being answered now
	PeakInFlight int64 `json:"peak_in_flight"` // most answered at once
	Completed    int64 `json:"completed"`      // answered to their end
	Rejected     int64 `json:"rejected_429"`   // answered 429 (over capacity)
	Errors       int64 `json:"errors_500"`     // answered 500 (ErrorRate)
	Dropped      int64 `json:"dropped"`        // streams cut (DropRate)
	Canceled     int64 `json:"canceled"`       // the client went away first
}

// Server is the simulated upstream, an http.Handler. It is safe for
// concurrent use.
type Server struct {
	cfg      Config
	sim      *upstream.Sim
	ttftSig  float64
	gapSig   float64
	mux      *http.ServeMux
	requests atomic.Int64
	inflight atomic.Int64
	capacity atomic.Int64
	peak     atomic.Int64
	done     atomic.Int64
	rejected atomic.Int64
	errors   atomic.Int64
	dropped  atomic.Int64
	canceled atomic.Int64
	ids      atomic.Uint64
}

// New returns a server for cfg.
func New(cfg Config) *Server {
	if len(cfg.Models) == 0 {
		cfg.Models = []string{"sim-1"}
	}
	if cfg.Overflow == 0 {
		cfg.Overflow = cfg.Capacity
	}
	cfg.Overflow = max(cfg.Overflow, 0)
	s := &Server{
		cfg:     cfg,
		sim:     upstream.NewSim(upstream.SimConfig{Chunks: cfg.Chunks, Seed: cfg.Seed}),
		ttftSig: sigma(cfg.TTFT, cfg.TTFTP99),
		gapSig:  sigma(cfg.Gap, cfg.GapP99),
		mux:     http.NewServeMux(),
	}
	s.capacity.Store(int64(max(cfg.Capacity, 0)))
	s.mux.HandleFunc("POST /v1/chat/completions", s.chat)
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("POST /v1/embeddings", s.embeddings)
	s.mux.HandleFunc("GET /sim/stats", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, s.Stats())
	})
	s.mux.HandleFunc("POST /sim/capacity", s.setCapacity)
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok\n")
	})
	return s
}

// sigma is the log-normal shape putting the 99th percentile at p99.
func sigma(median, p99 time.Duration) float64 {
	if median <= 0 || p99 <= median {
		return 0
	}
	return math.Log(float64(p99)/float64(median)) / z99
}

// ServeHTTP serves /v1/chat/completions, /v1/models, /v1/embeddings, and
// GET /sim/stats (the counters) and /healthz.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Stats returns the counters now.
func (s *Server) Stats() Stats {
	return Stats{
		Capacity: int(s.capacity.Load()),
		Requests: s.requests.Load(), InFlight: s.inflight.Load(), PeakInFlight: s.peak.Load(),
		Completed: s.done.Load(), Rejected: s.rejected.Load(), Errors: s.errors.Load(),
		Dropped: s.dropped.Load(), Canceled: s.canceled.Load(),
	}
}

// SetCapacity changes the capacity now (0: unlimited); the overflow
// changes in proportion.
func (s *Server) SetCapacity(c int) { s.capacity.Store(int64(max(c, 0))) }

// setCapacity is POST /sim/capacity {"capacity": N}: SetCapacity, then
// the counters.
func (s *Server) setCapacity(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Capacity *int `json:"capacity"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<10)).Decode(&body); err != nil || body.Capacity == nil || *body.Capacity < 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "capacity", `want {"capacity": N} with N >= 0`)
		return
	}
	s.SetCapacity(*body.Capacity)
	writeJSON(w, http.StatusOK, s.Stats())
}

// overflow is the number of requests served slowly beyond capacity c.
func (s *Server) overflow(c int64) int64 {
	if s.cfg.Capacity <= 0 {
		return c // the default: as many as the capacity
	}
	return int64(math.Round(float64(s.cfg.Overflow) * float64(c) / float64(s.cfg.Capacity)))
}

// delay draws a log-normal delay of median × e^(sigma·Z), Z standard
// normal clamped to ±4, stretched by the load beyond the capacity.
func (s *Server) delay(median time.Duration, sig float64) time.Duration {
	return s.stretched(median, sig, 1)
}

// firstDelay is delay for the first chunk: stretched by TTFTSlope.
func (s *Server) firstDelay(median time.Duration, sig float64) time.Duration {
	return s.stretched(median, sig, s.cfg.TTFTSlope)
}

func (s *Server) stretched(median time.Duration, sig, slope float64) time.Duration {
	if median <= 0 {
		return 0
	}
	d := float64(median)
	if sig > 0 {
		d *= math.Exp(sig * max(-4, min(4, rand.NormFloat64())))
	}
	if c := s.capacity.Load(); c > 0 {
		if n := s.inflight.Load(); n > c {
			if slope > 0 {
				d *= 1 + slope*float64(n-c)/float64(c)
			} else {
				d *= float64(n) / float64(c)
			}
		}
	}
	return time.Duration(d)
}

// chatRequest is the part of a chat completion request the server reads.
type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Stream              bool `json:"stream"`
	MaxTokens           int  `json:"max_tokens"`
	MaxCompletionTokens int  `json:"max_completion_tokens"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
}

// content reads a message's content: a string, or an array of parts whose
// text parts are joined.
func content(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	var req chatRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "invalid JSON body: "+err.Error())
		return
	}
	if len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "messages", "messages must not be empty")
		return
	}
	fast := req.Model != "" && slices.Contains(s.cfg.FastModels, req.Model)
	if !fast && s.cfg.ErrorRate > 0 && rand.Float64() < s.cfg.ErrorRate {
		s.errors.Add(1)
		writeError(w, http.StatusInternalServerError, "server_error", "", "simulated upstream failure")
		return
	}
	n := s.inflight.Add(1)
	defer s.inflight.Add(-1)
	if c := s.capacity.Load(); !fast && c > 0 && n > c+s.overflow(c) {
		s.rejected.Add(1)
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusTooManyRequests, "rate_limit_exceeded", "", "simulated upstream over capacity")
		return
	}
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}

	ureq := upstream.Request{Model: req.Model, MaxTokens: req.MaxTokens}
	if req.MaxCompletionTokens > 0 {
		ureq.MaxTokens = req.MaxCompletionTokens
	}
	if ureq.Model == "" {
		ureq.Model = s.cfg.Models[0]
	}
	for _, m := range req.Messages {
		ureq.Messages = append(ureq.Messages, upstream.Message{Role: m.Role, Content: content(m.Content)})
	}
	chunks := s.sim.Answer(ureq)
	finish := "stop"
	if ureq.MaxTokens > 0 && len(chunks) == ureq.MaxTokens &&
		len(s.sim.Answer(upstream.Request{Model: ureq.Model, Messages: ureq.Messages})) > len(chunks) {
		finish = "length"
	}
	prompt := 0
	for _, m := range ureq.Messages {
		prompt += len(strings.Fields(m.Content))
	}
	id := "chatcmpl-sim-" + strconv.FormatUint(s.ids.Add(1), 10)
	created := time.Now().Unix()
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": len(chunks), "total_tokens": prompt + len(chunks)}

	delay, first := s.delay, s.firstDelay
	if fast {
		delay = func(time.Duration, float64) time.Duration { return 0 }
		first = delay
	}
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	wait := func(d time.Duration) bool {
		if d <= 0 {
			return r.Context().Err() == nil
		}
		t.Reset(d)
		select {
		case <-t.C:
			return true
		case <-r.Context().Done():
			return false
		}
	}

	if !req.Stream {
		d := first(s.cfg.TTFT, s.ttftSig)
		for range len(chunks) - 1 {
			d += delay(s.cfg.Gap, s.gapSig)
		}
		if !wait(d) {
			s.canceled.Add(1)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": created, "model": ureq.Model,
			"choices": []map[string]any{{
				"index": 0, "finish_reason": finish,
				"message": map[string]any{"role": "assistant", "content": strings.Join(chunks, "")},
			}},
			"usage": usage,
		})
		s.done.Add(1)
		return
	}

	drop := -1
	if !fast && s.cfg.DropRate > 0 && rand.Float64() < s.cfg.DropRate {
		drop = len(chunks) / 2
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	_ = rc.Flush()
	send := func(delta map[string]any, finish any, usage any) bool {
		ch := map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": created, "model": ureq.Model,
			"choices": []map[string]any{{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		if delta == nil {
			ch["choices"] = []any{}
			ch["usage"] = usage
		}
		b, _ := json.Marshal(ch) // maps of strings and numbers: cannot fail
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	for i, text := range chunks {
		d := delay
		median, sig := s.cfg.Gap, s.gapSig
		if i == 0 {
			d, median, sig = first, s.cfg.TTFT, s.ttftSig
		}
		if !wait(d(median, sig)) {
			s.canceled.Add(1)
			return
		}
		if i == drop {
			s.dropped.Add(1)
			panic(http.ErrAbortHandler) // cut the connection: no [DONE]
		}
		delta := map[string]any{"content": text}
		if i == 0 {
			delta["role"] = "assistant"
		}
		if !send(delta, nil, nil) {
			s.canceled.Add(1)
			return
		}
	}
	if !send(map[string]any{}, finish, nil) {
		s.canceled.Add(1)
		return
	}
	if req.StreamOptions != nil && req.StreamOptions.IncludeUsage && !send(nil, nil, usage) {
		s.canceled.Add(1)
		return
	}
	if _, err := io.WriteString(w, "data: [DONE]\n\n"); err == nil {
		_ = rc.Flush()
	}
	s.done.Add(1)
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	ids := append(slices.Clip(s.cfg.Models), s.cfg.FastModels...)
	data := make([]map[string]any, len(ids))
	for i, m := range ids {
		data[i] = map[string]any{"id": m, "object": "model", "created": 0, "owned_by": "sluice-sim"}
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// embeddings answers with the cache's builtin embedder: deterministic,
// in-process, BuiltinDim floats per input.
func (s *Server) embeddings(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string          `json:"model"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 4<<20)).Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "", "invalid JSON body: "+err.Error())
		return
	}
	var inputs []string
	var one string
	if err := json.Unmarshal(req.Input, &one); err == nil {
		inputs = []string{one}
	} else if err := json.Unmarshal(req.Input, &inputs); err != nil || len(inputs) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "input", "input must be a string or a non-empty array of strings")
		return
	}
	data := make([]map[string]any, len(inputs))
	tokens := 0
	for i, in := range inputs {
		v, err := cache.Builtin{}.Embed(context.Background(), in)
		if err != nil {
			writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
			return
		}
		tokens += len(strings.Fields(in))
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": v}
	}
	model := req.Model
	if model == "" {
		model = "sim-embed"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list", "data": data, "model": model,
		"usage": map[string]int{"prompt_tokens": tokens, "total_tokens": tokens},
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError writes an OpenAI error object.
func writeError(w http.ResponseWriter, status int, typ, param, msg string) {
	e := map[string]any{"message": msg, "type": typ, "code": typ}
	if param != "" {
		e["param"] = param
	}
	writeJSON(w, status, map[string]any{"error": e})
}
