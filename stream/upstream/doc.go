// Package upstream holds the clients of the model upstreams: an
// OpenAI-compatible streaming chat-completions client (parsed with
// github.com/tmaxmax/go-sse) and the built-in simulated model.
//
// It also owns the vocabulary of an upstream call that every client speaks
// and the orchestrator consumes: the Upstream interface, its Request and
// Message, the Chunk it streams, and the ways a call ends (ErrLength,
// ErrTruncated, StatusError, ConnectError). These live here, not in
// package stream, because they describe what a model sends, while stream
// describes what sluice writes to its own clients; the two packages do not
// import each other. The fault-injecting fake upstream for tests is
// upstream/upstreamtest.
package upstream
