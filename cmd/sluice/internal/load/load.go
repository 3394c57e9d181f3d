// Package load is the load generator of "sluice load", the benchmark
// driver: an open-loop load against a running sluice (through package
// web/client) or straight against its OpenAI-compatible upstream, at one
// or several arrival rates, and its report (text, JSON, SVG plots).
//
// Requests start on a fixed schedule (request i at start + i/rate), each
// in its own goroutine, whether or not earlier ones have answered: a
// closed loop (send, wait, send) slows down with the server and hides its
// queueing. Latencies are measured from the scheduled send time, not from
// when the goroutine got to send, so that a stalled generator or a slow
// connection setup counts against the latency (no coordinated omission).
// Everything is bounded: the outstanding requests
// (-max-inflight; an arrival beyond it is dropped by the client and
// counted, never delayed), each request (-timeout), the whole run
// (duration + timeout) and the final drain check of the server's budget.
package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/web/client"
)

// Config is one load: what to send, how fast, and its bounds.
type Config struct {
	Server, APIKey string
	Endpoint       string        // stream, tasks, chat or responses
	Target         string        // sluice (default) or upstream: Server is an OpenAI-compatible upstream, sent chat completions
	Rate           float64       // arrivals per second
	Duration       time.Duration // how long requests arrive
	Timeout        time.Duration // bound of each request
	MaxInflight    int           // most outstanding requests; beyond it arrivals are dropped
	Seed           uint64        // seed of the prompts
	Repeat         float64       // fraction of requests that repeat an earlier prompt
	Namespace      string
	NoCache        bool
	Model          string
	MaxTokens      int
	DrainWait      time.Duration // how long to wait after the run for the budget to drain
	JSON           bool          // the report as one JSON object
	Out            string        // file for every run's report, as {"runs": [...]}; "" none
	Plot           string        // SVG file: latency against offered load (several rates) or in flight over time (one); "" none
	Hold           HoldConfig    // with Hold.Streams > 0: hold mode (RunHold)
	Adaptive       AdaptiveConfig
}

// Target values of Config.Target.
const (
	TargetSluice   = "sluice"
	TargetUpstream = "upstream"
)

// upstream reports whether the load goes straight to an upstream.
func (c Config) upstream() bool { return c.Target == TargetUpstream }

// MaxRequests bounds rate × duration (every request keeps a sample).
const MaxRequests = 5_000_000

// Count is the number of arrivals of the schedule.
func (c Config) Count() int {
	n := math.Round(c.Rate * c.Duration.Seconds())
	if n > MaxRequests {
		return MaxRequests + 1
	}
	return int(n)
}

