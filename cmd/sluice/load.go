package main

// sluice load: an open-loop load generator for a running sluice.
//
// Requests start on a fixed schedule (request i at start + i/rate), each
// in its own goroutine, whether or not earlier ones have answered: a
// closed loop (send, wait, send) slows down with the server and hides its
// queueing. Everything is bounded: the outstanding requests
// (-max-inflight; an arrival beyond it is dropped by the client and
// counted, never delayed), each request (-timeout), the whole run
// (duration + timeout) and the final drain check of the server's budget.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os/signal"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

func init() {
	subcommands["load"] = cmdLoad
}

const loadUsage = `usage: sluice load [flags]

Sends an open-loop load to a running sluice and reports what happened.
Requests start at a constant arrival rate (-rate per second for
-duration, request i at start + i/rate) each in its own goroutine, without
waiting for earlier answers; when -max-inflight requests are outstanding
an arrival is dropped by the client (counted, never delayed). Every
request is bounded by -timeout, and the run by duration + timeout.
Ctrl-C stops early and still prints the report (a second Ctrl-C quits).

Traffic (-endpoint):
  stream  POST /v1/stream, the event stream read to its terminal event
  tasks   POST /v1/tasks, then its events_url followed to the end
  chat    POST /v1/chat/completions with "stream": true, read to [DONE]
Prompts are warehouse questions generated from -seed (the same seed gives
the same prompts in the same order); a -repeat fraction of the requests
asks an earlier question again (popular ones more often), to exercise the
cache. A second run with the same seed and namespace against the same
server finds the first run's answers in the cache: change -seed or
-namespace, or use -nocache, to measure the model path.

Measured per request: HTTP status (and error code), X-Cache, time to the
first delta (client-side TTFT), total time, terminal event (done, partial,
error) and bytes. The report (a table, or one JSON object with -json)
counts sent = completed + refused (503) + failed + dropped, and gives the
TTFT and total latency percentiles (exact, from every sample).

Leak check: after the run, GET /v1/budget is polled until in_flight and
queued are 0 (at most -drain-wait); the final figures are reported.

Exit codes: 0 the run completed and the budget drained; 1 the budget did
not drain (a leaked permit), the server is unreachable, the run was
interrupted, or bad usage.

flags:
`

// loadConfig is a parsed "sluice load" command line.
type loadConfig struct {
	server, apiKey string
	endpoint       string // stream, tasks or chat
	rate           float64
	duration       time.Duration
	timeout        time.Duration
	maxInflight    int
	seed           uint64
	repeat         float64
	namespace      string
	nocache        bool
	model          string
	maxTokens      int
	drainWait      time.Duration
	json           bool
}

// maxLoadRequests bounds rate × duration (every request keeps a sample).
const maxLoadRequests = 5_000_000

