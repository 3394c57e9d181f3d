// Package upstreamtest provides a fault-injecting OpenAI-compatible upstream
// for tests.
//
// A Server answers POST /v1/chat/completions like an OpenAI-compatible model
// server (a streamed chat.completion.chunk SSE answer ending in [DONE], or a
// chat.completion JSON object when the request does not ask for a stream),
// and each request follows a Script the test chooses: how much to say, how
// slowly, and how to misbehave (stall before or after the headers, stall
// mid-answer while sending keep-alives, drop the connection, omit [DONE],
// answer an error status).
//
// Every stall ends when the client goes away or the server is closed, so a
// test never leaks a handler goroutine. The server counts requests, open
// streams and completed answers, and tests wait on those counters with
// Wait, WaitInFlight and WaitIdle instead of sleeping.
package upstreamtest
