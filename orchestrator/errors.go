package orchestrator

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluice-dev/sluice/stream"
)

// Error codes of the contract, shared by tasks' terminal events and HTTP
// error bodies.
const (
	CodeOverloaded          = "overloaded"
	CodeUpstreamError       = "upstream_error"
	CodeUpstreamUnavailable = "upstream_unavailable"
	CodeTTFTTimeout         = "ttft_timeout"
	CodeCancelled           = "cancelled"
	CodeShuttingDown        = "shutting_down"
	// CodeQueueTimeout: an async task waited Config.MaxQueueWait in the
	// queue without getting a budget slot; it was never sent upstream.
	// Its finish reason is FinishOverloaded.
	CodeQueueTimeout = "queue_timeout"
	// CodeAnswerTooLarge: the answer reached Config.MaxAnswerBytes and was
	// cut there (a partial answer, finish reason "length").
	CodeAnswerTooLarge = "answer_too_large"
	// CodeIdleTimeout: no chunk came for Config.IdleTimeout.
	CodeIdleTimeout = "idle_timeout"
	// CodeDeadline: the task reached its total cap with output.
	CodeDeadline = "deadline"
	// CodeBudgetUnavailable: the fleet-wide budget's store (Redis) does
	// not answer and the deployment fails closed: the request was refused
	// before it started (503).
	CodeBudgetUnavailable = "budget_unavailable"
)

// FinishReason is a task's finish reason of the contract. View and
// stream.End carry it as a string.
type FinishReason string

// LogValue implements slog.LogValuer (a plain string for slog: without it the handlers format it with fmt and reflection, most of the cost of the "task end" line).
func (f FinishReason) LogValue() slog.Value { return slog.StringValue(string(f)) }

// The finish reasons of the contract.
const (
	FinishStop FinishReason = "stop"
	// FinishLength: cut at the token limit (done) or at
	// Config.MaxAnswerBytes (partial, CodeAnswerTooLarge).
	FinishLength      FinishReason = "length"
	FinishDeadline    FinishReason = "deadline"
	FinishIdleTimeout FinishReason = "idle_timeout"
	FinishTTFTTimeout FinishReason = "ttft_timeout"
	// FinishUpstreamError: the upstream failed, or its circuit is open,
	// or (followed from the shared state) its owner stopped answering.
	FinishUpstreamError FinishReason = "upstream_error"
	FinishCancelled     FinishReason = "cancelled"
	// FinishOverloaded is the finish reason of a task that never got a
	// budget slot (the contract's "overloaded"): it ends failed with
	// CodeQueueTimeout.
	FinishOverloaded FinishReason = "overloaded"
)

// The terminal events a task ends with (stream.End.Event): the event
// names are stream's.
const (
	EventDone    = stream.EventDone
	EventPartial = stream.EventPartial
	EventError   = stream.EventError
)

// RefusalReason says why a request was refused before its task started:
// Refusal.Reason, and the reason Observer.Refused is told.
type RefusalReason string

// The refusal reasons.
const (
	// RefusedOverloaded: the budget was full for Config.AcquireTimeout.
	RefusedOverloaded RefusalReason = "overloaded"
	// RefusedQueueFull: the async queue holds Config.QueueLimit tasks.
	RefusedQueueFull RefusalReason = "queue_full"
	// RefusedBreakerOpen: the upstream's circuit is open.
	RefusedBreakerOpen RefusalReason = "breaker_open"
	// RefusedBudgetUnavailable: the fleet budget's store does not answer
	// and Config.BudgetFailOpen is off.
	RefusedBudgetUnavailable RefusalReason = "budget_unavailable"
)

// Refusal is a request refused before its task started: the budget is
// full, the queue is full, or the circuit is open. Nothing was written
// to the client yet, so it becomes an HTTP 503.
type Refusal struct {
	Code       string // CodeOverloaded, CodeUpstreamUnavailable or CodeBudgetUnavailable
	Reason     RefusalReason
	Upstream   string
	RetryAfter time.Duration
	Err        error
}

func (r *Refusal) Error() string {
	return fmt.Sprintf("orchestrator: %s refused (%s): %v", r.Upstream, r.Reason, r.Err)
}

func (r *Refusal) Unwrap() error { return r.Err }

// Errors used as cancellation causes of a task's context.
var (
	// ErrCancelled is the cause when a task is cancelled by its owner.
	ErrCancelled = errors.New("orchestrator: task cancelled")
	// ErrShutdown is the cause when the orchestrator shuts down.
	ErrShutdown = errors.New("orchestrator: shutting down")
	// ErrDeadline is the cause when a task reaches its total cap.
	ErrDeadline = errors.New("orchestrator: total deadline reached")
	// ErrAnswerTooLarge is the cause when a task's answer reaches
	// Config.MaxAnswerBytes.
	ErrAnswerTooLarge = errors.New("orchestrator: answer size limit reached")
	// ErrQueueWait is the cause when an async task waits longer than
	// Config.MaxQueueWait for a slot.
	ErrQueueWait = errors.New("orchestrator: queue wait limit reached")
	// ErrClosed is returned by SubmitOnce after Shutdown.
	ErrClosed = errors.New("orchestrator: closed")
)
