package pipeline_test

// The fleet budget's loop (issue 13) against an in-memory Leases with
// Redis's semantics (expiry, limit, idempotent Acquire) and a
// configurable latency; orchestrator/redisstate tests it on real Redis.

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/pipeline"
)

type memLeases struct {
	mu       sync.Mutex
	ttl      time.Duration
	latency  time.Duration
	live     map[string]time.Time
	released chan struct{}
	fail     atomic.Bool

	acquires, renews, releases atomic.Int64
}

func newMemLeases(ttl, latency time.Duration) *memLeases {
	return &memLeases{ttl: ttl, latency: latency, live: map[string]time.Time{}, released: make(chan struct{}, 1)}
}

func (m *memLeases) expireLocked(now time.Time) {
	for id, exp := range m.live {
		if !exp.After(now) {
			delete(m.live, id)
		}
	}
}

func (m *memLeases) call(ctx context.Context) error {
	select {
	case <-time.After(m.latency):
	case <-ctx.Done():
		return ctx.Err()
	}
	if m.fail.Load() {
		return context.DeadlineExceeded
	}
	return nil
}

func (m *memLeases) Acquire(ctx context.Context, ids []string, limit int) (int, int, error) {
	m.acquires.Add(1)
	if err := m.call(ctx); err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	m.expireLocked(now)
	k := 0
	for _, id := range ids {
		if _, ok := m.live[id]; !ok && len(m.live) >= limit {
			break
		}
		m.live[id] = now.Add(m.ttl)
		k++
	}
	return k, len(m.live), nil
}

func (m *memLeases) Renew(ctx context.Context, ids []string) (int, error) {
	m.renews.Add(1)
	if err := m.call(ctx); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	m.expireLocked(now)
	for _, id := range ids {
		m.live[id] = now.Add(m.ttl)
	}
	return len(m.live), nil
}

func (m *memLeases) Release(ctx context.Context, ids []string) error {
	m.releases.Add(1)
	if err := m.call(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	for _, id := range ids {
		delete(m.live, id)
	}
	m.mu.Unlock()
	select {
	case m.released <- struct{}{}:
	default:
	}
	return nil
}

func (m *memLeases) Released() <-chan struct{} { return m.released }

// has reports whether the lease of p is live in the store.
func (m *memLeases) has(p *pipeline.Permit) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(time.Now())
	_, ok := m.live[pipeline.PermitLease(p)]
	return ok
}

func (m *memLeases) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(time.Now())
	return len(m.live)
}

// TestFleetRenewalsAndReleasesNotStarvedByArrivals: a steady flow of
// short requests (new ones arrive while each Acquire call is in flight)
// must not keep the gate's loop asking for leases only: held leases are
// still renewed every LeaseTime/3 (a long stream keeps its lease) and
// released leases are still sent (the store's count follows the permits
// out instead of growing with every finished request).
func TestFleetRenewalsAndReleasesNotStarvedByArrivals(t *testing.T) {
	const leaseTime = 300 * time.Millisecond
	m := newMemLeases(leaseTime, 3*time.Millisecond)
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 1000, Cluster: pipeline.ClusterConfig{Leases: m, LeaseTime: leaseTime}})
	defer func() {
		g.Close()
		<-g.Stopped()
	}()
	long, err := g.Acquire(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the flow: two requests every ms, each held 5 ms
		defer wg.Done()
		tk := time.NewTicker(time.Millisecond)
		defer tk.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tk.C:
			}
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := g.Acquire(context.Background(), 2*time.Second)
					if err != nil {
						return
					}
					time.Sleep(5 * time.Millisecond)
					p.Release()
				}()
			}
		}
	}()
	time.Sleep(3 * leaseTime) // the flow runs this long: the thing measured
	renews, releases := m.renews.Load(), m.releases.Load()
	longLive := m.has(long)
	st := g.Stats()
	close(stop)
	wg.Wait()
	long.Release()
	t.Logf("after %s: renews %d, release calls %d, acquire calls %d, stats %+v", 3*leaseTime, renews, releases, m.acquires.Load(), *st.FleetStats)
	if renews < 4 {
		t.Errorf("held leases renewed %d times in %s (LeaseTime %s: want one every %s)", renews, 3*leaseTime, leaseTime, leaseTime/3)
	}
	if !longLive {
		t.Errorf("the long stream's lease is not live in the store after %s (LeaseTime %s)", 3*leaseTime, leaseTime)
	}
	if st.FleetInFlight > 100 {
		t.Errorf("the store counts %d live leases while %d permits are out: finished requests keep theirs", st.FleetInFlight, st.LeasesHeld)
	}
	if releases == 0 {
		t.Errorf("no release sent to the store in %s while permits were released", 3*leaseTime)
	}
}

