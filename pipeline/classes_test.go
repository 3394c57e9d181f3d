package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/pipeline"
)

var (
	interactive = pipeline.Who{Class: pipeline.ClassInteractive}
	batch       = pipeline.Who{Class: pipeline.ClassBatch}
)

// granted reports whether c has been granted, without waiting.
func granted(c *pipeline.Claim) bool {
	select {
	case <-c.Ready():
		return true
	default:
		return false
	}
}

// take waits (bounded) for c's grant and returns its permit.
func take(t *testing.T, c *pipeline.Claim) *pipeline.Permit {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	p, err := c.Wait(ctx)
	if err != nil {
		t.Fatalf("claim not granted: %v", err)
	}
	return p
}

func enqueue(t *testing.T, g *pipeline.Gate, who pipeline.Who) *pipeline.Claim {
	t.Helper()
	c, err := g.EnqueueAs(who)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func acquire(t *testing.T, g *pipeline.Gate, who pipeline.Who) *pipeline.Permit {
	t.Helper()
	p, err := g.TryAcquireAs(who)
	if err != nil {
		t.Fatalf("TryAcquireAs(%+v): %v", who, err)
	}
	return p
}

// onlyGranted checks that exactly the claims in want (by index) are
// granted among cs.
func onlyGranted(t *testing.T, what string, cs []*pipeline.Claim, want ...int) {
	t.Helper()
	set := map[int]bool{}
	for _, i := range want {
		set[i] = true
	}
	for i, c := range cs {
		if granted(c) != set[i] {
			t.Fatalf("%s: claim %d granted=%v, want %v", what, i, granted(c), set[i])
		}
	}
}

// TestGateClassInteractiveBoundedByOneRelease: batch has borrowed every
// slot and more batch claims wait; an interactive claim is granted at the
// very next release, ahead of every batch claim that waited before it.
func TestGateClassInteractiveBoundedByOneRelease(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 4})
	var held []*pipeline.Permit
	for range 4 {
		held = append(held, acquire(t, g, batch)) // batch borrows interactive's idle share
	}
	var waiting []*pipeline.Claim
	for range 6 {
		waiting = append(waiting, enqueue(t, g, batch))
	}
	if _, err := g.TryAcquireAs(interactive); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("interactive with every slot held: %v, want ErrOverloaded", err)
	}
	i1, i2 := enqueue(t, g, interactive), enqueue(t, g, interactive)
	st := g.Stats()
	if c := st.Classes["batch"]; c.InFlight != 4 || c.Waiting != 6 || c.Queued != 6 || c.Guaranteed != 2 {
		t.Fatalf("batch stats %+v", c)
	}
	if c := st.Classes["interactive"]; c.InFlight != 0 || c.Waiting != 2 || c.Guaranteed != 2 {
		t.Fatalf("interactive stats %+v", c)
	}
	held[0].Release()
	if !granted(i1) || granted(i2) {
		t.Fatalf("after one release: i1 %v i2 %v, want only i1", granted(i1), granted(i2))
	}
	onlyGranted(t, "batch after one release", waiting)
	held[1].Release()
	if !granted(i2) {
		t.Fatal("the second interactive claim was not granted at the second release")
	}
	onlyGranted(t, "batch after two releases", waiting)
	// Interactive holds its share (2) and nobody of it waits: the next
	// releases go to batch, oldest first.
	held[2].Release()
	onlyGranted(t, "batch after three releases", waiting, 0)
	p1, p2 := take(t, i1), take(t, i2)
	p1.Release()
	p2.Release()
	onlyGranted(t, "batch after interactive left", waiting, 0, 1, 2)
	held[3].Release()
	onlyGranted(t, "batch FIFO", waiting, 0, 1, 2, 3)
	for _, c := range waiting {
		c.Abandon()
	}
	if st := g.Stats(); st.InFlight != 0 || st.Waiting != 0 || st.AcquiredTotal != st.ReleasedTotal {
		t.Fatalf("stats %+v", st)
	}
}

