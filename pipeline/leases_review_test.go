package pipeline_test

// Review probes for the fleet budget (issue 13): an in-memory Leases
// with Redis's semantics (expiry, limit) and a configurable latency.

import (
	"context"
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
		if len(m.live) >= limit {
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

func (m *memLeases) count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireLocked(time.Now())
	return len(m.live)
}

// TestReviewFleetRenewalNotStarvedByArrivals: a steady flow of short
// requests (one arriving while each Acquire call is in flight) keeps
// acquireHeads looping; run never gets back to renew or sendReleases.
// A long stream that started before the flow loses its lease in the
// store after LeaseTime although it is still running (the fleet can
// then over-admit), and released leases are never sent.
func TestReviewFleetRenewalNotStarvedByArrivals(t *testing.T) {
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
	time.Sleep(3 * leaseTime)
	renews, releases := m.renews.Load(), m.releases.Load()
	st := g.Stats()
	close(stop)
	wg.Wait()
	long.Release()
	t.Logf("after %s: renews %d, release calls %d, acquire calls %d, stats %+v", 3*leaseTime, renews, releases, m.acquires.Load(), *st.FleetStats)
	if renews < 4 {
		t.Errorf("held leases renewed %d times in %s (LeaseTime %s: want one every %s)", renews, 3*leaseTime, leaseTime, leaseTime/3)
	}
	if st.FleetInFlight > 100 {
		t.Errorf("the store counts %d live leases while %d permits are out: finished requests keep theirs", st.FleetInFlight, st.LeasesHeld)
	}
	if releases == 0 {
		t.Errorf("no release sent to the store in %s while permits were released", 3*leaseTime)
	}
}

// TestReviewFleetNoWaitRefusedAtOnceWhenLocallyFull: with wait 0
// (SLUICE_ACQUIRE_TIMEOUT=0) and every slot of the fleet held by this
// very instance, no call to the store can help; the request should be
// refused at once (as with a local budget), not after
// 2*CallTimeout+BackoffMin with no answer of the store at all.
func TestReviewFleetNoWaitRefusedAtOnceWhenLocallyFull(t *testing.T) {
	m := newMemLeases(time.Second, 0)
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 1, Cluster: pipeline.ClusterConfig{Leases: m}})
	defer func() {
		g.Close()
		<-g.Stopped()
	}()
	p, err := g.Acquire(context.Background(), time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	before := m.acquires.Load()
	start := time.Now()
	_, err = g.TryAcquire()
	took := time.Since(start)
	t.Logf("TryAcquire: %v after %s; store Acquire calls for it: %d", err, took, m.acquires.Load()-before)
	if took > 200*time.Millisecond {
		t.Errorf("refused after %s (want at once)", took)
	}
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

// TestReviewFleetFailOpenExceedsLimitWithRightInstanceCount: docs say
// the fleet exceeds its limit only while failing open with MORE
// instances than SLUICE_BUDGET_INSTANCES (or briefly after an empty
// restart). Two instances, SLUICE_BUDGET_INSTANCES=2, limit 2 (share 1):
// B holds both slots (first come, first served), A's link to the store
// fails once: A grants its share and, when the store answers again,
// re-asserts it: 3 live leases for a limit of 2, held to the end.
func TestReviewFleetFailOpenExceedsLimitWithRightInstanceCount(t *testing.T) {
	store := newMemLeases(time.Second, 0)
	a, b := &view{memLeases: store}, &view{memLeases: store}
	cc := func(l pipeline.Leases) pipeline.ClusterConfig {
		return pipeline.ClusterConfig{Leases: l, FailOpen: true, LocalShare: 1, CallTimeout: 50 * time.Millisecond, LeaseTime: time.Second}
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
	deadline := time.Now().Add(2 * time.Second)
	var pa *pipeline.Permit
	for pa == nil && time.Now().Before(deadline) {
		pa, _ = ga.Acquire(context.Background(), 200*time.Millisecond)
	}
	if pa != nil {
		held = append(held, pa)
	}
	a.down.Store(false)
	time.Sleep(time.Second) // a renewal re-asserts A's made-up lease
	total := ga.Stats().InFlight + gb.Stats().InFlight
	t.Logf("permits out: A %d, B %d; live leases in the store %d (limit 2)", ga.Stats().InFlight, gb.Stats().InFlight, store.count())
	if total > 2 || store.count() > 2 {
		t.Errorf("fleet of 2 instances (SLUICE_BUDGET_INSTANCES=2) holds %d permits, store %d leases, limit 2", total, store.count())
	}
}

// TestReviewFleetNoSpinWhileDown: the fleet is full (B holds the only
// slot), A has a queued task in line and is in its backoff. The store
// then fails and A's renewal notices first: acquireHeads returns
// fleetIdle (down), retryAt stays in the past, and run's timer is set
// to it on every turn: a busy loop for the whole outage.
func TestReviewFleetNoSpinWhileDown(t *testing.T) {
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
}

func (v *lateView) Acquire(ctx context.Context, ids []string, limit int) (int, int, error) {
	g, n, err := v.memLeases.Acquire(ctx, ids, limit)
	if err == nil && v.late.CompareAndSwap(true, false) {
		return 0, 0, context.DeadlineExceeded
	}
	return g, n, err
}

// TestReviewFleetTimedOutAcquireLeavesNoOrphans: an Acquire whose reply
// is lost (timeout after Redis ran it) added leases nobody holds; the
// gate never releases them, so they take fleet slots for a whole lease
// time (15 s by default), each lost reply up to 16 of them.
func TestReviewFleetTimedOutAcquireLeavesNoOrphans(t *testing.T) {
	store := newMemLeases(15*time.Second, 0)
	v := &lateView{memLeases: store}
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 4, QueueLimit: 10, Cluster: pipeline.ClusterConfig{Leases: v}})
	defer func() {
		g.Close()
		<-g.Stopped()
	}()
	time.Sleep(50 * time.Millisecond) // the first renewal (count) is done
	v.late.Store(true)
	var claims []*pipeline.Claim
	for range 3 {
		c, err := g.Enqueue()
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, c)
	}
	for _, c := range claims {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		p, err := c.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("queued claim after the store answered again: %v", err)
		}
		p.Release()
	}
	time.Sleep(700 * time.Millisecond) // releases sent
	t.Logf("live leases with nothing running: %d; stats %+v", store.count(), *g.Stats().FleetStats)
	if n := store.count(); n != 0 {
		t.Errorf("%d leases live in the store with nothing running (orphans of the lost reply, for the lease time)", n)
	}
}