var loadNamespaceRE = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// cmdLoad is "sluice load".
func cmdLoad(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseLoad(args, getenv, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return runLoad(ctx, stop, cfg, stdout, stderr)
}

// parseLoad parses the flags. ok is false when the command must exit
// with code (0 for -h).
func parseLoad(args []string, getenv func(string) string, stderr io.Writer) (cfg loadConfig, code int, ok bool) {
	fs := newFlagSet("sluice load", loadUsage, stderr)
	server, apiKey := clientFlags(fs, getenv)
	fs.StringVar(&cfg.endpoint, "endpoint", "stream", "traffic: stream, tasks or chat")
	fs.Float64Var(&cfg.rate, "rate", 20, "arrival rate, requests per second (open loop)")
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long requests keep arriving")
	fs.DurationVar(&cfg.timeout, "timeout", 60*time.Second, "bound of each request, from its start to its last byte")
	fs.IntVar(&cfg.maxInflight, "max-inflight", 2000, "most outstanding requests; beyond it arrivals are dropped by the client")
	fs.Uint64Var(&cfg.seed, "seed", 1, "seed of the generated prompts")
	fs.Float64Var(&cfg.repeat, "repeat", 0.3, "fraction of requests that ask an earlier question again (0 to 1)")
	fs.StringVar(&cfg.namespace, "namespace", "load", "cache namespace")
	fs.BoolVar(&cfg.nocache, "nocache", false, "neither read nor write the cache")
	fs.StringVar(&cfg.model, "model", "", "model (default: the server's)")
	fs.IntVar(&cfg.maxTokens, "max-tokens", 0, "most tokens per answer (0: the server's default)")
	fs.DurationVar(&cfg.drainWait, "drain-wait", 30*time.Second, "how long to wait after the run for the server's budget to drain")
	fs.BoolVar(&cfg.json, "json", false, "print the report as one JSON object")
	if err := fs.Parse(args); err != nil {
		return cfg, usageExit(err), false
	}
	cfg.server, cfg.apiKey = strings.TrimRight(*server, "/"), *apiKey
	bad := func(format string, a ...any) (loadConfig, int, bool) {
		fs.Usage()
		return cfg, fail(stderr, "load: "+format, a...), false
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q (load takes only flags)", fs.Arg(0))
	}
	if u, err := url.Parse(cfg.server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("-server %q is not an http(s) URL", cfg.server)
	}
	switch {
	case cfg.endpoint != "stream" && cfg.endpoint != "tasks" && cfg.endpoint != "chat":
		return bad("-endpoint %q: want stream, tasks or chat", cfg.endpoint)
	case !(cfg.rate > 0) || math.IsInf(cfg.rate, 0):
		return bad("-rate must be a positive number of requests per second")
	case cfg.duration <= 0:
		return bad("-duration must be positive")
	case cfg.timeout <= 0:
		return bad("-timeout must be positive")
	case cfg.maxInflight < 1:
		return bad("-max-inflight must be at least 1")
	case !(cfg.repeat >= 0 && cfg.repeat <= 1):
		return bad("-repeat must be between 0 and 1")
	case !loadNamespaceRE.MatchString(cfg.namespace):
		return bad("-namespace %q: 1 to 64 of A-Z a-z 0-9 . _ -", cfg.namespace)
	case cfg.maxTokens < 0:
		return bad("-max-tokens must not be negative")
	case cfg.drainWait < 0:
		return bad("-drain-wait must not be negative")
	}
	if n := cfg.count(); n < 1 || n > maxLoadRequests {
		return bad("-rate × -duration is %.0f requests; it must be between 1 and %d", cfg.rate*cfg.duration.Seconds(), maxLoadRequests)
	}
	return cfg, exitOK, true
}

// count is the number of arrivals of the schedule.
func (c loadConfig) count() int {
	n := math.Round(c.rate * c.duration.Seconds())
	if n > maxLoadRequests {
		return maxLoadRequests + 1
	}
	return int(n)
}

// dueAt is when arrival i is due, after the start.
func (c loadConfig) dueAt(i int) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / c.rate)
}

// ---- prompts ----

// promptGen generates varied, deterministic prompts.
type promptGen struct {
	rng      *rand.Rand
	repeat   float64
	distinct []string
}

func newPromptGen(seed uint64, repeat float64) *promptGen {
	return &promptGen{rng: rand.New(rand.NewPCG(seed, 0x5eed_10ad)), repeat: repeat}
}

var (
	loadZones     = []string{"A", "B", "C", "D", "E", "F", "G", "H"}
	loadTemplates = []func(r *rand.Rand) string{
		func(r *rand.Rand) string {
			return fmt.Sprintf("how many SKU-%05d are left in zone %s?", sku(r), zone(r))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("where is SKU-%05d stored in zone %s?", sku(r), zone(r))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("when is the next delivery of SKU-%05d due at dock %d?", sku(r), 1+r.IntN(12))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("what is the reorder point of SKU-%05d in zone %s?", sku(r), zone(r))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("why was order ORD-%06d for SKU-%05d delayed?", r.IntN(1_000_000), sku(r))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("list the open pick orders in zone %s that contain SKU-%05d", zone(r), sku(r))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("summarize yesterday's inbound shipments at dock %d in zone %s", 1+r.IntN(12), zone(r))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("how long does a cycle count of aisle %d in zone %s take, and who should do it?", 1+r.IntN(40), zone(r))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("compare the stock of SKU-%05d in zone %s and zone %s and suggest a transfer", sku(r), zone(r), zone(r))
		},
		func(r *rand.Rand) string {
			return fmt.Sprintf("which forklift is free in zone %s for pallet PAL-%04d?", zone(r), r.IntN(10_000))
		},
	}
)

func sku(r *rand.Rand) int     { return 10_000 + r.IntN(90_000) }
func zone(r *rand.Rand) string { return loadZones[r.IntN(len(loadZones))] }

