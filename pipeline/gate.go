package pipeline

import (
	"container/list"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// Errors returned by Gate. Callers branch on them with errors.Is.
var (
	// ErrOverloaded means no slot was free and the caller would not wait
	// (or its wait ran out).
	ErrOverloaded = errors.New("pipeline: budget exhausted")
	// ErrQueueFull means the bounded wait queue had no room.
	ErrQueueFull = errors.New("pipeline: queue full")
	// ErrGateClosed means the gate was shut down.
	ErrGateClosed = errors.New("pipeline: gate closed")
	// ErrBudgetUnavailable means the gate's fleet-wide budget (Leases)
	// does not answer and the gate fails closed.
	ErrBudgetUnavailable = errors.New("pipeline: fleet budget unavailable")
)

// GateConfig configures a Gate.
type GateConfig struct {
	// Name names the gate, usually after its upstream.
	Name string
	// Limit is the number of slots (in-flight upstream streams).
	// default: 64
	Limit int
	// QueueLimit bounds the queued (asynchronous) waiters. Interactive
	// waiters are bounded by their own deadline instead.
	// default: 1024; negative: no queue (refuse when full).
	QueueLimit int
	// OnWait, when set, observes how long each granted claim waited. It
	// may run with the gate's lock held: it must not call the gate.
	OnWait func(time.Duration)
	// Cluster, when its Leases is set, makes Limit a budget for the whole
	// fleet: every permit is also a lease (leases.go).
	Cluster ClusterConfig
}

// Gate is an in-flight budget: at most Limit permits are out at once, and
// claims that wait are granted in FIFO order. A Gate is safe for concurrent
// use; create one per upstream and share it.
type Gate struct {
	cfg GateConfig

	mu       sync.Mutex // protects inFlight, waiters, queued, once, closed
	inFlight int
	waiters  list.List // of *Claim, front = oldest
	queued   int       // waiters that count against QueueLimit
	once     int       // waiters that only wait for one answer of the fleet budget
	closed   bool
	closedC  chan struct{} // closed by Close: wakes every waiter

	acquired atomic.Int64 // permits granted, ever
	released atomic.Int64 // permits released, ever
	rejected atomic.Int64 // claims refused (overloaded or queue full)

	fleet *fleet // nil: a local budget
}

// NewGate returns a Gate with cfg's defaults filled in.
func NewGate(cfg GateConfig) *Gate {
	if cfg.Limit <= 0 {
		cfg.Limit = 64
	}
	if cfg.QueueLimit == 0 {
		cfg.QueueLimit = 1024
	}
	g := &Gate{cfg: cfg, closedC: make(chan struct{})}
	if cfg.Cluster.Leases != nil {
		g.startFleet()
	}
	return g
}

// GateStats is a snapshot of a Gate's counters.
type GateStats struct {
	Name          string `json:"upstream"`
	Limit         int    `json:"limit"`
	InFlight      int    `json:"in_flight"`
	Queued        int    `json:"queued"`
	Waiting       int    `json:"waiting"` // queued plus interactive waiters
	QueueLimit    int    `json:"queue_limit"`
	AcquiredTotal int64  `json:"acquired_total"`
	ReleasedTotal int64  `json:"released_total"`
	RejectedTotal int64  `json:"rejected_total"`
	// Mode is "local" (Limit is this instance's) or "cluster" (Limit is
	// the fleet's, and FleetStats is set).
	Mode string `json:"mode"`
	*FleetStats
}

// Stats returns a consistent snapshot of the gate.
func (g *Gate) Stats() GateStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	st := GateStats{
		Mode:          "local",
		FleetStats:    g.fleetStatsLocked(),
		Name:          g.cfg.Name,
		Limit:         g.cfg.Limit,
		InFlight:      g.inFlight,
		Queued:        g.queued,
		Waiting:       g.waiters.Len(),
		QueueLimit:    max(g.cfg.QueueLimit, 0),
		AcquiredTotal: g.acquired.Load(),
		ReleasedTotal: g.released.Load(),
		RejectedTotal: g.rejected.Load(),
	}
	if st.FleetStats != nil {
		st.Mode = "cluster"
	}
	return st
}

// Permit is one held slot. Release returns it; only the first call counts,
// so a deferred Release next to an explicit one is safe.
type Permit struct {
	g     *Gate
	lease string // the fleet lease it holds; "" with a local budget
	done  atomic.Bool
}

