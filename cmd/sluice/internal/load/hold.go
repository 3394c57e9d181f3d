package load

// Hold mode (-streams N): many event streams held open at once, scenarios
// 5 and 6 of docs/performance.md. Each stream is read raw (heartbeat
// comments included), so that the gaps between what arrives can be
// measured; a share of them read at a trickle through a small receive
// buffer. Meanwhile the server's memory, goroutines and CPU are sampled
// from GET /metrics, and /healthz and a cache hit are probed.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/web/client"
)

// HoldConfig are the hold mode's own settings (Config.Hold).
type HoldConfig struct {
	Streams    int           // streams to open, at Config.Rate per second
	Settle     time.Duration // after the last stream opened, wait this long, then measure; measure again Settle later (CPU)
	SlowShare  float64       // share of the streams read at a trickle
	SlowRate   int           // bytes per second a slow reader reads
	Deadline   time.Duration // when each stream is expected to end (the server's timer, e.g. SLUICE_TTFT_TIMEOUT); 0: not checked
	ProbeEvery time.Duration // /healthz and a cache hit probed this often; 0: never
	ProbeModel string        // model of the cache-hit probe ("" the server's default)
	NoHitProbe bool          // probe /healthz only (the model answers no probe in time)
}

// slowReadBuffer is a slow reader's socket receive buffer: fixed, so that
// the kernel does not absorb the answer for it (autotuning would grow it
// to megabytes) and the server does see a slow reader.
const slowReadBuffer = 16 << 10

// ServerSample is one reading of the server's GET /metrics.
type ServerSample struct {
	T          float64 `json:"t_s"`
	Open       int64   `json:"open_streams"` // streams the client holds open then
	RSS        int64   `json:"rss_bytes"`
	HeapInuse  int64   `json:"heap_inuse_bytes"`
	StackInuse int64   `json:"stack_inuse_bytes"`
	Goroutines int64   `json:"goroutines"`
	CPU        float64 `json:"cpu_s"`
}

// HoldReport is what hold mode measured.
type HoldReport struct {
	Server     string  `json:"server"`
	Streams    int     `json:"streams"`
	Rate       float64 `json:"rate"`
	SlowShare  float64 `json:"slow_share"`
	SlowRate   int     `json:"slow_rate_bytes_per_s"`
	DeadlineMs float64 `json:"deadline_ms"`

	Opened     int            `json:"opened"` // answered 200
	Refused    int            `json:"refused"`
	Failed     int            `json:"failed"`
	Failures   map[string]int `json:"failures"`
	Terminal   map[string]int `json:"terminal"`
	PeakOpen   int64          `json:"peak_open"`
	ElapsedS   float64        `json:"elapsed_s"`
	Idle       *ServerSample  `json:"idle"`       // before the first stream
	Held       *ServerSample  `json:"held"`       // Settle after the last stream opened
	Held2      *ServerSample  `json:"held_later"` // Settle after that
	PeakRSS    int64          `json:"peak_rss_bytes"`
	PerStream  float64        `json:"rss_per_stream_kib"`  // (held − idle) RSS / open streams
	HeapPer    float64        `json:"heap_per_stream_kib"` // likewise, heap in use
	StackPer   float64        `json:"stack_per_stream_kib"`
	GorPer     float64        `json:"goroutines_per_stream"`
	HoldCPU    float64        `json:"hold_cpu_cores"` // CPU seconds per second between Held and Held2
	Series     []ServerSample `json:"series,omitempty"`
	Heartbeat  LatencySummary `json:"heartbeat_gap_ms"`            // gaps between arrivals on a stream before its end (fast readers)
	TimerError LatencySummary `json:"timer_error_ms"`              // |end − send − Deadline|
	TimerLate  int            `json:"timer_over_50ms"`             // ends more than 50 ms from the deadline
	TimerHead  LatencySummary `json:"timer_error_from_headers_ms"` // |end − headers − Deadline|: the server's timer started between the send and its headers
	HeadLate   int            `json:"timer_from_headers_over_50ms"`
	Open       LatencySummary `json:"open_ms"`        // request sent to the response's headers
	Fast       LatencySummary `json:"fast_total_ms"`  // fast readers' time to their end
	Slow       LatencySummary `json:"slow_total_ms"`  // slow readers'
	FastTTFT   LatencySummary `json:"fast_ttft_ms"`   // fast readers' first delta
	Healthz    LatencySummary `json:"healthz_ms"`     // probes meanwhile
	CacheHit   LatencySummary `json:"cache_hit_ms"`   // a cached answer read to its end, meanwhile
	ProbeFails int            `json:"probe_failures"` // probes that failed (or a hit that was not)
	ProbeError string         `json:"probe_error,omitempty"`
}

