package pipeline

import (
	"errors"
	"sync"
	"time"
)

// ErrBreakerOpen means the upstream's circuit is open: calls are refused
// at once until the cool-down ends.
var ErrBreakerOpen = errors.New("pipeline: circuit open")

// BreakerState is the state of a circuit breaker.
type BreakerState int

// The breaker's states.
//
//	closed --failure rate over the window--> open --cool-down--> half-open
//	   ^                                      ^                     |
//	   +--------------probe succeeds----------|----probe fails------+
const (
	BreakerClosed BreakerState = iota
	BreakerOpen
	BreakerHalfOpen
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half_open"
	}
	return "unknown"
}

// BreakerConfig configures a Breaker.
type BreakerConfig struct {
	// Name names the breaker, usually after its upstream.
	Name string
	// MinCalls is the number of calls with an outcome (Success or
	// Failure) the window must hold before the failure rate can open the
	// circuit. default: 20; negative: the breaker never opens.
	MinCalls int
	// FailureRate is the share of failed calls in the window, over
	// MinCalls calls, that opens the circuit. default: 0.5
	FailureRate float64
	// Window is the sliding time window the rate is taken over; it
	// slides in steps of Window/10. default: 10s
	Window time.Duration
	// CoolDown is the first open period; it doubles each time a probe
	// fails, up to MaxCoolDown. default: 5s
	CoolDown time.Duration
	// MaxCoolDown caps the growing cool-down. default: 60s
	MaxCoolDown time.Duration
	// OnTransition, when set, observes every state change. It is called
	// with the breaker's lock held: keep it short and do not call back.
	OnTransition func(from, to BreakerState)
	// Now returns the time. default: time.Now
	Now func() time.Time
}

// windowBuckets is the number of steps a Breaker's window slides in.
const windowBuckets = 10

// bucket counts the outcomes of one step of the window.
type bucket struct {
	start           time.Time // zero: unused
	calls, failures int
}

// Breaker is a per-upstream circuit breaker: it opens when at least
// FailureRate of at least MinCalls calls in the last Window failed. The
// rate, not a run of consecutive failures, decides: under concurrency
// failures (fast) bunch together between successes (slow), and a run says
// little about the share. It is safe for concurrent use; create one per
// upstream, once.
type Breaker struct {
	cfg  BreakerConfig
	step time.Duration // Window / windowBuckets

	mu          sync.Mutex // protects every field below
	state       BreakerState
	buckets     [windowBuckets]bucket // ring of the window's steps, in closed
	coolDown    time.Duration         // the current open period
	openUntil   time.Time
	probeActive bool // a half-open probe is out
}

// NewBreaker returns a closed Breaker with cfg's defaults filled in.
func NewBreaker(cfg BreakerConfig) *Breaker {
	if cfg.MinCalls == 0 {
		cfg.MinCalls = 20
	}
	if cfg.FailureRate <= 0 || cfg.FailureRate > 1 {
		cfg.FailureRate = 0.5
	}
	if cfg.Window <= 0 {
		cfg.Window = 10 * time.Second
	}
	if cfg.CoolDown <= 0 {
		cfg.CoolDown = 5 * time.Second
	}
	if cfg.MaxCoolDown < cfg.CoolDown {
		cfg.MaxCoolDown = max(60*time.Second, cfg.CoolDown)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Breaker{cfg: cfg, step: max(cfg.Window/windowBuckets, time.Nanosecond), coolDown: cfg.CoolDown}
}

// Rate returns the calls with an outcome and the failures among them in
// the current window (both 0 unless the circuit is closed).
func (b *Breaker) Rate() (calls, failures int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.windowLocked(b.cfg.Now())
}

// windowLocked sums the buckets still inside the window at now.
func (b *Breaker) windowLocked(now time.Time) (calls, failures int) {
	from := now.Add(-b.cfg.Window)
	for _, k := range b.buckets {
		if !k.start.IsZero() && k.start.After(from) {
			calls += k.calls
			failures += k.failures
		}
	}
	return calls, failures
}

// countLocked adds one outcome to the window's current step.
func (b *Breaker) countLocked(now time.Time, failed bool) {
	start := now.Truncate(b.step)
	k := &b.buckets[int(start.UnixNano()/int64(b.step))%windowBuckets]
	if !k.start.Equal(start) {
		*k = bucket{start: start} // a step that left the window: reuse it
	}
	k.calls++
	if failed {
		k.failures++
	}
}

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.cfg.Name }

