// Command sluice serves the sluice LLM streaming gateway, and its
// subcommands are a terminal client for a running sluice.
//
//	sluice                  serve (settings from SLUICE_* variables or flags;
//	                        several upstreams from a SLUICE_CONFIG file)
//	sluice ask "question"   stream an answer to the terminal
//	sluice task ID          follow or poll a task
//	sluice cache lookup Q   explain the cache decision for a question
//	sluice load             send an open-loop load and report
//	sluice config check F   check a configuration file and summarise it
//	sluice help [COMMAND]   the usage
package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/web"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run dispatches to a subcommand or serves, and returns the exit code.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		if cmd, ok := findCommand(args[0]); ok {
			return cmd.run(args[1:], getenv, stdout, stderr)
		}
	}
	s, err := loadSettings(args, getenv)
	if err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "sluice:", err)
		return 2
	}
	// The settings come through getenv; a typo among the SLUICE_*
	// variables can only be seen in the whole environment.
	s.unknown = unknownSettings(os.Environ())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, s, stderr, nil); err != nil {
		fmt.Fprintln(stderr, "sluice:", err)
		return 1
	}
	return 0
}

// serve runs the service until ctx ends, then shuts down gracefully. If
// ready is not nil it receives the listening address once serving.
func serve(ctx context.Context, s *settings, logOut io.Writer, ready chan<- string) error {
	ob := newObservability(s, logOut)
	defer ob.Close()
	log := ob.Log
	for _, u := range s.unknown {
		log.Warn("unknown setting ignored; did you mean "+u.Closest+"?", "var", u.Name, "closest", u.Closest)
	}
	var (
		up     upstream.Upstream        // the one upstream, without SLUICE_CONFIG
		routes []orchestrator.RouteSpec // the file's upstreams, with SLUICE_CONFIG
		models func(context.Context) ([]string, error)
		err    error
	)
	if s.routes != nil {
		if routes, err = s.routes.specs(s); err != nil {
			return err
		}
		s.Model = s.routes.DefaultModel
		for _, name := range []string{"SLUICE_UPSTREAM", "SLUICE_UPSTREAM_API_KEY"} {
			if s.given[name] {
				log.Warn(name+" is not used: the upstreams are those of SLUICE_CONFIG", "config", s.Config)
			}
		}
		log.Info("upstreams from the configuration file", "config", s.Config, "upstreams", len(routes),
			"models", strings.Join(slices.Sorted(maps.Keys(s.routes.Models)), ","), "default_model", s.Model)
	} else {
		if up, err = newUpstream(s); err != nil {
			return err
		}
		if err := probeUpstream(ctx, s, up, log); err != nil {
			return err
		}
		if l, ok := up.(upstream.ModelLister); ok {
			models = newModelList(l, s.ModelsTTL, s.ProbeTimeout).Models
		}
	}
	var c *cache.Cache
	emb, err := newEmbedder(s)
	if err != nil {
		return err
	}
	c = cache.New(cache.Config{
		Threshold: s.CacheThreshold, TTL: s.CacheTTL, MaxEntries: s.CacheEntries,
		MaxBytes: s.CacheBytes, Embedder: emb, MaxSemanticRunes: s.CacheMaxSemantic,
		MaxNamespaces: s.CacheNamespaces, Readings: cmp.Or(s.CacheReadings, -1),
	})
	var (
		shared      orchestrator.Shared
		leases      pipeline.Leases // nil: a local budget
		tokenSecret []byte          // nil: the web server makes one
	)
	if s.RedisURL != "" {
		rd, err := newRedis(s.RedisURL, ob.Metrics.ObserveRedis, log)
		if err != nil {
			return err
		}
		defer rd.Close()
		// Redis is not a readiness dependency: without it this instance
		// still serves its own tasks (their writes wait for it), and
		// /readyz says "degraded" in its body.
		log.Info("redis sharing on: tasks are shared with every instance on this Redis and prefix",
			"redis", redactedURL(s.RedisURL), "prefix", s.RedisPrefix)
		if err := rd.Ready(ctx); err != nil {
			log.Warn("redis not reachable at start; tasks are published when it is", "err", err.Error())
		}
		shared = redisstate.New(rd.client, rd.block, s.RedisPrefix, ob.Metrics.ObserveRedis)
		// Not the signal context: purges made while the HTTP server drains
		// must still reach the fleet; the deferred stop ends the sharing after
		// the drain.
		defer shareCache(context.WithoutCancel(ctx), s, c, rd, log)()
		if tokenSecret, err = rd.tokenSecret(ctx, s.RedisPrefix); err != nil {
			log.Warn("events tokens will open streams on this instance only", "err", err.Error())
		}
		if s.BudgetMode == "cluster" {
			if up != nil {
				l := redisstate.NewLeases(rd.client, s.RedisPrefix, up.Name(), s.BudgetLease, ob.Metrics.ObserveRedis)
				defer l.Close()
				leases = l
			}
			for i := range routes { // each upstream's budget is the fleet's
				l := redisstate.NewLeases(rd.client, s.RedisPrefix, routes[i].Name, s.BudgetLease, ob.Metrics.ObserveRedis)
				defer l.Close()
				routes[i].Leases = l
			}
			log.Info("cluster budget on: SLUICE_BUDGET is the whole fleet's", "budget", s.Budget,
				"lease", s.BudgetLease.String(), "fail", s.BudgetFail, "instances", s.BudgetInstances)
		}
	}
	orch, err := orchestrator.New(orchestrator.Config{
		Budget: s.Budget, AcquireTimeout: s.AcquireTimeout, QueueLimit: queueLimit(s.Queue),
		TTFTTimeout: s.TTFTTimeout, IdleTimeout: s.IdleTimeout, TotalTimeout: s.TotalTimeout, MaxQueueWait: s.MaxQueueWait,
		BreakerMinCalls: s.BreakerMin, BreakerFailureRate: s.BreakerRate, BreakerWindow: s.BreakerWindow, BreakerCoolDown: s.BreakerCool,
		TaskTTL: s.TaskTTL, DefaultModel: s.Model, LogPrompts: s.LogPrompts,
		SharedHeartbeat: s.SharedHeartbeat, SharedPendingTasks: s.SharedPendingTasks, SharedPendingBytes: s.SharedPendingBytes,
		SharedFlush:      s.SharedFlush,
		CutSettle:        cmp.Or(s.CutSettle, -1), // 0 = none: the orchestrator's "no settle"
		MaxRetainedTasks: s.TaskMaxKept, MaxRetainedBytes: s.TaskMaxBytes, MaxAnswerBytes: int(min(s.MaxAnswer, 1<<40)),
		MaxIdempotencyKeys: s.IdemKeys,
		BudgetLeaseTime:    s.BudgetLease, BudgetCallTimeout: s.BudgetCallTimeout, BudgetFailOpen: s.BudgetFail == "open",
		BudgetInstances: s.BudgetInstances, Models: s.routes.models(), MaxCoalesced: coalesceMax(s),
		Adaptive: adaptiveConfig(s),
		// Priority classes and tenant caps (issue 15).
		InteractiveShare: cmp.Or(s.InteractiveShare, -1), // 0 = no guarantee: the gate's "negative"
		InteractiveWait:  cmp.Or(s.InteractiveWait, -1),  // 0s = no wait beyond the acquire timeout
		TenantMaxShare:   s.TenantMaxShare, TenantShares: s.TenantShares, TenantClass: s.TenantPriority,
	}, orchestrator.Deps{Upstream: up, Routes: routes, Cache: c, Logger: log, Observer: ob.Metrics, Shared: shared, Leases: leases})
	if err != nil {
		return err
	}
	ob.watch(orch, c)
	maxConns := fitConns(s, log)
	mainMetrics := ob.Metrics.Handler() // nil when on its own address
	if s.MetricsAddr != "" {
		mainMetrics = nil
	}
	h := web.New(web.Config{
		ReadHeaderTimeout: s.ReadHeaderTimeout, BodyTimeout: s.BodyTimeout, MaxHeaderBytes: int(s.MaxHeaderBytes),
		MaxConns: maxConns, OpsConns: s.OpsConns, TriageTimeout: s.TriageTimeout, IdleConnTimeout: s.KeepAliveTimeout,
		MaxBody: s.MaxBody, APIKeys: s.APIKeys, TokenSecret: tokenSecret, Logger: log,
		Metrics: mainMetrics, MetricsKey: s.MetricsKey, ConnObserver: ob.Metrics,
		Models:       models,
		Conn:         stream.ConnConfig{Heartbeat: s.Heartbeat, MaxPendingBytes: int(s.ConnBuffer), WriteTimeout: s.WriteTimeout},
		FallbackHold: cmp.Or(s.FallbackHold, -1), // 0 = none: web's "no hold"
	}, orch, c)

	inner, err := net.Listen("tcp", s.Addr)
	if err != nil {
		return fmt.Errorf("listen on %s (SLUICE_ADDR): %w", s.Addr, err)
	}
	ln := h.Listen(inner)
	ob.Metrics.WatchConns(ln)
	srv := h.HTTPServer()
	errc := make(chan error, 2)
	go func() { errc <- srv.Serve(ln) }()
	var dbg, msrv *http.Server
	if s.DebugAddr != "" {
		dbg = debugServer(s.DebugAddr)
		go func() { errc <- dbg.ListenAndServe() }()
	}
	if s.MetricsAddr != "" {
		mln, err := net.Listen("tcp", s.MetricsAddr)
		if err != nil {
			_ = srv.Close()
			return fmt.Errorf("listen on %s (SLUICE_METRICS_ADDR): %w", s.MetricsAddr, err)
		}
		msrv = metricsServer(web.KeyedHandler(s.MetricsKey, ob.Metrics.Handler()))
		go func() { errc <- msrv.Serve(mln) }()
		log.Info("metrics serving", "addr", mln.Addr().String(), "key", s.MetricsKey != "")
	}
	upNames := make([]string, 0, len(orch.Breakers()))
	for _, b := range orch.Breakers() {
		upNames = append(upNames, b.Name())
	}
	// With a file, the budget is each upstream's (name=budget, in order).
	var budget any = s.Budget
	if s.routes != nil {
		budgets := make([]string, 0, len(s.routes.Upstreams))
		for _, u := range s.routes.Upstreams {
			budgets = append(budgets, u.Name+"="+strconv.Itoa(u.Budget))
		}
		budget = strings.Join(budgets, ",")
	}
	log.Info("sluice serving", "addr", ln.Addr().String(), "upstream", strings.Join(upNames, ","), "config", s.Config, "model", s.Model, "budget", budget,
		"total_timeout", s.TotalTimeout.String(), "auth", len(s.APIKeys) > 0)
	if ready != nil {
		ready <- ln.Addr().String()
	}
	select {
	case <-ctx.Done():
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			log.Error("server stopped", "err", err)
		}
	}
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Tasks first: their streams then end with a terminal event, so the
	// HTTP server's connections can drain.
	oerr := orch.Shutdown(sctx)
	herr := srv.Shutdown(sctx)
	if dbg != nil {
		_ = dbg.Shutdown(sctx)
	}
	if msrv != nil {
		_ = msrv.Shutdown(sctx)
	}
	return errors.Join(oerr, herr)
}