// TestGateClassBatchGuaranteeNotTaken: interactive has borrowed every slot
// and floods; batch still gets its guaranteed share as slots free, and
// interactive gets the slots beyond it.
func TestGateClassBatchGuaranteeNotTaken(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 4, InteractiveShare: 0.5})
	var held []*pipeline.Permit
	for range 4 {
		held = append(held, acquire(t, g, interactive))
	}
	b := []*pipeline.Claim{enqueue(t, g, batch), enqueue(t, g, batch), enqueue(t, g, batch)}
	in := []*pipeline.Claim{enqueue(t, g, interactive), enqueue(t, g, interactive), enqueue(t, g, interactive)}
	held[0].Release() // interactive 3 >= its share 2, batch 0 < 2: batch
	onlyGranted(t, "release 1, batch", b, 0)
	onlyGranted(t, "release 1, interactive", in)
	held[1].Release() // interactive 2, batch 1 < 2: batch
	onlyGranted(t, "release 2, batch", b, 0, 1)
	onlyGranted(t, "release 2, interactive", in)
	held[2].Release() // interactive 1 < 2: interactive
	onlyGranted(t, "release 3, batch", b, 0, 1)
	onlyGranted(t, "release 3, interactive", in, 0)
	held[3].Release() // interactive 1 < 2: interactive
	onlyGranted(t, "release 4, interactive", in, 0, 1)
	for _, c := range append(b, in...) {
		c.Abandon()
	}
	if st := g.Stats(); st.InFlight != 0 || st.Waiting != 0 || st.AcquiredTotal != st.ReleasedTotal {
		t.Fatalf("stats %+v", st)
	}
}

// TestGateClassDefaultCallsAreInteractive: Acquire, TryAcquire and
// Enqueue claim as interactive, and a gate used only through them is the
// plain FIFO gate it was.
func TestGateClassDefaultCallsAreInteractive(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 2})
	p1, _ := g.TryAcquire()
	p2, _ := g.Acquire(context.Background(), 0)
	c, _ := g.Enqueue()
	st := g.Stats()
	if st.Classes["interactive"].InFlight != 2 || st.Classes["interactive"].Queued != 1 || st.Classes["batch"].InFlight != 0 {
		t.Fatalf("stats %+v", st.Classes)
	}
	p1.Release()
	take(t, c).Release()
	p2.Release()
	if got := g.Stats().Classes["interactive"].AcquiredTotal; got != 3 {
		t.Fatalf("interactive acquired %d, want 3", got)
	}
}

// TestGateTenantCap: a tenant capped at half the limit never holds more;
// its claims wait like a full gate while another tenant's proceed, and
// are granted when that tenant releases.
func TestGateTenantCap(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 4, TenantMaxShare: 0.5, TenantShares: map[string]float64{"vip": 1}})
	a := pipeline.Who{Tenant: "a"}
	a1, a2 := acquire(t, g, a), acquire(t, g, a)
	if _, err := g.TryAcquireAs(a); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("a beyond its cap: %v, want ErrOverloaded", err)
	}
	if _, err := g.AcquireAs(context.Background(), a, 10*time.Millisecond); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("a beyond its cap, waiting: %v, want ErrOverloaded", err)
	}
	ca := enqueue(t, g, a) // waits although slots are free
	b1 := acquire(t, g, pipeline.Who{Tenant: "b"})
	if granted(ca) {
		t.Fatal("a's claim granted beyond its cap")
	}
	cb := enqueue(t, g, pipeline.Who{Tenant: "b"}) // behind a's claim, but a is capped: b goes
	if !granted(cb) {
		t.Fatal("b's claim waits behind a capped tenant")
	}
	// The gate is full now (a 2, b 2); a vip claim waits for a slot.
	cv := enqueue(t, g, pipeline.Who{Tenant: "vip"})
	b1.Release() // a is still at its cap: the slot goes to vip
	if granted(ca) || !granted(cv) {
		t.Fatalf("after b's release: a %v vip %v, want vip only", granted(ca), granted(cv))
	}
	a1.Release()
	if !granted(ca) {
		t.Fatal("a's claim not granted when a released")
	}
	for _, p := range []*pipeline.Permit{a2, take(t, ca), take(t, cb), take(t, cv)} {
		p.Release()
	}
	if st := g.Stats(); st.InFlight != 0 || st.Waiting != 0 || st.AcquiredTotal != st.ReleasedTotal {
		t.Fatalf("stats %+v", st)
	}
}

