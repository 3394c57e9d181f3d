// Package orchestrator runs the task lifecycle: a request becomes a task
// that goes through the cache, the upstream's admission gate and circuit
// breaker, one streamed upstream call (retried at most once, before any
// output) under the TTFT, idle and total watchdogs, into the task's
// transcript, and ends in exactly one terminal state.
//
// The task goroutine owns the upstream call and the budget slot; its
// lifetime is the task's context (deadline = the total cap; cancelled by
// Cancel or Shutdown), never a client connection's.
package orchestrator
