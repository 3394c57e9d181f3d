package orchestrator

import (
	"time"

	"github.com/sluice-dev/sluice/pipeline"
)

// Observer receives the events that metrics are made of. Implementations
// must be safe for concurrent use and must not block.
type Observer interface {
	// Refused counts a request refused before its task started; reason is
	// a RefusalReason.
	Refused(upstream, reason string)
	// BudgetWait observes how long a granted claim waited for its slot.
	BudgetWait(upstream string, wait time.Duration)
	// BreakerTransition observes a circuit breaker's state change.
	BreakerTransition(upstream string, from, to pipeline.BreakerState)
	// UpstreamAttempt counts one upstream call: its Outcome and HTTP
	// status (0 if none).
	UpstreamAttempt(upstream, outcome string, status int)
	// Retry counts a retry.
	Retry(upstream string)
	// FirstToken observes a task's time to first token.
	FirstToken(upstream string, d time.Duration)
	// ChunkGap observes the gap between two chunks.
	ChunkGap(upstream string, d time.Duration)
	// TaskEnded observes a task's final state.
	TaskEnded(v View)
}

// FallbackObserver is an Observer that also counts fallbacks (routes.go):
// a request that upstream refused (reason: a RefusalReason) or failed
// before any output ("upstream_error"), passed on to the next upstream of
// its model. It is optional (New checks the Observer for it), so that
// Observers written before it still work.
type FallbackObserver interface {
	Fallback(upstream, reason string)
}

// FallbackUpstreamError is the reason a FallbackObserver is told for a
// retryable upstream failure before any output.
const FallbackUpstreamError = "upstream_error"

// Outcome is how one upstream call ended, as Observer.UpstreamAttempt is
// told.
type Outcome string

// The outcomes of an upstream call.
const (
	OutcomeOK           Outcome = "ok"
	OutcomeHTTPError    Outcome = "http_error"
	OutcomeConnectError Outcome = "connect_error"
	OutcomeTruncated    Outcome = "truncated"
	OutcomeTTFTTimeout  Outcome = "ttft_timeout"
	OutcomeIdleTimeout  Outcome = "idle_timeout"
	OutcomeCancelled    Outcome = "cancelled"
	OutcomeDeadline     Outcome = "deadline"
	OutcomeError        Outcome = "error"
)

type nopObserver struct{}

func (nopObserver) Refused(string, string)                                                 {}
func (nopObserver) BudgetWait(string, time.Duration)                                       {}
func (nopObserver) BreakerTransition(string, pipeline.BreakerState, pipeline.BreakerState) {}
func (nopObserver) UpstreamAttempt(string, string, int)                                    {}
func (nopObserver) Retry(string)                                                           {}
func (nopObserver) FirstToken(string, time.Duration)                                       {}
func (nopObserver) ChunkGap(string, time.Duration)                                         {}
func (nopObserver) TaskEnded(View)                                                         {}