// holdSample is one stream's outcome, written by its goroutine only.
type holdSample struct {
	slow     bool
	status   int
	failure  string
	terminal string
	first    bool
	ttft     time.Duration
	open     time.Duration // to the response's headers
	total    time.Duration
	gaps     []time.Duration
}

// RunHold holds cfg.Hold.Streams event streams open against cfg.Server
// and prints the report; its exit code is 1 when the server was
// unreachable or nothing could be opened.
func RunHold(ctx context.Context, cfg Config, stdout, stderr io.Writer) int {
	h := cfg.Hold
	fast := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 64,
	}
	slowDial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{Timeout: 5 * time.Second}).DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetReadBuffer(slowReadBuffer)
		}
		return c, err
	}
	slow := &http.Transport{DialContext: slowDial, DisableKeepAlives: true}
	defer fast.CloseIdleConnections()
	fc := &http.Client{Transport: fast}
	api, err := client.New(cfg.Server, cfg.APIKey, fc)
	if err != nil {
		return fail(stderr, "load: %v", err)
	}
	sc, _ := client.New(cfg.Server, cfg.APIKey, &http.Client{Transport: slow}) // same URL: cannot fail
	rep := &HoldReport{Server: cfg.Server, Streams: h.Streams, Rate: cfg.Rate, SlowShare: h.SlowShare, SlowRate: h.SlowRate,
		DeadlineMs: millis(h.Deadline), Failures: map[string]int{}, Terminal: map[string]int{}}

	var open atomic.Int64
	start := time.Now()
	read := func(ctx context.Context) *ServerSample {
		s, ok := serverSample(ctx, fc, cfg.Server, cfg.APIKey)
		if !ok {
			return nil
		}
		s.T, s.Open = seconds(time.Since(start)), open.Load()
		return &s
	}
	if rep.Idle = read(ctx); rep.Idle == nil {
		if _, err := api.Budget(ctx); err != nil {
			return fail(stderr, "load: server %s unreachable: GET /v1/budget: %v", cfg.Server, err)
		}
		fmt.Fprintln(stderr, "sluice: load: GET /metrics unreadable: no memory or CPU figures")
	}

	runCtx, cancel := context.WithTimeout(ctx, time.Duration(float64(h.Streams)/cfg.Rate*float64(time.Second))+cfg.Timeout+h.Settle)
	defer cancel()

	// The cache-hit probe's answer must be in the cache first.
	probePrompt := fmt.Sprintf("sluice load hold probe %d: where is SKU-00042 stored?", start.UnixNano())
	probeBody := func() []byte {
		body := map[string]any{"prompt": probePrompt, "namespace": cfg.Namespace}
		if h.ProbeModel != "" {
			body["model"] = h.ProbeModel
		}
		b, _ := json.Marshal(body) // cannot fail
		return b
	}()
	probeHit := func(ctx context.Context) (string, error) {
		resp, err := api.Send(ctx, http.MethodPost, "/v1/stream", probeBody, "text/event-stream")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.Header.Get("X-Cache"), err
	}
	var probes struct {
		sync.Mutex
		healthz, hit []time.Duration
		fails        int
		err          string
	}
	probeFail := func(err error) {
		probes.Lock()
		defer probes.Unlock()
		probes.fails++
		if probes.err == "" {
			probes.err = err.Error()
		}
	}
	if h.ProbeEvery > 0 && !h.NoHitProbe {
		pctx, pcancel := context.WithTimeout(runCtx, 30*time.Second)
		if _, err := probeHit(pctx); err != nil {
			probeFail(fmt.Errorf("warming the cache-hit probe: %w", err))
		}
		pcancel()
	}

	start = time.Now() // the schedule starts after the warm-up
	var wg sync.WaitGroup
	quit := make(chan struct{})
	// The sampler and the prober run until the streams have ended.
	var series []ServerSample
	wg.Go(func() {
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			if s := read(runCtx); s != nil {
				series = append(series, *s)
			}
			select {
			case <-tick.C:
			case <-quit:
				return
			}
		}
	})
	if h.ProbeEvery > 0 {
		wg.Go(func() {
			tick := time.NewTicker(h.ProbeEvery)
			defer tick.Stop()
			for {
				select {
				case <-tick.C:
				case <-quit:
					return
				}
				pctx, pcancel := context.WithTimeout(runCtx, 10*time.Second)
				t0 := time.Now()
				if err := getHealthz(pctx, fc, cfg.Server); err != nil {
					probeFail(fmt.Errorf("healthz: %w", err))
				} else {
					probes.Lock()
					probes.healthz = append(probes.healthz, time.Since(t0))
					probes.Unlock()
				}
				if h.NoHitProbe {
					pcancel()
					continue
				}
				t0 = time.Now()
				xc, err := probeHit(pctx)
				d := time.Since(t0)
				pcancel()
				switch {
				case err != nil:
					probeFail(fmt.Errorf("cache hit: %w", err))
				case xc != "HIT":
					probeFail(fmt.Errorf("cache probe answered X-Cache %q, not HIT", xc))
				default:
					probes.Lock()
					probes.hit = append(probes.hit, d)
					probes.Unlock()
				}
			}
		})
	}

	fmt.Fprintf(stderr, "sluice: load: opening %d streams to %s at %g/s (%.0f%% slow readers at %d B/s)\n",
		h.Streams, cfg.Server, cfg.Rate, 100*h.SlowShare, h.SlowRate)
	samples := make([]holdSample, h.Streams)
	gen := newPromptGen(cfg.Seed, 0)
	var streams sync.WaitGroup
	timer := time.NewTimer(0)
	<-timer.C
	nSlow := 0
