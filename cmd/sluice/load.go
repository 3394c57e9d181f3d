package main

// sluice load: its flags and their checks. The load generator itself is
// package internal/load.

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/url"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cmd/sluice/internal/load"
)

const loadUsage = `usage: sluice load [flags]

Sends an open-loop load to a running sluice (or straight to its upstream)
and reports what happened: the benchmark driver of docs/performance.md.
Requests start at a constant arrival rate (-rate per second for
-duration, request i at start + i/rate) each in its own goroutine, without
waiting for earlier answers; when -max-inflight requests are outstanding
an arrival is dropped by the client (counted, never delayed). Latencies
are measured from the time the schedule sent a request at, so a late
send counts against them (no coordinated omission). Several rates
(-rate 1000,2000,5000) are run one after the other, each with its own
report. Every
request is bounded by -timeout, and the run by duration + timeout.
Ctrl-C stops early and still prints the report (a second Ctrl-C quits).

Traffic (-endpoint):
  stream  POST /v1/stream, the event stream read to its terminal event
  tasks   POST /v1/tasks, then its events_url followed to the end
  chat    POST /v1/chat/completions with "stream": true, read to [DONE]
  responses  POST /v1/responses with "stream": true, read to response.completed
-target upstream sends chat completions straight to -server, an
OpenAI-compatible upstream such as "sluice sim-upstream" (its base URL,
with or without /v1), to measure what sluice adds by difference.
Prompts are warehouse questions generated from -seed (the same seed gives
the same prompts in the same order); a -repeat fraction of the requests
asks an earlier question again (popular ones more often), to exercise the
cache. A second run with the same seed and namespace against the same
server finds the first run's answers in the cache: change -seed or
-namespace, or use -nocache, to measure the model path.

Measured per request: HTTP status (and error code), X-Cache, time to the
first delta (client-side TTFT), total time, terminal event (done, partial,
error) and bytes; and, to tell where a latency went, the send lag (from
the scheduled time to the request's goroutine sending it: the generator's
own delay) and the wait (from a connection in hand to the first byte of
the answer: the server and the wake-ups at both ends). The last 2 ms
before a send are slept in a nanosleep: Go's timers in an idle process
wake up to a millisecond late on Linux. Per run: goodput (completed per
second), the server's CPU seconds (process_cpu_seconds_total of GET
/metrics, when readable) and per request, what its Go runtime did
meanwhile (GET /metrics before and after: the scheduling latency
goroutines waited runnable and the GC stop-the-world pauses, p50/p99/max
of the difference; GC cycles per 1,000 requests; allocations per
request), the connections the generator opened, and the requests in
flight over time. The report (a table, or one JSON object per run and
line with -json) counts sent = completed + refused (503) + failed +
dropped, and gives the TTFT and total latency percentiles (exact, from
every sample).

Leak check: after the run, GET /v1/budget is polled until in_flight and
queued are 0 (at most -drain-wait); the final figures are reported.

Exit codes: 0 the run completed and the budget drained; 1 the budget did
not drain (a leaked permit), the server is unreachable, the run was
interrupted, or bad usage.

Hold mode (-streams N, scenarios 5 and 6 of docs/performance.md): opens
N POST /v1/stream event streams at -rate per second (no cache) and holds
each until its terminal event or -timeout, reading them raw. A
-slow-readers share of them reads -slow-rate bytes per second through a
16 KiB receive buffer. It reports the server's RSS, heap and stacks in
use and goroutines (GET /metrics) before the first stream and -settle
after the last one opened, per open stream; the server's CPU over the
next -settle; the gaps between arrivals on each fast stream (heartbeats
and events); with -deadline, how far each stream's end came from it
(the server's timer: point -deadline at SLUICE_TTFT_TIMEOUT with a slower
model); the fast and slow readers' times to their end; and, every
-probe-every, GET /healthz and a cache hit (a fixed prompt asked once
before, with -probe-model) read to the end. The soft open-file limit is
raised to the hard one first.

Adaptive experiment (-adaptive-experiment, scenario 8 of
docs/performance.md): against a sluice with SLUICE_BUDGET_ADAPTIVE=on
whose upstream is "sluice sim-upstream" (-sim, its URL), samples GET
/v1/budget and GET /sim/stats every -sample during the load, sets the
sim's capacity at each -capacity-at DURATION=N, and reports per stretch of
constant capacity when the limit settled within ±-band of it for good and
the share of the upstream's 429s after that; -out writes the samples,
-plot draws limit, capacity and 429s over time.

Files: -out FILE writes every run's report as one JSON object
{"runs": [...]}; -plot FILE.svg draws the latency percentiles against the
offered load (several rates) or the requests in flight over time (one).

flags:
`

