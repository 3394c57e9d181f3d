package rediscache_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cache/rediscache"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// instance is one sluice instance's cache, replicated through Redis.
func instance(t *testing.T, url, prefix string) *cache.Cache {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	c := cache.New(cache.Config{OnReplicaError: func(op string, err error) { t.Errorf("replication %s: %v", op, err) }})
	ctx, cancel := context.WithCancel(context.Background())
	wait := c.Replicate(ctx, rediscache.New(client, prefix, nil))
	t.Cleanup(func() {
		cancel()
		wait()
		client.Close()
	})
	return c
}

// eventually polls cond until it holds or 10 s have passed.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10 s", what)
		}
		time.Sleep(5 * time.Millisecond) // replication has no signal a test can wait on
	}
}

// TestCacheSharedBetweenInstances: what one instance stores, another
// answers from (exact and semantic, with the very same score: vectors
// travel as little-endian float32), the facet guard still holds there, a
// purge on one empties the namespace everywhere, and an instance that
// starts later loads what is stored.
func TestCacheSharedBetweenInstances(t *testing.T) {
	url, prefix := redistest.Redis(t)
	a := instance(t, url, prefix)
	b := instance(t, url, prefix)
	ctx := context.Background()
	ns := cache.Namespace{Namespace: "wms", Model: "sim-1"}
	other := cache.Namespace{Namespace: "edu", Model: "sim-1"}
	answer := cache.Answer{Chunks: []string{"There are ", "42 left."}}

	a.Store(ctx, ns, "How many SKU-10234 are left in zone A?", answer)
	a.Store(ctx, other, "What is the tuition for grade 10?", cache.Answer{Chunks: []string{"a lot"}})
	eventually(t, "B hits A's entry", func() bool {
		return b.Lookup(ctx, ns, "how many sku-10234 are left in zone a").Hit
	})
	r := b.Lookup(ctx, ns, "How many SKU-10234 are left in zone A?")
	if !r.Hit || r.Kind != "exact" || len(r.Answer.Chunks) != 2 || r.Answer.Chunks[1] != "42 left." {
		t.Fatalf("exact on B: %+v", r)
	}
	para := "How many units of SKU-10234 are left in zone A?"
	ra, rb := a.Explain(ctx, ns, para), b.Explain(ctx, ns, para)
	if ra.Score != rb.Score || ra.Decision != rb.Decision {
		t.Fatalf("the same paraphrase scores %v (%s) on A and %v (%s) on B", ra.Score, ra.Decision, rb.Score, rb.Decision)
	}
	if r := b.Lookup(ctx, ns, "How many SKU-10235 are left in zone A?"); r.Hit {
		t.Fatalf("facet guard on B: SKU-10235 hit %+v", r)
	}

	c := instance(t, url, prefix) // starts after the entries were stored
	eventually(t, "a late instance loads the stored entries", func() bool {
		return c.Lookup(ctx, ns, "How many SKU-10234 are left in zone A?").Hit
	})

	if n := b.Purge("", "wms"); n != 1 {
		t.Fatalf("purge on B dropped %d entries, want 1", n)
	}
	eventually(t, "A and C drop the purged namespace", func() bool {
		return !a.Lookup(ctx, ns, "How many SKU-10234 are left in zone A?").Hit &&
			!c.Lookup(ctx, ns, "How many SKU-10234 are left in zone A?").Hit
	})
	if !a.Lookup(ctx, other, "What is the tuition for grade 10?").Hit {
		t.Fatal("the purge of wms dropped edu on A")
	}
	d := instance(t, url, prefix) // starts after the purge: nothing of wms to load
	eventually(t, "a later instance loads edu", func() bool {
		return d.Lookup(ctx, other, "What is the tuition for grade 10?").Hit
	})
	if d.Lookup(ctx, ns, "How many SKU-10234 are left in zone A?").Hit {
		t.Fatal("a purged entry came back from Redis")
	}
	if st := a.ReplicaStats(); st.Published != 2 || st.Dropped != 0 {
		t.Fatalf("A's replication: %+v", st)
	}
}
