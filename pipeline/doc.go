// Package pipeline holds the generic stages that sluice composes into a
// streaming pipeline, independent of HTTP and of tasks: the admission Gate
// (an in-flight budget with a FIFO wait and a bounded queue), the circuit
// Breaker, and the Watch stage that relays chunks while enforcing the
// time-to-first-token and inter-chunk idle timeouts (WatchCall: the same
// for a producer that runs on the caller's goroutine); and Adaptive, which
// moves a Gate's limit (Gate.SetLimit) between a minimum and a maximum
// from the upstream's time to first token and its overload answers
// (docs/architecture.md, "Adaptive budget").
//
// Each Gate and Breaker is created once per upstream and shared by every
// request; creating one per request gates nothing.
package pipeline
