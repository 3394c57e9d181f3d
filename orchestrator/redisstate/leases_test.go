package redisstate_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/pipeline"
)

// fleetGate is one instance's gate on the fleet budget of prefix.
func fleetGate(t *testing.T, url, prefix string, limit int, cc pipeline.ClusterConfig) (*pipeline.Gate, *redisstate.Leases) {
	t.Helper()
	if cc.LeaseTime == 0 {
		cc.LeaseTime = time.Second
	}
	l := redisstate.NewLeases(redistest.Universal(t, url), prefix, "fake", cc.LeaseTime, nil)
	cc.Leases = l
	g := pipeline.NewGate(pipeline.GateConfig{Name: "fake", Limit: limit, QueueLimit: 1000, Cluster: cc})
	t.Cleanup(func() {
		g.Close()
		select {
		case <-g.Stopped():
		case <-time.After(10 * time.Second):
			t.Errorf("gate's fleet goroutine did not stop: %+v", g.Stats())
		}
		if err := l.Close(); err != nil {
			t.Errorf("close leases: %v", err)
		}
	})
	return g, l
}

func live(t *testing.T, l *redisstate.Leases) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := l.Live(ctx)
	if err != nil {
		t.Fatalf("live leases: %v", err)
	}
	return n
}

// poll waits until cond holds, failing t after bound.
func poll(t *testing.T, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", bound, what)
		}
		time.Sleep(10 * time.Millisecond) // polling Redis-backed state
	}
}

// TestFleetGatesShareOneLimit: three gates (three instances) on one
// fleet budget never hold more than its limit together, whatever mix of
// interactive waits, queued claims, abandoned claims and refusals; after
// the storm no lease is left in Redis and every gate is idle.
func TestFleetGatesShareOneLimit(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			const limit = 5
			var gates []*pipeline.Gate
			var leases []*redisstate.Leases
			for range 3 {
				g, l := fleetGate(t, target.URL, prefix, limit, pipeline.ClusterConfig{})
				gates, leases = append(gates, g), append(leases, l)
			}
			var cur, peak, got, refused atomic.Int64
			hold := func(p *pipeline.Permit) {
				n := cur.Add(1)
				for {
					m := peak.Load()
					if n <= m || peak.CompareAndSwap(m, n) {
						break
					}
				}
				got.Add(1)
				time.Sleep(time.Duration(rand.N(5)+1) * time.Millisecond) // a stream's length
				cur.Add(-1)
				p.Release()
			}
			var wg sync.WaitGroup
			for i := range 150 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					g := gates[i%3]
					switch i % 4 {
					case 0, 1: // interactive, waiting
						p, err := g.Acquire(context.Background(), 5*time.Second)
						if err != nil {
							refused.Add(1)
							return
						}
						hold(p)
					case 2: // queued
						c, err := g.Enqueue()
						if err != nil {
							t.Errorf("enqueue: %v", err)
							return
						}
						ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
						defer cancel()
						p, err := c.Wait(ctx)
						if err != nil {
							t.Errorf("queued claim: %v", err)
							return
						}
						hold(p)
					default: // abandoned in line, or refused at once
						if i%8 == 3 {
							c, err := g.Enqueue()
							if err == nil {
								c.Abandon()
							}
							return
						}
						p, err := g.Acquire(context.Background(), 0)
						if err == nil {
							hold(p)
						} else if !errors.Is(err, pipeline.ErrOverloaded) {
							t.Errorf("acquire without wait: %v", err)
						}
					}
				}()
			}
			wg.Wait()
			if p := peak.Load(); p > limit || p < 2 {
				t.Errorf("peak concurrent permits across the fleet %d, limit %d", p, limit)
			}
			t.Logf("granted %d, refused after waiting %d, peak %d", got.Load(), refused.Load(), peak.Load())
			poll(t, 5*time.Second, "every lease released in Redis", func() bool { return live(t, leases[0]) == 0 })
			for i, g := range gates {
				st := g.Stats()
				if st.InFlight != 0 || st.Waiting != 0 || st.LeasesHeld != 0 || st.AcquiredTotal != st.ReleasedTotal || st.Mode != "cluster" {
					t.Errorf("gate %d after the storm: %+v", i, st)
				}
			}
		})
	}
}

