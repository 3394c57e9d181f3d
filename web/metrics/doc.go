// Package metrics makes sluice visible from outside: it exports the
// admission gates, circuit breakers, upstream calls, tasks, SSE
// connections and the answer cache as Prometheus metrics on a private
// registry, and it aggregates repeated warning and error log records so
// that a failing dependency produces one log line per window instead of
// one per request.
//
// A Metrics is the orchestrator's Observer and the web server's
// ConnObserver. Everything that is already counted elsewhere (gate
// in-flight and limits, breaker state, cache counters) is read at scrape
// time by a custom collector, so the exported values cannot drift from
// the source of truth.
//
// Every metric is listed, with its type, labels and help, by Describe;
// docs/metrics.md is generated from it and checked by the tests.
package metrics