// TestGateSetLimit: raising the limit grants the waiting claims at once
// in the classes' order; lowering it revokes nothing and grants nothing
// until the permits out are below the new limit.
func TestGateSetLimit(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 1})
	h := acquire(t, g, batch)
	b := []*pipeline.Claim{enqueue(t, g, batch), enqueue(t, g, batch)}
	in := []*pipeline.Claim{enqueue(t, g, interactive), enqueue(t, g, interactive)}
	g.SetLimit(3) // interactive's share is 2 now: both interactive first
	onlyGranted(t, "raise, interactive", in, 0, 1)
	onlyGranted(t, "raise, batch", b)
	if st := g.Stats(); st.Limit != 3 || st.InFlight != 3 || st.Classes["interactive"].Guaranteed != 2 || st.Classes["batch"].Guaranteed != 1 {
		t.Fatalf("stats %+v", st)
	}
	g.SetLimit(1)
	if st := g.Stats(); st.Limit != 1 || st.InFlight != 3 {
		t.Fatalf("lowering must not revoke: %+v", st)
	}
	h.Release()
	take(t, in[0]).Release()
	onlyGranted(t, "lowered, 1 out of limit 1", b)
	take(t, in[1]).Release()
	onlyGranted(t, "lowered, 0 out", b, 0)
	g.SetLimit(0) // clamps to 1
	if g.Limit() != 1 {
		t.Fatalf("limit %d, want 1", g.Limit())
	}
	take(t, b[0]).Release()
	take(t, b[1]).Release()
	if st := g.Stats(); st.InFlight != 0 || st.Waiting != 0 || st.AcquiredTotal != st.ReleasedTotal {
		t.Fatalf("stats %+v", st)
	}
}

func TestParseClass(t *testing.T) {
	for _, c := range pipeline.Classes() {
		got, err := pipeline.ParseClass(c.String())
		if err != nil || got != c {
			t.Fatalf("ParseClass(%q) = %v, %v", c, got, err)
		}
	}
	for _, s := range []string{"", "Batch", "high", "interactive "} {
		if _, err := pipeline.ParseClass(s); err == nil {
			t.Fatalf("ParseClass(%q) accepted", s)
		}
	}
}

// TestGateClassStorm races both classes and three tenants (one capped)
// through every call, with SetLimit moving underneath, and checks the
// invariants: never more than the largest limit in flight, the capped
// tenant never above its cap, every permit returned once.
func TestGateClassStorm(t *testing.T) {
	const limit, capShare = 6, 0.5
	g := pipeline.NewGate(pipeline.GateConfig{Limit: limit, QueueLimit: 64, TenantShares: map[string]float64{"t0": capShare}})
	var cur, peak, capCur, capPeak atomic.Int64
	bump := func(c, p *atomic.Int64) {
		n := c.Add(1)
		for old := p.Load(); n > old && !p.CompareAndSwap(old, n); old = p.Load() {
		}
	}
	var wg sync.WaitGroup
	for i := range 3000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i%500 == 0 {
				g.SetLimit(limit - 2 + i/500%3) // 4..6
			}
			who := pipeline.Who{Class: pipeline.Classes()[i%2], Tenant: fmt.Sprintf("t%d", i%3)}
			var p *pipeline.Permit
			var err error
			switch i % 4 {
			case 0:
				p, err = g.TryAcquireAs(who)
			case 1:
				p, err = g.AcquireAs(context.Background(), who, time.Duration(i%5)*time.Millisecond)
			default:
				c, cerr := g.EnqueueAs(who)
				if cerr != nil {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
				p, err = c.Wait(ctx)
				cancel()
			}
			if err != nil {
				return
			}
			bump(&cur, &peak)
			if who.Tenant == "t0" {
				bump(&capCur, &capPeak)
			}
			time.Sleep(time.Duration(i%3) * 100 * time.Microsecond)
			if who.Tenant == "t0" {
				capCur.Add(-1)
			}
			cur.Add(-1)
			p.Release()
			p.Release()
		}()
	}
	wg.Wait()
	if peak.Load() > limit {
		t.Errorf("peak in flight %d > limit %d", peak.Load(), limit)
	}
	// The cap follows the limit: at most ceil(0.5*6) = 3.
	if capPeak.Load() > 3 {
		t.Errorf("capped tenant peak %d > its cap 3", capPeak.Load())
	}
	st := g.Stats()
	if st.InFlight != 0 || st.Waiting != 0 || st.AcquiredTotal != st.ReleasedTotal {
		t.Fatalf("after the storm: %+v", st)
	}
	if st.Classes["interactive"].AcquiredTotal == 0 || st.Classes["batch"].AcquiredTotal == 0 {
		t.Fatalf("a class never got a slot: %+v", st.Classes)
	}
}