// TestFleetCrashedInstanceSlotsComeBack: an instance that holds every
// slot and then stops answering (its Redis link cut: no renewal, no
// release) loses them within the lease time; another instance gets them.
func TestFleetCrashedInstanceSlotsComeBack(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			const limit = 3
			lease := time.Second
			proxy, viaProxy := redistest.NewProxy(t, target.URL)
			crashed, _ := fleetGate(t, viaProxy, prefix, limit, pipeline.ClusterConfig{LeaseTime: lease, CallTimeout: 200 * time.Millisecond})
			other, ol := fleetGate(t, target.URL, prefix, limit, pipeline.ClusterConfig{LeaseTime: lease})
			var held []*pipeline.Permit
			for range limit {
				p, err := crashed.Acquire(context.Background(), 2*time.Second)
				if err != nil {
					t.Fatalf("acquire on the instance to crash: %v", err)
				}
				held = append(held, p)
			}
			if _, err := other.Acquire(context.Background(), 0); !errors.Is(err, pipeline.ErrOverloaded) {
				t.Fatalf("the fleet is full, yet another instance got a slot: %v", err)
			}
			proxy.Cut()
			start := time.Now()
			var got []*pipeline.Permit
			for range limit {
				p, err := other.Acquire(context.Background(), 5*lease)
				if err != nil {
					t.Fatalf("slot of the crashed instance not back (after %s): %v", time.Since(start), err)
				}
				got = append(got, p)
			}
			if d := time.Since(start); d > 3*lease {
				t.Errorf("slots came back after %s, lease time %s", d, lease)
			}
			if n := live(t, ol); n != limit {
				t.Errorf("live leases %d, want %d (the other instance's)", n, limit)
			}
			for _, p := range append(got, held...) {
				p.Release()
			}
			poll(t, 5*time.Second, "the other instance's leases released", func() bool { return live(t, ol) == 0 })
			proxy.Restore()
		})
	}
}

// TestFleetWaitDoesNotSpin: while the fleet is full for a while, an
// instance with waiters asks Redis a bounded number of times (jittered
// backoff up to 500ms, release notifications), not once per waiter or
// per millisecond; a release elsewhere wakes it at once.
func TestFleetWaitDoesNotSpin(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			a, _ := fleetGate(t, target.URL, prefix, 1, pipeline.ClusterConfig{LeaseTime: 3 * time.Second})
			b, _ := fleetGate(t, target.URL, prefix, 1, pipeline.ClusterConfig{LeaseTime: 3 * time.Second})
			p, err := a.Acquire(context.Background(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			var claims []*pipeline.Claim
			for range 20 {
				c, err := b.Enqueue()
				if err != nil {
					t.Fatal(err)
				}
				claims = append(claims, c)
			}
			const full = 2 * time.Second
			time.Sleep(full) // the budget stays full this long: the thing measured
			attempts := b.Stats().LeaseAttempts
			// Backoff 20ms doubling to 500ms, jittered down to half: at
			// most ~11 calls in 2s; 20 leaves room for a slow machine.
			if attempts > 20 || attempts < 2 {
				t.Errorf("%d acquire calls to Redis in %s of a full budget with 20 waiters", attempts, full)
			}
			t.Logf("%d acquire attempts in %s of a full budget", attempts, full)
			granted := time.Now()
			p.Release()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			q, err := claims[0].Wait(ctx)
			if err != nil {
				t.Fatalf("the head of the other instance's line: %v", err)
			}
			t.Logf("the waiting instance got the slot %s after the release", time.Since(granted))
			q.Release()
			for _, c := range claims[1:] {
				c.Abandon()
			}
		})
	}
}

