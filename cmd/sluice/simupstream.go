package main

// sluice sim-upstream: the simulated model as a standalone
// OpenAI-compatible server (package stream/upstream/simserver).

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/simserver"
)

const simUpstreamUsage = `usage: sluice sim-upstream [flags]

Serves the simulated model as an OpenAI-compatible upstream, for
benchmarks and for trying sluice without a model:

  POST /v1/chat/completions   streamed ("stream": true) or not
  GET  /v1/models             the -models
  POST /v1/embeddings         deterministic vectors (sluice's builtin embedder)
  GET  /sim/stats             counters: requests, in flight, peak, 429s, 500s, drops

Delays are log-normal, set by their median and 99th percentile (a p99 at
or below the median: every delay is the median; 0: no delay). Up to
-capacity requests are answered at full speed at once; the next -overflow
ones are slowed (every delay × in flight / capacity); beyond those the
answer is 429 with Retry-After: 1. With -ttft-slope S the first chunk
instead waits 1 + S·(in flight − capacity)/capacity times longer (a model
that queues the excess). The capacity changes at run time with
-capacity-at DURATION=N (after the start; repeatable) or POST
/sim/capacity; the overflow follows in proportion. Point sluice at it
with SLUICE_UPSTREAM=http://ADDR/v1.

flags:
`

// cmdSimUpstream is "sluice sim-upstream".
func cmdSimUpstream(args []string, _ func(string) string, _, stderr io.Writer) int {
	fs := newFlagSet("sluice sim-upstream", simUpstreamUsage, stderr)
	var cfg simserver.Config
	addr := fs.String("addr", "127.0.0.1:9000", "listen address")
	fs.DurationVar(&cfg.TTFT, "ttft", 300*time.Millisecond, "median time to the first chunk")
	fs.DurationVar(&cfg.TTFTP99, "ttft-p99", 1200*time.Millisecond, "99th percentile of the time to the first chunk")
	fs.DurationVar(&cfg.Gap, "gap", 30*time.Millisecond, "median gap between chunks")
	fs.DurationVar(&cfg.GapP99, "gap-p99", 95*time.Millisecond, "99th percentile of the gaps")
	fs.IntVar(&cfg.Chunks, "chunks", 0, "chunks (words) per answer; 0: 20 to 80 depending on the question")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "varies the answers' words")
	fs.IntVar(&cfg.Capacity, "capacity", 0, "requests answered at full speed at once; 0: unlimited")
	fs.IntVar(&cfg.Overflow, "overflow", 0, "requests beyond -capacity answered slowly before 429s; 0: as many as -capacity, negative: none")
	fs.Float64Var(&cfg.TTFTSlope, "ttft-slope", 0, "beyond -capacity the first chunk waits 1 + slope·excess/capacity times longer; 0: in flight/capacity like the gaps")
	var steps []capacityStep
	fs.Func("capacity-at", "DURATION=N: the capacity becomes N that long after the start (repeatable)", func(v string) error {
		d, n, ok := strings.Cut(v, "=")
		at, err := time.ParseDuration(d)
		c, err2 := strconv.Atoi(n)
		if !ok || err != nil || err2 != nil || at < 0 || c < 0 {
			return fmt.Errorf("want DURATION=N (e.g. 60s=20), got %q", v)
		}
		steps = append(steps, capacityStep{at: at, capacity: c})
		return nil
	})
	fs.Float64Var(&cfg.ErrorRate, "error-rate", 0, "share of chat requests answered 500 (0 to 1)")
	fs.Float64Var(&cfg.DropRate, "drop-rate", 0, "share of streamed answers cut mid-answer without [DONE] (0 to 1)")
	models := fs.String("models", "sim-1", "comma-separated model ids; the first answers requests naming none")
	fastModels := fs.String("fast-models", "", "comma-separated further model ids answered at once (no delays, capacity or faults): probes beside a slow load")
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	bad := func(format string, a ...any) int {
		fs.Usage()
		return fail(stderr, "sim-upstream: "+format, a...)
	}
	switch {
	case fs.NArg() > 0:
		return bad("unexpected argument %q (sim-upstream takes only flags)", fs.Arg(0))
	case cfg.TTFT < 0 || cfg.TTFTP99 < 0 || cfg.Gap < 0 || cfg.GapP99 < 0:
		return bad("delays must not be negative")
	case cfg.Chunks < 0 || cfg.Capacity < 0:
		return bad("-chunks and -capacity must not be negative")
	case cfg.TTFTSlope < 0 || math.IsNaN(cfg.TTFTSlope) || math.IsInf(cfg.TTFTSlope, 0):
		return bad("-ttft-slope must not be negative")
	case !(cfg.ErrorRate >= 0 && cfg.ErrorRate <= 1) || !(cfg.DropRate >= 0 && cfg.DropRate <= 1):
		return bad("-error-rate and -drop-rate must be between 0 and 1")
	}
	for _, m := range strings.Split(*models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.Models = append(cfg.Models, m)
		}
	}
	for _, m := range strings.Split(*fastModels, ",") {
		if m = strings.TrimSpace(m); m != "" {
			cfg.FastModels = append(cfg.FastModels, m)
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := serveSimUpstream(ctx, *addr, cfg, stderr, nil, steps...); err != nil {
		return fail(stderr, "sim-upstream: %v", err)
	}
	return exitOK
}

// capacityStep is one -capacity-at.
type capacityStep struct {
	at       time.Duration
	capacity int
}

// serveSimUpstream serves the simulated upstream on addr until ctx ends,
// then shuts down (open streams get 5s). ready, if not nil, receives the
// address listened on. steps change the capacity after the start.
func serveSimUpstream(ctx context.Context, addr string, cfg simserver.Config, stderr io.Writer, ready chan<- string, steps ...capacityStep) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	sim := simserver.New(cfg)
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	start := time.Now()
	sctx, stopSteps := context.WithCancel(ctx)
	stepsDone := make(chan struct{})
	defer func() { stopSteps(); <-stepsDone }()
	go func() {
		defer close(stepsDone)
		slices.SortStableFunc(steps, func(a, b capacityStep) int { return cmp.Compare(a.at, b.at) })
		for _, st := range steps {
			t := time.NewTimer(time.Until(start.Add(st.at)))
			select {
			case <-t.C:
			case <-sctx.Done():
				t.Stop()
				return
			}
			sim.SetCapacity(st.capacity)
			fmt.Fprintf(stderr, "sluice: sim-upstream: capacity %d at %s\n", st.capacity, time.Since(start).Round(time.Millisecond))
		}
	}()
	fmt.Fprintf(stderr, "sluice: sim-upstream: serving on http://%s/v1 (ttft %s/p99 %s, gap %s/p99 %s, capacity %d)\n",
		ln.Addr(), cfg.TTFT, cfg.TTFTP99, cfg.Gap, cfg.GapP99, cfg.Capacity)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