// TestFleetNoWaitRefusedWithoutAskingWhenThisInstanceHoldsTheLimit: with
// wait 0 (SLUICE_ACQUIRE_TIMEOUT=0) and every slot of the fleet held by
// this very instance, no answer of the store can grant one more: the
// request is refused at once with ErrOverloaded, without a call to the
// store (before: after 2*CallTimeout+BackoffMin, here 10 s).
func TestFleetNoWaitRefusedWithoutAskingWhenThisInstanceHoldsTheLimit(t *testing.T) {
	m := newMemLeases(time.Minute, 0)
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 2, Cluster: pipeline.ClusterConfig{Leases: m, CallTimeout: 5 * time.Second}})
	defer func() {
		g.Close()
		<-g.Stopped()
	}()
	var held []*pipeline.Permit
	for range 2 {
		p, err := g.Acquire(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	before := m.acquires.Load()
	start := time.Now()
	_, err := g.TryAcquire()
	took := time.Since(start)
	calls := m.acquires.Load() - before
	t.Logf("TryAcquire: %v after %s; store Acquire calls for it: %d", err, took, calls)
	if !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("a third slot of 2, all held here: %v", err)
	}
	if calls != 0 {
		t.Errorf("%d calls to the store for a request no answer could serve", calls)
	}
	if took > 2*time.Second {
		t.Errorf("refused after %s: it waited for the store (call timeout 5s)", took)
	}
	for _, p := range held {
		p.Release()
	}
	// With a slot free here the store is asked again, once.
	p, err := g.TryAcquire()
	if err != nil {
		t.Fatalf("a slot released here, then TryAcquire: %v", err)
	}
	p.Release()
}

// view is one instance's link to a shared memLeases: its own failures.
type view struct {
	*memLeases
	down atomic.Bool
}

func (v *view) Acquire(ctx context.Context, ids []string, limit int) (int, int, error) {
	if v.down.Load() {
		return 0, 0, context.DeadlineExceeded
	}
	return v.memLeases.Acquire(ctx, ids, limit)
}

func (v *view) Renew(ctx context.Context, ids []string) (int, error) {
	if v.down.Load() {
		return 0, context.DeadlineExceeded
	}
	return v.memLeases.Renew(ctx, ids)
}

func (v *view) Release(ctx context.Context, ids []string) error {
	if v.down.Load() {
		return context.DeadlineExceeded
	}
	return v.memLeases.Release(ctx, ids)
}

// TestFleetFailOpenOverAdmitsAtMostLocalShareThenDrains documents the
// bound of failing open (docs/architecture.md). Two instances,
// SLUICE_BUDGET_INSTANCES=2, limit 2 (share 1): B holds both slots, A's
// link to the store fails. A cannot know what B holds, so it grants its
// share, 1, and no more: the fleet runs 3 streams for a limit of 2, at
// most LocalShare over per degraded instance. When the store answers
// again A re-asserts its lease, so the store's count is the truth (3),
// and nobody is granted a slot until the running streams are below the
// limit again: the excess drains, it does not last.
func TestFleetFailOpenOverAdmitsAtMostLocalShareThenDrains(t *testing.T) {
	store := newMemLeases(time.Second, 0)
	a, b := &view{memLeases: store}, &view{memLeases: store}
	cc := func(l pipeline.Leases) pipeline.ClusterConfig {
		return pipeline.ClusterConfig{Leases: l, FailOpen: true, LocalShare: 1, CallTimeout: 50 * time.Millisecond, LeaseTime: 300 * time.Millisecond}
	}
	ga := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 2, Cluster: cc(a)})
	gb := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 2, Cluster: cc(b)})
	var held []*pipeline.Permit
	defer func() {
		for _, p := range held {
			p.Release()
		}
		for _, g := range []*pipeline.Gate{ga, gb} {
			g.Close()
			<-g.Stopped()
		}
	}()
	for range 2 {
		p, err := gb.Acquire(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	a.down.Store(true)
	pa, err := ga.Acquire(context.Background(), 2*time.Second)
	if err != nil {
		t.Fatalf("failing open, A's share: %v", err)
	}
	if ga.Degraded() == "" {
		t.Fatal("A serves from its share but does not say it is degraded")
	}
	if _, err := ga.Acquire(context.Background(), 0); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("failing open beyond the local share of 1: %v", err)
	}
	a.down.Store(false)
	poll(t, 5*time.Second, "A back on the store, its lease re-asserted", func() bool { return ga.Degraded() == "" && store.has(pa) })
	t.Logf("permits out: A %d, B %d; live leases in the store %d (limit 2)", ga.Stats().InFlight, gb.Stats().InFlight, store.count())
	if n := store.count(); n != 3 {
		t.Fatalf("store counts %d leases, 3 streams run (limit 2 + A's share of 1)", n)
	}
	// One of B's streams ends: 2 still run, the fleet is full.
	held[0].Release()
	held = held[1:]
	poll(t, 5*time.Second, "B's release sent", func() bool { return store.count() == 2 })
	for _, g := range []*pipeline.Gate{ga, gb} {
		if _, err := g.Acquire(context.Background(), 100*time.Millisecond); !errors.Is(err, pipeline.ErrOverloaded) {
			t.Fatalf("a new slot while 2 streams of a limit of 2 run (A's excess not counted?): %v", err)
		}
	}
	pa.Release() // the excess has drained: one slot is free again
	p, err := gb.Acquire(context.Background(), 2*time.Second)
	if err != nil {
		t.Fatalf("a slot free after the excess drained: %v", err)
	}
	held = append(held, p)
}