// Release gives the slot back (to the oldest waiter, if any). It reports
// whether this call was the one that released it.
func (p *Permit) Release() bool {
	if p == nil || !p.done.CompareAndSwap(false, true) {
		return false
	}
	p.g.release(p.lease)
	return true
}

// Claim is a place in the gate's FIFO. It is granted a Permit at once or
// later; the holder must either take the Permit (Wait) or Cancel.
type Claim struct {
	g       *Gate
	elem    *list.Element // non-nil while waiting; protected by g.mu
	queued  bool          // counts against QueueLimit
	ready   chan struct{} // closed when granted
	permit  *Permit       // set before ready is closed (nil when refused)
	err     error         // set before ready is closed when refused
	once    bool          // refused after one full answer of the fleet budget
	since   time.Time
	settled bool // taken or cancelled; protected by g.mu
}

// Ready is closed when the claim has been granted a permit.
func (c *Claim) Ready() <-chan struct{} { return c.ready }

// Enqueue claims a slot for a queued (asynchronous) task: granted at once
// when a slot is free, otherwise placed at the back of the bounded queue,
// otherwise refused with ErrQueueFull. It never blocks.
func (g *Gate) Enqueue() (*Claim, error) { return g.claim(true) }

func (g *Gate) claim(queued bool) (*Claim, error) { return g.claimWith(queued, false) }

// claimWith is claim; a once claim is refused (ErrOverloaded) as soon as
// the fleet budget answers that it is full.
func (g *Gate) claimWith(queued, once bool) (*Claim, error) {
	c := &Claim{g: g, queued: queued, once: once, ready: make(chan struct{}), since: time.Now()}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return nil, ErrGateClosed
	case g.fleet != nil && g.fleet.refusingLocked():
		g.rejected.Add(1)
		return nil, ErrBudgetUnavailable
	case g.waiters.Len() == 0 && g.freeLocked():
		g.grantLocked(c, g.localLeaseLocked())
	case !queued:
		c.elem = g.waiters.PushBack(c)
		if once {
			g.once++
		}
	case g.cfg.QueueLimit > 0 && g.queued < g.cfg.QueueLimit:
		g.queued++
		c.elem = g.waiters.PushBack(c)
	default:
		g.rejected.Add(1)
		return nil, ErrQueueFull
	}
	if c.elem != nil && g.fleet != nil {
		if once {
			// It waits for one answer: ask now, even in a backoff. That
			// costs one call per such request, never more.
			g.fleet.kick(g.fleet.retry)
		} else {
			g.fleet.kick(g.fleet.arrived)
		}
	}
	return c, nil
}

// leftLocked counts a claim out of the line. g.mu must be held.
func (g *Gate) leftLocked(c *Claim) {
	if c.queued {
		g.queued--
	}
	if c.once {
		g.once--
	}
}

// freeLocked reports whether a slot may be granted here and now, without
// asking anyone: below Limit with a local budget, below the local share
// while a fleet budget fails open. g.mu must be held.
func (g *Gate) freeLocked() bool {
	if g.fleet == nil {
		return g.inFlight < g.cfg.Limit
	}
	return g.fleet.openLocked() && g.inFlight < g.fleet.cfg.LocalShare
}

// grantLocked hands one slot (and its fleet lease, if any) to c. g.mu
// must be held.
func (g *Gate) grantLocked(c *Claim, lease string) {
	g.inFlight++
	g.acquired.Add(1)
	c.permit = &Permit{g: g, lease: lease}
	if lease != "" {
		g.fleet.held[lease] = struct{}{}
	}
	if c.elem != nil {
		g.waiters.Remove(c.elem)
		c.elem = nil
		g.leftLocked(c)
	}
	if g.cfg.OnWait != nil {
		g.cfg.OnWait(time.Since(c.since))
	}
	close(c.ready)
}

// Wait blocks until the claim is granted, ctx is done, or the gate is
// closed. On ctx's end the claim is cancelled and ctx's error is returned;
// when the gate closes it is cancelled with ErrGateClosed. A permit
// granted in the meantime is taken instead. Wait on a claim already taken
// or cancelled returns ErrClaimSettled.
func (c *Claim) Wait(ctx context.Context) (*Permit, error) {
	select {
	case <-c.ready:
		return c.take()
	case <-ctx.Done():
		if c.Cancel() {
			return nil, ctx.Err()
		}
	case <-c.g.closedC:
		if c.Cancel() {
			return nil, ErrGateClosed
		}
	}
	// Granted while we were giving up: the permit is ours.
	return c.take()
}