// TestFleetReleaseElsewhereWakesWaiter: an instance waiting on a full
// fleet with a backoff far longer than the test (30 s) gets the slot
// released on another instance within seconds: only the release
// notification can wake it (TestFleetWaitDoesNotSpin would pass with
// notifications lost, its backoff being at most 500 ms).
func TestFleetReleaseElsewhereWakesWaiter(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			slow := pipeline.ClusterConfig{LeaseTime: 3 * time.Second, BackoffMin: 30 * time.Second, BackoffMax: 30 * time.Second}
			a, _ := fleetGate(t, target.URL, prefix, 1, pipeline.ClusterConfig{LeaseTime: 3 * time.Second})
			b, _ := fleetGate(t, target.URL, prefix, 1, slow)
			// b's subscription connects in the background: it is up
			// once a release on a wakes b.
			ready := false
			for deadline := time.Now().Add(5 * time.Second); !ready; {
				if time.Now().After(deadline) {
					t.Fatal("no release on a woke the waiter on b within 5s (its backoff is 30s: notifications lost?)")
				}
				p, err := a.Acquire(context.Background(), time.Second)
				if err != nil {
					t.Fatal(err)
				}
				c, err := b.Enqueue()
				if err != nil {
					t.Fatal(err)
				}
				if first := b.Stats().LeaseAttempts == 0; first {
					poll(t, 5*time.Second, "b asked once and backs off", func() bool { return b.Stats().LeaseAttempts > 0 })
				}
				p.Release()
				select {
				case <-c.Ready():
					ready = true
				case <-time.After(time.Second):
				}
				if !ready {
					c.Abandon()
					continue
				}
				q, err := c.Wait(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				q.Release()
			}
			// Now every release must wake it.
			for round := range 3 {
				p, err := a.Acquire(context.Background(), 5*time.Second)
				if err != nil {
					t.Fatalf("round %d: %v", round, err)
				}
				// Counted before the claim: b may ask for it (and back
				// off) before this goroutine reads its counters again.
				before := b.Stats().LeaseAttempts
				c, err := b.Enqueue()
				if err != nil {
					t.Fatal(err)
				}
				poll(t, 5*time.Second, "b asked and found the fleet full", func() bool { return b.Stats().LeaseAttempts > before })
				start := time.Now()
				p.Release()
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				q, err := c.Wait(ctx)
				cancel()
				if err != nil {
					t.Fatalf("round %d: the waiter on b was not woken by a's release (its backoff is 30s): %v", round, err)
				}
				t.Logf("round %d: b got the slot %s after a's release", round, time.Since(start))
				q.Release()
				poll(t, 5*time.Second, "b's release sent", func() bool { return b.Stats().PendingReleases == 0 && b.Stats().LeasesHeld == 0 })
			}
		})
	}
}

// TestFleetStalledRedisCostsBoundedTime: a Redis that accepts
// connections and never answers costs a request about the call timeout,
// not its whole wait: failing closed it is refused with
// ErrBudgetUnavailable, failing open it gets the local share (and no
// more), and the gate says it is degraded until Redis answers again.
func TestFleetStalledRedisCostsBoundedTime(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		for _, open := range []bool{false, true} {
			name := target.Name + "/closed"
			if open {
				name = target.Name + "/open"
			}
			t.Run(name, func(t *testing.T) {
				_, prefix := redistest.Redis(t)
				proxy, viaProxy := redistest.NewProxy(t, target.URL)
				const callTimeout = 150 * time.Millisecond
				g, l := fleetGate(t, viaProxy, prefix, 4, pipeline.ClusterConfig{
					LeaseTime: 3 * time.Second, CallTimeout: callTimeout, FailOpen: open, LocalShare: 2,
				})
				p, err := g.Acquire(context.Background(), time.Second)
				if err != nil {
					t.Fatal(err)
				}
				p.Release()
				proxy.Stall()
				start := time.Now()
				p1, err1 := g.Acquire(context.Background(), 10*time.Second)
				took := time.Since(start)
				if took > 10*callTimeout {
					t.Errorf("a stalled Redis cost a request %s (call timeout %s)", took, callTimeout)
				}
				if !open {
					if !errors.Is(err1, pipeline.ErrBudgetUnavailable) {
						t.Fatalf("failing closed on a stalled Redis: %v", err1)
					}
					if _, err := g.Enqueue(); !errors.Is(err, pipeline.ErrBudgetUnavailable) {
						t.Fatalf("a new task while failing closed: %v", err)
					}
				} else {
					if err1 != nil {
						t.Fatalf("failing open on a stalled Redis: %v", err1)
					}
					p2, err := g.Acquire(context.Background(), 0)
					if err != nil {
						t.Fatalf("second slot of the local share: %v", err)
					}
					if _, err := g.Acquire(context.Background(), 0); !errors.Is(err, pipeline.ErrOverloaded) {
						t.Fatalf("beyond the local share of 2: %v", err)
					}
					p1.Release()
					p2.Release()
				}
				if d := g.Degraded(); d == "" {
					t.Fatal("the gate does not say it is degraded")
				}
				proxy.Restore()
				poll(t, 10*time.Second, "back on the cluster budget", func() bool { return g.Degraded() == "" })
				p, err = g.Acquire(context.Background(), time.Second)
				if err != nil {
					t.Fatalf("after recovery: %v", err)
				}
				p.Release()
				poll(t, 5*time.Second, "no lease left", func() bool { return live(t, l) == 0 })
			})
		}
	}
}

