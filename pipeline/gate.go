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
	// InteractiveShare is the share of Limit guaranteed to the interactive
	// class: ceil(InteractiveShare*Limit) slots; the batch class is
	// guaranteed the rest. Either class borrows the other's idle slots
	// (classes.go). default: 0.5; negative: 0 (batch is guaranteed all).
	InteractiveShare float64
	// InteractiveShareWait is how long, at least, an interactive Acquire
	// waits when it finds no slot free while interactive holds less than
	// its guaranteed share (batch has borrowed the rest) and its claim
	// fits in that share: the gate hands it one of the next freed slots,
	// ahead of every batch claim (classes.go), so a wait shorter than
	// this (an acquire timeout of 0) would refuse it with its share held
	// by batch. TryAcquire never waits. default: 5s; negative: 0 (only
	// the caller's wait)
	InteractiveShareWait time.Duration
	// TenantMaxShare caps every tenant at ceil(TenantMaxShare*Limit)
	// slots (at least 1): beyond it the tenant's claims wait (or are
	// refused) as if the gate were full, while other tenants proceed.
	// default: 0 (no cap); 1 or more: no cap.
	TenantMaxShare float64
	// TenantShares overrides TenantMaxShare for the tenants it names.
	// default: none
	TenantShares map[string]float64
}

// Gate is an in-flight budget: at most Limit permits are out at once, and
// claims that wait are granted in FIFO order. A Gate is safe for concurrent
// use; create one per upstream and share it.
type Gate struct {
	cfg GateConfig

	mu       sync.Mutex // protects cfg.Limit, inFlight, the lines and their counts, tenants, closed
	inFlight int
	inClass  [numClasses]int   // permits out per class (next to inFlight: one cache line)
	acqClass [numClasses]int64 // permits granted per class, ever
	lines    [numClasses]line  // waiting claims, one FIFO per class
	waiting  int               // claims in all the lines
	tenants  map[string]int    // permits out per capped tenant
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
	if cfg.InteractiveShare == 0 {
		cfg.InteractiveShare = 0.5
	}
	cfg.InteractiveShare = min(max(cfg.InteractiveShare, 0), 1)
	if cfg.InteractiveShareWait == 0 {
		cfg.InteractiveShareWait = 5 * time.Second
	}
	cfg.InteractiveShareWait = max(cfg.InteractiveShareWait, 0)
	g := &Gate{cfg: cfg, closedC: make(chan struct{})}
	capping := cfg.TenantMaxShare > 0 && cfg.TenantMaxShare < 1
	for _, s := range cfg.TenantShares {
		capping = capping || s > 0 && s < 1
	}
	if capping {
		g.tenants = map[string]int{} // else no tenant is capped: no count
	}
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
	// Classes are the counters of each priority class, by name
	// ("interactive", "batch").
	Classes map[string]ClassStats `json:"classes"`
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
		Queued:        g.queuedLocked(),
		Waiting:       g.waitingLocked(),
		Classes:       g.classStatsLocked(),
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
	g      *Gate
	lease  string // the fleet lease it holds; "" with a local budget
	tenant string // set when the tenant is capped; counted in g.tenants
	done   atomic.Bool
	class  Class // after done: the struct fits 48 bytes
}

// Release gives the slot back (to the oldest waiter, if any). It reports
// whether this call was the one that released it.
func (p *Permit) Release() bool {
	if p == nil || !p.done.CompareAndSwap(false, true) {
		return false
	}
	p.g.release(p)
	return true
}