// cmdLoad is "sluice load".
func cmdLoad(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, rates, code, ok := parseLoad(args, getenv, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if cfg.Adaptive.Sim != "" {
		return load.RunAdaptive(ctx, stop, cfg, cfg.Adaptive, stdout, stderr)
	}
	if cfg.Hold.Streams > 0 {
		raiseOpenFiles(stderr, cfg.Hold.Streams)
		return load.RunHold(ctx, cfg, stdout, stderr)
	}
	return load.RunRates(ctx, stop, cfg, rates, stdout, stderr)
}

// parseLoad parses the flags. ok is false when the command must exit
// with code (0 for -h).
func parseLoad(args []string, getenv func(string) string, stderr io.Writer) (cfg load.Config, rateList []float64, code int, ok bool) {
	fs := newFlagSet("sluice load", loadUsage, stderr)
	server, apiKey := clientFlags(fs, getenv)
	fs.StringVar(&cfg.Endpoint, "endpoint", "stream", "traffic: stream, tasks, chat or responses")
	fs.StringVar(&cfg.Target, "target", load.TargetSluice, "sluice, or upstream: chat completions straight to -server, an OpenAI-compatible upstream")
	rates := fs.String("rate", "20", "arrival rate, requests per second (open loop); several, comma-separated, run one after the other")
	fs.StringVar(&cfg.Out, "out", "", "write every run's report to this file as JSON")
	fs.StringVar(&cfg.Plot, "plot", "", "write an SVG plot to this file")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "how long requests keep arriving")
	fs.DurationVar(&cfg.Timeout, "timeout", 60*time.Second, "bound of each request, from its start to its last byte")
	fs.IntVar(&cfg.MaxInflight, "max-inflight", 2000, "most outstanding requests; beyond it arrivals are dropped by the client")
	fs.Uint64Var(&cfg.Seed, "seed", 1, "seed of the generated prompts")
	fs.Float64Var(&cfg.Repeat, "repeat", 0.3, "fraction of requests that ask an earlier question again (0 to 1)")
	fs.StringVar(&cfg.Namespace, "namespace", "load", "cache namespace")
	fs.BoolVar(&cfg.NoCache, "nocache", false, "neither read nor write the cache")
	fs.StringVar(&cfg.Model, "model", "", "model (default: the server's)")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", 0, "most tokens per answer (0: the server's default)")
	fs.DurationVar(&cfg.DrainWait, "drain-wait", 30*time.Second, "how long to wait after the run for the server's budget to drain")
	fs.BoolVar(&cfg.JSON, "json", false, "print each report as one JSON object (a line)")
	fs.IntVar(&cfg.Hold.Streams, "streams", 0, "hold mode: open this many event streams at -rate and hold them to their end (0: off)")
	fs.DurationVar(&cfg.Hold.Settle, "settle", 3*time.Second, "hold mode: measure this long after the last stream opened, and the CPU over the next as long")
	fs.Float64Var(&cfg.Hold.SlowShare, "slow-readers", 0, "hold mode: share of the streams read at a trickle (0 to 1)")
	fs.IntVar(&cfg.Hold.SlowRate, "slow-rate", 64, "hold mode: bytes per second a slow reader reads")
	fs.DurationVar(&cfg.Hold.Deadline, "deadline", 0, "hold mode: when each stream should end after its request (the server's timer); 0: not checked")
	fs.DurationVar(&cfg.Hold.ProbeEvery, "probe-every", time.Second, "hold mode: probe /healthz and a cache hit this often (0: never)")
	fs.BoolVar(&cfg.Hold.NoHitProbe, "no-hit-probe", false, "hold mode: probe /healthz only, no cache hit (when no model answers the probe's first ask in time)")
	adaptive := fs.Bool("adaptive-experiment", false, "adaptive budget experiment: sample GET /v1/budget and the -sim sim-upstream during the load, make its -capacity-at steps, and report how soon the limit settled near the capacity")
	fs.StringVar(&cfg.Adaptive.Sim, "sim", "", "adaptive experiment: the sim-upstream's base URL (GET /sim/stats, POST /sim/capacity)")
	fs.Func("capacity-at", "adaptive experiment: DURATION=N sets the sim-upstream's capacity to N that long after the start (repeatable, in order)", func(v string) error {
		d, n, ok := strings.Cut(v, "=")
		at, err := time.ParseDuration(d)
		c, err2 := strconv.Atoi(n)
		if !ok || err != nil || err2 != nil || at < 0 || c < 0 {
			return fmt.Errorf("want DURATION=N (e.g. 60s=20), got %q", v)
		}
		cfg.Adaptive.Steps = append(cfg.Adaptive.Steps, load.CapacityStep{At: at, Capacity: c})
		return nil
	})
	fs.DurationVar(&cfg.Adaptive.Every, "sample", 250*time.Millisecond, "adaptive experiment: sampling period of the limit and the capacity")
	fs.Float64Var(&cfg.Adaptive.Band, "band", 0.2, "adaptive experiment: the limit is settled within ±band × capacity")
	fs.StringVar(&cfg.Hold.ProbeModel, "probe-model", "", "hold mode: model of the cache-hit probe (e.g. a sim-upstream -fast-models id)")
	if err := fs.Parse(args); err != nil {
		return cfg, nil, usageExit(err), false
	}
	cfg.Server, cfg.APIKey = strings.TrimRight(*server, "/"), *apiKey
	bad := func(format string, a ...any) (load.Config, []float64, int, bool) {
		fs.Usage()
		return cfg, nil, fail(stderr, "load: "+format, a...), false
	}
	for _, f := range strings.Split(*rates, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0) || math.IsInf(r, 0) {
			return bad("-rate %q: want positive numbers of requests per second, comma-separated", *rates)
		}
		rateList = append(rateList, r)
	}
	cfg.Rate = rateList[0]
	if cfg.Target == load.TargetUpstream {
		cfg.Server = strings.TrimSuffix(cfg.Server, "/v1")
		if cfg.Endpoint == "stream" { // the default: an upstream speaks chat completions only
			cfg.Endpoint = "chat"
		}
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q (load takes only flags)", fs.Arg(0))
	}
	if u, err := url.Parse(cfg.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("-server %q is not an http(s) URL", cfg.Server)
	}
	switch {
	case cfg.Endpoint != "stream" && cfg.Endpoint != "tasks" && cfg.Endpoint != "chat" && cfg.Endpoint != "responses":
		return bad("-endpoint %q: want stream, tasks, chat or responses", cfg.Endpoint)
	case cfg.Target != load.TargetSluice && cfg.Target != load.TargetUpstream:
		return bad("-target %q: want sluice or upstream", cfg.Target)
	case cfg.Target == load.TargetUpstream && cfg.Endpoint != "chat":
		return bad("-target upstream sends chat completions only (-endpoint chat)")
	case cfg.Duration <= 0:
		return bad("-duration must be positive")
	case cfg.Timeout <= 0:
		return bad("-timeout must be positive")
	case cfg.MaxInflight < 1:
		return bad("-max-inflight must be at least 1")
	case !(cfg.Repeat >= 0 && cfg.Repeat <= 1):
		return bad("-repeat must be between 0 and 1")
	case !cache.ValidNamespace(cfg.Namespace):
		return bad("-namespace %q must match %s", cfg.Namespace, cache.NamespacePattern)
	case cfg.MaxTokens < 0:
		return bad("-max-tokens must not be negative")
	case cfg.DrainWait < 0:
		return bad("-drain-wait must not be negative")
	case cfg.Hold.Streams < 0 || cfg.Hold.Streams > load.MaxRequests:
		return bad("-streams must be between 0 and %d", load.MaxRequests)
	case cfg.Hold.Streams > 0 && (cfg.Target != load.TargetSluice || cfg.Endpoint != "stream"):
		return bad("-streams holds POST /v1/stream streams of sluice only (-endpoint stream)")
	case !(cfg.Hold.SlowShare >= 0 && cfg.Hold.SlowShare <= 1):
		return bad("-slow-readers must be between 0 and 1")
	case cfg.Hold.SlowRate < 1:
		return bad("-slow-rate must be at least 1 byte per second")
	case cfg.Hold.Settle < 0 || cfg.Hold.Deadline < 0 || cfg.Hold.ProbeEvery < 0:
		return bad("-settle, -deadline and -probe-every must not be negative")
	}
	if *adaptive {
		cfg.Adaptive.Sim = strings.TrimSuffix(strings.TrimRight(cfg.Adaptive.Sim, "/"), "/v1")
		switch {
		case cfg.Adaptive.Sim == "":
			return bad("-adaptive-experiment needs -sim, the sim-upstream's URL")
		case len(rateList) != 1 || cfg.Target != load.TargetSluice || cfg.Hold.Streams > 0:
			return bad("-adaptive-experiment runs one -rate against sluice")
		case cfg.Adaptive.Every <= 0 || !(cfg.Adaptive.Band > 0 && cfg.Adaptive.Band < 1):
			return bad("-sample must be positive and -band between 0 and 1")
		}
		if u, err := url.Parse(cfg.Adaptive.Sim); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("-sim %q is not an http(s) URL", cfg.Adaptive.Sim)
		}
	} else if cfg.Adaptive.Sim != "" || len(cfg.Adaptive.Steps) > 0 {
		return bad("-sim and -capacity-at belong to -adaptive-experiment")
	}
	if cfg.Hold.Streams > 0 {
		return cfg, rateList, exitOK, true
	}
	for _, r := range rateList {
		c := cfg
		c.Rate = r
		if n := c.Count(); n < 1 || n > load.MaxRequests {
			return bad("-rate × -duration is %.0f requests; it must be between 1 and %d", r*cfg.Duration.Seconds(), load.MaxRequests)
		}
	}
	return cfg, rateList, exitOK, true
}
