package pipeline_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/pipeline"
)

// producer sends items with the given gaps, then reports err. exited is
// closed when its goroutine has returned.
func producer(ctx context.Context, gaps []time.Duration, err error) (in chan int, done chan error, exited chan struct{}) {
	in = make(chan int)
	done = make(chan error, 1)
	exited = make(chan struct{})
	go func() {
		defer close(exited)
		for i, g := range gaps {
			select {
			case <-time.After(g):
			case <-ctx.Done():
				done <- ctx.Err()
				return
			}
			select {
			case in <- i:
			case <-ctx.Done():
				done <- ctx.Err()
				return
			}
		}
		done <- err
	}()
	return in, done, exited
}

// watchCase is one case of TestWatch and TestWatchCall: the producer's
// gaps and end, and what the watchdog stage must return.
type watchCase struct {
	name     string
	cfg      pipeline.WatchConfig
	gaps     []time.Duration
	end      error
	want     error
	wantN    int
	fireNear time.Duration // when the watchdog should fire (0: n/a)
}

func watchCases() []watchCase {
	boom := errors.New("boom")
	return []watchCase{
		{"complete", pipeline.WatchConfig{TTFT: time.Second, Idle: time.Second}, []time.Duration{0, 0, 0}, nil, nil, 3, 0},
		{"producer error", pipeline.WatchConfig{TTFT: time.Second, Idle: time.Second}, []time.Duration{0}, boom, boom, 1, 0},
		{"ttft", pipeline.WatchConfig{TTFT: 100 * time.Millisecond, Idle: time.Second}, []time.Duration{time.Hour}, nil, pipeline.ErrTTFTTimeout, 0, 100 * time.Millisecond},
		{"idle", pipeline.WatchConfig{TTFT: time.Second, Idle: 100 * time.Millisecond}, []time.Duration{0, 0, time.Hour}, nil, pipeline.ErrIdleTimeout, 2, 100 * time.Millisecond},
		{"slow but steady", pipeline.WatchConfig{TTFT: 200 * time.Millisecond, Idle: 200 * time.Millisecond}, []time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}, nil, nil, 5, 0},
		{"no watchdogs", pipeline.WatchConfig{}, []time.Duration{0, 50 * time.Millisecond}, nil, nil, 2, 0},
	}
}

// check compares a run's result with the case: the error, the items
// relayed (n, the last at last) and, for a watchdog, when it fired
// (fired) counted from start or from the last item.
func (tc watchCase) check(t *testing.T, err error, n int, start, last, fired time.Time) {
	t.Helper()
	const tol = 150 * time.Millisecond // scheduling tolerance on a shared machine
	if !errors.Is(err, tc.want) && !(tc.want == nil && err == nil) {
		t.Fatalf("err = %v, want %v", err, tc.want)
	}
	if n != tc.wantN {
		t.Fatalf("relayed %d items, want %d", n, tc.wantN)
	}
	if tc.fireNear > 0 {
		from := start
		if n > 0 {
			from = last
		}
		if d := fired.Sub(from); d < tc.fireNear || d > tc.fireNear+tol {
			t.Fatalf("watchdog fired after %v, want %v (+%v)", d, tc.fireNear, tol)
		}
	}
}

func TestWatch(t *testing.T) {
	for _, tc := range watchCases() {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			in, done, exited := producer(ctx, tc.gaps, tc.end)
			n := 0
			start := time.Now()
			var last time.Time
			err := pipeline.Watch(context.Background(), tc.cfg, in, done, func(int) { n++; last = time.Now() })
			fired := time.Now()
			cancel()
			tc.check(t, err, n, start, last, fired)
			<-exited // the producer stops on cancel
		})
	}
}

func TestWatchStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	in, done, exited := producer(ctx, []time.Duration{time.Hour}, nil)
	cancel()
	err := pipeline.Watch(ctx, pipeline.WatchConfig{}, in, done, func(int) {})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	<-exited
}

// TestWatchRelaysWhatABufferedInHolds: a producer that reads ahead into a
// buffered in and reports done at once loses nothing: every item it sent
// is relayed, in order, before Watch returns its result.
func TestWatchRelaysWhatABufferedInHolds(t *testing.T) {
	boom := errors.New("boom")
	for _, end := range []error{nil, boom} {
		in := make(chan int, 8)
		done := make(chan error, 1)
		for i := range 8 {
			in <- i
		}
		done <- end // done is ready before any item is relayed
		var got []int
		err := pipeline.Watch(context.Background(), pipeline.WatchConfig{TTFT: time.Second, Idle: time.Second}, in, done, func(i int) { got = append(got, i) })
		if !errors.Is(err, end) || (end == nil) != (err == nil) {
			t.Fatalf("err = %v, want %v", err, end)
		}
		if len(got) != 8 {
			t.Fatalf("relayed %v, want 0..7", got)
		}
		for i, v := range got {
			if v != i {
				t.Fatalf("relayed %v out of order", got)
			}
		}
	}
}