open:
	for i := range samples {
		prompt, _ := gen.Next()
		due := cfg.dueAt(i)
		if wait := due - time.Since(start); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-runCtx.Done():
				break open
			}
		}
		// Slow readers are spread evenly: stream i is slow when the
		// count of slow ones so far falls behind the share.
		isSlow := float64(nSlow) < h.SlowShare*float64(i+1)
		if isSlow {
			nSlow++
		}
		body := map[string]any{"prompt": prompt, "namespace": cfg.Namespace, "nocache": true}
		if cfg.MaxTokens > 0 {
			body["max_tokens"] = cfg.MaxTokens
		}
		b, _ := json.Marshal(body) // cannot fail
		c := api
		if isSlow {
			c = sc
		}
		rep.PeakOpen = max(rep.PeakOpen, open.Add(1))
		streams.Go(func() {
			defer open.Add(-1)
			rctx, rcancel := context.WithTimeout(runCtx, cfg.Timeout)
			defer rcancel()
			samples[i] = holdOne(rctx, c, b, isSlow, h.SlowRate)
		})
	}
	timer.Stop()
	opened := time.Now()
	wait := func(d time.Duration) {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-runCtx.Done():
		}
	}
	wait(h.Settle)
	rep.Held = read(runCtx)
	wait(h.Settle)
	rep.Held2 = read(runCtx)
	fmt.Fprintf(stderr, "sluice: load: all opened in %s; waiting for %d open streams to end\n",
		opened.Sub(start).Round(time.Millisecond), open.Load())
	streams.Wait()
	close(quit)
	wg.Wait()
	rep.ElapsedS = seconds(time.Since(start))
	rep.Series = series

	var gaps, timerErr, timerHead, opens, fastTotal, slowTotal, fastTTFT []time.Duration
	for i := range samples {
		s := &samples[i]
		switch s.status {
		case http.StatusServiceUnavailable:
			rep.Refused++
			continue
		case http.StatusOK:
			rep.Opened++
			opens = append(opens, s.open)
		}
		if s.failure != "" {
			rep.Failed++
			rep.Failures[s.failure]++
		}
		if s.terminal == "" {
			continue
		}
		rep.Terminal[s.terminal]++
		if s.slow {
			slowTotal = append(slowTotal, s.total)
		} else {
			fastTotal = append(fastTotal, s.total)
			gaps = append(gaps, s.gaps...)
			if s.first {
				fastTTFT = append(fastTTFT, s.ttft)
			}
		}
		if h.Deadline > 0 {
			e := (s.total - h.Deadline).Abs()
			timerErr = append(timerErr, e)
			if e > 50*time.Millisecond {
				rep.TimerLate++
			}
			e = (s.total - s.open - h.Deadline).Abs()
			timerHead = append(timerHead, e)
			if e > 50*time.Millisecond {
				rep.HeadLate++
			}
		}
	}
	rep.Heartbeat, rep.TimerError, rep.TimerHead, rep.Open = summarize(gaps), summarize(timerErr), summarize(timerHead), summarize(opens)
	rep.Fast, rep.Slow, rep.FastTTFT = summarize(fastTotal), summarize(slowTotal), summarize(fastTTFT)
	rep.Healthz, rep.CacheHit = summarize(probes.healthz), summarize(probes.hit)
	rep.ProbeFails, rep.ProbeError = probes.fails, probes.err
	for _, s := range series {
		rep.PeakRSS = max(rep.PeakRSS, s.RSS)
	}
	if rep.Idle != nil && rep.Held != nil && rep.Held.Open > 0 {
		n := float64(rep.Held.Open)
		rep.PerStream = round1(float64(rep.Held.RSS-rep.Idle.RSS) / 1024 / n)
		rep.HeapPer = round1(float64(rep.Held.HeapInuse-rep.Idle.HeapInuse) / 1024 / n)
		rep.StackPer = round1(float64(rep.Held.StackInuse-rep.Idle.StackInuse) / 1024 / n)
		rep.GorPer = round1(float64(rep.Held.Goroutines-rep.Idle.Goroutines) / n)
	}
	if rep.Held != nil && rep.Held2 != nil && rep.Held2.T > rep.Held.T {
		rep.HoldCPU = math.Round((rep.Held2.CPU-rep.Held.CPU)/(rep.Held2.T-rep.Held.T)*1000) / 1000
	}

	writeHoldReport(stdout, cfg.JSON, rep)
	if cfg.Out != "" {
		b, _ := json.MarshalIndent(rep, "", "  ") // cannot fail
		if err := os.WriteFile(cfg.Out, append(b, '\n'), 0o644); err != nil {
			return fail(stderr, "load: %v", err)
		}
	}
	switch {
	case ctx.Err() != nil:
		return fail(stderr, "load: interrupted")
	case rep.Opened == 0:
		return fail(stderr, "load: no stream could be opened: %v", rep.Failures)
	}
	return exitOK
}

