package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
)

// upstreamBudget is one upstream's entry in GET /v1/budget.
type upstreamBudget struct {
	pipeline.GateStats
	Breaker string `json:"breaker"`
	// BreakerCalls and BreakerFailures are the calls with an outcome and
	// the failures among them in the breaker's sliding window.
	BreakerCalls    int `json:"breaker_window_calls"`
	BreakerFailures int `json:"breaker_window_failures"`
	// Adaptive is the adaptive limit's state (SLUICE_BUDGET_ADAPTIVE=on):
	// its bounds, the TTFT it steers by and its last changes with their
	// reasons. Absent when the limit is fixed.
	Adaptive *pipeline.AdaptiveStats `json:"adaptive,omitempty"`
}

// budget is GET /v1/budget: in-flight, limit and queue per upstream. The
// top-level fields sum over the upstreams.
func (s *Server) budget(w http.ResponseWriter, r *http.Request, _ string) {
	out := struct {
		Mode          string `json:"mode"` // "cluster" when any upstream's budget is the fleet's
		Limit         int    `json:"limit"`
		InFlight      int    `json:"in_flight"`
		Queued        int    `json:"queued"`
		RejectedTotal int64  `json:"rejected_total"`
		// Classes sums each priority class's counters over the upstreams.
		Classes   map[string]pipeline.ClassStats `json:"classes"`
		Upstreams []upstreamBudget               `json:"upstreams"`
		// Coalesce: the generations identical requests can join, and
		// the requests waiting for their leader's slot (they hold none).
		Coalesce orchestrator.CoalesceStats `json:"coalesce"`
	}{Classes: map[string]pipeline.ClassStats{}, Coalesce: s.orch.CoalesceStats()}
	breakers, adaptives := s.orch.Breakers(), s.orch.Adaptives()
	for i, g := range s.orch.Gates() {
		st := g.Stats()
		if out.Mode != "cluster" {
			out.Mode = st.Mode
		}
		out.Limit += st.Limit
		out.InFlight += st.InFlight
		out.Queued += st.Queued
		out.RejectedTotal += st.RejectedTotal
		for name, c := range st.Classes {
			sum := out.Classes[name]
			sum.Guaranteed += c.Guaranteed
			sum.InFlight += c.InFlight
			sum.Waiting += c.Waiting
			sum.Queued += c.Queued
			sum.AcquiredTotal += c.AcquiredTotal
			out.Classes[name] = sum
		}
		calls, failures := breakers[i].Rate()
		ub := upstreamBudget{GateStats: st, Breaker: breakers[i].State().String(),
			BreakerCalls: calls, BreakerFailures: failures}
		if i < len(adaptives) && adaptives[i] != nil {
			as := adaptives[i].Stats()
			ub.Adaptive = &as
		}
		out.Upstreams = append(out.Upstreams, ub)
	}
	writeJSON(w, http.StatusOK, out)
}

// healthz says only that the process lives.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz fails while no upstream can serve (its circuit is open, or it
// does not accept a connection), or while a dependency of Config.Ready is
// unreachable. The shared state (Redis) is not one: without it the
// instance still serves its own work, so its state is reported in the
// body ("redis": "ok" or "degraded: ...") and readiness stays.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	err := s.orch.Ready(ctx)
	if err == nil && s.cfg.Ready != nil {
		err = s.cfg.Ready(ctx)
	}
	body := map[string]string{"status": "ready"}
	if st := s.orch.SharedStatus(); st.Enabled {
		body["redis"] = sharedHealth(st)
	}
	if s.cache != nil {
		if st := s.cache.ShareStatus(); st.Enabled {
			body["cache_log"] = cacheLogHealth(st)
		}
	}
	// A cluster budget whose Redis fails is shown, never silent; it does
	// not make the instance unready: every instance shares that Redis,
	// and each still serves cache hits (and, failing open, its share).
	for _, g := range s.orch.Gates() {
		if st := g.Stats(); st.Mode == "cluster" {
			body["budget"] = "ok"
			if st.Degraded != "" {
				body["budget"] = "degraded: " + st.Degraded
			}
		}
	}
	if err != nil {
		body["status"], body["reason"] = "unavailable", err.Error()
		writeJSON(w, http.StatusServiceUnavailable, body)
		return
	}
	writeJSON(w, http.StatusOK, body)
}

// cacheLogHealth describes the cache's shared change log for /readyz. Like
// the shared state, it is not a readiness dependency: without it the cache
// serves and stores locally.
func cacheLogHealth(st cache.ShareStatus) string {
	switch {
	case !st.Up:
		return fmt.Sprintf("degraded: %s; the cache serves and stores locally, %d changes wait to be appended", st.Err, st.Pending)
	case st.Lag > 0:
		return fmt.Sprintf("catching up: %.1fs behind the log", st.Lag.Seconds())
	}
	return "ok"
}

// sharedHealth describes the shared-state link for /readyz.
func sharedHealth(st orchestrator.SharedStatus) string {
	backlog := ""
	if st.PendingTasks > 0 {
		backlog = fmt.Sprintf("%d tasks (%d bytes of text) waiting to be published", st.PendingTasks, st.PendingBytes)
	}
	switch {
	case !st.Up && backlog != "":
		return "degraded: " + st.Err + "; " + backlog
	case !st.Up:
		return "degraded: " + st.Err + "; tasks are served here and published when it answers"
	case backlog != "":
		return "catching up: " + backlog
	}
	return "ok"
}