// TestFleetClassOrder: with a fleet budget the line's heads are asked for
// in the classes' order too: a released slot goes to the interactive
// claim ahead of the batch claims that waited before it.
func TestFleetClassOrder(t *testing.T) {
	m := newMemLeases(time.Minute, 0)
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 2, Cluster: pipeline.ClusterConfig{Leases: m}})
	defer func() {
		g.Close()
		<-g.Stopped()
	}()
	ctx := context.Background()
	h1, err := g.AcquireAs(ctx, batch, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := g.AcquireAs(ctx, batch, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	b := enqueue(t, g, batch)
	i := enqueue(t, g, interactive)
	h1.Release()
	p := take(t, i)
	if granted(b) {
		t.Fatal("the batch claim was granted too")
	}
	if st := g.Stats(); st.Classes["interactive"].InFlight != 1 || st.Classes["batch"].InFlight != 1 || st.Classes["batch"].Waiting != 1 {
		t.Fatalf("stats %+v", st.Classes)
	}
	p.Release()
	take(t, b).Release()
	h2.Release()
}

// TestFleetTenantCap: with a fleet budget a tenant at its cap is refused
// at once (no store answer could grant it), its queued claim does not
// make the loop ask for leases it cannot take, and it is granted once
// the tenant releases.
func TestFleetTenantCap(t *testing.T) {
	m := newMemLeases(time.Minute, 0)
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 4, TenantMaxShare: 0.25, Cluster: pipeline.ClusterConfig{Leases: m, CallTimeout: 5 * time.Second}})
	defer func() {
		g.Close()
		<-g.Stopped()
	}()
	a := pipeline.Who{Tenant: "a", Class: pipeline.ClassBatch}
	p, err := g.AcquireAs(context.Background(), a, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := g.TryAcquireAs(a); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("a beyond its cap: %v", err)
	}
	if el := time.Since(start); el > time.Second {
		t.Fatalf("refused after %s: it waited for the store", el)
	}
	c := enqueue(t, g, a)
	q, err := g.AcquireAs(context.Background(), pipeline.Who{Tenant: "b"}, 5*time.Second)
	if err != nil {
		t.Fatalf("b behind a capped tenant: %v", err)
	}
	if granted(c) || m.count() != 2 {
		t.Fatalf("a's claim granted %v; leases live %d, want 2", granted(c), m.count())
	}
	p.Release()
	take(t, c).Release()
	q.Release()
}

// TestFleetSetLimit: with a fleet budget, raising the limit makes the
// gate's loop ask for the waiting claims at once.
func TestFleetSetLimit(t *testing.T) {
	m := newMemLeases(time.Minute, 0)
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 1, Cluster: pipeline.ClusterConfig{Leases: m}})
	defer func() {
		g.Close()
		<-g.Stopped()
	}()
	h, err := g.AcquireAs(context.Background(), batch, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c := enqueue(t, g, interactive)
	g.SetLimit(2)
	p := take(t, c)
	if m.count() != 2 || g.Stats().Limit != 2 {
		t.Fatalf("leases %d, stats %+v", m.count(), g.Stats())
	}
	p.Release()
	h.Release()
}

