package load

import (
	"context"
	"time"
)

// timerSlack is how long before a send time the schedule's Go timer
// fires; the rest is slept with sleepPrecise. An idle Go process sleeps
// in the runtime's network poller, whose timeout on Linux (epoll_wait)
// is in whole milliseconds: a Go timer there fires up to a millisecond
// late (a send due in 13.4 ms sleeps 13 ms, then 1 ms more), and the
// schedule would send most requests about half a millisecond late,
// which counts against their latency while the server had nothing to
// do with it.
const timerSlack = 2 * time.Millisecond

// waitUntil blocks until at, or until ctx ends (false). The Go timer
// (which ctx can interrupt) takes it to timerSlack before at,
// sleepPrecise the rest.
func waitUntil(ctx context.Context, timer *time.Timer, at time.Time) bool {
	if d := time.Until(at) - timerSlack; d > 0 {
		timer.Reset(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			return false
		}
	}
	if ctx.Err() != nil {
		return false
	}
	sleepPrecise(time.Until(at))
	return true
}
