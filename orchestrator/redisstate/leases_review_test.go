package redisstate_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

// TestReviewReleaseNotifiesOtherInstance: a release on one instance's
// Leases wakes another's Released() (pub/sub), on one server and on a
// Redis Cluster (the script's PUBLISH on the key's node, the
// subscription on the channel's). TestFleetWaitDoesNotSpin logs the
// wake-up delay but would pass with notifications lost (backoff <=500ms).
func TestReviewReleaseNotifiesOtherInstance(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			a := redisstate.NewLeases(redistest.Universal(t, target.URL), prefix, "up", time.Second, nil)
			b := redisstate.NewLeases(redistest.Universal(t, target.URL), prefix, "up", time.Second, nil)
			defer a.Close()
			defer b.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			time.Sleep(300 * time.Millisecond) // subscriptions established
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

// TestReviewAcquireReplayIsIdempotent: the cluster client sends a script
// again after a network error (MaxRedirects, within the deadline: "every
// write is idempotent", cmd/sluice/redis.go). An Acquire replayed after
// its first run filled the fleet reports 0 granted although its ids are
// live leases: the gate then holds none of them and never releases them
// (the slots are lost for the lease time).
func TestReviewAcquireReplayIsIdempotent(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			l := redisstate.NewLeases(redistest.Universal(t, target.URL), prefix, "up", 5*time.Second, nil)
			defer l.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			ids := []string{"a", "b"}
			g1, _, err := l.Acquire(ctx, ids, 2)
			if err != nil || g1 != 2 {
				t.Fatalf("first run: %d %v", g1, err)
			}
			g2, live, err := l.Acquire(ctx, ids, 2) // the replay
			if err != nil {
				t.Fatal(err)
			}
			if g2 != 2 {
				t.Errorf("replayed Acquire reports %d of its 2 ids granted, yet %d leases (its own) are live", g2, live)
			}
		})
	}
}