// next returns the next prompt, and whether it repeats an earlier one.
// Repeats favour the earliest (most popular) questions: index n·u².
func (g *promptGen) next() (string, bool) {
	u := g.rng.Float64()
	if len(g.distinct) > 0 && u < g.repeat {
		v := g.rng.Float64()
		return g.distinct[int(float64(len(g.distinct))*v*v)], true
	}
	p := loadTemplates[g.rng.IntN(len(loadTemplates))](g.rng)
	g.distinct = append(g.distinct, p)
	return p, false
}

// ---- one request ----

// loadSample is what one request measured. Each is written by its own
// goroutine only, and read after they all ended.
type loadSample struct {
	sent     bool   // false: dropped by the client
	status   int    // HTTP status of the first response; 0: none
	code     string // error code of a non-2xx answer or of an error event
	cache    string // X-Cache
	terminal string // done, partial, error; "" when none was read
	failure  string // why the request failed; "" if it did not
	errText  string // an example of the failure
	first    bool   // a first delta came
	ttft     time.Duration
	total    time.Duration
	bytes    int64
}

// outcome is the one bucket a sample counts in.
func (s *loadSample) outcome() string {
	switch {
	case !s.sent:
		return "dropped"
	case s.status == http.StatusServiceUnavailable:
		return "refused"
	case s.failure == "" && s.terminal != "":
		return "completed"
	}
	return "failed"
}

func (s *loadSample) fail(reason string, err error) {
	if s.failure != "" {
		return
	}
	s.failure = reason
	if err != nil {
		s.errText = err.Error()
	} else {
		s.errText = reason
	}
}

// loader runs one load.
type loader struct {
	cfg         loadConfig
	http        *http.Client
	interrupted context.Context // ends on Ctrl-C only
}

var loadReadConfig = &sse.ReadConfig{MaxEventSize: 4 << 20}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n *int64
}

func (c countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	*c.n += int64(n)
	return n, err
}

// do sends one request and reads its answer to the end.
func (l *loader) do(ctx context.Context, prompt string) (s loadSample) {
	s.sent = true
	start := time.Now()
	defer func() {
		if s.total == 0 {
			s.total = time.Since(start)
		}
	}()
	switch l.cfg.endpoint {
	case "stream":
		resp, ok := l.send(ctx, &s, http.MethodPost, "/v1/stream", l.taskBody(prompt))
		if !ok {
			return s
		}
		defer resp.Body.Close()
		s.cache = resp.Header.Get("X-Cache")
		l.readTaskEvents(ctx, &s, resp.Body, start)
	case "tasks":
		resp, ok := l.send(ctx, &s, http.MethodPost, "/v1/tasks", l.taskBody(prompt))
		if !ok {
			return s
		}
		s.cache = resp.Header.Get("X-Cache")
		var created struct {
			EventsURL string `json:"events_url"`
		}
		err := json.NewDecoder(countingReader{io.LimitReader(resp.Body, 1<<20), &s.bytes}).Decode(&created)
		resp.Body.Close()
		if err != nil || created.EventsURL == "" {
			s.fail("bad task answer", err)
			return s
		}
		first := s.status
		ev, ok := l.send(ctx, &s, http.MethodGet, created.EventsURL, nil)
		s.status = first
		if !ok {
			return s
		}
		defer ev.Body.Close()
		l.readTaskEvents(ctx, &s, ev.Body, start)
	case "chat":
		resp, ok := l.send(ctx, &s, http.MethodPost, "/v1/chat/completions", l.chatBody(prompt))
		if !ok {
			return s
		}
		defer drainClose(resp.Body)
		s.cache = resp.Header.Get("X-Cache")
		l.readChat(ctx, &s, resp.Body, start)
	}
	return s
}

// drainClose reads what little may follow the end of a stream (the end of
// the chunked body), so that the connection can be reused, and closes.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	body.Close()
}

func (l *loader) taskBody(prompt string) []byte {
	body := map[string]any{"prompt": prompt, "namespace": l.cfg.namespace, "nocache": l.cfg.nocache}
	if l.cfg.model != "" {
		body["model"] = l.cfg.model
	}
	if l.cfg.maxTokens > 0 {
		body["max_tokens"] = l.cfg.maxTokens
	}
	b, _ := json.Marshal(body) // strings, numbers, bools: cannot fail
	return b
}

