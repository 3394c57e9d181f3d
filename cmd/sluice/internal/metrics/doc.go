// Package metrics makes a serving sluice visible from outside: it exports
// the admission gates, circuit breakers, upstream calls, tasks, SSE
// connections, the shared state, the answer cache and the Go runtime's
// scheduling latency and GC pauses as Prometheus metrics on a private
// registry. It is process wiring, used only by
// cmd/sluice.
//
// A Metrics is the orchestrator's Observer and the web server's
// ConnObserver, and its LogSuppressed and LogUntracked are the hooks of
// the log aggregator (package logagg). Everything that is already counted
// elsewhere (gate in-flight and limits, breaker state, cache counters) is
// read at scrape time by a custom collector, so the exported values cannot
// drift from the source of truth.
//
// Every metric is listed, with its type, labels and help, in one catalog
// (describe.go) that registration reads; the table in docs/metrics.md is
// generated from it and checked by the tests.
package metrics
