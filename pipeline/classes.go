package pipeline

import (
	"container/list"
	"fmt"
	"math"
)

// Class is a claim's priority class. Each class has a guaranteed share of
// the gate's Limit and borrows the other's idle slots:
//
//   - A free slot goes to the oldest eligible interactive claim, unless the
//     batch class is below its guaranteed share and has an eligible claim
//     waiting while interactive already holds its own share: then it goes
//     to the oldest eligible batch claim.
//   - So an interactive claim, while interactive holds less than its share,
//     waits for at most the next release of any slot, however many batch
//     claims wait (batch may have borrowed every slot). AcquireAs waits
//     for that release (at least InteractiveShareWait) even when its own
//     wait is 0: a slot owed to interactive is never refused to it while
//     batch holds it (owedLocked). And batch, while
//     below its share, is granted before any interactive claim that would
//     exceed interactive's share: neither class starves the other.
//   - Within a class claims are granted in arrival (FIFO) order, skipping
//     the claims of a tenant at its cap (TenantMaxShare), which wait until
//     that tenant releases a permit.
//
// No permit is ever revoked: a class above its share gives slots back as
// its holders finish.
type Class uint8

// The priority classes. The zero Class is interactive: the gate's calls
// without a Who (Acquire, TryAcquire, Enqueue) claim as interactive.
const (
	ClassInteractive Class = iota
	ClassBatch
	numClasses
)

var classNames = [numClasses]string{"interactive", "batch"}

// String returns the class's name: "interactive" or "batch".
func (c Class) String() string {
	if c < numClasses {
		return classNames[c]
	}
	return fmt.Sprintf("Class(%d)", uint8(c))
}

// Classes lists the classes in priority order.
func Classes() []Class { return []Class{ClassInteractive, ClassBatch} }

// ParseClass returns the class named s ("interactive" or "batch").
func ParseClass(s string) (Class, error) {
	for c, n := range classNames {
		if s == n {
			return Class(c), nil
		}
	}
	return 0, fmt.Errorf("pipeline: unknown priority class %q (want interactive or batch)", s)
}

// Who is on whose behalf a slot is claimed: its class, and its tenant for
// the per-tenant cap ("" is never capped).
type Who struct {
	Class  Class
	Tenant string
}

// line is one class's FIFO of waiting claims and its counts. It is
// protected by the gate's mu.
type line struct {
	claims list.List // of *Claim, front = oldest
	queued int       // claims that count against QueueLimit
	once   int       // claims that only wait for one answer of the fleet budget
}

// ClassStats are one class's counters in GateStats.
type ClassStats struct {
	// Guaranteed is the class's share of Limit, in slots: it is granted
	// before the other class borrows beyond its own share.
	Guaranteed int `json:"guaranteed"`
	InFlight   int `json:"in_flight"`
	// Waiting counts every claim of the class in line; Queued those that
	// count against QueueLimit (asynchronous tasks).
	Waiting       int   `json:"waiting"`
	Queued        int   `json:"queued"`
	AcquiredTotal int64 `json:"acquired_total"`
}

// SetLimit changes the gate's Limit (at least 1). Raising it grants the
// waiting claims at once, in the classes' order; lowering it revokes
// nothing: holders finish and no claim is granted until the in-flight
// permits are below the new limit. The class guarantees and tenant caps
// follow the new limit. With a fleet budget it is the fleet's limit.
func (g *Gate) SetLimit(n int) {
	n = max(n, 1)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cfg.Limit = n
	if g.fleet != nil {
		g.fleet.kick(g.fleet.retry) // the loop asks for the line's heads
		return
	}
	g.dispatchLocked()
}

// Limit returns the gate's current limit.
func (g *Gate) Limit() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.cfg.Limit
}

// Occupancy returns the permits out, the limit and the claims waiting for
// one: what admission and the adaptive limit read on every request,
// without the rest of Stats (its per-class map, the fleet's figures).
func (g *Gate) Occupancy() (inFlight, limit, waiting int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inFlight, g.cfg.Limit, g.waitingLocked()
}

// guaranteedLocked is c's guaranteed share of the limit, in slots. g.mu
// must be held.
func (g *Gate) guaranteedLocked(c Class) int {
	gi := min(int(math.Ceil(g.cfg.InteractiveShare*float64(g.cfg.Limit))), g.cfg.Limit)
	if c == ClassInteractive {
		return gi
	}
	return g.cfg.Limit - gi
}

// cappedTenant reports whether tenant has a cap. cfg's tenant fields are
// read-only after NewGate.
func (g *Gate) cappedTenant(tenant string) bool {
	if tenant == "" || g.tenants == nil {
		return false
	}
	s, ok := g.cfg.TenantShares[tenant]
	if !ok {
		s = g.cfg.TenantMaxShare
	}
	return s > 0 && s < 1
}

// tenantCapLocked is a capped tenant's cap, in slots. g.mu must be held.
func (g *Gate) tenantCapLocked(tenant string) int {
	s, ok := g.cfg.TenantShares[tenant]
	if !ok {
		s = g.cfg.TenantMaxShare
	}
	return max(int(math.Ceil(s*float64(g.cfg.Limit))), 1)
}