func (l *loader) chatBody(prompt string) []byte {
	body := map[string]any{
		"messages": []map[string]string{{"role": "user", "content": prompt}},
		"stream":   true,
		"sluice":   map[string]any{"namespace": l.cfg.namespace, "nocache": l.cfg.nocache},
	}
	if l.cfg.model != "" {
		body["model"] = l.cfg.model
	}
	if l.cfg.maxTokens > 0 {
		body["max_tokens"] = l.cfg.maxTokens
	}
	b, _ := json.Marshal(body) // cannot fail
	return b
}

// send makes one request. It returns the response when its status is
// 2xx; otherwise it records the status or the failure in s.
func (l *loader) send(ctx context.Context, s *loadSample, method, path string, body []byte) (*http.Response, bool) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, l.cfg.server+path, r)
	if err != nil {
		s.fail("bad request", err)
		return nil, false
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodGet || path != "/v1/tasks" {
		req.Header.Set("Accept", "text/event-stream")
	}
	if l.cfg.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+l.cfg.apiKey)
	}
	resp, err := l.http.Do(req)
	if err != nil {
		s.fail(l.reason(ctx, err), err)
		return nil, false
	}
	s.status = resp.StatusCode
	if resp.StatusCode/100 == 2 {
		return resp, true
	}
	se := readServerError(resp)
	resp.Body.Close()
	s.code = se.Code
	if s.code == "" {
		s.code = "HTTP " + strconv.Itoa(resp.StatusCode)
	}
	// A 503 to a request that starts work is a refusal (overload,
	// open circuit, shutdown), counted apart; anything else fails.
	if resp.StatusCode != http.StatusServiceUnavailable || method == http.MethodGet {
		what := "HTTP " + strconv.Itoa(resp.StatusCode)
		if se.Code != "" {
			what += " " + se.Code
		}
		if method == http.MethodGet {
			what = "events: " + what
		}
		s.fail(what, se)
	}
	return nil, false
}

// reason names why a request could not go on: low-cardinality keys for
// the report.
func (l *loader) reason(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case l.interrupted.Err() != nil:
		return "interrupted"
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE):
		return "connection reset"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return "connection closed"
	}
	return "transport error"
}

// readTaskEvents reads a sluice event stream (meta, delta..., one
// terminal event) to its end.
func (l *loader) readTaskEvents(ctx context.Context, s *loadSample, body io.Reader, start time.Time) {
	for ev, err := range sse.Read(countingReader{body, &s.bytes}, loadReadConfig) {
		if err != nil {
			if s.terminal == "" {
				s.fail(l.streamReason(ctx, err), err)
			}
			return
		}
		if s.terminal != "" {
			continue // nothing follows a terminal event; read to the end
		}
		switch ev.Type {
		case "delta":
			if !s.first {
				s.first, s.ttft = true, time.Since(start)
			}
		case "done", "partial", "error":
			s.terminal, s.total = ev.Type, time.Since(start)
			if ev.Type == "error" {
				var e struct {
					Code string `json:"code"`
				}
				_ = json.Unmarshal([]byte(ev.Data), &e)
				s.code = e.Code
			}
		}
	}
	if s.terminal == "" {
		s.fail(l.streamReason(ctx, nil), nil)
	}
}

