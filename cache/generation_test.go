package cache_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cache"
)

// Two requests of the same question miss on both sides of a purge and
// the later one finishes first: each answer is stored under the generation
// its own lookup saw, so the fresh one is stored and the one computed
// before the purge is refused (it is never served after it). A request
// that never stores (it failed) does not keep a later one from storing.
func TestAnswersOfMissesAcrossAPurgeKeepTheirOwnGeneration(t *testing.T) {
	ctx := context.Background()
	c := cache.New(cache.Config{})
	ns := cache.Namespace{Tenant: "t1", Namespace: "wms", Model: "m"}
	q := "How many units of SKU-10234 are left in zone A?"
	r1 := c.Lookup(ctx, ns, q) // request 1's miss, before the purge
	if r1.Hit {
		t.Fatal("hit")
	}
	c.Purge("t1", "wms")
	r2 := c.Lookup(ctx, ns, q) // request 2's miss, after it
	if r2.Hit {
		t.Fatal("hit")
	}
	c.Store(ctx, ns, q, r2.Gen, cache.Answer{Chunks: []string{"fresh"}})
	c.Store(ctx, ns, q, r1.Gen, cache.Answer{Chunks: []string{"stale"}})
	r := c.Lookup(ctx, ns, q)
	if !r.Hit || r.Answer.Chunks[0] != "fresh" {
		t.Fatalf("after both stores: %+v, want the fresh answer", r)
	}

	// Request 3 misses and fails (never stores); request 4, after a purge,
	// stores its answer.
	c.Purge("t1", "wms")
	if c.Lookup(ctx, ns, q).Hit {
		t.Fatal("hit after the purge")
	}
	r4 := c.Lookup(ctx, ns, q)
	c.Store(ctx, ns, q, r4.Gen, cache.Answer{Chunks: []string{"fresher"}})
	if r := c.Lookup(ctx, ns, q); !r.Hit || r.Answer.Chunks[0] != "fresher" {
		t.Fatalf("a fresh answer after a failed request: %+v", r)
	}
	// The zero Generation is refused once the scope was purged; a purge of
	// another scope changes nothing.
	c.Store(ctx, ns, "another question", cache.Generation{}, cache.Answer{Chunks: []string{"x"}})
	if c.Lookup(ctx, ns, "another question").Hit {
		t.Fatal("the zero Generation was stored after a purge")
	}
	other := cache.Namespace{Tenant: "t1", Namespace: "ops", Model: "m"}
	g := c.Generation(other)
	c.Purge("t1", "wms")
	c.Store(ctx, other, q, g, cache.Answer{Chunks: []string{"ops"}})
	if !c.Lookup(ctx, other, q).Hit {
		t.Fatal("a purge of another scope refused the store")
	}
}

// failLog is a ChangeLog that never answers.
type failLog struct{}

func (failLog) Append(context.Context, cache.Change) (uint64, error) { return 0, errors.New("down") }
func (failLog) Read(ctx context.Context, after string, _ int, block time.Duration) ([]cache.Change, string, error) {
	return nil, after, errors.New("down")
}
func (failLog) Generations(context.Context) (string, map[cache.Scope]uint64, error) {
	return "", nil, errors.New("down")
}

// While the log is down the puts waiting to be appended stay within the
// cache's own bounds (MaxEntries and MaxBytes), not only Outbox: the
// oldest are dropped (counted), so answers the cache evicted are not kept
// alive by the queue.
func TestWaitingPutsStayWithinTheCacheBounds(t *testing.T) {
	ctx := context.Background()
	c := cache.New(cache.Config{MaxEntries: 10, MaxBytes: 1 << 20})
	// 64 KiB answers pass the default MaxPutBytes: raised, so that they are queued and the outbox bounds are what is tested.
	stop, err := c.Share(ctx, failLog{}, cache.ShareConfig{MaxBackoff: 50 * time.Millisecond, Timeout: 50 * time.Millisecond, MaxPutBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	big := make([]byte, 64<<10)
	for i := range big {
		big[i] = 'x'
	}
	ns := cache.Namespace{Tenant: "t1", Namespace: "wms", Model: "m"}
	for i := range 1000 {
		c.Store(ctx, ns, fmt.Sprintf("question number %d", i), c.Generation(ns), cache.Answer{Chunks: []string{string(big)}})
	}
	st := c.ShareStatus()
	if held := int64(st.Pending) * int64(len(big)); held > 1<<20 || st.Pending > 10 {
		t.Fatalf("cache bounded to 10 entries / 1 MiB, but the outbox holds %d puts (~%d KiB of answers)", st.Pending, held>>10)
	}
	if st.Pending == 0 || st.Dropped != int64(1000-st.Pending) {
		t.Fatalf("pending %d, dropped %d: want the newest kept and every other one counted as dropped", st.Pending, st.Dropped)
	}
	// Purges still wait, whatever the puts did.
	c.Purge("t1", "wms")
	if st := c.ShareStatus(); st.Pending != 1 {
		t.Fatalf("after a purge: %d waiting, want the purge alone (it drops the scope's puts)", st.Pending)
	}
}