// dueAt is when arrival i is due, after the start.
func (c Config) dueAt(i int) time.Duration {
	return time.Duration(float64(i) * float64(time.Second) / c.Rate)
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

// Next returns the next prompt, and whether it repeats an earlier one.
// Repeats favour the earliest (most popular) questions: index n·u².
func (g *promptGen) Next() (string, bool) {
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
	sent     bool          // false: dropped by the client
	due      time.Duration // when the schedule sent it, after the start
	status   int           // HTTP status of the first response; 0: none
	code     string        // error code of a non-2xx answer or of an error event
	cache    string        // X-Cache
	terminal stream.Event  // done, partial, error; "" when none was read
	failure  string        // why the request failed; "" if it did not
	errText  string        // an example of the failure
	first    bool          // a first delta came
	ttft     time.Duration
	total    time.Duration
	bytes    int64
	// Where the time went: lag, from the scheduled send to the request's
	// goroutine sending it (the generator's own delay, counted in every
	// latency); wait, of the first request, from a connection in hand to
	// the first byte of the answer (the write, the server's time and the
	// wake-ups at both ends, without the generator's lag or its reading
	// of the answer); 0 when no answer came.
	lag, wait time.Duration
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
	cfg         Config
	api         *client.Client
	interrupted context.Context // ends on Ctrl-C only
}

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

// do sends one request and reads its answer to the end. Its latencies
// are measured from start, the time the schedule sent it at.
func (l *loader) do(ctx context.Context, body []byte, start time.Time) (s loadSample) {
	s.sent = true
	s.lag = time.Since(start)
	defer func() {
		if s.total == 0 {
			s.total = time.Since(start)
		}
	}()
	w := new(waitTimer)
	ctx = httptrace.WithClientTrace(ctx, w.trace(start))
	defer func() { s.wait = time.Duration(w.wait.Load()) }()
	switch l.cfg.Endpoint {
	case "stream":
		resp, ok := l.send(ctx, &s, http.MethodPost, "/v1/stream", body)
		if !ok {
			return s
		}
		defer resp.Body.Close()
		s.cache = resp.Header.Get("X-Cache")
		l.readTaskEvents(ctx, &s, resp.Body, start)
	case "tasks":
		resp, ok := l.send(ctx, &s, http.MethodPost, "/v1/tasks", body)
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
		resp, ok := l.send(ctx, &s, http.MethodPost, "/v1/chat/completions", body)
		if !ok {
			return s
		}
		defer drainClose(resp.Body)
		s.cache = resp.Header.Get("X-Cache")
		l.readChat(ctx, &s, resp.Body, start)
	case "responses":
		resp, ok := l.send(ctx, &s, http.MethodPost, "/v1/responses", body)
		if !ok {
			return s
		}
		defer drainClose(resp.Body)
		s.cache = resp.Header.Get("X-Cache")
		l.readResponses(ctx, &s, resp.Body, start)
	}
	return s
}

// waitTimer times the first request of a sample: from the connection in
// hand (GotConn, on the request's goroutine) to the first byte of the
// answer (GotFirstResponseByte, on the transport's read loop, which gets
// the request after GotConn). wait is atomic: after a timeout the read
// loop may still set it while the sample is read.
type waitTimer struct {
	conn time.Duration // since the scheduled send; set once, on the request's goroutine
	wait atomic.Int64  // nanoseconds; 0 until the first byte
}

func (w *waitTimer) trace(start time.Time) *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		GotConn: func(httptrace.GotConnInfo) {
			if w.conn == 0 {
				w.conn = time.Since(start)
			}
		},
		GotFirstResponseByte: func() {
			w.wait.CompareAndSwap(0, int64(time.Since(start)-w.conn))
		},
	}
}

// body is the first request's body for a prompt.
func (l *loader) body(prompt string) []byte {
	switch l.cfg.Endpoint {
	case "chat":
		return l.chatBody(prompt)
	case "responses":
		return l.responsesBody(prompt)
	}
	return l.taskBody(prompt)
}

// drainClose reads what little may follow the end of a stream (the end of
// the chunked body), so that the connection can be reused, and closes.
func drainClose(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 4<<10))
	body.Close()
}

func (l *loader) taskBody(prompt string) []byte {
	body := map[string]any{"prompt": prompt, "namespace": l.cfg.Namespace, "nocache": l.cfg.NoCache}
	if l.cfg.Model != "" {
		body["model"] = l.cfg.Model
	}
	if l.cfg.MaxTokens > 0 {
		body["max_tokens"] = l.cfg.MaxTokens
	}
	b, _ := json.Marshal(body) // strings, numbers, bools: cannot fail
	return b
}

func (l *loader) chatBody(prompt string) []byte {
	body := map[string]any{
		"messages": []map[string]string{{"role": "user", "content": prompt}},
		"stream":   true,
	}
	if !l.cfg.upstream() { // an upstream may refuse what it does not know
		body["sluice"] = map[string]any{"namespace": l.cfg.Namespace, "nocache": l.cfg.NoCache}
	}
	if l.cfg.Model != "" {
		body["model"] = l.cfg.Model
	}
	if l.cfg.MaxTokens > 0 {
		body["max_tokens"] = l.cfg.MaxTokens
	}
	b, _ := json.Marshal(body) // cannot fail
	return b
}

func (l *loader) responsesBody(prompt string) []byte {
	body := map[string]any{
		"input":  prompt,
		"stream": true,
		"sluice": map[string]any{"namespace": l.cfg.Namespace, "nocache": l.cfg.NoCache},
	}
	if l.cfg.Model != "" {
		body["model"] = l.cfg.Model
	}
	if l.cfg.MaxTokens > 0 {
		body["max_output_tokens"] = l.cfg.MaxTokens
	}
	b, _ := json.Marshal(body) // cannot fail
	return b
}