// TestFleetLeasesRenewedWhileHeld: a slot held for several lease times
// stays one live lease (renewed every third of the lease time), so no
// other instance gets it meanwhile; an interactive request there waits
// at most its own wait and is refused, and queued claims there are
// granted in their order as slots come free.
func TestFleetLeasesRenewedWhileHeld(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			const lease = 600 * time.Millisecond
			a, l := fleetGate(t, target.URL, prefix, 2, pipeline.ClusterConfig{LeaseTime: lease})
			b, _ := fleetGate(t, target.URL, prefix, 2, pipeline.ClusterConfig{LeaseTime: lease})
			var held []*pipeline.Permit
			for range 2 {
				p, err := a.Acquire(context.Background(), time.Second)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, p)
			}
			var claims []*pipeline.Claim
			for range 3 {
				c, err := b.Enqueue()
				if err != nil {
					t.Fatal(err)
				}
				claims = append(claims, c)
			}
			deadline := time.Now().Add(4 * lease)
			for time.Now().Before(deadline) {
				if n := live(t, l); n != 2 {
					t.Fatalf("live leases %d while 2 slots are held past their first lease time", n)
				}
				select {
				case <-claims[0].Ready():
					t.Fatal("another instance got a slot that is held and renewed")
				default:
				}
				time.Sleep(50 * time.Millisecond) // sampling the lease set over several lease times
			}
			start := time.Now()
			if _, err := b.Acquire(context.Background(), 300*time.Millisecond); !errors.Is(err, pipeline.ErrOverloaded) {
				t.Fatalf("interactive wait on a full fleet: %v", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("an interactive wait of 300ms took %s", d)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			for i, c := range claims {
				select {
				case <-claims[len(claims)-1].Ready():
					t.Fatalf("the last queued claim was granted before claim %d", i)
				default:
				}
				held[0].Release()
				p, err := c.Wait(ctx)
				if err != nil {
					t.Fatalf("queued claim %d: %v", i, err)
				}
				held[0] = p
			}
			for _, p := range held {
				p.Release()
			}
			poll(t, 5*time.Second, "no lease left", func() bool { return live(t, l) == 0 })
		})
	}
}

// TestFleetLeasesReassertedAfterRedisRestart: Redis restarts empty while
// slots are held; the holders' next renewal writes their leases back, so
// the fleet count is true again within a third of the lease time and no
// other instance is granted beyond the limit afterwards.
func TestFleetLeasesReassertedAfterRedisRestart(t *testing.T) {
	srv, url := redistest.NewServer(t)
	const lease = 900 * time.Millisecond
	a, l := fleetGate(t, url, "reassert:", 3, pipeline.ClusterConfig{LeaseTime: lease, CallTimeout: 200 * time.Millisecond})
	b, _ := fleetGate(t, url, "reassert:", 3, pipeline.ClusterConfig{LeaseTime: lease, CallTimeout: 200 * time.Millisecond})
	var held []*pipeline.Permit
	for range 2 {
		p, err := a.Acquire(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	srv.Kill()
	srv.Start()
	poll(t, 5*time.Second, "the held leases re-asserted in the restarted Redis", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := l.Live(ctx)
		return err == nil && n == 2
	})
	poll(t, 5*time.Second, "both gates back on the cluster budget", func() bool { return a.Degraded() == "" && b.Degraded() == "" })
	p, err := b.Acquire(context.Background(), time.Second)
	if err != nil {
		t.Fatalf("the one free slot: %v", err)
	}
	if _, err := b.Acquire(context.Background(), 0); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("a fourth slot of 3 after the restart: %v", err)
	}
	p.Release()
	for _, p := range held {
		p.Release()
	}
	poll(t, 5*time.Second, "no lease left", func() bool { return live(t, l) == 0 })
}
