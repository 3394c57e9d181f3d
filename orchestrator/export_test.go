package orchestrator

import (
	"context"
	"time"

	"github.com/sluice-dev/sluice/stream"
)

// ShortSharedTiming shortens the shared state's timing in cfg
// (sharedTiming) for tests that exercise outages and lost owners: call
// timeouts, back-off and the pauses between write retries, and the
// flush window unless cfg sets one.
func ShortSharedTiming(cfg *Config) {
	if cfg.SharedFlush == 0 {
		cfg.SharedFlush = 5 * time.Millisecond
	}
	cfg.timing = sharedTiming{
		callTimeout:      100 * time.Millisecond,
		backOff:          200 * time.Millisecond,
		opTimeout:        500 * time.Millisecond,
		retryMax:         100 * time.Millisecond,
		followWait:       100 * time.Millisecond,
		ownerGrace:       time.Second,
		remoteCancelWait: time.Second,
	}
}

// Submit is SubmitOnce without an idempotency key, mode Interactive.
func (o *Orchestrator) Submit(ctx context.Context, req Request) (*Task, error) {
	return o.submit(ctx, req, Interactive)
}

// SubmitAsync is SubmitOnce without an idempotency key, mode Async.
func (o *Orchestrator) SubmitAsync(ctx context.Context, req Request) (*Task, error) {
	return o.submit(ctx, req, Async)
}

// Event is the name of a task's terminal SSE event (stream.End.Event).
type Event = stream.Event
