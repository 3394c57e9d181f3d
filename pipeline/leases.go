package pipeline

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"
)

// Leases is a budget shared by a fleet of gates (one per instance, same
// upstream): a set of live leases that expire unless renewed. A Gate in
// cluster mode holds one lease per permit. Implementations talk to a
// store every instance shares (orchestrator/redisstate: Redis); every
// call is bounded by its ctx.
type Leases interface {
	// Acquire adds the leases ids, in order, while fewer than limit
	// leases are live (expired ones are dropped first): ids[:granted] are
	// live leases after the call, the others were not added. It also
	// reports how many leases are live after the call. It is idempotent:
	// ids already live count as granted (and are renewed), so a call
	// sent again after a lost reply grants what the first one added.
	Acquire(ctx context.Context, ids []string, limit int) (granted, live int, err error)
	// Renew extends the leases ids by the lease time, adding back any the
	// store has lost (a restarted store, an expiry while it was out of
	// reach): they are streams still running. It reports the live count.
	// ids may be empty: the call then only counts (and probes the store).
	Renew(ctx context.Context, ids []string) (live int, err error)
	// Release removes the leases ids and tells every instance
	// (Released).
	Release(ctx context.Context, ids []string) error
	// Released receives, best effort, after leases were released
	// anywhere in the fleet. Waiters also retry with backoff, so a lost
	// notification only delays them.
	Released() <-chan struct{}
}

// ClusterConfig makes a Gate's Limit a budget for the whole fleet.
type ClusterConfig struct {
	// Leases is the fleet's lease set; nil means a local budget.
	Leases Leases
	// LeaseTime is how long a lease lives without renewal: the time in
	// which a crashed instance's slots come back. Held leases are renewed
	// every LeaseTime/3. default: 15s
	LeaseTime time.Duration
	// CallTimeout bounds each call to Leases. default: 500ms
	CallTimeout time.Duration
	// FailOpen chooses what the gate does while Leases fails: grant up to
	// LocalShare slots here (true) or refuse new claims with
	// ErrBudgetUnavailable (false). default: false (closed)
	FailOpen bool
	// LocalShare is the slots this instance may hold while failing open,
	// usually ceil(Limit / expected instances). default: Limit
	LocalShare int
	// BackoffMin and BackoffMax bound the jittered, doubling pause before
	// the gate asks Leases again after the fleet was full (a release
	// notification cuts it short). defaults: 20ms and 500ms
	BackoffMin, BackoffMax time.Duration
}

func (c *ClusterConfig) setDefaults(limit int) {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&c.LeaseTime, 15*time.Second)
	def(&c.CallTimeout, 500*time.Millisecond)
	def(&c.BackoffMin, 20*time.Millisecond)
	def(&c.BackoffMax, 500*time.Millisecond)
	c.BackoffMax = max(c.BackoffMax, c.BackoffMin)
	if c.LocalShare <= 0 || c.LocalShare > limit {
		c.LocalShare = limit
	}
}

// FleetStats is the fleet part of GateStats; nil with a local budget.
type FleetStats struct {
	// FleetInFlight is the fleet's live leases as of the last answer of
	// the store (FleetCheckedAt), not a call per read.
	FleetInFlight int `json:"fleet_in_flight"`
	// FleetCheckedAt is when FleetInFlight was read.
	FleetCheckedAt *time.Time `json:"fleet_checked_at,omitempty"`
	// LeasesHeld is the leases this instance holds (its in-flight
	// streams); some may be waiting to be re-asserted after an outage.
	LeasesHeld int `json:"leases_held"`
	// FailMode is "closed" or "open"; LocalShare the slots of this
	// instance while failing open.
	FailMode   string `json:"fail_mode,omitempty"`
	LocalShare int    `json:"local_share,omitempty"`
	// Degraded is empty while the store answers; otherwise what failed
	// and what the gate does meanwhile.
	Degraded string `json:"degraded,omitempty"`
	// LeaseAttempts is the Acquire calls made (each asks for up to 16
	// leases), LeasesGranted the leases they granted: their ratio is the
	// store round trips per slot.
	LeaseAttempts int64 `json:"lease_attempts_total"`
	LeasesGranted int64 `json:"leases_granted_total"`
	// PendingReleases are released leases the store has not heard of yet.
	PendingReleases int `json:"pending_releases,omitempty"`
}