// poll waits until cond holds, failing t after bound.
func poll(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", bound, what)
		}
		time.Sleep(5 * time.Millisecond) // polling state another goroutine changes
	}
}

// TestFleetNoBusyLoopWhileStoreDown: the fleet is full (B holds the only
// slot), A has a queued task in line and is in its backoff. The store
// then fails and A's renewal notices first, while the backoff's retry
// time passes. A's loop must wait for its probe, not spin (it did: the
// past retry time fired its timer at once on every turn, ~0.8 s of CPU
// per second of outage). CPU time is the process's own, not wall time.
func TestFleetNoBusyLoopWhileStoreDown(t *testing.T) {
	store := newMemLeases(300*time.Millisecond, 0)
	a, b := &view{memLeases: store}, &view{memLeases: store}
	cc := func(l pipeline.Leases) pipeline.ClusterConfig {
		return pipeline.ClusterConfig{Leases: l, LeaseTime: 300 * time.Millisecond, CallTimeout: 50 * time.Millisecond,
			BackoffMin: 400 * time.Millisecond, BackoffMax: 400 * time.Millisecond}
	}
	ga := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 1, Cluster: cc(a)})
	gb := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 1, Cluster: cc(b)})
	pb, err := gb.Acquire(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ga.Enqueue() // waits: the fleet is full; A backs off 200-400 ms
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	a.down.Store(true) // the renewal (every 100 ms) fails before the next acquire
	time.Sleep(500 * time.Millisecond)
	var ru0, ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	time.Sleep(time.Second)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	cpu := time.Duration(ru1.Utime.Nano()-ru0.Utime.Nano()) + time.Duration(ru1.Stime.Nano()-ru0.Stime.Nano())
	t.Logf("CPU used in 1 s of outage with one queued claim: %s; A: %q", cpu, ga.Degraded())
	a.down.Store(false)
	c.Abandon()
	pb.Release()
	for _, g := range []*pipeline.Gate{ga, gb} {
		g.Close()
		<-g.Stopped()
	}
	if cpu > 300*time.Millisecond {
		t.Errorf("the gate spins while the store is down: %s of CPU in 1 s", cpu)
	}
}

// lateView applies an Acquire in the store but reports its call timeout
// (Redis ran the script; the reply came after the deadline), once.
type lateView struct {
	*memLeases
	late atomic.Bool
	hold chan struct{} // closed: the late Acquire runs
}

func (v *lateView) Acquire(ctx context.Context, ids []string, limit int) (int, int, error) {
	if v.late.Load() {
		<-v.hold // the script is slow: every claim of the test joins the line first
	}
	g, n, err := v.memLeases.Acquire(ctx, ids, limit)
	if err == nil && v.late.CompareAndSwap(true, false) {
		return 0, 0, context.DeadlineExceeded
	}
	return g, n, err
}

// TestFleetLostAcquireReplyLeavesNoOrphans: an Acquire whose reply is
// lost (a timeout after Redis ran the script) added leases nobody holds.
// The gate releases every id of a failed Acquire once the store answers
// again, so they do not take fleet slots for a whole lease time (15 s by
// default, up to 16 per lost reply).
func TestFleetLostAcquireReplyLeavesNoOrphans(t *testing.T) {
	store := newMemLeases(15*time.Second, 0)
	v := &lateView{memLeases: store, hold: make(chan struct{})}
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 4, QueueLimit: 10, Cluster: pipeline.ClusterConfig{Leases: v}})
	defer func() {
		g.Close()
		<-g.Stopped()
	}()
	poll(t, 5*time.Second, "the first renewal (count) done", func() bool { return store.renews.Load() > 0 })
	v.late.Store(true)
	var claims []*pipeline.Claim
	for range 3 {
		c, err := g.Enqueue()
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, c)
	}
	close(v.hold)
	for _, c := range claims {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		p, err := c.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("queued claim after the store answered again: %v", err)
		}
		p.Release()
	}
	if v.late.Load() {
		t.Fatal("the lost reply was never simulated")
	}
	poll(t, 5*time.Second, "no lease live in the store with nothing running (the lost reply's would be orphans for the lease time)", func() bool {
		return store.count() == 0
	})
	t.Logf("stats %+v", *g.Stats().FleetStats)
}
