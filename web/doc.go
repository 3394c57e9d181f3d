// Package web is sluice's HTTP front: it decodes and validates requests,
// maps them onto the orchestrator and the cache, writes the contract's
// JSON errors, streams tasks as Server-Sent Events, and serves the
// embedded browser page.
//
// Where a request goes: routes.go lists every path and its handler;
// tasks.go holds the task API (POST /v1/tasks, POST /v1/stream, GET and
// DELETE /v1/tasks/{id}, the events stream); cachehttp.go the cache
// endpoints; ops.go budget, health and readiness; errors.go the one
// mapping from errors to HTTP statuses.
package web