// send makes one request. It returns the response when its status is
// 2xx; otherwise it records the status or the failure in s.
func (l *loader) send(ctx context.Context, s *loadSample, method, path string, body []byte) (*http.Response, bool) {
	accept := ""
	if method == http.MethodGet || path != "/v1/tasks" {
		accept = "text/event-stream"
	}
	var b any // a nil []byte would be a body
	if body != nil {
		b = body
	}
	resp, err := l.api.Send(ctx, method, path, b, accept)
	var se *client.APIError
	switch {
	case err == nil:
		s.status = resp.StatusCode
		return resp, true
	case !errors.As(err, &se):
		s.fail(l.reason(ctx, err), err)
		return nil, false
	}
	s.status = se.Status
	s.code = se.Code
	if s.code == "" {
		s.code = "HTTP " + strconv.Itoa(se.Status)
	}
	// A 503 to a request that starts work is a refusal (overload,
	// open circuit, shutdown), counted apart; anything else fails.
	if se.Status != http.StatusServiceUnavailable || method == http.MethodGet {
		what := "HTTP " + strconv.Itoa(se.Status)
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

// readStream reads an event stream to its end, giving each event before
// the terminal one to event, one door's reading of it: it sets s.first,
// s.ttft and, at the end, s.terminal and s.total. An error from event
// fails the sample as a malformed event. A stream that ends (or breaks)
// before a terminal event fails with the reason.
func (l *loader) readStream(ctx context.Context, s *loadSample, body io.Reader, event func(ev client.Event) error) {
	er := client.NewEventReader(countingReader{body, &s.bytes})
	for {
		ev, err := er.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if s.terminal == "" {
				s.fail(l.streamReason(ctx, err), err)
			}
			return
		}
		if s.terminal != "" {
			continue // nothing follows a terminal event; read to the end
		}
		if err := event(ev); err != nil {
			s.fail("bad event", err)
			return
		}
	}
	if s.terminal == "" {
		s.fail(l.streamReason(ctx, nil), nil)
	}
}

// firstToken records the time to the first token, once.
func (s *loadSample) firstToken(start time.Time) {
	if !s.first {
		s.first, s.ttft = true, time.Since(start)
	}
}

// end records the terminal event and the total time.
func (s *loadSample) end(terminal stream.Event, start time.Time) {
	s.terminal, s.total = terminal, time.Since(start)
}

// readTaskEvents reads a sluice event stream (meta, delta..., one
// terminal event) to its end.
func (l *loader) readTaskEvents(ctx context.Context, s *loadSample, body io.Reader, start time.Time) {
	l.readStream(ctx, s, body, func(ev client.Event) error {
		switch ev.Type {
		case stream.EventDelta:
			s.firstToken(start)
		case stream.EventDone, stream.EventPartial, stream.EventError:
			s.end(ev.Type, start)
			if ev.Type == stream.EventError {
				var e struct {
					Code string `json:"code"`
				}
				_ = json.Unmarshal(ev.Data, &e)
				s.code = e.Code
			}
		}
		return nil
	})
}

// readChat reads a chat.completion.chunk stream to its end. The terminal
// is the finish_reason (stop: done, length: partial, the answer was cut)
// or an in-stream error object; [DONE] without one is no terminal.
func (l *loader) readChat(ctx context.Context, s *loadSample, body io.Reader, start time.Time) {
	l.readStream(ctx, s, body, func(ev client.Event) error {
		data := strings.TrimSpace(string(ev.Data))
		if data == "" || data == "[DONE]" {
			return nil
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
			return err
		}
		if ch.Error != nil {
			s.end(stream.EventError, start)
			s.code = ch.Error.Code
			return nil
		}
		for _, c := range ch.Choices {
			if c.Delta.Content != nil && *c.Delta.Content != "" {
				s.firstToken(start)
			}
			if c.FinishReason != nil && s.terminal == "" {
				s.end(stream.EventDone, start)
				if *c.FinishReason == "length" { // the OpenAI door's finish reason of a cut answer
					s.terminal = stream.EventPartial
				}
			}
		}
		return nil
	})
}

// readResponses reads a Responses stream (response.created ...
// response.output_text.delta ... one of response.completed, incomplete or
// failed) to its end.
func (l *loader) readResponses(ctx context.Context, s *loadSample, body io.Reader, start time.Time) {
	l.readStream(ctx, s, body, func(ev client.Event) error {
		switch ev.Type {
		case "response.output_text.delta":
			s.firstToken(start)
		case "response.completed":
			s.end(stream.EventDone, start)
		case "response.incomplete":
			s.end(stream.EventPartial, start)
		case "response.failed", "error":
			s.end(stream.EventError, start)
			var e struct {
				Code     string `json:"code"`
				Response struct {
					Error struct {
						Code string `json:"code"`
					} `json:"error"`
				} `json:"response"`
			}
			_ = json.Unmarshal(ev.Data, &e)
			s.code = e.Code
			if s.code == "" {
				s.code = e.Response.Error.Code
			}
		}
		return nil
	})
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

// Exit codes of Run.
const (
	exitOK     = 0
	exitFailed = 1
)

// fail prints a one-line reason on stderr and returns exitFailed.
func fail(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "sluice: "+format+"\n", a...)
	return exitFailed
}

// Run runs the load at cfg.Rate and prints the report. ctx ends on
// Ctrl-C; stop restores the default signal handling (so that a second
// Ctrl-C quits while the budget drains).
func Run(ctx context.Context, stop func(), cfg Config, stdout, stderr io.Writer) int {
	return RunRates(ctx, stop, cfg, []float64{cfg.Rate}, stdout, stderr)
}

// RunRates runs the load once per rate, one after the other, printing
// each report as it ends (with -json, one JSON object per line), then
// writes cfg.Out and cfg.Plot. It stops at the first run that fails.
func RunRates(ctx context.Context, stop func(), cfg Config, rates []float64, stdout, stderr io.Writer) int {
	var reports []*Report
	code := exitOK
	for _, rate := range rates {
		c := cfg
		c.Rate = rate
		rep, rc := runOne(ctx, stop, c, stdout, stderr)
		if rep != nil {
			reports = append(reports, rep)
		}
		if rc != exitOK {
			code = rc
			break
		}
	}
	if cfg.Out != "" && len(reports) > 0 {
		b, _ := json.MarshalIndent(map[string]any{"runs": reports}, "", "  ") // cannot fail
		if err := os.WriteFile(cfg.Out, append(b, '\n'), 0o644); err != nil {
			code = fail(stderr, "load: %v", err)
		}
	}
	if cfg.Plot != "" && len(reports) > 0 {
		if err := os.WriteFile(cfg.Plot, Plot(reports), 0o644); err != nil {
			code = fail(stderr, "load: %v", err)
		}
	}
	return code
}

// runOne runs one load and prints its report; rep is nil when nothing
// was sent (the server unreachable).
func runOne(ctx context.Context, stop func(), cfg Config, stdout, stderr io.Writer) (*Report, int) {
	var dials atomic.Int64 // connections opened: a refusal must not cost one
	dial := (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	tr := &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return dial(ctx, network, addr)
		},
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: min(cfg.MaxInflight, 1024),
		IdleConnTimeout:     30 * time.Second,
	}
	hc := &http.Client{Transport: tr}
	defer hc.CloseIdleConnections()
	api, err := client.New(cfg.Server, cfg.APIKey, hc)
	if err != nil {
		return nil, fail(stderr, "load: %v", err)
	}

	// The server must answer before any load is sent; its budget
	// counters now are the base of the run's. An upstream has no
	// budget: its model list must answer.
	var before client.Budget
	{
		bctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		if cfg.upstream() {
			var models struct {
				Data []struct {
					ID string `json:"id"`
				} `json:"data"`
			}
			_, err = api.Do(bctx, http.MethodGet, "/v1/models", nil, &models)
			if err == nil && cfg.Model == "" && len(models.Data) > 0 {
				cfg.Model = models.Data[0].ID // an upstream needs a model
			}
		} else {
			before, err = api.Budget(bctx)
		}
		cancel()
		if err != nil {
			what := "GET /v1/budget"
			if cfg.upstream() {
				what = "GET /v1/models"
			}
			return nil, fail(stderr, "load: server %s unreachable: %s: %v", cfg.Server, what, err)
		}
	}
	var stats0 serverStats
	statsOK := false
	if !cfg.upstream() {
		stats0, statsOK = scrapeServer(ctx, hc, cfg.Server, cfg.APIKey)
	}

	n := cfg.Count()
	fmt.Fprintf(stderr, "sluice: load: %d requests to %s %s at %g/s over %s (timeout %s, max in flight %d)\n",
		n, cfg.Server, cfg.Endpoint, cfg.Rate, cfg.Duration, cfg.Timeout, cfg.MaxInflight)

	dials0 := dials.Load()
	start := time.Now()
	// The run ends at duration + timeout at the latest, or on Ctrl-C.
	runCtx, cancelRun := context.WithDeadline(ctx, start.Add(cfg.Duration+cfg.Timeout))
	defer cancelRun()
	l := &loader{cfg: cfg, api: api, interrupted: ctx}

	samples := make([]loadSample, n)
	gen := newPromptGen(cfg.Seed, cfg.Repeat)
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
	series, stopSeries := sampleInflight(start, cfg.Duration, &inflight)
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i := range n {
		prompt, rep := gen.Next() // before any drop: the sequence stays the seed's
		body := l.body(prompt)    // ready before its send time, not counted in its latency
		due := cfg.dueAt(i)
		if !waitUntil(runCtx, timer, start.Add(due)) { // at once when late
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
		if inflight.Load() >= int64(cfg.MaxInflight) {
			continue // dropped by the client: samples[i].sent stays false
		}
		peak = max(peak, inflight.Add(1))
		wg.Go(func() {
			defer inflight.Add(-1)
			rctx, cancel := context.WithTimeout(runCtx, cfg.Timeout)
			defer cancel()
			samples[i] = l.do(rctx, body, start.Add(due))
			samples[i].due = due
		})
	}
	scheduled := time.Since(start)
	if !interrupted {
		fmt.Fprintf(stderr, "sluice: load: all %d requests sent in %s; waiting for %d outstanding\n",
			sent, scheduled.Round(time.Millisecond), inflight.Load())
	}
	wg.Wait()
	elapsed := time.Since(start)
	stopSeries()
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
	rep.Dials = dials.Load() - dials0
	rep.InflightSeries = *series
	// The window over which requests arrived: from the start to the
	// slot after the last arrival (exactly -duration when on time).
	if sent > 0 {
		window := (lastArrival + time.Duration(float64(time.Second)/cfg.Rate)).Seconds()
		rep.OfferedRate = round1(float64(sent) / window)
		rep.AchievedRate = round1(float64(sent-rep.Dropped) / window)
	}
	// Goodput: the answers completed within the arrival window, per
	// second of it (the tail after the last arrival does not count).
	if window := cfg.Duration; sent > 0 {
		done := 0
		for i := range samples[:sent] {
			if s := &samples[i]; s.outcome() == "completed" && s.due+s.total <= window {
				done++
			}
		}
		rep.Goodput = round1(float64(done) / window.Seconds())
	}
	if cfg.upstream() {
		writeLoadReport(stdout, cfg, rep)
		if interrupted {
			return rep, fail(stderr, "load: interrupted after %d of %d requests", sent, n)
		}
		return rep, exitOK
	}
	if stats1, ok := scrapeServer(context.Background(), hc, cfg.Server, cfg.APIKey); ok && statsOK {
		if stats0.cpuOK && stats1.cpuOK {
			cpu := stats1.cpu - stats0.cpu
			rep.ServerCPU = math.Round(cpu*1000) / 1000
			if rep.Completed+rep.Refused > 0 {
				rep.ServerCPUPerRequest = round1(cpu * 1e6 / float64(rep.Completed+rep.Refused))
			}
		}
		rep.ServerRuntime = runtimeReport(stats0, stats1, rep.Completed+rep.Refused)
	}

	// Leak check: every permit taken during the run must come back.
	code := exitOK
	after, waited, err := drainBudget(api, cfg.DrainWait, stderr)
	if err != nil {
		rep.Budget = nil
		writeLoadReport(stdout, cfg, rep)
		return rep, fail(stderr, "load: server %s unreachable after the run: GET /v1/budget: %v", cfg.Server, err)
	}
	acq, rel := after.Totals()
	acq0, rel0 := before.Totals()
	rep.Budget = &BudgetReport{
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
			cfg.DrainWait, after.InFlight, after.Queued, acq, rel)
	case interrupted:
		code = fail(stderr, "load: interrupted after %d of %d requests", sent, n)
	}
	return rep, code
}