// Claim is a place in the gate's FIFO. It is granted a Permit at once or
// later; the holder must either take the Permit (Wait) or Cancel.
type Claim struct {
	g       *Gate
	who     Who
	capped  bool          // who.Tenant has a cap
	elem    *list.Element // non-nil while waiting in g.lines[who.Class]; protected by g.mu
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

// Enqueue claims a slot for a queued (asynchronous) task of the default
// class (interactive, no tenant): see EnqueueAs.
func (g *Gate) Enqueue() (*Claim, error) { return g.EnqueueAs(Who{}) }

// EnqueueAs claims a slot for a queued (asynchronous) task of who: granted
// at once when a slot is free for who, otherwise placed at the back of its
// class's line in the bounded queue, otherwise refused with ErrQueueFull.
// It never blocks.
func (g *Gate) EnqueueAs(who Who) (*Claim, error) { return g.claimWith(who, true, false) }

// claimWith claims a slot for who; a once claim is refused (ErrOverloaded)
// as soon as the fleet budget answers that it is full.
func (g *Gate) claimWith(who Who, queued, once bool) (*Claim, error) {
	if who.Class >= numClasses {
		who.Class = ClassInteractive
	}
	c := &Claim{g: g, who: who, capped: g.cappedTenant(who.Tenant), queued: queued, once: once, ready: make(chan struct{}), since: time.Now()}
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.closed:
		return nil, ErrGateClosed
	case g.fleet != nil && g.fleet.refusingLocked():
		g.rejected.Add(1)
		return nil, ErrBudgetUnavailable
	case g.freeLocked() && g.roomLocked(c) && g.nextLocked() == nil:
		// Nobody eligible waits (a free slot is never left with an
		// eligible waiter): granting now keeps each class FIFO.
		g.grantLocked(c, g.localLeaseLocked())
	case !queued:
		g.pushLocked(c)
	case g.cfg.QueueLimit > 0 && g.queuedLocked() < g.cfg.QueueLimit:
		g.pushLocked(c)
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

// pushLocked puts c at the back of its class's line. g.mu must be held.
func (g *Gate) pushLocked(c *Claim) {
	l := &g.lines[c.who.Class]
	c.elem = l.claims.PushBack(c)
	g.waiting++
	if c.queued {
		l.queued++
	}
	if c.once {
		l.once++
	}
}

// leftLocked takes a waiting claim out of its line. g.mu must be held.
func (g *Gate) leftLocked(c *Claim) {
	l := &g.lines[c.who.Class]
	l.claims.Remove(c.elem)
	c.elem = nil
	g.waiting--
	if c.queued {
		l.queued--
	}
	if c.once {
		l.once--
	}
}

// freeLocked reports whether a slot may be granted here and now, without
// asking anyone: below Limit with a local budget, below the local share
// while a fleet budget fails open. g.mu must be held.
func (g *Gate) freeLocked() bool {
	if g.fleet == nil {
		return g.inFlight < g.cfg.Limit
	}
	return g.fleet.openLocked() && g.inFlight < min(g.fleet.cfg.LocalShare, g.cfg.Limit) // SetLimit may lower Limit
}

// grantLocked hands one slot (and its fleet lease, if any) to c. g.mu
// must be held.
func (g *Gate) grantLocked(c *Claim, lease string) {
	c.permit = g.permitLocked(c.who, c.capped, lease)
	if lease != "" {
		g.fleet.held[lease] = struct{}{}
	}
	if c.elem != nil {
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

// TryAcquire takes a slot of the default class if one is free and nobody
// is waiting for one.
func (g *Gate) TryAcquire() (*Permit, error) {
	return g.TryAcquireAs(Who{})
}

// TryAcquireAs takes a slot for who if one is free for it and nobody
// eligible is waiting for one. It never waits, not even for a slot of
// interactive's share that batch has borrowed (AcquireAs does).
func (g *Gate) TryAcquireAs(who Who) (*Permit, error) {
	return g.acquire(context.Background(), who, 0, false)
}

// Acquire takes a slot of the default class (interactive, no tenant): see
// AcquireAs.
func (g *Gate) Acquire(ctx context.Context, wait time.Duration) (*Permit, error) {
	return g.AcquireAs(ctx, Who{}, wait)
}

// AcquireAs takes a slot for who, waiting in its class's FIFO order at
// most wait (0 = refuse at once when none is free for it), except that an
// interactive claim owed a slot of its class's guaranteed share, which
// batch has borrowed, waits at least InteractiveShareWait for one of the
// next freed slots (owedLocked). It returns ErrOverloaded when the wait
// runs out and ctx's error when ctx ends first.
func (g *Gate) AcquireAs(ctx context.Context, who Who, wait time.Duration) (*Permit, error) {
	return g.acquire(ctx, who, wait, true)
}

// acquire is AcquireAs; owed says whether a claim owed a slot of
// interactive's share waits for it (not with TryAcquire).
func (g *Gate) acquire(ctx context.Context, who Who, wait time.Duration, owed bool) (*Permit, error) {
	if who.Class >= numClasses {
		who.Class = ClassInteractive
	}
	if g.fleet != nil {
		return g.acquireFleet(ctx, who, wait, owed)
	}
	// Fast path: a free slot, nobody in line, room for the tenant.
	capped := g.cappedTenant(who.Tenant)
	g.mu.Lock()
	if !g.closed && g.inFlight < g.cfg.Limit && g.waitingLocked() == 0 &&
		g.roomForLocked(who.Tenant, capped) {
		p := g.permitLocked(who, capped, "")
		g.mu.Unlock()
		if g.cfg.OnWait != nil {
			g.cfg.OnWait(0)
		}
		return p, nil
	}
	g.mu.Unlock()
	c, err := g.claimWith(who, false, false)
	if err != nil {
		return nil, err
	}
	select {
	case <-c.ready:
		return c.take()
	default:
	}
	if owed && wait < g.cfg.InteractiveShareWait && g.owed(c) {
		wait = g.cfg.InteractiveShareWait
	}
	if wait <= 0 {
		if c.Cancel() {
			g.rejected.Add(1)
			return nil, ErrOverloaded
		}
		return c.take()
	}
	return g.waitClaim(ctx, c, wait)
}

// waitClaim waits at most wait for c's permit. The gate's own refusals
// (closed, a fleet budget down or refusing) are returned as they are, the
// caller leaving as ctx's error; a wait that runs out is ErrOverloaded,
// counted as a rejection.
func (g *Gate) waitClaim(ctx context.Context, c *Claim, wait time.Duration) (*Permit, error) {
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	p, err := c.Wait(wctx)
	switch {
	case err == nil:
		return p, nil
	case errors.Is(err, ErrGateClosed), errors.Is(err, ErrBudgetUnavailable), errors.Is(err, ErrOverloaded):
		return nil, err
	case ctx.Err() != nil:
		return nil, ctx.Err()
	}
	g.rejected.Add(1)
	return nil, ErrOverloaded
}

func (g *Gate) release(p *Permit) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.released.Add(1)
	g.inFlight--
	g.inClass[p.class]--
	if g.inFlight < 0 || g.inClass[p.class] < 0 {
		panic("pipeline: gate released more permits than it granted")
	}
	if p.tenant != "" {
		if n := g.tenants[p.tenant] - 1; n > 0 {
			g.tenants[p.tenant] = n
		} else {
			delete(g.tenants, p.tenant)
		}
	}
	if g.fleet != nil {
		g.fleet.releasedLocked(p.lease)
	}
	g.dispatchLocked()
}

// dispatchLocked grants free local slots to the waiting claims, in the
// classes' order (nextLocked). g.mu must be held.
func (g *Gate) dispatchLocked() {
	for g.waiting > 0 && !g.closed && g.freeLocked() {
		c := g.nextLocked()
		if c == nil {
			break
		}
		g.grantLocked(c, g.localLeaseLocked())
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
