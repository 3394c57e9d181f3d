package pipeline_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/pipeline"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestBreakerOpensProbesAndCloses(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	var transitions []pipeline.BreakerState
	b := pipeline.NewBreaker(pipeline.BreakerConfig{
		MinCalls: 3, CoolDown: time.Second, MaxCoolDown: 4 * time.Second, Now: clk.Now,
		OnTransition: func(from, to pipeline.BreakerState) { transitions = append(transitions, to) },
	})
	fail := func() {
		t.Helper()
		done, _, err := b.Allow()
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		done(pipeline.Failure)
	}
	fail()
	fail()
	if b.State() != pipeline.BreakerClosed {
		t.Fatal("opened before 3 failures")
	}
	fail()
	if _, after, err := b.Allow(); !errors.Is(err, pipeline.ErrBreakerOpen) || after != time.Second {
		t.Fatalf("open breaker: err %v after %v", err, after)
	}
	clk.Add(time.Second)
	probe, _, err := b.Allow()
	if err != nil {
		t.Fatalf("after the cool-down one probe must pass: %v", err)
	}
	if _, _, err := b.Allow(); !errors.Is(err, pipeline.ErrBreakerOpen) {
		t.Fatal("a second call passed while the probe is out")
	}
	probe(pipeline.Failure)
	// The cool-down doubled.
	clk.Add(time.Second)
	if _, _, err := b.Allow(); !errors.Is(err, pipeline.ErrBreakerOpen) {
		t.Fatal("cool-down did not grow after a failed probe")
	}
	clk.Add(time.Second)
	probe, _, err = b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	probe(pipeline.Success)
	probe(pipeline.Failure) // only the first outcome counts
	if b.State() != pipeline.BreakerClosed {
		t.Fatalf("state %v after a good probe", b.State())
	}
	want := []pipeline.BreakerState{pipeline.BreakerOpen, pipeline.BreakerHalfOpen, pipeline.BreakerOpen, pipeline.BreakerHalfOpen, pipeline.BreakerClosed}
	if len(transitions) != len(want) {
		t.Fatalf("transitions %v, want %v", transitions, want)
	}
	for i := range want {
		if transitions[i] != want[i] {
			t.Fatalf("transitions %v, want %v", transitions, want)
		}
	}
}

// call makes one call through b with outcome o; it fails the test when the
// breaker refuses it.
func call(t *testing.T, b *pipeline.Breaker, o pipeline.Outcome) {
	t.Helper()
	done, _, err := b.Allow()
	if err != nil {
		t.Fatalf("Allow refused a call: %v", err)
	}
	done(o)
}

// Issue 10, item 8: a storm where a third of the calls fail, their
// failures bunched together (they end faster than the successes), must
// not open the circuit. The old breaker (5 consecutive failures) opened
// at the first run of five.
func TestBreakerThirdFailingStormStaysClosed(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Now: clk.Now}) // defaults: 50% of >= 20 in 10s
	for range 30 {                                                 // 30 s of traffic, 900 calls
		for range 5 {
			call(t, b, pipeline.Success)
			call(t, b, pipeline.Success)
		}
		for range 5 { // the failures of this second arrive in a run
			call(t, b, pipeline.Failure)
		}
		for range 5 {
			call(t, b, pipeline.Failure)
			call(t, b, pipeline.Success)
			call(t, b, pipeline.Success)
		}
		clk.Add(time.Second)
	}
	calls, failures := b.Rate()
	if b.State() != pipeline.BreakerClosed {
		t.Fatalf("a third failing opened the circuit (window %d/%d)", failures, calls)
	}
	if calls == 0 || failures*3 != calls {
		t.Fatalf("window holds %d failures of %d calls, want a third", failures, calls)
	}
}

func TestBreakerOpensAtHalfOfMinCalls(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Now: clk.Now})
	// 9 failures and 10 successes: 19 calls, under the minimum of 20.
	for range 9 {
		call(t, b, pipeline.Failure)
		call(t, b, pipeline.Success)
	}
	call(t, b, pipeline.Success)
	if b.State() != pipeline.BreakerClosed {
		t.Fatal("opened under 50%")
	}
	call(t, b, pipeline.Failure) // 10 of 20: 50%
	if b.State() != pipeline.BreakerOpen {
		t.Fatalf("10 failures of 20 calls in the window did not open it (state %v)", b.State())
	}
	if _, _, err := b.Allow(); !errors.Is(err, pipeline.ErrBreakerOpen) {
		t.Fatalf("open breaker let a call through: %v", err)
	}
}

