package metrics_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cmd/sluice/internal/metrics"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// env is one sluice (orchestrator, cache, HTTP front with /metrics) on a
// real listener, in front of a fault-injecting fake upstream named "fake".
type env struct {
	t       testing.TB
	URL     string
	Up      *upstreamtest.Server
	Orch    *orchestrator.Orchestrator
	Metrics *metrics.Metrics
	HTTP    *http.Client
}

func newEnv(t testing.TB, cfg orchestrator.Config) *env {
	t.Helper()
	e := &env{t: t, Up: upstreamtest.NewServer(t)}
	up, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: e.Up.URL(), Name: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c := cache.New(cache.Config{})
	e.Metrics = metrics.New(metrics.Config{MaxNamespaces: 100}) // namespace names as labels
	e.Orch, err = orchestrator.New(cfg, orchestrator.Deps{Upstream: up, Cache: c, Logger: log, Observer: e.Metrics})
	if err != nil {
		t.Fatal(err)
	}
	e.Metrics.WatchGates(e.Orch)
	e.Metrics.WatchCache(c)
	srv := httptest.NewServer(web.New(web.Config{
		Logger: log, Metrics: e.Metrics.Handler(), ConnObserver: e.Metrics,
	}, e.Orch, c))
	e.URL = srv.URL
	e.HTTP = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.Orch.Shutdown(ctx); err != nil {
			t.Errorf("orchestrator shutdown: %v", err)
		}
		e.HTTP.CloseIdleConnections()
		srv.Close()
	})
	return e
}

// post starts POST /v1/stream with body; the caller closes the response.
func (e *env) post(ctx context.Context, body map[string]any) *http.Response {
	e.t.Helper()
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/v1/stream", strings.NewReader(string(b)))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.HTTP.Do(req)
	if err != nil {
		e.t.Fatalf("POST /v1/stream: %v", err)
	}
	return resp
}

// streamAll streams prompt to its end and returns the status and the
// terminal event's type.
func (e *env) streamAll(prompt string) (int, string) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp := e.post(ctx, map[string]any{"prompt": prompt})
	defer resp.Body.Close()
	last := ""
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if ev, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			last = ev
		}
	}
	if err := sc.Err(); err != nil {
		e.t.Fatalf("reading stream of %q: %v", prompt, err)
	}
	return resp.StatusCode, last
}