// fleet is a Gate's link to the fleet budget. Its fields are protected
// by the gate's mu, except the wake channels and the counters, which
// only the loop goroutine (run) reads.
type fleet struct {
	cfg    ClusterConfig
	held   map[string]struct{} // leases of the permits out
	notYet []string            // leases released here, not yet in the store
	down   error               // non-nil: the store failed, the gate is degraded
	since  time.Time           // when down began
	live   int                 // fleet's live leases, as of checked
	check  time.Time

	attempts, granted int64 // protected by mu too (read by Stats)

	arrived  chan struct{} // a claim joined the line (cap 1)
	retry    chan struct{} // ask the store now: a permit was released here, or a claim wants one answer (cap 1)
	stopped  chan struct{} // closed when run returns
	maxNotYt int           // bound of notYet
}

func (g *Gate) startFleet() {
	g.cfg.Cluster.setDefaults(g.cfg.Limit)
	g.fleet = &fleet{
		cfg: g.cfg.Cluster, held: map[string]struct{}{},
		arrived: make(chan struct{}, 1), retry: make(chan struct{}, 1), stopped: make(chan struct{}),
		maxNotYt: 4 * g.cfg.Limit,
	}
	go g.run()
}

// Stopped is closed once the gate's fleet goroutine has returned: after
// Close, when every permit is released (at once with a local budget).
func (g *Gate) Stopped() <-chan struct{} {
	if g.fleet == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return g.fleet.stopped
}