// roomLocked reports whether c's tenant may take one more permit. g.mu
// must be held.
func (g *Gate) roomLocked(c *Claim) bool { return g.roomForLocked(c.who.Tenant, c.capped) }

// roomForLocked reports whether tenant, capped or not (cappedTenant), may
// take one more permit. g.mu must be held.
func (g *Gate) roomForLocked(tenant string, capped bool) bool {
	return !capped || g.tenants[tenant] < g.tenantCapLocked(tenant)
}

// permitLocked counts a new permit for who out. g.mu must be held.
func (g *Gate) permitLocked(who Who, capped bool, lease string) *Permit {
	g.inFlight++
	g.inClass[who.Class]++
	g.acqClass[who.Class]++
	g.acquired.Add(1)
	p := &Permit{g: g, lease: lease, class: who.Class}
	if capped {
		g.tenants[who.Tenant]++
		p.tenant = who.Tenant
	}
	return p
}

// headLocked is the oldest claim of class c whose tenant has room, or
// nil. g.mu must be held.
func (g *Gate) headLocked(c Class) *Claim {
	for e := g.lines[c].claims.Front(); e != nil; e = e.Next() {
		if cl := e.Value.(*Claim); g.roomLocked(cl) {
			return cl
		}
	}
	return nil
}

// nextLocked is the claim a free slot goes to (Class says the order), or
// nil when no claim may take one. g.mu must be held.
func (g *Gate) nextLocked() *Claim {
	ci, cb := g.headLocked(ClassInteractive), g.headLocked(ClassBatch)
	switch {
	case ci == nil:
		return cb
	case cb == nil:
		return ci
	case g.inClass[ClassInteractive] < g.guaranteedLocked(ClassInteractive),
		g.inClass[ClassBatch] >= g.guaranteedLocked(ClassBatch):
		return ci
	default:
		return cb
	}
}

// owedLocked reports whether an interactive claim of who, whose tenant
// has room and which is one of inLine interactive claims in line, is owed
// a slot of interactive's guaranteed share that batch has borrowed: batch
// holds more than its own share and the interactive permits out plus
// every interactive claim in line fit in interactive's share. Then each
// release hands nextLocked's pick to the oldest interactive claim, ahead
// of every batch claim, so the claim is granted within the next inLine
// releases: it is worth waiting for (InteractiveShareWait) rather than
// refusing at once. When interactive holds its share (the budget is full
// of interactive work) it is owed nothing. g.mu must be held.
func (g *Gate) owedLocked(who Who, room bool, inLine int) bool {
	return who.Class == ClassInteractive && room && !g.closed &&
		g.inClass[ClassBatch] > g.guaranteedLocked(ClassBatch) &&
		g.inClass[ClassInteractive]+inLine <= g.guaranteedLocked(ClassInteractive)
}

// owed reports whether c, waiting in line, is owed a slot of
// interactive's share (owedLocked).
func (g *Gate) owed(c *Claim) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return c.elem != nil && g.owedLocked(c.who, g.roomLocked(c), g.lines[ClassInteractive].claims.Len())
}

// eligibleLocked counts, up to most, the waiting claims that could take a
// slot now (their tenant has room, counting the ones before them). g.mu
// must be held.
func (g *Gate) eligibleLocked(most int) int {
	n := 0
	var extra map[string]int
	for c := range g.lines {
		for e := g.lines[c].claims.Front(); e != nil && n < most; e = e.Next() {
			cl := e.Value.(*Claim)
			if cl.capped {
				t := cl.who.Tenant
				if g.tenants[t]+extra[t] >= g.tenantCapLocked(t) {
					continue
				}
				if extra == nil {
					extra = map[string]int{}
				}
				extra[t]++
			}
			n++
		}
	}
	return n
}

// waitingLocked counts every waiting claim. g.mu must be held.
func (g *Gate) waitingLocked() int { return g.waiting }

// queuedLocked counts the waiting claims that count against QueueLimit.
// g.mu must be held.
func (g *Gate) queuedLocked() int {
	n := 0
	for c := range g.lines {
		n += g.lines[c].queued
	}
	return n
}

// eachWaiterLocked calls f for every waiting claim, class by class, oldest
// first; f may take the claim out of its line. g.mu must be held.
func (g *Gate) eachWaiterLocked(f func(*Claim)) {
	for c := range g.lines {
		for e := g.lines[c].claims.Front(); e != nil; {
			next := e.Next()
			f(e.Value.(*Claim))
			e = next
		}
	}
}

func (g *Gate) classStatsLocked() map[string]ClassStats {
	m := make(map[string]ClassStats, numClasses)
	for c := range g.lines {
		l := &g.lines[c]
		m[classNames[c]] = ClassStats{
			Guaranteed: g.guaranteedLocked(Class(c)), InFlight: g.inClass[c],
			Waiting: l.claims.Len(), Queued: l.queued, AcquiredTotal: g.acqClass[c],
		}
	}
	return m
}