// acquireOwed checks the flood's bound with an acquire timeout of 0 (the
// default of SLUICE_ACQUIRE_TIMEOUT): batch has borrowed every slot and
// more batch claims wait; interactive Acquires with wait 0 are not
// refused but wait in line and get the next released slots, ahead of
// every batch claim, up to interactive's share; one more interactive
// Acquire (its share is committed) is refused at once; and batch keeps
// its own share.
func acquireOwed(t *testing.T, g *pipeline.Gate, held []*pipeline.Permit, waiting []*pipeline.Claim) {
	t.Helper()
	type result struct {
		p   *pipeline.Permit
		err error
	}
	got := make(chan result, 2)
	for range 2 { // interactive's share of 4
		go func() {
			p, err := g.AcquireAs(context.Background(), interactive, 0)
			got <- result{p, err}
		}()
	}
	poll(t, 5*time.Second, "two interactive claims in line", func() bool { return g.Stats().Classes["interactive"].Waiting == 2 })
	start := time.Now()
	if _, err := g.AcquireAs(context.Background(), interactive, 0); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("a third interactive Acquire (share committed): %v, want ErrOverloaded", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("the refusal took %v, want at once", d)
	}
	held[0].Release()
	held[1].Release()
	var mine []*pipeline.Permit
	for range 2 {
		select {
		case r := <-got:
			if r.err != nil {
				t.Fatalf("interactive Acquire with wait 0 under a batch flood: %v, want the next released slot", r.err)
			}
			mine = append(mine, r.p)
		case <-time.After(5 * time.Second):
			t.Fatal("the interactive Acquire was not granted a released slot")
		}
	}
	onlyGranted(t, "batch while interactive took its share", waiting)
	// Interactive holds its share: the next release goes to batch, which
	// keeps its own share.
	held[2].Release()
	b0 := take(t, waiting[0])
	if _, err := g.AcquireAs(context.Background(), interactive, 0); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("interactive Acquire at its share: %v, want ErrOverloaded", err)
	}
	if st := g.Stats(); st.Classes["interactive"].InFlight != 2 || st.Classes["batch"].InFlight != 2 {
		t.Fatalf("stats %+v", st.Classes)
	}
	for _, p := range append(mine, b0, held[3]) {
		p.Release()
	}
}

// TestGateClassInteractiveOwedSlotWithoutWait: a flood of batch work
// borrows every slot; interactive requests with an acquire timeout of 0
// still get interactive's share, one release each.
func TestGateClassInteractiveOwedSlotWithoutWait(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 4})
	var held []*pipeline.Permit
	for range 4 {
		held = append(held, acquire(t, g, batch))
	}
	var waiting []*pipeline.Claim
	for range 6 {
		waiting = append(waiting, enqueue(t, g, batch))
	}
	// TryAcquire stays a try: it never waits.
	if _, err := g.TryAcquireAs(interactive); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("TryAcquireAs(interactive): %v, want ErrOverloaded", err)
	}
	acquireOwed(t, g, held, waiting)
	for _, c := range waiting {
		c.Abandon()
	}
	if st := g.Stats(); st.InFlight != 0 || st.Waiting != 0 || st.AcquiredTotal != st.ReleasedTotal {
		t.Fatalf("stats %+v", st)
	}
}

// TestGateClassInteractiveShareWaitBounded: the wait for an owed slot is
// bounded by InteractiveShareWait, and a negative one refuses at once as
// before.
func TestGateClassInteractiveShareWaitBounded(t *testing.T) {
	for _, sw := range []time.Duration{50 * time.Millisecond, -1} {
		g := pipeline.NewGate(pipeline.GateConfig{Limit: 2, InteractiveShareWait: sw})
		p1, p2 := acquire(t, g, batch), acquire(t, g, batch)
		start := time.Now()
		if _, err := g.AcquireAs(context.Background(), interactive, 0); !errors.Is(err, pipeline.ErrOverloaded) {
			t.Fatalf("share wait %v: %v, want ErrOverloaded", sw, err)
		}
		if d := time.Since(start); d < max(sw, 0) || d > 5*time.Second {
			t.Fatalf("share wait %v: refused after %v", sw, d)
		}
		if st := g.Stats(); st.Waiting != 0 || st.RejectedTotal != 1 {
			t.Fatalf("share wait %v: stats %+v", sw, st)
		}
		p1.Release()
		p2.Release()
	}
}

// TestFleetInteractiveOwedSlotWithoutWait: the same bound with a fleet
// budget, on this instance's counts.
func TestFleetInteractiveOwedSlotWithoutWait(t *testing.T) {
	m := newMemLeases(time.Minute, 0)
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 4, Cluster: pipeline.ClusterConfig{Leases: m}})
	defer func() {
		g.Close()
		select { // bounded: a failed check leaves permits held
		case <-g.Stopped():
		case <-time.After(5 * time.Second):
			t.Error("the gate did not stop")
		}
	}()
	var held []*pipeline.Permit
	for range 4 {
		p, err := g.AcquireAs(context.Background(), batch, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	var waiting []*pipeline.Claim
	for range 3 {
		waiting = append(waiting, enqueue(t, g, batch))
	}
	acquireOwed(t, g, held, waiting)
	for _, c := range waiting {
		c.Abandon()
	}
}