// InflightPoint is the number of outstanding requests at T seconds after
// the start of a run.
type InflightPoint struct {
	T float64 `json:"t_s"`
	N int64   `json:"n"`
}

// sampleInflight samples inflight about 500 times over duration (at
// least every 10ms) until stop is called; *series is complete once stop
// has returned.
func sampleInflight(start time.Time, duration time.Duration, inflight *atomic.Int64) (series *[]InflightPoint, stop func()) {
	series = new([]InflightPoint)
	every := max(duration/500, 10*time.Millisecond)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			*series = append(*series, InflightPoint{T: math.Round(time.Since(start).Seconds()*1000) / 1000, N: inflight.Load()})
			select {
			case <-tick.C:
			case <-quit:
				return
			}
		}
	}()
	return series, func() { close(quit); <-done }
}

// drainBudget polls GET /v1/budget until nothing is in flight or queued,
// for at most wait. It returns the last answer and how long it waited.
func drainBudget(api *client.Client, wait time.Duration, stderr io.Writer) (client.Budget, time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), wait+10*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	said := false
	for {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		b, err := api.Budget(rctx)
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

// Report is what a load measured, printed as a table or as JSON.
type Report struct {
	Endpoint            string                    `json:"endpoint"`
	Server              string                    `json:"server"`
	Rate                float64                   `json:"rate"`
	DurationS           float64                   `json:"duration_s"`
	Seed                uint64                    `json:"seed"`
	Repeat              float64                   `json:"repeat"`
	Namespace           string                    `json:"namespace"`
	NoCache             bool                      `json:"nocache"`
	Sent                int                       `json:"sent"`
	Completed           int                       `json:"completed"`
	Refused             int                       `json:"refused"`
	Failed              int                       `json:"failed"`
	Dropped             int                       `json:"dropped"`
	Repeats             int                       `json:"repeats"`
	Status              map[string]int            `json:"status"`
	Refusals            map[string]int            `json:"refusals"`
	Failures            map[string]int            `json:"failures"`
	FailureExamples     map[string]string         `json:"failure_examples,omitempty"`
	Terminal            map[string]int            `json:"terminal"`
	ErrorCodes          map[string]int            `json:"error_codes"`
	Cache               map[string]int            `json:"cache"`
	CacheHitRatio       float64                   `json:"cache_hit_ratio"`
	TTFT                LatencySummary            `json:"ttft_ms"`
	TTFTByCache         map[string]LatencySummary `json:"ttft_ms_by_cache"`
	Total               LatencySummary            `json:"total_ms"`
	RefusedLatency      LatencySummary            `json:"refused_ms"` // the time to a 503
	TotalByCache        map[string]LatencySummary `json:"total_ms_by_cache"`
	Bytes               int64                     `json:"bytes"`
	OfferedRate         float64                   `json:"offered_rate"`
	AchievedRate        float64                   `json:"achieved_rate"`
	ScheduleLagMax      float64                   `json:"schedule_lag_max_ms"`
	PeakInflight        int64                     `json:"peak_inflight"`
	Elapsed             float64                   `json:"elapsed_s"`
	Interrupted         bool                      `json:"interrupted"`
	Budget              *BudgetReport             `json:"budget"`
	Target              string                    `json:"target"`                    // sluice or upstream
	Goodput             float64                   `json:"goodput"`                   // answers completed within the arrival window, per second of it
	ServerCPU           float64                   `json:"server_cpu_s"`              // the server's process CPU seconds during the run (GET /metrics); 0 unknown
	ServerCPUPerRequest float64                   `json:"server_cpu_us_per_request"` // ServerCPU per completed or refused request, µs
	ServerRuntime       *RuntimeReport            `json:"server_runtime,omitempty"`  // the server's scheduling latency, GC pauses and cycles during the run (GET /metrics)
	InflightSeries      []InflightPoint           `json:"inflight_series,omitempty"`
	// Where the time went, each part of the latencies above: SendLag,
	// from the scheduled send to the request's goroutine sending it (the
	// generator's own delay, every request sent); RefusedWait and
	// WaitByCache (completed answers), from a connection in hand to the
	// first byte of the answer (the server's time and the wake-ups of
	// both ends, without the generator's lag or its reading).
	SendLag     LatencySummary            `json:"send_lag_ms"`
	RefusedWait LatencySummary            `json:"refused_wait_ms"`
	WaitByCache map[string]LatencySummary `json:"wait_ms_by_cache"`
	Dials       int64                     `json:"dials"` // connections the generator opened during the run
}

// LatencySummary are exact percentiles (nearest rank) of every sample,
// in milliseconds.
type LatencySummary struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p99_9"`
	Max   float64 `json:"max"`
}

