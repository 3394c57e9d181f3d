package pipeline

import (
	"context"
	"errors"
	"time"
)

// Errors returned by Watch when a watchdog fires.
var (
	ErrTTFTTimeout = errors.New("pipeline: no first token in time")
	ErrIdleTimeout = errors.New("pipeline: stream idle too long")
)

// WatchConfig sets Watch's watchdogs. A zero or negative duration disables
// that watchdog.
type WatchConfig struct {
	// TTFT bounds the wait from the start of Watch to the first item.
	TTFT time.Duration
	// Idle bounds the gap between two items once the first has arrived.
	Idle time.Duration
}

// Watch is the watchdog stage. It relays every item from in to emit, in
// order, on the caller's goroutine, until the producer reports on done
// (its result is returned), a watchdog fires (ErrTTFTTimeout or
// ErrIdleTimeout), or ctx ends (ctx's error).
//
// The producer must stop sending when its context is cancelled, and must
// report exactly once on done (a buffered channel of one) after its last
// send. in may be buffered: when done reports, what in still holds is
// relayed before Watch returns, so everything the producer sent is
// relayed (a buffer lets the producer read ahead instead of waiting for
// each item to be relayed). Watch does not cancel the producer: the caller
// owns the producer's context and cancels it whatever Watch returns.
func Watch[T any](ctx context.Context, cfg WatchConfig, in <-chan T, done <-chan error, emit func(T)) error {
	var timer *time.Timer
	var fire <-chan time.Time
	arm := func(d time.Duration) {
		if d <= 0 {
			fire = nil
			return
		}
		if timer == nil {
			timer = time.NewTimer(d)
		} else {
			timer.Reset(d)
		}
		fire = timer.C
	}
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	arm(cfg.TTFT)
	first := true
	for {
		select {
		case item := <-in:
			first = false
			emit(item)
			arm(cfg.Idle)
		case err := <-done:
			for {
				select {
				case item := <-in: // sent before done: buffered
					emit(item)
				default:
					return err
				}
			}
		case <-fire:
			if first {
				return ErrTTFTTimeout
			}
			return ErrIdleTimeout
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}