// readChat reads a chat.completion.chunk stream to its [DONE]. The
// terminal is the finish_reason (stop: done, length: partial, the answer
// was cut) or an in-stream error object.
func (l *loader) readChat(ctx context.Context, s *loadSample, body io.Reader, start time.Time) {
	for ev, err := range sse.Read(countingReader{body, &s.bytes}, loadReadConfig) {
		if err != nil {
			if s.terminal == "" {
				s.fail(l.streamReason(ctx, err), err)
			}
			return
		}
		data := strings.TrimSpace(ev.Data)
		if data == "[DONE]" {
			break
		}
		if data == "" || s.terminal != "" {
			continue
		}
		var ch struct {
			Choices []struct {
				Delta struct {
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Error *struct {
				Code string `json:"code"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &ch); err != nil {
			s.fail("bad chunk", err)
			return
		}
		if ch.Error != nil {
			s.terminal, s.total, s.code = "error", time.Since(start), ch.Error.Code
			continue
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil && *c.Delta.Content != "" && !s.first {
				s.first, s.ttft = true, time.Since(start)
			}
			if c.FinishReason != nil && s.terminal == "" {
				s.terminal, s.total = "done", time.Since(start)
				if *c.FinishReason == "length" {
					s.terminal = "partial"
				}
			}
		}
	}
	if s.terminal == "" {
		s.fail(l.streamReason(ctx, nil), nil)
	}
}

func (l *loader) streamReason(ctx context.Context, err error) string {
	if l.interrupted.Err() != nil || ctx.Err() != nil {
		return l.reason(ctx, err)
	}
	if err == nil {
		return "stream ended without a terminal event"
	}
	return "stream broken: " + l.reason(ctx, err)
}

// ---- the run ----

// loadBudget is the part of GET /v1/budget the leak check reads.
type loadBudget struct {
	Limit         int   `json:"limit"`
	InFlight      int   `json:"in_flight"`
	Queued        int   `json:"queued"`
	RejectedTotal int64 `json:"rejected_total"`
	Upstreams     []struct {
		AcquiredTotal int64 `json:"acquired_total"`
		ReleasedTotal int64 `json:"released_total"`
	} `json:"upstreams"`
}

func (b loadBudget) totals() (acquired, released int64) {
	for _, u := range b.Upstreams {
		acquired += u.AcquiredTotal
		released += u.ReleasedTotal
	}
	return acquired, released
}

// runLoad runs the load and prints the report. ctx ends on Ctrl-C; stop
// restores the default signal handling (so that a second Ctrl-C quits
// while the budget drains).
func runLoad(ctx context.Context, stop func(), cfg loadConfig, stdout, stderr io.Writer) int {
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: min(cfg.maxInflight, 1024),
		IdleConnTimeout:     30 * time.Second,
	}
	hc := &http.Client{Transport: tr}
	defer hc.CloseIdleConnections()
	api := &client{server: cfg.server, apiKey: cfg.apiKey, http: hc, stdout: stdout, stderr: stderr}

	// The server must answer before any load is sent; its budget
	// counters now are the base of the run's.
	var before loadBudget
	{
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := api.doJSON(bctx, http.MethodGet, "/v1/budget", nil, &before)
		cancel()
		if err != nil {
			return fail(stderr, "load: server %s unreachable: GET /v1/budget: %v", cfg.server, err)
		}
	}

	n := cfg.count()
	fmt.Fprintf(stderr, "sluice: load: %d requests to %s %s at %g/s over %s (timeout %s, max in flight %d)\n",
		n, cfg.server, cfg.endpoint, cfg.rate, cfg.duration, cfg.timeout, cfg.maxInflight)

	start := time.Now()
	// The run ends at duration + timeout at the latest, or on Ctrl-C.
	runCtx, cancelRun := context.WithDeadline(ctx, start.Add(cfg.duration+cfg.timeout))
	defer cancelRun()
	l := &loader{cfg: cfg, http: hc, interrupted: ctx}

	samples := make([]loadSample, n)
	gen := newPromptGen(cfg.seed, cfg.repeat)
	var (
		wg          sync.WaitGroup
		inflight    atomic.Int64
		peak        int64
		sent        int
		lagMax      time.Duration
		lastArrival time.Duration
		repeats     int
		interrupted bool
	)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
schedule:
	for i := range n {
		prompt, rep := gen.next() // before any drop: the sequence stays the seed's
		due := cfg.dueAt(i)
		if wait := due - time.Since(start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-runCtx.Done():
				interrupted = true
				break schedule
			}
		} else if runCtx.Err() != nil {
			interrupted = true
			break
		}
		now := time.Since(start)
		lagMax = max(lagMax, now-due)
		lastArrival = now
		sent++
		if rep {
			repeats++
		}
		if inflight.Load() >= int64(cfg.maxInflight) {
			continue // dropped by the client: samples[i].sent stays false
		}
		peak = max(peak, inflight.Add(1))
		wg.Go(func() {
			defer inflight.Add(-1)
			rctx, cancel := context.WithTimeout(runCtx, cfg.timeout)
			defer cancel()
			samples[i] = l.do(rctx, prompt)
		})
	}
	scheduled := time.Since(start)
	if !interrupted {
		fmt.Fprintf(stderr, "sluice: load: all %d requests sent in %s; waiting for %d outstanding\n",
			sent, scheduled.Round(time.Millisecond), inflight.Load())
	}
	wg.Wait()
	elapsed := time.Since(start)
	if ctx.Err() != nil {
		interrupted = true
		stop() // a second Ctrl-C now quits at once
		fmt.Fprintln(stderr, "sluice: load: interrupted; reporting what was measured")
	}

	rep := buildLoadReport(cfg, samples[:sent], repeats)
	rep.Interrupted = interrupted
	rep.Elapsed = seconds(elapsed)
	rep.ScheduleLagMax = millis(lagMax)
	rep.PeakInflight = peak
	// The window over which requests arrived: from the start to the
	// slot after the last arrival (exactly -duration when on time).
	if sent > 0 {
		window := (lastArrival + time.Duration(float64(time.Second)/cfg.rate)).Seconds()
		rep.OfferedRate = round1(float64(sent) / window)
		rep.AchievedRate = round1(float64(sent-rep.Dropped) / window)
	}

	// Leak check: every permit taken during the run must come back.
	code := exitOK
	after, waited, err := drainBudget(api, cfg.drainWait, stderr)
	if err != nil {
		rep.Budget = nil
		writeLoadReport(stdout, cfg, rep)
		return fail(stderr, "load: server %s unreachable after the run: GET /v1/budget: %v", cfg.server, err)
	}
	acq, rel := after.totals()
	acq0, rel0 := before.totals()
	rep.Budget = &loadBudgetReport{
		Limit: after.Limit, InFlight: after.InFlight, Queued: after.Queued,
		AcquiredTotal: acq, ReleasedTotal: rel, Acquired: acq - acq0, Released: rel - rel0,
		Rejected: after.RejectedTotal - before.RejectedTotal,
		Drained:  after.InFlight == 0 && after.Queued == 0, WaitedMs: millis(waited),
	}
	rep.Budget.Leak = !rep.Budget.Drained
	writeLoadReport(stdout, cfg, rep)
	switch {
	case rep.Budget.Leak:
		code = fail(stderr, "load: LEAK: the budget did not drain within %s after the run: in_flight %d, queued %d (acquired %d, released %d)",
			cfg.drainWait, after.InFlight, after.Queued, acq, rel)
	case interrupted:
		code = fail(stderr, "load: interrupted after %d of %d requests", sent, n)
	}
	return code
}

// drainBudget polls GET /v1/budget until nothing is in flight or queued,
// for at most wait. It returns the last answer and how long it waited.
func drainBudget(api *client, wait time.Duration, stderr io.Writer) (loadBudget, time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), wait+10*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	said := false
	for {
		var b loadBudget
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := api.doJSON(rctx, http.MethodGet, "/v1/budget", nil, &b)
		rcancel()
		if err != nil {
			return b, time.Since(start), err
		}
		if b.InFlight == 0 && b.Queued == 0 || time.Since(start) >= wait {
			return b, time.Since(start), nil
		}
		if !said && time.Since(start) >= time.Second {
			said = true
			fmt.Fprintf(stderr, "sluice: load: waiting up to %s for the budget to drain (in_flight %d, queued %d)\n", wait, b.InFlight, b.Queued)
		}
		<-tick.C
	}
}

// ---- the report ----

type loadReport struct {
	Endpoint        string                    `json:"endpoint"`
	Server          string                    `json:"server"`
	Rate            float64                   `json:"rate"`
	DurationS       float64                   `json:"duration_s"`
	Seed            uint64                    `json:"seed"`
	Repeat          float64                   `json:"repeat"`
	Namespace       string                    `json:"namespace"`
	NoCache         bool                      `json:"nocache"`
	Sent            int                       `json:"sent"`
	Completed       int                       `json:"completed"`
	Refused         int                       `json:"refused"`
	Failed          int                       `json:"failed"`
	Dropped         int                       `json:"dropped"`
	Repeats         int                       `json:"repeats"`
	Status          map[string]int            `json:"status"`
	Refusals        map[string]int            `json:"refusals"`
	Failures        map[string]int            `json:"failures"`
	FailureExamples map[string]string         `json:"failure_examples,omitempty"`
	Terminal        map[string]int            `json:"terminal"`
	ErrorCodes      map[string]int            `json:"error_codes"`
	Cache           map[string]int            `json:"cache"`
	CacheHitRatio   float64                   `json:"cache_hit_ratio"`
	TTFT            latencySummary            `json:"ttft_ms"`
	TTFTByCache     map[string]latencySummary `json:"ttft_ms_by_cache"`
	Total           latencySummary            `json:"total_ms"`
	TotalByCache    map[string]latencySummary `json:"total_ms_by_cache"`
	Bytes           int64                     `json:"bytes"`
	OfferedRate     float64                   `json:"offered_rate"`
	AchievedRate    float64                   `json:"achieved_rate"`
	ScheduleLagMax  float64                   `json:"schedule_lag_max_ms"`
	PeakInflight    int64                     `json:"peak_inflight"`
	Elapsed         float64                   `json:"elapsed_s"`
	Interrupted     bool                      `json:"interrupted"`
	Budget          *loadBudgetReport         `json:"budget"`
}

// latencySummary are exact percentiles (nearest rank) of every sample,
// in milliseconds.
type latencySummary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

type loadBudgetReport struct {
	Limit         int     `json:"limit"`
	InFlight      int     `json:"in_flight"`
	Queued        int     `json:"queued"`
	AcquiredTotal int64   `json:"acquired_total"`
	ReleasedTotal int64   `json:"released_total"`
	Acquired      int64   `json:"acquired"` // during this run
	Released      int64   `json:"released"` // during this run
	Rejected      int64   `json:"rejected"` // during this run
	Drained       bool    `json:"drained"`
	WaitedMs      float64 `json:"waited_ms"`
	Leak          bool    `json:"leak"`
}

func buildLoadReport(cfg loadConfig, samples []loadSample, repeats int) *loadReport {
	r := &loadReport{
		Endpoint: cfg.endpoint, Server: cfg.server, Rate: cfg.rate, DurationS: cfg.duration.Seconds(),
		Seed: cfg.seed, Repeat: cfg.repeat, Namespace: cfg.namespace, NoCache: cfg.nocache,
		Sent: len(samples), Repeats: repeats,
		Status: map[string]int{}, Refusals: map[string]int{}, Failures: map[string]int{},
		FailureExamples: map[string]string{}, Terminal: map[string]int{}, ErrorCodes: map[string]int{},
		Cache: map[string]int{}, TTFTByCache: map[string]latencySummary{}, TotalByCache: map[string]latencySummary{},
	}
	var ttft, total []time.Duration
	byCache, totalByCache := map[string][]time.Duration{}, map[string][]time.Duration{}
	for i := range samples {
		s := &samples[i]
		r.Bytes += s.bytes
		if s.status != 0 {
			r.Status[strconv.Itoa(s.status)]++
		}
		switch s.outcome() {
		case "dropped":
			r.Dropped++
			continue
		case "refused":
			r.Refused++
			r.Refusals[s.code]++
			continue
		case "failed":
			r.Failed++
			r.Failures[s.failure]++
			if _, ok := r.FailureExamples[s.failure]; !ok {
				r.FailureExamples[s.failure] = s.errText
			}
		case "completed":
			r.Completed++
			total = append(total, s.total)
			if s.cache != "" {
				totalByCache[s.cache] = append(totalByCache[s.cache], s.total)
			}
		}
		if s.terminal != "" {
			r.Terminal[s.terminal]++
			if s.terminal == "error" && s.code != "" {
				r.ErrorCodes[s.code]++
			}
		}
		if s.cache != "" {
			r.Cache[s.cache]++
		}
		if s.first {
			ttft = append(ttft, s.ttft)
			if s.cache != "" {
				byCache[s.cache] = append(byCache[s.cache], s.ttft)
			}
		}
	}
	answered := 0
	for _, c := range r.Cache {
		answered += c
	}
	if answered > 0 {
		r.CacheHitRatio = math.Round(float64(r.Cache["HIT"])/float64(answered)*1e4) / 1e4
	}
	r.TTFT, r.Total = summarize(ttft), summarize(total)
	for k, v := range byCache {
		r.TTFTByCache[k] = summarize(v)
	}
	for k, v := range totalByCache {
		r.TotalByCache[k] = summarize(v)
	}
	return r
}

// summarize sorts the samples and reads the percentiles off them.
func summarize(d []time.Duration) latencySummary {
	if len(d) == 0 {
		return latencySummary{}
	}
	slices.Sort(d)
	return latencySummary{
		Count: len(d), P50: millis(percentile(d, 50)), P90: millis(percentile(d, 90)),
		P95: millis(percentile(d, 95)), P99: millis(percentile(d, 99)), Max: millis(d[len(d)-1]),
	}
}

// percentile is the nearest-rank percentile of sorted samples.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p/100*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func millis(d time.Duration) float64 { return round1(float64(d) / float64(time.Millisecond)) }
func seconds(d time.Duration) float64 {
	return math.Round(d.Seconds()*1000) / 1000
}
func round1(f float64) float64 { return math.Round(f*10) / 10 }

func writeLoadReport(w io.Writer, cfg loadConfig, r *loadReport) {
	if cfg.json {
		b, _ := json.Marshal(r) // maps, numbers, strings: cannot fail
		_, _ = w.Write(append(b, '\n'))
		return
	}
	cacheMode := "namespace " + r.Namespace
	if r.NoCache {
		cacheMode += ", nocache"
	}
	fmt.Fprintf(w, "sluice load · %s %s · %g req/s for %s · seed %d · repeat %.2f · %s\n\n",
		r.Endpoint, r.Server, r.Rate, cfg.duration, r.Seed, r.Repeat, cacheMode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "requests\tsent %d = completed %d + refused %d + failed %d + dropped %d\n",
		r.Sent, r.Completed, r.Refused, r.Failed, r.Dropped)
	fmt.Fprintf(tw, "rate\toffered %.1f/s · sent to the server %.1f/s · schedule lag max %.1fms · peak in flight %d\n",
		r.OfferedRate, r.AchievedRate, r.ScheduleLagMax, r.PeakInflight)
	fmt.Fprintf(tw, "run\t%.1fs elapsed · %s read%s\n", r.Elapsed, humanBytes(r.Bytes), map[bool]string{true: " · INTERRUPTED"}[r.Interrupted])
	fmt.Fprintf(tw, "status\t%s\n", countList(r.Status))
	fmt.Fprintf(tw, "refusals\t%s\n", countList(r.Refusals))
	fmt.Fprintf(tw, "terminal\t%s\n", countList(r.Terminal))
	if len(r.ErrorCodes) > 0 {
		fmt.Fprintf(tw, "error events\t%s\n", countList(r.ErrorCodes))
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(tw, "failures\t%s\n", countList(r.Failures))
		for _, k := range sortedKeys(r.FailureExamples) {
			fmt.Fprintf(tw, "  e.g.\t%s: %s\n", k, r.FailureExamples[k])
		}
	}
	fmt.Fprintf(tw, "cache\tHIT %d · MISS %d · BYPASS %d · hit ratio %.1f%% of the answers (%d of the requests were repeats)\n",
		r.Cache["HIT"], r.Cache["MISS"], r.Cache["BYPASS"], 100*r.CacheHitRatio, r.Repeats)
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency (ms)\tcount\tp50\tp90\tp95\tp99\tmax\t")
	row := func(name string, s latencySummary) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", name, s.Count, s.P50, s.P90, s.P95, s.P99, s.Max)
	}
	row("ttft", r.TTFT)
	for _, k := range sortedKeys(r.TTFTByCache) {
		row("ttft "+k, r.TTFTByCache[k])
	}
	row("total", r.Total)
	for _, k := range sortedKeys(r.TotalByCache) {
		row("total "+k, r.TotalByCache[k])
	}
	_ = tw.Flush()

	fmt.Fprintln(w)
	if b := r.Budget; b != nil {
		verdict := fmt.Sprintf("drained in %.0fms", b.WaitedMs)
		if b.Leak {
			verdict = fmt.Sprintf("LEAK: not drained after %.0fms", b.WaitedMs)
		}
		fmt.Fprintf(w, "budget    limit %d · in_flight %d · queued %d · acquired %d / released %d (this run +%d / +%d, rejected +%d) · %s\n",
			b.Limit, b.InFlight, b.Queued, b.AcquiredTotal, b.ReleasedTotal, b.Acquired, b.Released, b.Rejected, verdict)
	} else {
		fmt.Fprintln(w, "budget    unknown (the server did not answer GET /v1/budget)")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// countList prints counts as "k: n  k: n", largest first.
func countList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := sortedKeys(m)
	sort.SliceStable(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, " · ")
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