func queueLimit(n int) int {
	if n == 0 {
		return -1 // SLUICE_QUEUE=0: no queue
	}
	return n
}

// coalesceMax is the orchestrator's MaxCoalesced: negative (off) with
// SLUICE_COALESCE=off.
func coalesceMax(s *settings) int {
	if s.Coalesce == "off" {
		return -1
	}
	return s.CoalesceMax
}

// adaptiveConfig is the adaptive budget of the settings.
func adaptiveConfig(s *settings) pipeline.AdaptiveConfig {
	return pipeline.AdaptiveConfig{Enabled: s.BudgetAdaptive == "on", Min: s.BudgetMin, Max: s.BudgetMax, Interval: s.BudgetAdaptiveInterval}
}

func newUpstream(s *settings) (upstream.Upstream, error) {
	if s.Upstream == "sim" {
		return newSim(s), nil
	}
	up, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: s.Upstream, APIKey: s.UpstreamAPIKey, ConnectTimeout: s.ConnectTimeout})
	if err != nil {
		return nil, fmt.Errorf("setting SLUICE_UPSTREAM: %w", err)
	}
	return up, nil
}

// newSim is the simulated model of the SLUICE_SIM_* settings.
func newSim(s *settings) *upstream.Sim {
	cfg := upstream.SimConfig{TTFTMedian: s.SimTTFT, TTFTSigma: s.SimTTFTSigma, GapMedian: s.SimGap, GapSigma: s.SimGapSigma, Capacity: s.SimCapacity}
	// A zero setting means "none" here, while the zero value of the
	// config means "default".
	if cfg.TTFTMedian == 0 {
		cfg.TTFTMedian = -1
	}
	if cfg.GapMedian == 0 {
		cfg.GapMedian = -1
	}
	if cfg.TTFTSigma == 0 {
		cfg.TTFTSigma = -1
	}
	if cfg.GapSigma == 0 {
		cfg.GapSigma = -1
	}
	return upstream.NewSim(cfg)
}

func newEmbedder(s *settings) (cache.Embedder, error) {
	if s.Embeddings == "builtin" {
		return nil, nil // the cache's default
	}
	key := s.EmbedAPIKey
	if key == "" {
		key = s.UpstreamAPIKey
	}
	return &cache.OpenAIEmbedder{BaseURL: s.Embeddings, APIKey: key, Model: s.EmbedModel}, nil
}

func newLogger(s *settings, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(s.LogLevel)) // validated by the settings
	opts := &slog.HandlerOptions{Level: lvl}
	if s.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// metricsServer serves GET /metrics only (SLUICE_METRICS_ADDR).
func metricsServer(h http.Handler) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	return &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, MaxHeaderBytes: web.DefaultMaxHeaderBytes}
}

func debugServer(addr string) *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 10 * time.Second}
}
