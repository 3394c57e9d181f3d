// Package stream carries Server-Sent Events in and out of sluice.
//
// Inbound, it holds the upstream clients: an OpenAI-compatible streaming
// client (parsed with github.com/tmaxmax/go-sse) and the built-in simulated
// model. Outbound, it holds a task's Transcript (the append-only,
// sequence-numbered record of an answer that every reader follows with its
// own cursor) and the per-connection write loop that turns a cursor into an
// SSE response with heartbeats, a bounded send buffer and a slow-reader limit.
package stream