func (f *fleet) kick(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// refusingLocked: the store is down and the gate fails closed.
func (f *fleet) refusingLocked() bool { return f.down != nil && !f.cfg.FailOpen }

// openLocked: the store is down and the gate fails open.
func (f *fleet) openLocked() bool { return f.down != nil && f.cfg.FailOpen }

// releasedLocked records a permit's lease as released.
func (f *fleet) releasedLocked(lease string) {
	if lease == "" {
		return
	}
	delete(f.held, lease)
	f.pendingLocked(lease)
	f.kick(f.retry)
}

// pendingLocked adds leases to send as released, keeping the newest
// maxNotYt: the oldest expire by themselves within the lease time.
func (f *fleet) pendingLocked(ids ...string) {
	f.notYet = append(f.notYet, ids...)
	f.trimLocked()
}

// requeueLocked puts back, ahead of those released since, leases whose
// release could not be sent, within the same bound.
func (f *fleet) requeueLocked(ids []string) {
	f.notYet = append(ids, f.notYet...)
	f.trimLocked()
}

// trimLocked keeps the newest maxNotYt pending releases.
func (f *fleet) trimLocked() {
	if n := len(f.notYet) - f.maxNotYt; n > 0 {
		f.notYet = f.notYet[n:]
	}
}

// localLeaseLocked is the lease of a permit granted without asking the
// store: "" with a local budget, a fresh id while failing open (it is
// added to the store when it answers again).
func (g *Gate) localLeaseLocked() string {
	if g.fleet == nil {
		return ""
	}
	return newLeaseID()
}

func newLeaseID() string {
	var b [12]byte
	_, _ = crand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

func (g *Gate) fleetStatsLocked() *FleetStats {
	f := g.fleet
	if f == nil {
		return nil
	}
	st := &FleetStats{
		FleetInFlight: f.live, LeasesHeld: len(f.held), FailMode: "closed",
		LeaseAttempts: f.attempts, LeasesGranted: f.granted, PendingReleases: len(f.notYet),
	}
	if !f.check.IsZero() {
		at := f.check
		st.FleetCheckedAt = &at
	}
	if f.cfg.FailOpen {
		st.FailMode, st.LocalShare = "open", f.cfg.LocalShare
	}
	if f.down != nil {
		doing := "refusing new requests (fail closed)"
		if f.cfg.FailOpen {
			doing = fmt.Sprintf("serving a local share of %d slots (fail open)", f.cfg.LocalShare)
		}
		st.Degraded = fmt.Sprintf("fleet budget store unreachable since %s: %v; %s",
			f.since.UTC().Format(time.RFC3339), f.down, doing)
	}
	return st
}

// Degraded reports whether the gate's fleet budget is degraded and why
// ("" when it is not, or with a local budget).
func (g *Gate) Degraded() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	if st := g.fleetStatsLocked(); st != nil {
		return st.Degraded
	}
	return ""
}

// acquireFleet is Acquire with a fleet budget: the claim joins the local
// line and the gate's goroutine asks the store for the line's head. With
// wait <= 0 it is refused when the fleet is full (one answer of the
// store), or at once when others are waiting here; unless, with owed, it
// is owed a slot of interactive's share that this instance's batch
// permits have borrowed (owedLocked, on this instance's counts): then it
// waits InteractiveShareWait in line, where the leases asked for after
// this instance's next releases go to it first (another instance may
// take a released lease before this one asks again: the wait is bounded).
func (g *Gate) acquireFleet(ctx context.Context, who Who, wait time.Duration, owed bool) (*Permit, error) {
	f := g.fleet
	if owed && wait < g.cfg.InteractiveShareWait {
		g.mu.Lock()
		room := g.roomForLocked(who.Tenant, g.cappedTenant(who.Tenant))
		if f.down == nil && g.owedLocked(who, room, g.lines[ClassInteractive].claims.Len()+1) {
			wait = g.cfg.InteractiveShareWait
		}
		g.mu.Unlock()
	}
	if wait <= 0 {
		g.mu.Lock()
		// Waiting claims of its class are ahead (FIFO); other claims that
		// ask for one answer are not: they share the next call to the
		// store. When this instance holds Limit permits itself, no
		// answer of the store can grant one more: refused without asking.
		// Nor can one for a tenant at its cap.
		l := &g.lines[who.Class]
		capped := !g.roomForLocked(who.Tenant, g.cappedTenant(who.Tenant))
		busy := !g.closed && !f.openLocked() && (l.claims.Len() > l.once || capped || (f.down == nil && g.inFlight >= g.cfg.Limit))
		g.mu.Unlock()
		if busy {
			g.rejected.Add(1)
			return nil, ErrOverloaded
		}
	}
	c, err := g.claimWith(who, false, wait <= 0)
	if err != nil {
		return nil, err
	}
	if wait <= 0 {
		select {
		case <-c.ready:
			return c.take()
		default:
		}
		g.mu.Lock()
		open := f.openLocked()
		g.mu.Unlock()
		if open && c.Cancel() { // failing open, the local share is full
			g.rejected.Add(1)
			return nil, ErrOverloaded
		}
		// One answer of the store, or its call timeout, decides.
		wait = 2*f.cfg.CallTimeout + f.cfg.BackoffMin
	}
	return g.waitClaim(ctx, c, wait)
}

// run is the gate's fleet goroutine, the only caller of Leases: it
// sends releases, renews held leases every LeaseTime/3 (and probes the
// store while it is down), and asks for a lease for the head of the local
// line whenever a local slot is free. It returns once the gate is closed
// and every permit is back.
func (g *Gate) run() {
	f := g.fleet
	defer close(f.stopped)
	var (
		closed     = g.closedC
		renewEvery = f.cfg.LeaseTime / 3
		nextRenew  = time.Now() // count at once: /v1/budget shows the fleet
		retryAt    time.Time    // no Acquire before (fleet full: backoff)
		backoff    = f.cfg.BackoffMin
	)
	for {
		g.mu.Lock()
		done := g.closed && g.inFlight == 0
		g.mu.Unlock()
		g.sendReleases()
		if done {
			return
		}
		now := time.Now()
		if !now.Before(nextRenew) {
			g.renew()
			nextRenew = time.Now().Add(renewEvery)
		}
		if !time.Now().Before(retryAt) {
			switch g.acquireHeads() {
			case fleetFull:
				retryAt = time.Now().Add(jitter(backoff))
				backoff = min(2*backoff, f.cfg.BackoffMax)
			case fleetGranted:
				backoff = f.cfg.BackoffMin
				retryAt = time.Time{}
			case fleetDown, fleetIdle:
				// Down: no Acquire until the probe below finds the store
				// again (acquireHeads checks). Idle: nothing to ask for
				// until a claim arrives or a slot is released here (both
				// wake the loop). Either way no retry time: a past one
				// would make the timer below fire at once, every turn.
				retryAt = time.Time{}
			}
		}
		if g.isDown() {
			// Whatever call failed, the probe comes soon.
			if p := time.Now().Add(probeEvery); nextRenew.After(p) {
				nextRenew = p
			}
		}
		wake := nextRenew
		if !retryAt.IsZero() && retryAt.Before(wake) && g.hasHead() {
			wake = retryAt
		}
		tm := time.NewTimer(time.Until(wake))
		select {
		case <-f.retry:
			retryAt = time.Time{}
		case <-f.cfg.Leases.Released():
			if !g.isDown() {
				retryAt = time.Time{}
			}
		case <-f.arrived:
			// A new head waits for the backoff when the fleet is full:
			// arrivals do not make the gate spin on the store.
		case <-tm.C:
		case <-closed:
			closed = nil
		}
		tm.Stop()
	}
}

// probeEvery paces the probes of a store that is down.
const probeEvery = 500 * time.Millisecond

type acquireResult int

const (
	fleetIdle    acquireResult = iota // nobody waits, or no local slot free
	fleetGranted                      // every head that could be served was
	fleetFull                         // the fleet has no free slot
	fleetDown                         // the store failed
)

func (g *Gate) isDown() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fleet.down != nil
}