// holdOne opens one stream and reads it to its end, raw: it records the
// gaps between arrivals (heartbeat comments or events) until the terminal
// event. Its times are measured from when it sent the request (not from
// the schedule: hold mode measures the server's timers, not queueing). A slow reader reads rate bytes per second, in small reads.
func holdOne(ctx context.Context, api *client.Client, body []byte, slow bool, rate int) (s holdSample) {
	s.slow = slow
	sent := time.Now() // the server's timers start about now, not on the schedule
	resp, err := api.Send(ctx, http.MethodPost, "/v1/stream", body, "text/event-stream")
	if err != nil {
		if se := (*client.APIError)(nil); errors.As(err, &se) {
			s.status = se.Status
			if se.Status != http.StatusServiceUnavailable {
				s.failure = "HTTP " + strconv.Itoa(se.Status)
			}
			return s
		}
		s.failure = "open: " + shortErr(ctx, err)
		return s
	}
	defer resp.Body.Close()
	s.status, s.open = resp.StatusCode, time.Since(sent)
	var r io.Reader = resp.Body
	if slow {
		r = &trickle{ctx: ctx, r: resp.Body, rate: rate}
	}
	br := bufio.NewReaderSize(r, 512)
	last := time.Time{}
	event := ""
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			continue // a long data line: its start was counted
		}
		now := time.Now()
		if err != nil {
			if s.terminal == "" {
				s.failure = "stream broken: " + shortErr(ctx, err)
				s.total = now.Sub(sent)
			}
			return s
		}
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if event == "done" || event == "partial" || event == "error" {
				s.terminal, s.total = event, now.Sub(sent)
				return s // nothing follows a terminal event
			}
			event = ""
			continue
		case bytes.HasPrefix(line, []byte(":")), bytes.HasPrefix(line, []byte("event:")):
			if !last.IsZero() && !slow {
				s.gaps = append(s.gaps, now.Sub(last))
			}
			last = now
			if v, ok := bytes.CutPrefix(line, []byte("event:")); ok {
				event = strings.TrimSpace(string(v))
				if event == "delta" && !s.first {
					s.first, s.ttft = true, now.Sub(sent)
				}
			}
		}
	}
}

// trickle reads at most rate bytes per second, 64 bytes at a time.
type trickle struct {
	ctx  context.Context
	r    io.Reader
	rate int
	t    *time.Timer
}

