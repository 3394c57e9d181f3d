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
//	closed --N consecutive failures--> open --cool-down--> half-open
//	   ^                                 ^                     |
//	   +----------probe succeeds---------|----probe fails------+
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
	// Failures is the number of consecutive failures that opens the circuit.
	// default: 5; negative: the breaker never opens.
	Failures int
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

// Breaker is a per-upstream circuit breaker. It is safe for concurrent use;
// create one per upstream, once.
type Breaker struct {
	cfg BreakerConfig

	mu          sync.Mutex // protects every field below
	state       BreakerState
	failures    int           // consecutive, in closed
	coolDown    time.Duration // the current open period
	openUntil   time.Time
	probeActive bool // a half-open probe is out
}

// NewBreaker returns a closed Breaker with cfg's defaults filled in.
func NewBreaker(cfg BreakerConfig) *Breaker {
	if cfg.Failures == 0 {
		cfg.Failures = 5
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
	return &Breaker{cfg: cfg, coolDown: cfg.CoolDown}
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
	// upstream (the caller cancelled, the deadline ran out before output).
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
			b.failures = 0
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
	if ok {
		b.failures = 0
		return
	}
	b.failures++
	if b.cfg.Failures > 0 && b.failures >= b.cfg.Failures {
		b.openLocked()
	}
}

func (b *Breaker) openLocked() {
	b.failures = 0
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