// ErrClaimSettled is returned by Wait on a claim that was already taken or
// cancelled.
var ErrClaimSettled = errors.New("pipeline: claim already taken or cancelled")

func (c *Claim) take() (*Permit, error) {
	c.g.mu.Lock()
	defer c.g.mu.Unlock()
	if c.settled {
		return nil, ErrClaimSettled
	}
	c.settled = true
	if c.err != nil {
		return nil, c.err
	}
	return c.permit, nil
}

// refuseLocked ends a waiting claim with err (it counts as rejected).
// g.mu must be held.
func (g *Gate) refuseLocked(c *Claim, err error) {
	if c.elem == nil {
		return
	}
	g.waiters.Remove(c.elem)
	c.elem = nil
	g.leftLocked(c)
	g.rejected.Add(1)
	c.err = err
	close(c.ready)
}

// Cancel withdraws a claim that has not been taken. If the claim was still
// waiting it leaves the queue and Cancel returns true. If it had already
// been granted, Cancel returns false and leaves the permit for Wait to
// take, unless it is called after Wait, in which case it does nothing.
func (c *Claim) Cancel() bool {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.settled {
		return false
	}
	if c.elem != nil {
		g.waiters.Remove(c.elem)
		c.elem = nil
		g.leftLocked(c)
		c.settled = true
		return true
	}
	return false
}

// Abandon withdraws the claim whatever its state: a waiting claim leaves
// the queue and a granted, untaken permit is released. Use it when the
// claim's owner will never call Wait.
func (c *Claim) Abandon() {
	if c.Cancel() {
		return
	}
	c.g.mu.Lock()
	taken := c.settled
	c.settled = true
	c.g.mu.Unlock()
	if !taken {
		select {
		case <-c.ready:
			c.permit.Release()
		default:
		}
	}
}

// TryAcquire takes a slot if one is free and nobody is waiting for one.
func (g *Gate) TryAcquire() (*Permit, error) {
	return g.Acquire(context.Background(), 0)
}

// Acquire takes a slot, waiting in FIFO order at most wait (0 = refuse at
// once when none is free). It returns ErrOverloaded when the wait runs out
// and ctx's error when ctx ends first.
func (g *Gate) Acquire(ctx context.Context, wait time.Duration) (*Permit, error) {
	if g.fleet != nil {
		return g.acquireFleet(ctx, wait)
	}
	// Fast path: a free slot and nobody in line.
	g.mu.Lock()
	if !g.closed && g.inFlight < g.cfg.Limit && g.waiters.Len() == 0 {
		g.inFlight++
		g.acquired.Add(1)
		g.mu.Unlock()
		if g.cfg.OnWait != nil {
			g.cfg.OnWait(0)
		}
		return &Permit{g: g}, nil
	}
	g.mu.Unlock()
	c, err := g.claim(false)
	if err != nil {
		return nil, err
	}
	select {
	case <-c.ready:
		return c.take()
	default:
	}
	if wait <= 0 {
		if c.Cancel() {
			g.rejected.Add(1)
			return nil, ErrOverloaded
		}
		return c.take()
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	p, err := c.Wait(wctx)
	switch {
	case err == nil:
		return p, nil
	case errors.Is(err, ErrGateClosed):
		return nil, err
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	g.rejected.Add(1)
	return nil, ErrOverloaded
}

func (g *Gate) release(lease string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.released.Add(1)
	g.inFlight--
	if g.inFlight < 0 {
		panic("pipeline: gate released more permits than it granted")
	}
	if g.fleet != nil {
		g.fleet.releasedLocked(lease)
	}
	for !g.closed && g.freeLocked() {
		front := g.waiters.Front()
		if front == nil {
			break
		}
		g.grantLocked(front.Value.(*Claim), g.localLeaseLocked())
	}
}

// SetLimit changes Limit to n (at least 1). Raising it grants waiting
// claims in FIFO order at once; lowering it revokes nothing: holders keep
// their permits and no new one is granted until in-flight is below n.
func (g *Gate) SetLimit(n int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cfg.Limit = max(n, 1)
	for !g.closed && g.freeLocked() {
		front := g.waiters.Front()
		if front == nil {
			break
		}
		g.grantLocked(front.Value.(*Claim), g.localLeaseLocked())
	}
}

// Close refuses every new claim and wakes every waiting one, whose Wait
// returns ErrGateClosed; held permits stay valid until released.
func (g *Gate) Close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.closed {
		g.closed = true
		close(g.closedC)
	}
}