// scrape GETs /metrics and parses it with the Prometheus text parser.
func (e *env) scrape() families {
	e.t.Helper()
	resp, err := e.HTTP.Get(e.URL + "/metrics")
	if err != nil {
		e.t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		e.t.Fatalf("GET /metrics: Content-Type %q, want the text format", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		e.t.Fatalf("parsing /metrics: %v", err)
	}
	return fams
}

// families are parsed metric families by name.
type families map[string]*dto.MetricFamily

// get sums the samples of name whose labels include the pairs lv
// (name, value, ...). For a histogram, name_count and name_sum read its
// count and sum.
func (f families) get(name string, lv ...string) float64 {
	part := ""
	fam := f[name]
	if fam == nil {
		for _, suffix := range []string{"_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, suffix); ok && f[base] != nil {
				fam, part = f[base], suffix
			}
		}
	}
	if fam == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range fam.GetMetric() {
		for i := 0; i+1 < len(lv); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == lv[i] && lp.GetValue() == lv[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		switch {
		case part == "_count":
			sum += float64(m.GetHistogram().GetSampleCount())
		case part == "_sum":
			sum += m.GetHistogram().GetSampleSum()
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum
}

// waitMetrics scrapes until cond holds, and returns that scrape. Task
// ends and connection closes are observed just after the client sees
// them, so there is nothing to wait on but the metrics themselves.
func (e *env) waitMetrics(what string, cond func(families) bool) families {
	e.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		f := e.scrape()
		if cond(f) {
			return f
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("metrics never showed %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a scrape: nothing signals it
	}
}

// TestMetricsAfterWorkload runs a scripted workload and checks that the
// scraped counts are what happened: budget 1 and no acquire wait, one
// stream held open by a stalling upstream, three refusals, a cache hit, a
// 429 retried once that opens the breaker, and a breaker refusal.
func TestMetricsAfterWorkload(t *testing.T) {
	t.Parallel()
	e := newEnv(t, orchestrator.Config{
		Budget: 1, AcquireTimeout: 0, RetryBackoff: 5 * time.Millisecond,
		BreakerMinCalls: 3, BreakerCoolDown: 10 * time.Minute, // the hit's miss and the two 429s: 2 of 3 fail
		TTFTTimeout: 30 * time.Second, IdleTimeout: 30 * time.Second,
	})

	// A miss that completes, then the same question: an exact hit.
	const question = "What is the capital of France?"
	if st, ev := e.streamAll(question); st != http.StatusOK || ev != "done" {
		t.Fatalf("first stream: %d %q, want 200 done", st, ev)
	}
	if st, ev := e.streamAll(question); st != http.StatusOK || ev != "done" {
		t.Fatalf("second stream: %d %q, want 200 done", st, ev)
	}

	// Hold the only slot: one chunk, then the upstream stalls.
	e.Up.SetScript(upstreamtest.Script{StallAfterChunks: 1})
	hctx, hcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer hcancel()
	hold := e.post(hctx, map[string]any{"prompt": "Explain the theory of relativity in simple words.", "detach": false})
	defer hold.Body.Close()
	if hold.StatusCode != http.StatusOK {
		t.Fatalf("held stream: %d", hold.StatusCode)
	}
	sc := bufio.NewScanner(hold.Body)
	for sc.Scan() && sc.Text() != "event: delta" {
	}
	if sc.Err() != nil {
		t.Fatalf("held stream: %v", sc.Err())
	}
	f := e.scrape()
	if got := f.get("sluice_gate_in_flight", "upstream", "fake"); got != 1 {
		t.Fatalf("in flight while holding = %v, want 1", got)
	}

	// Three more requests find no slot: 503 overloaded at once.
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp := e.post(ctx, map[string]any{"prompt": fmt.Sprintf("Write a haiku about autumn leaves, take %d.", i)})
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("request %d while full: %d, want 503", i, resp.StatusCode)
		}
	}

	// The held client leaves: its task is cancelled and its slot freed.
	hcancel()
	hold.Body.Close()
	e.waitMetrics("the held task cancelled and its slot freed", func(f families) bool {
		return f.get("sluice_tasks_total", "status", "cancelled") == 1 &&
			f.get("sluice_gate_in_flight", "upstream", "fake") == 0 &&
			f.get("sluice_sse_connections_active") == 0
	})

	// 429, retried once, 429 again: the task fails and two consecutive
	// failures open the breaker; the next request is refused by it.
	e.Up.SetScript(upstreamtest.Script{Status: http.StatusTooManyRequests})
	if st, ev := e.streamAll("List three prime numbers greater than one hundred."); st != http.StatusOK || ev != "error" {
		t.Fatalf("rate-limited stream: %d %q, want 200 error", st, ev)
	}
	{
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp := e.post(ctx, map[string]any{"prompt": "How do volcanoes form?"})
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Fatalf("request with the breaker open: %d, want 503", resp.StatusCode)
		}
	}

	f = e.waitMetrics("every task ended and every connection closed", func(f families) bool {
		return f.get("sluice_tasks_total") == 4 && f.get("sluice_sse_connections_active") == 0 &&
			f.get("sluice_sse_connections_closed_total") == 4
	})

	want := []struct {
		name string
		lv   []string
		v    float64
	}{
		// Gate, read at scrape time.
		{"sluice_gate_limit", []string{"upstream", "fake"}, 1},
		{"sluice_gate_in_flight", []string{"upstream", "fake"}, 0},
		{"sluice_gate_waiting", []string{"upstream", "fake"}, 0},
		{"sluice_gate_acquired_total", []string{"upstream", "fake"}, 4}, // first, held, 429 and its retry
		{"sluice_gate_released_total", []string{"upstream", "fake"}, 4},
		{"sluice_gate_rejected_total", []string{"upstream", "fake"}, 3},
		{"sluice_gate_wait_seconds_count", []string{"upstream", "fake"}, 4},
		// Refusals.
		{"sluice_refusals_total", []string{"upstream", "fake", "reason", "overloaded"}, 3},
		{"sluice_refusals_total", []string{"reason", "breaker_open"}, 1},
		{"sluice_refusals_total", []string{"reason", "queue_full"}, 0},
		// Upstream calls.
		{"sluice_upstream_requests_total", []string{"outcome", "ok", "status", "200"}, 1},
		{"sluice_upstream_requests_total", []string{"outcome", "cancelled", "status", "0"}, 1},
		{"sluice_upstream_requests_total", []string{"upstream", "fake", "outcome", "http_error", "status", "429"}, 2},
		{"sluice_upstream_requests_total", nil, 4},
		{"sluice_upstream_retries_total", []string{"upstream", "fake"}, 1},
		{"sluice_time_to_first_token_seconds_count", nil, 2},
		{"sluice_chunk_gap_seconds_count", nil, float64(len(upstreamtest.DefaultChunks) - 1)},
		// Breaker.
		{"sluice_breaker_transitions_total", []string{"upstream", "fake", "from", "closed", "to", "open"}, 1},
		{"sluice_breaker_state", []string{"upstream", "fake", "state", "open"}, 1},
		{"sluice_breaker_state", []string{"upstream", "fake", "state", "closed"}, 0},
		// Tasks.
		{"sluice_tasks_total", []string{"status", "done", "finish_reason", "stop", "cache", "miss"}, 1},
		{"sluice_tasks_total", []string{"status", "done", "finish_reason", "stop", "cache", "hit"}, 1},
		{"sluice_tasks_total", []string{"status", "cancelled", "finish_reason", "cancelled", "cache", "miss"}, 1},
		{"sluice_tasks_total", []string{"status", "failed", "finish_reason", "upstream_error", "cache", "miss"}, 1},
		{"sluice_task_duration_seconds_count", nil, 4},
		// SSE connections: three ran to their end, the held one left.
		{"sluice_sse_connections_opened_total", nil, 4},
		{"sluice_sse_connections_closed_total", []string{"reason", "end"}, 3},
		{"sluice_sse_connections_closed_total", []string{"reason", "client_gone"}, 1},
		// Cache: one exact hit; every other lookup missed (the refused
		// ones were looked up before the gate).
		{"sluice_cache_lookups_total", []string{"namespace", "default", "result", "hit", "kind", "exact"}, 1},
		{"sluice_cache_lookups_total", []string{"result", "hit", "kind", "semantic"}, 0},
		{"sluice_cache_lookups_total", []string{"namespace", "default", "result", "miss"}, 7},
		{"sluice_cache_entries", []string{"namespace", "default"}, 1},
	}
	for _, w := range want {
		if got := f.get(w.name, w.lv...); got != w.v {
			t.Errorf("%s%v = %v, want %v", w.name, w.lv, got, w.v)
		}
	}
	for _, name := range []string{"sluice_sse_events_sent_total", "sluice_sse_sent_bytes_total", "sluice_cache_bytes"} {
		if got := f.get(name); got <= 0 {
			t.Errorf("%s = %v, want > 0", name, got)
		}
	}
	// The runtime and process collectors are on the registry too.
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total", "promhttp_metric_handler_requests_total"} {
		if f[name] == nil {
			t.Errorf("%s missing from /metrics", name)
		}
	}
	// No task id or prompt text in any label.
	for _, fam := range f {
		for _, m := range fam.GetMetric() {
			for _, lp := range m.GetLabel() {
				if strings.Contains(lp.GetValue(), " ") || len(lp.GetValue()) > 40 {
					t.Errorf("%s has a suspicious label %s=%q", fam.GetName(), lp.GetName(), lp.GetValue())
				}
			}
		}
	}

	// A pedantic registry checks that what is collected matches what is
	// described (names, types, labels, help).
	ped := prometheus.NewPedanticRegistry()
	ped.MustRegister(e.Metrics)
	if _, err := ped.Gather(); err != nil {
		t.Errorf("pedantic gather: %v", err)
	}
}
