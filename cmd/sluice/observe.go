package main

import (
	"io"
	"log/slog"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cmd/sluice/internal/logagg"
	"github.com/sluice-dev/sluice/cmd/sluice/internal/metrics"
	"github.com/sluice-dev/sluice/orchestrator"
)

// observability is how a serving sluice is seen from outside: the logger,
// with repeated warnings and errors aggregated, and the Prometheus
// metrics served at GET /metrics.
type observability struct {
	// Log is the process logger (SLUICE_LOG_FORMAT, SLUICE_LOG_LEVEL).
	Log *slog.Logger
	// Metrics is the orchestrator's Observer, the web server's
	// ConnObserver and the /metrics handler.
	Metrics *metrics.Metrics

	agg *logagg.Handler
}

// newObservability builds the logger and the metrics. Call watch once the
// orchestrator and the cache exist, and Close when serving ends.
func newObservability(s *settings, logOut io.Writer) *observability {
	m := metrics.New(metrics.Config{MaxNamespaces: s.MetricsNamespaces})
	agg := logagg.New(newLogger(s, logOut).Handler(), logagg.Config{
		OnSuppressed: m.LogSuppressed,
		OnUntracked:  m.LogUntracked,
	})
	log := slog.New(agg)
	if s.LogPrompts {
		log.Warn("SLUICE_LOG_PROMPTS=true: questions and answers are written to the log; for debugging only")
	}
	return &observability{Log: log, Metrics: m, agg: agg}
}

// watch makes every scrape read the gates and breakers of o and the
// counters of c (which may be nil).
func (ob *observability) watch(o *orchestrator.Orchestrator, c *cache.Cache) {
	ob.Metrics.WatchGates(o)
	ob.Metrics.WatchShared(o)
	if c != nil {
		ob.Metrics.WatchCache(c)
	}
}

// Close stops the log aggregator and writes its pending summaries.
func (ob *observability) Close() { _ = ob.agg.Close() } // it never fails
