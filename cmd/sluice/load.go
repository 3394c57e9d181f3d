package main

// sluice load: its flags and their checks. The load generator itself is
// package internal/load.

import (
	"context"
	"io"
	"math"
	"net/url"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cmd/sluice/internal/load"
)

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

// cmdLoad is "sluice load".
func cmdLoad(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cfg, code, ok := parseLoad(args, getenv, stderr)
	if !ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	return load.Run(ctx, stop, cfg, stdout, stderr)
}

// parseLoad parses the flags. ok is false when the command must exit
// with code (0 for -h).
func parseLoad(args []string, getenv func(string) string, stderr io.Writer) (cfg load.Config, code int, ok bool) {
	fs := newFlagSet("sluice load", loadUsage, stderr)
	server, apiKey := clientFlags(fs, getenv)
	fs.StringVar(&cfg.Endpoint, "endpoint", "stream", "traffic: stream, tasks or chat")
	fs.Float64Var(&cfg.Rate, "rate", 20, "arrival rate, requests per second (open loop)")
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
	fs.BoolVar(&cfg.JSON, "json", false, "print the report as one JSON object")
	if err := fs.Parse(args); err != nil {
		return cfg, usageExit(err), false
	}
	cfg.Server, cfg.APIKey = strings.TrimRight(*server, "/"), *apiKey
	bad := func(format string, a ...any) (load.Config, int, bool) {
		fs.Usage()
		return cfg, fail(stderr, "load: "+format, a...), false
	}
	if fs.NArg() > 0 {
		return bad("unexpected argument %q (load takes only flags)", fs.Arg(0))
	}
	if u, err := url.Parse(cfg.Server); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return bad("-server %q is not an http(s) URL", cfg.Server)
	}
	switch {
	case cfg.Endpoint != "stream" && cfg.Endpoint != "tasks" && cfg.Endpoint != "chat":
		return bad("-endpoint %q: want stream, tasks or chat", cfg.Endpoint)
	case !(cfg.Rate > 0) || math.IsInf(cfg.Rate, 0):
		return bad("-rate must be a positive number of requests per second")
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
	}
	if n := cfg.Count(); n < 1 || n > load.MaxRequests {
		return bad("-rate × -duration is %.0f requests; it must be between 1 and %d", cfg.Rate*cfg.Duration.Seconds(), load.MaxRequests)
	}
	return cfg, exitOK, true
}
