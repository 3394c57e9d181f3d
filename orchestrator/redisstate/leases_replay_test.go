package redisstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

// TestFleetReleaseNotifiesOtherInstances: a release on one instance's
// Leases wakes another's Released() (pub/sub) within a second, every
// time, on one server and on a Redis Cluster (the script's PUBLISH on
// the key's node, the subscription on the channel's). Waiters elsewhere
// rely on it; their backoff only covers a lost notification.
func TestFleetReleaseNotifiesOtherInstances(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			a := redisstate.NewLeases(redistest.Universal(t, target.URL), prefix, "up", time.Second, nil)
			b := redisstate.NewLeases(redistest.Universal(t, target.URL), prefix, "up", time.Second, nil)
			defer a.Close()
			defer b.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			// The subscription connects in the background: releases
			// until b hears one (bounded), then every release counts.
			warm := time.Now().Add(5 * time.Second)
			for heard := false; !heard; {
				if time.Now().After(warm) {
					t.Fatal("b's subscription heard no release within 5s")
				}
				if err := a.Release(ctx, []string{"warm-up"}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-b.Released():
					heard = true
				case <-time.After(50 * time.Millisecond):
				}
			}
			for i := range 5 {
				if g, _, err := a.Acquire(ctx, []string{"x"}, 1); err != nil || g != 1 {
					t.Fatalf("acquire: %d %v", g, err)
				}
				select { // drain
				case <-b.Released():
				default:
				}
				start := time.Now()
				if err := a.Release(ctx, []string{"x"}); err != nil {
					t.Fatal(err)
				}
				select {
				case <-b.Released():
					t.Logf("round %d: notified after %s", i, time.Since(start))
				case <-time.After(time.Second):
					t.Fatalf("round %d: no release notification within 1s", i)
				}
			}
		})
	}
}

// TestLeasesAcquireReplayIsIdempotent: the cluster client sends a
// script again after a network error (MaxRedirects, within the deadline:
// "every write is idempotent", cmd/sluice/redis.go). An Acquire replayed
// after its first run filled the fleet reports the ids that run added as
// granted (they are live, the gate holds them and will release them),
// refreshes them, and adds no id beyond the limit.
func TestLeasesAcquireReplayIsIdempotent(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			l := redisstate.NewLeases(redistest.Universal(t, target.URL), prefix, "up", 5*time.Second, nil)
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ids := []string{"a", "b", "c"}
			g1, live1, err := l.Acquire(ctx, ids, 2)
			if err != nil || g1 != 2 || live1 != 2 {
				t.Fatalf("first run: granted %d live %d %v, want 2 2", g1, live1, err)
			}
			g2, live, err := l.Acquire(ctx, ids, 2) // the replay
			if err != nil {
				t.Fatal(err)
			}
			if g2 != 2 || live != 2 {
				t.Errorf("replayed Acquire: granted %d of its ids (2 are its own live leases), live %d (limit 2)", g2, live)
			}
			// Another caller's ids still wait for the limit.
			if g, _, err := l.Acquire(ctx, []string{"d"}, 2); err != nil || g != 0 {
				t.Errorf("a new id on a full fleet after the replay: granted %d, %v", g, err)
			}
			if err := l.Release(ctx, ids[:2]); err != nil {
				t.Fatal(err)
			}
			if n, err := l.Live(ctx); err != nil || n != 0 {
				t.Errorf("after releasing the replayed ids: live %d, %v", n, err)
			}
		})
	}
}
