package upstream

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Message is one chat message sent upstream, in the OpenAI shape.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is what sluice asks an upstream model for.
type Request struct {
	Model     string
	Messages  []Message
	MaxTokens int // 0 means the upstream's default.
	Sampling
}

// Sampling are the common OpenAI sampling parameters, forwarded as they
// are. A nil (or empty) field is not sent: the upstream's default.
type Sampling struct {
	Temperature      *float64 `json:"temperature,omitempty"`
	TopP             *float64 `json:"top_p,omitempty"`
	Stop             []string `json:"stop,omitempty"`
	Seed             *int64   `json:"seed,omitempty"`
	PresencePenalty  *float64 `json:"presence_penalty,omitempty"`
	FrequencyPenalty *float64 `json:"frequency_penalty,omitempty"`
}

// Chunk is one piece of a streamed answer. Text is never empty: upstream
// keep-alives, role-only chunks and empty deltas are dropped by the client,
// so that every Chunk counts as progress for the TTFT and idle watchdogs.
type Chunk struct {
	Text string
}

// Upstream streams one answer from a model.
//
// Stream sends the request, then sends each content chunk on out, and
// returns when the answer is complete (nil), when the upstream ended the
// answer at its token limit (ErrLength: complete as far as it goes, but
// cut), when ctx is done (ctx's error), or when the upstream fails. An
// answer that ends without its final chunk (a dropped connection, a
// missing [DONE]) returns ErrTruncated, never nil. Stream never blocks on
// out after ctx is done, and it never closes out. Implementations are
// safe for concurrent use.
type Upstream interface {
	// Name identifies the upstream in budgets, breakers, metrics and logs.
	Name() string
	Stream(ctx context.Context, req Request, out chan<- Chunk) error
}

// Emitter is an Upstream that can hand each chunk to a function on the
// caller's goroutine instead of sending it on a channel, so that a caller
// needs no goroutine of its own to run the call (the orchestrator runs it
// on the task's goroutine: one goroutine and one channel fewer per open
// stream).
//
// StreamTo is Stream with emit in place of out: it calls emit with each
// content chunk, in order, on the calling goroutine, and returns what
// Stream would. When emit returns an error, StreamTo calls it no more and
// returns that error. It returns promptly once ctx is done.
type Emitter interface {
	StreamTo(ctx context.Context, req Request, emit func(Chunk) error) error
}

// sendTo returns an emit that sends each chunk on out, for a Stream
// written as its StreamTo: it never blocks on out after ctx is done.
func sendTo(ctx context.Context, out chan<- Chunk) func(Chunk) error {
	return func(c Chunk) error {
		select {
		case out <- c:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Pinger is an Upstream that can say cheaply whether it is reachable, for
// readiness checks. An Upstream that is not a Pinger (the simulated model)
// is always reachable.
type Pinger interface {
	Ping(ctx context.Context) error
}

// ModelLister is an Upstream that can list the models it serves (GET
// /models of an OpenAI-compatible API), in the order the upstream gives.
type ModelLister interface {
	Models(ctx context.Context) ([]string, error)
}

// ErrLength reports an answer the upstream ended normally but at its token
// limit (finish_reason "length", e.g. max_tokens): whole as far as it goes,
// never to be served to someone who asked without that limit.
var ErrLength = errors.New("stream: upstream stopped at its token limit")

// ErrTruncated reports an upstream stream that ended without its final chunk.
var ErrTruncated = errors.New("stream: upstream ended without a final chunk")

// StatusError is an upstream HTTP answer other than 200.
type StatusError struct {
	Code       int
	RetryAfter time.Duration // from the Retry-After header; 0 when absent.
	Body       string        // the start of the body, for logs.
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("stream: upstream answered %d: %s", e.Code, e.Body)
}

// ConnectError is a failure to reach the upstream at all (dial, TLS, reset
// before any response). Such failures are retryable.
type ConnectError struct{ Err error }

func (e *ConnectError) Error() string { return "stream: upstream connection: " + e.Err.Error() }
func (e *ConnectError) Unwrap() error { return e.Err }