func (t *trickle) Read(p []byte) (int, error) {
	const step = 64
	if len(p) > step {
		p = p[:step]
	}
	n, err := t.r.Read(p)
	if n > 0 && err == nil {
		d := time.Duration(float64(n) / float64(t.rate) * float64(time.Second))
		if t.t == nil {
			t.t = time.NewTimer(d)
		} else {
			t.t.Reset(d)
		}
		select {
		case <-t.t.C:
		case <-t.ctx.Done():
			t.t.Stop()
		}
	}
	return n, err
}

func shortErr(ctx context.Context, err error) string {
	var ne net.Error
	switch {
	case ctx.Err() != nil:
		return "timeout"
	case errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case strings.Contains(err.Error(), "reset"):
		return "connection reset"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed"
	}
	return "transport error"
}

// getHealthz answers nil when GET /healthz answers 200.
func getHealthz(ctx context.Context, hc *http.Client, server string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/healthz", nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	return nil
}

// serverSample reads the server's process and Go runtime gauges from GET
// /metrics.
func serverSample(ctx context.Context, hc *http.Client, server, apiKey string) (ServerSample, bool) {
	var s ServerSample
	text, ok := getMetrics(ctx, hc, server, apiKey)
	if !ok {
		return s, false
	}
	found := 0
	for name, f := range metricSamples(text) {
		switch name {
		case "process_resident_memory_bytes":
			s.RSS = int64(f)
		case "go_memstats_heap_inuse_bytes":
			s.HeapInuse = int64(f)
		case "go_memstats_stack_inuse_bytes":
			s.StackInuse = int64(f)
		case "go_goroutines":
			s.Goroutines = int64(f)
		case "process_cpu_seconds_total":
			s.CPU = f
		default:
			continue
		}
		found++
	}
	return s, found > 0 && s.RSS > 0 // no RSS: the server could not read /proc (out of file descriptors?)
}

func writeHoldReport(w io.Writer, asJSON bool, r *HoldReport) {
	if asJSON {
		c := *r
		c.Series = nil           // the file has it
		b, _ := json.Marshal(&c) // cannot fail
		_, _ = w.Write(append(b, '\n'))
		return
	}
	fmt.Fprintf(w, "sluice load · hold %d streams · %s · opened at %g/s · %.0f%% slow readers at %d B/s\n\n",
		r.Streams, r.Server, r.Rate, 100*r.SlowShare, r.SlowRate)
	fmt.Fprintf(w, "streams   opened %d · refused %d · failed %d (%s) · peak open %d · %.1fs\n",
		r.Opened, r.Refused, r.Failed, countList(r.Failures), r.PeakOpen, r.ElapsedS)
	fmt.Fprintf(w, "terminal  %s\n", countList(r.Terminal))
	if r.Idle != nil && r.Held != nil {
		fmt.Fprintf(w, "memory    RSS idle %s · held (%d open) %s · peak %s · per stream %.1f KiB (heap %.1f, stacks %.1f) · goroutines %.1f per stream\n",
			humanBytes(r.Idle.RSS), r.Held.Open, humanBytes(r.Held.RSS), humanBytes(r.PeakRSS), r.PerStream, r.HeapPer, r.StackPer, r.GorPer)
		fmt.Fprintf(w, "cpu       %.3f cores while holding\n", r.HoldCPU)
	}
	row := func(name string, s LatencySummary) {
		if s.Count > 0 {
			fmt.Fprintf(w, "%-10s n %d · p50 %.1f · p99 %.1f · p99.9 %.1f · max %.1f ms\n", name, s.Count, s.P50, s.P99, s.P999, s.Max)
		}
	}
	row("open", r.Open)
	row("heartbeat", r.Heartbeat)
	if r.DeadlineMs > 0 {
		row("timer err", r.TimerError)
		row(" (headers)", r.TimerHead)
		fmt.Fprintf(w, "          %d of %d ended more than 50 ms from the %.0f ms deadline after the request (%d after the headers)\n",
			r.TimerLate, r.TimerError.Count, r.DeadlineMs, r.HeadLate)
	}
	row("fast ttft", r.FastTTFT)
	row("fast end", r.Fast)
	row("slow end", r.Slow)
	row("healthz", r.Healthz)
	row("cache hit", r.CacheHit)
	if r.ProbeFails > 0 {
		fmt.Fprintf(w, "probes    %d failed, e.g. %s\n", r.ProbeFails, r.ProbeError)
	}
}
