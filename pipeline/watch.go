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

// WatchCall is Watch for a producer that runs on the caller's goroutine,
// without a goroutine or a channel of its own: it calls call with a
// context that the watchdogs cancel and a relay that passes each item to
// emit, in order, on the caller's goroutine. The watchdogs are a timer
// each (TTFT, then Idle from the end of each emit) that cancels call's
// context when it fires.
//
// It returns what Watch would: call's result when call ends on its own,
// ErrTTFTTimeout or ErrIdleTimeout when a watchdog fires first, ctx's
// error when ctx ends first. stopped reports the last two: call did not
// end on its own but was stopped.
//
// call must return promptly once its context is done, and when relay
// returns an error (a watchdog fired: the item was not relayed), call
// must stop relaying and return (it may return that error; whatever it
// returns, WatchCall returns the watchdog's). A call that returns nil (or
// an error marked with Ended) otherwise has ended on its own, whatever
// the watchdogs did meanwhile.
func WatchCall[T any](ctx context.Context, cfg WatchConfig, call func(ctx context.Context, relay func(T) error) error, emit func(T)) (stopped bool, err error) {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	w := watchdog{cancel: cancel, first: true}
	defer w.stop() // also when call panics
	w.arm(cfg.TTFT)
	refused := false
	err = call(cctx, func(item T) error {
		if refused || w.disarm() {
			refused = true
			return w.err()
		}
		w.first = false
		emit(item)
		w.arm(cfg.Idle)
		return nil
	})
	w.disarm()
	if refused {
		return true, w.err() // an item was lost: never a whole answer
	}
	var end endedError
	if errors.As(err, &end) {
		return false, end.err // whole, whatever the watchdogs did after it
	}
	if err == nil || cctx.Err() == nil {
		return false, err
	}
	if errors.Is(context.Cause(cctx), errFired) {
		return true, w.err()
	}
	if cerr := ctx.Err(); cerr != nil {
		return true, cerr
	}
	return false, err
}

// Ended marks err, returned by a WatchCall call, as the end of a whole
// answer, as nil is: WatchCall returns err as the call's own result even
// when a watchdog fired after the last item (while the call read the
// stream's close, say). An upstream's cut at its token limit is such an
// end: complete as far as it goes.
func Ended(err error) error { return endedError{err} }

type endedError struct{ err error }

func (e endedError) Error() string { return e.err.Error() }
func (e endedError) Unwrap() error { return e.err }

// errFired is the cause of WatchCall's context when a watchdog fired.
var errFired = errors.New("pipeline: watchdog fired")

// watchdog is WatchCall's timer. Only the caller's goroutine touches its
// fields; the timer's function only cancels.
type watchdog struct {
	cancel context.CancelCauseFunc
	timer  *time.Timer
	armed  bool // the timer is set and has not been stopped
	first  bool // no item relayed yet: the TTFT watchdog
}

func (w *watchdog) arm(d time.Duration) {
	if d <= 0 {
		return
	}
	if w.timer == nil {
		w.timer = time.AfterFunc(d, w.fire)
	} else {
		w.timer.Reset(d)
	}
	w.armed = true
}

func (w *watchdog) fire() { w.cancel(errFired) }

func (w *watchdog) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
}

// disarm stops the timer and reports whether it had fired. Then it
// cancels the context itself, so that the cause is set by the time
// disarm returns, whether or not the timer's function has run yet.
func (w *watchdog) disarm() (fired bool) {
	if !w.armed {
		return false
	}
	w.armed = false
	if w.timer.Stop() {
		return false
	}
	w.cancel(errFired)
	return true
}

// err is the error of the watchdog that was armed.
func (w *watchdog) err() error {
	if w.first {
		return ErrTTFTTimeout
	}
	return ErrIdleTimeout
}