type BudgetReport struct {
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

func buildLoadReport(cfg Config, samples []loadSample, repeats int) *Report {
	r := &Report{
		Endpoint: cfg.Endpoint, Target: cfg.Target, Server: cfg.Server, Rate: cfg.Rate, DurationS: cfg.Duration.Seconds(),
		Seed: cfg.Seed, Repeat: cfg.Repeat, Namespace: cfg.Namespace, NoCache: cfg.NoCache,
		Sent: len(samples), Repeats: repeats,
		Status: map[string]int{}, Refusals: map[string]int{}, Failures: map[string]int{},
		FailureExamples: map[string]string{}, Terminal: map[string]int{}, ErrorCodes: map[string]int{},
		Cache: map[string]int{}, TTFTByCache: map[string]LatencySummary{}, TotalByCache: map[string]LatencySummary{},
		WaitByCache: map[string]LatencySummary{},
	}
	var ttft, total, refused, lag, refusedWait []time.Duration
	byCache, totalByCache, waitByCache := map[string][]time.Duration{}, map[string][]time.Duration{}, map[string][]time.Duration{}
	for i := range samples {
		s := &samples[i]
		r.Bytes += s.bytes
		if s.sent {
			lag = append(lag, s.lag)
		}
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
			refused = append(refused, s.total)
			if s.wait > 0 {
				refusedWait = append(refusedWait, s.wait)
			}
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
				if s.wait > 0 {
					waitByCache[s.cache] = append(waitByCache[s.cache], s.wait)
				}
			}
		}
		if s.terminal != "" {
			r.Terminal[string(s.terminal)]++
			if s.terminal == stream.EventError && s.code != "" {
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
	r.TTFT, r.Total, r.RefusedLatency = summarize(ttft), summarize(total), summarize(refused)
	for k, v := range byCache {
		r.TTFTByCache[k] = summarize(v)
	}
	for k, v := range totalByCache {
		r.TotalByCache[k] = summarize(v)
	}
	r.SendLag, r.RefusedWait = summarize(lag), summarize(refusedWait)
	for k, v := range waitByCache {
		r.WaitByCache[k] = summarize(v)
	}
	return r
}

// summarize sorts the samples and reads the percentiles off them.
func summarize(d []time.Duration) LatencySummary {
	if len(d) == 0 {
		return LatencySummary{}
	}
	slices.Sort(d)
	return LatencySummary{
		Count: len(d), P50: millis(percentile(d, 50)), P90: millis(percentile(d, 90)),
		P95: millis(percentile(d, 95)), P99: millis(percentile(d, 99)), P999: millis(percentile(d, 99.9)), Max: millis(d[len(d)-1]),
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

func writeLoadReport(w io.Writer, cfg Config, r *Report) {
	if cfg.JSON {
		b, _ := json.Marshal(r) // maps, numbers, strings: cannot fail
		_, _ = w.Write(append(b, '\n'))
		return
	}
	cacheMode := "namespace " + r.Namespace
	if r.NoCache {
		cacheMode += ", nocache"
	}
	fmt.Fprintf(w, "sluice load · %s %s · %g req/s for %s · seed %d · repeat %.2f · %s\n\n",
		r.Endpoint, r.Server, r.Rate, cfg.Duration, r.Seed, r.Repeat, cacheMode)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "requests\tsent %d = completed %d + refused %d + failed %d + dropped %d\n",
		r.Sent, r.Completed, r.Refused, r.Failed, r.Dropped)
	fmt.Fprintf(tw, "rate\toffered %.1f/s · sent to the server %.1f/s · schedule lag max %.1fms · peak in flight %d · %d connections opened\n",
		r.OfferedRate, r.AchievedRate, r.ScheduleLagMax, r.PeakInflight, r.Dials)
	if r.ServerCPU > 0 {
		fmt.Fprintf(tw, "server cpu\t%.3fs · %.1fµs per request\n", r.ServerCPU, r.ServerCPUPerRequest)
	}
	if rt := r.ServerRuntime; rt != nil {
		fmt.Fprintf(tw, "server sched latency\t%s (time goroutines waited runnable)\n", rt.SchedLatency)
		fmt.Fprintf(tw, "server gc\t%.0f cycles · %.1f per 1,000 requests · pauses %s\n", rt.GCCycles, rt.GCCyclesPer1kReqs, rt.GCPause)
		fmt.Fprintf(tw, "server allocation\t%.0f allocations · %s per request\n", rt.AllocsPerRequest, humanBytes(int64(rt.BytesPerRequest)))
	}
	fmt.Fprintf(tw, "run\t%.1fs elapsed · goodput %.1f/s (completed within -duration) · %s read%s\n", r.Elapsed, r.Goodput, humanBytes(r.Bytes), map[bool]string{true: " · INTERRUPTED"}[r.Interrupted])
	fmt.Fprintf(tw, "status\t%s\n", countList(r.Status))
	fmt.Fprintf(tw, "refusals\t%s\n", countList(r.Refusals))
	fmt.Fprintf(tw, "terminal\t%s\n", countList(r.Terminal))
	if len(r.ErrorCodes) > 0 {
		fmt.Fprintf(tw, "error events\t%s\n", countList(r.ErrorCodes))
	}
	if len(r.Failures) > 0 {
		fmt.Fprintf(tw, "failures\t%s\n", countList(r.Failures))
		for _, k := range slices.Sorted(maps.Keys(r.FailureExamples)) {
			fmt.Fprintf(tw, "  e.g.\t%s: %s\n", k, r.FailureExamples[k])
		}
	}
	fmt.Fprintf(tw, "cache\tHIT %d · MISS %d · BYPASS %d · hit ratio %.1f%% of the answers (%d of the requests were repeats)\n",
		r.Cache["HIT"], r.Cache["MISS"], r.Cache["BYPASS"], 100*r.CacheHitRatio, r.Repeats)
	_ = tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "latency (ms)\tcount\tp50\tp90\tp95\tp99\tp99.9\tmax\t")
	row := func(name string, s LatencySummary) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", name, s.Count, s.P50, s.P90, s.P95, s.P99, s.P999, s.Max)
	}
	row("ttft", r.TTFT)
	for _, k := range slices.Sorted(maps.Keys(r.TTFTByCache)) {
		row("ttft "+k, r.TTFTByCache[k])
	}
	row("total", r.Total)
	if r.RefusedLatency.Count > 0 {
		row("refused", r.RefusedLatency)
	}
	for _, k := range slices.Sorted(maps.Keys(r.TotalByCache)) {
		row("total "+k, r.TotalByCache[k])
	}
	// The parts: the generator's lag, and the wait for the first byte.
	row("send lag", r.SendLag)
	if r.RefusedWait.Count > 0 {
		row("wait refused", r.RefusedWait)
	}
	for _, k := range slices.Sorted(maps.Keys(r.WaitByCache)) {
		row("wait "+k, r.WaitByCache[k])
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
	} else if r.Target == TargetUpstream {
		fmt.Fprintln(w, "budget    none (straight to the upstream)")
	} else {
		fmt.Fprintln(w, "budget    unknown (the server did not answer GET /v1/budget)")
	}
}

// countList prints counts as "k: n  k: n", largest first.
func countList(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := slices.Sorted(maps.Keys(m))
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