// callProducer is producer for WatchCall: it relays items with the given
// gaps on the caller's goroutine, then returns err; ctx's error once ctx
// is done, and the relay's error when it returns one.
func callProducer(gaps []time.Duration, err error) func(context.Context, func(int) error) error {
	return func(ctx context.Context, relay func(int) error) error {
		for i, g := range gaps {
			t := time.NewTimer(g)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
			if rerr := relay(i); rerr != nil {
				return rerr
			}
		}
		return err
	}
}

// TestWatchCall is TestWatch's table for WatchCall: the same results,
// items and watchdog timing; and stopped says when the call was stopped.
func TestWatchCall(t *testing.T) {
	for _, tc := range watchCases() {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			start := time.Now()
			var last time.Time
			stopped, err := pipeline.WatchCall(context.Background(), tc.cfg, callProducer(tc.gaps, tc.end), func(int) { n++; last = time.Now() })
			fired := time.Now()
			tc.check(t, err, n, start, last, fired)
			if stopped != (tc.fireNear > 0) {
				t.Fatalf("stopped = %v", stopped)
			}
		})
	}
}

func TestWatchCallStopsOnContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	stopped, err := pipeline.WatchCall(ctx, pipeline.WatchConfig{TTFT: time.Hour}, callProducer([]time.Duration{time.Hour}, nil), func(int) {})
	if !errors.Is(err, context.Canceled) || !stopped {
		t.Fatalf("stopped %v, err = %v", stopped, err)
	}
}

// TestWatchCallDropsAnItemAfterTheWatchdog: an item that comes after the
// watchdog fired (the call has not noticed its context yet) is not
// relayed: the relay says so, and WatchCall returns the watchdog's error,
// as Watch never relays after it fires.
func TestWatchCallDropsAnItemAfterTheWatchdog(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  pipeline.WatchConfig
		want error
	}{
		{"ttft", pipeline.WatchConfig{TTFT: 10 * time.Millisecond}, pipeline.ErrTTFTTimeout},
		{"idle", pipeline.WatchConfig{TTFT: time.Hour, Idle: 10 * time.Millisecond}, pipeline.ErrIdleTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			var relayErr error
			stopped, err := pipeline.WatchCall(context.Background(), tc.cfg, func(ctx context.Context, relay func(int) error) error {
				if errors.Is(tc.want, pipeline.ErrIdleTimeout) {
					if err := relay(0); err != nil {
						return err
					}
				}
				<-ctx.Done() // the watchdog fired; the call goes on regardless
				relayErr = relay(1)
				return nil // even a call that says it ended well was stopped
			}, func(int) { n++ })
			if !errors.Is(relayErr, tc.want) || !errors.Is(err, tc.want) || !stopped {
				t.Fatalf("relay %v, err %v, stopped %v", relayErr, err, stopped)
			}
			if want := map[bool]int{true: 1, false: 0}[errors.Is(tc.want, pipeline.ErrIdleTimeout)]; n != want {
				t.Fatalf("relayed %d items, want %d", n, want)
			}
		})
	}
}

// TestWatchCallKeepsAnEndedAnswerWhole: a call that relayed its last item
// and then, while it read the stream's close, saw the idle watchdog fire,
// has still ended on its own when it marks its result with Ended (an
// upstream's token-limit cut: whole as far as it goes); unmarked, the
// same error is the watchdog's.
func TestWatchCallKeepsAnEndedAnswerWhole(t *testing.T) {
	errCut := errors.New("cut at the token limit")
	for _, mark := range []bool{true, false} {
		call := func(ctx context.Context, relay func(int) error) error {
			if err := relay(0); err != nil {
				return err
			}
			<-ctx.Done() // the idle watchdog fires while the call reads on
			if mark {
				return pipeline.Ended(errCut)
			}
			return errCut
		}
		n := 0
		stopped, err := pipeline.WatchCall(context.Background(), pipeline.WatchConfig{TTFT: time.Second, Idle: 20 * time.Millisecond}, call, func(int) { n++ })
		if n != 1 {
			t.Fatalf("mark %v: relayed %d items", mark, n)
		}
		if mark && (stopped || err != errCut) { //nolint:errorlint // the unwrapped error itself
			t.Fatalf("marked: stopped %v, err %v; want the call's own %v", stopped, err, errCut)
		}
		if !mark && (!stopped || !errors.Is(err, pipeline.ErrIdleTimeout)) {
			t.Fatalf("unmarked: stopped %v, err %v; want the idle watchdog's", stopped, err)
		}
	}
}