// State returns the current state (an open breaker whose cool-down has
// ended reports half_open).
func (b *Breaker) State() BreakerState {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.state == BreakerOpen && !b.cfg.Now().Before(b.openUntil) {
		return BreakerHalfOpen
	}
	return b.state
}

// Blocked reports whether a call would be refused now (open and cooling
// down, or half-open with its probe out), and for how long, without
// taking the probe.
func (b *Breaker) Blocked() (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	switch {
	case b.state == BreakerOpen && now.Before(b.openUntil):
		return true, b.openUntil.Sub(now)
	case b.state != BreakerClosed && b.probeActive:
		return true, b.cfg.CoolDown
	}
	return false, 0
}

// Outcome is what a call allowed by a Breaker tells it.
type Outcome int

// The outcomes of a call.
const (
	// Success: the upstream answered usefully.
	Success Outcome = iota
	// Failure: the upstream failed (connection, 5xx, 429, timeout).
	Failure
	// Ignore: the call ended for a reason that says nothing about the
	// upstream (the caller cancelled, the deadline ran out before output,
	// the request was refused as the client's fault: a 4xx other than
	// 429). It is not counted at all.
	Ignore
)

// Allow asks to make one call. On success it returns a done func that the
// caller must call with the call's outcome (only the first call counts).
// While the circuit is open it returns ErrBreakerOpen and how long until a
// probe may go through; in half-open exactly one probe is let through.
func (b *Breaker) Allow() (done func(Outcome), retryAfter time.Duration, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.cfg.Now()
	switch b.state {
	case BreakerOpen:
		if now.Before(b.openUntil) {
			return nil, b.openUntil.Sub(now), ErrBreakerOpen
		}
		b.setLocked(BreakerHalfOpen)
		fallthrough
	case BreakerHalfOpen:
		if b.probeActive {
			return nil, b.cfg.CoolDown, ErrBreakerOpen
		}
		b.probeActive = true
		return b.onceDone(true), 0, nil
	}
	return b.onceDone(false), 0, nil
}

func (b *Breaker) onceDone(probe bool) func(Outcome) {
	var once sync.Once
	return func(o Outcome) { once.Do(func() { b.record(probe, o) }) }
}

func (b *Breaker) record(probe bool, o Outcome) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if o == Ignore {
		if probe {
			b.probeActive = false // the next call probes instead
		}
		return
	}
	ok := o == Success
	if probe {
		b.probeActive = false
		if ok {
			b.coolDown = b.cfg.CoolDown
			b.buckets = [windowBuckets]bucket{} // closed afresh: the old window is history
			b.setLocked(BreakerClosed)
			return
		}
		b.coolDown = min(b.coolDown*2, b.cfg.MaxCoolDown)
		b.openLocked()
		return
	}
	if b.state != BreakerClosed {
		// A call that started before the circuit opened: its outcome
		// says nothing new.
		return
	}
	now := b.cfg.Now()
	b.countLocked(now, !ok)
	if ok || b.cfg.MinCalls < 0 {
		return
	}
	calls, failures := b.windowLocked(now)
	if calls >= b.cfg.MinCalls && float64(failures) >= b.cfg.FailureRate*float64(calls) {
		b.openLocked()
	}
}

func (b *Breaker) openLocked() {
	b.buckets = [windowBuckets]bucket{}
	b.openUntil = b.cfg.Now().Add(b.coolDown)
	b.setLocked(BreakerOpen)
}

func (b *Breaker) setLocked(to BreakerState) {
	from := b.state
	b.state = to
	if from != to && b.cfg.OnTransition != nil {
		b.cfg.OnTransition(from, to)
	}
}