func (g *Gate) hasHead() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nextLocked() != nil
}

// acquireBatch bounds the leases asked for in one call: a burst of
// arrivals costs one round trip per batch, not one per request.
const acquireBatch = 16

// acquireHeads asks the store for leases for the heads of the line while
// a local slot is free: one call, for one batch. If more heads could be
// served it kicks the loop, which first sends releases and renews held
// leases when due, then comes back here: a steady flow of arrivals never
// starves renewals and releases.
func (g *Gate) acquireHeads() acquireResult {
	f := g.fleet
	g.mu.Lock()
	n, limit := 0, g.cfg.Limit
	if !g.closed && f.down == nil && g.inFlight < limit {
		n = g.eligibleLocked(min(limit-g.inFlight, acquireBatch))
	}
	g.mu.Unlock()
	if n <= 0 {
		return fleetIdle
	}
	ids := make([]string, n)
	for i := range ids {
		ids[i] = newLeaseID()
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.CallTimeout)
	granted, live, err := f.cfg.Leases.Acquire(ctx, ids, limit)
	cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	f.attempts++
	if err != nil {
		// The script may have run and only its reply been lost: its
		// leases would be held by nobody for the lease time. Release
		// them all (removing an absent lease is harmless); they are
		// sent once the store answers again.
		f.pendingLocked(ids...)
		g.downLocked(err)
		return fleetDown
	}
	f.down = nil
	f.live, f.check = live, time.Now()
	f.granted += int64(granted)
	for _, id := range ids[:granted] {
		// The classes' order picks who takes each lease (classes.go).
		if c := g.nextLocked(); c != nil && !g.closed && g.inFlight < g.cfg.Limit {
			g.grantLocked(c, id)
		} else {
			f.pendingLocked(id) // nobody left to take it
		}
	}
	if granted < n {
		// Full: the claims that asked for one answer are refused.
		g.eachWaiterLocked(func(c *Claim) {
			if c.once {
				g.refuseLocked(c, ErrOverloaded)
			}
		})
		return fleetFull
	}
	if !g.closed && g.inFlight < g.cfg.Limit && g.nextLocked() != nil {
		f.kick(f.retry) // more heads to serve: the next turn asks again
	}
	return fleetGranted
}

// downLocked marks the store as failing. Failing closed, the interactive
// claims waiting here are refused at once (queued ones keep their place
// until it answers or their own limit); failing open, the line is served
// from the local share.
func (g *Gate) downLocked(err error) {
	f := g.fleet
	if f.down == nil {
		f.since = time.Now()
	}
	f.down = err
	if !f.cfg.FailOpen {
		g.eachWaiterLocked(func(c *Claim) {
			if !c.queued {
				g.refuseLocked(c, ErrBudgetUnavailable)
			}
		})
		return
	}
	g.dispatchLocked() // failing open: the local share, in the classes' order
}

// renew extends every held lease (re-asserting those the store lost) and
// reads the fleet's count; it is also the probe of a store that is down.
func (g *Gate) renew() {
	f := g.fleet
	g.mu.Lock()
	ids := make([]string, 0, len(f.held))
	for id := range f.held {
		ids = append(ids, id)
	}
	g.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.CallTimeout)
	live, err := f.cfg.Leases.Renew(ctx, ids)
	cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.downLocked(err)
		return
	}
	f.down = nil
	f.live, f.check = live, time.Now()
}

// sendReleases tells the store of the leases released here; on failure
// they are kept (bounded) and sent again with the next call.
func (g *Gate) sendReleases() {
	f := g.fleet
	g.mu.Lock()
	ids := f.notYet
	f.notYet = nil
	down := f.down != nil
	closed := g.closed
	g.mu.Unlock()
	if len(ids) == 0 || (down && !closed) {
		g.mu.Lock()
		f.requeueLocked(ids)
		g.mu.Unlock()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.CallTimeout)
	err := f.cfg.Leases.Release(ctx, ids)
	cancel()
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		if !closed {
			g.downLocked(err)
			f.requeueLocked(ids)
		}
		return // closed: the leases expire by themselves
	}
	f.down = nil
}

// jitter draws a pause from [d/2, d).
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