func TestBreakerUnderMinCallsNeverOpens(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Now: clk.Now})
	// 100% failures, but only 19 calls in any 10 s window: every failure
	// ages out before the window holds the minimum.
	for range 100 {
		call(t, b, pipeline.Failure)
		clk.Add(10*time.Second/19 + time.Millisecond)
	}
	if b.State() != pipeline.BreakerClosed {
		t.Fatal("fewer calls than the minimum in the window opened the circuit")
	}
}

func TestBreakerOldFailuresLeaveTheWindow(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Now: clk.Now})
	for range 15 {
		call(t, b, pipeline.Failure)
	}
	clk.Add(10 * time.Second) // all of them out of the window
	for range 10 {
		call(t, b, pipeline.Success)
	}
	for range 9 {
		call(t, b, pipeline.Failure)
	}
	if b.State() != pipeline.BreakerClosed {
		t.Fatal("failures older than the window counted")
	}
	call(t, b, pipeline.Failure) // 10 of 20 in the window
	if b.State() != pipeline.BreakerOpen {
		t.Fatal("10 of 20 in the window did not open it")
	}
}

func TestBreakerIgnoredOutcomesNeverCount(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Now: clk.Now, MinCalls: 2})
	// Client cancellations and 4xx are Ignore: a thousand of them neither
	// open the circuit nor count as calls that dilute failures.
	for range 1000 {
		call(t, b, pipeline.Ignore)
	}
	if calls, _ := b.Rate(); calls != 0 {
		t.Fatalf("ignored outcomes counted as %d calls", calls)
	}
	call(t, b, pipeline.Failure)
	call(t, b, pipeline.Failure)
	if b.State() != pipeline.BreakerOpen {
		t.Fatal("two failures of two calls did not open it")
	}
}

func TestBreakerNegativeMinCallsNeverOpens(t *testing.T) {
	b := pipeline.NewBreaker(pipeline.BreakerConfig{MinCalls: -1})
	for range 100 {
		call(t, b, pipeline.Failure)
	}
	if b.State() != pipeline.BreakerClosed {
		t.Fatal("MinCalls < 0 must disable the breaker")
	}
}

// One probe in half-open, however many callers ask at once.
func TestBreakerHalfOpenLetsExactlyOneProbe(t *testing.T) {
	clk := &clock{now: time.Unix(1000, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{MinCalls: 1, CoolDown: time.Second, Now: clk.Now})
	call(t, b, pipeline.Failure)
	clk.Add(time.Second)
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		probes []func(pipeline.Outcome)
	)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if done, _, err := b.Allow(); err == nil {
				mu.Lock()
				probes = append(probes, done)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(probes) != 1 {
		t.Fatalf("%d probes let through in half-open, want 1", len(probes))
	}
	probes[0](pipeline.Success)
	if b.State() != pipeline.BreakerClosed {
		t.Fatal("a good probe did not close it")
	}
}

func TestBreakerIgnoredProbeLetsNextProbe(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{MinCalls: 1, CoolDown: time.Second, Now: clk.Now})
	d, _, _ := b.Allow()
	d(pipeline.Failure)
	clk.Add(time.Second)
	d, _, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	d(pipeline.Ignore)
	if _, _, err := b.Allow(); err != nil {
		t.Fatalf("after an ignored probe another probe must pass: %v", err)
	}
}

func TestBreakerBlocked(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{MinCalls: 1, CoolDown: time.Second, Now: clk.Now})
	if blocked, _ := b.Blocked(); blocked {
		t.Fatal("a closed breaker blocks")
	}
	d, _, _ := b.Allow()
	d(pipeline.Failure)
	if blocked, after := b.Blocked(); !blocked || after != time.Second {
		t.Fatalf("open: %v %v", blocked, after)
	}
	clk.Add(time.Second)
	if blocked, _ := b.Blocked(); blocked {
		t.Fatal("after the cool-down a probe may go: not blocked")
	}
	probe, _, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	if blocked, _ := b.Blocked(); !blocked {
		t.Fatal("half-open with the probe out must block")
	}
	probe(pipeline.Success)
	if blocked, _ := b.Blocked(); blocked {
		t.Fatal("closed again, still blocked")
	}
}

// TestBreakerStateNames: the names of the states are the labels of the
// metrics and the JSON of /v1/admin.
func TestBreakerStateNames(t *testing.T) {
	for s, want := range map[pipeline.BreakerState]string{
		pipeline.BreakerClosed: "closed", pipeline.BreakerOpen: "open", pipeline.BreakerHalfOpen: "half_open",
	} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", s, got, want)
		}
	}
}
