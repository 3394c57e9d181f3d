package cache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cache"
)

// PROBE (review of issue 13): the same question missed twice across a
// purge (request 1 before it, request 2 after it); request 2 finishes
// first. The missLog keeps one record per key: request 2's Store takes it
// (the older generation: the fresh answer is refused) and request 1's Store
// finds none and uses the current generation: the answer computed before
// the purge is stored after it (and, shared, appended to every instance).
func TestProbeConcurrentMissesAcrossPurge(t *testing.T) {
	ctx := context.Background()
	c := cache.New(cache.Config{})
	ns := cache.Namespace{Tenant: "t1", Namespace: "wms", Model: "m"}
	q := "How many units of SKU-10234 are left in zone A?"
	if c.Lookup(ctx, ns, q).Hit { // request 1's miss, generation 0
		t.Fatal("hit")
	}
	c.Purge("t1", "wms")
	if c.Lookup(ctx, ns, q).Hit { // request 2's miss, generation 1
		t.Fatal("hit")
	}
	c.Store(ctx, ns, q, cache.Answer{Chunks: []string{"fresh"}}) // request 2 (after the purge)
	c.Store(ctx, ns, q, cache.Answer{Chunks: []string{"stale"}}) // request 1 (began before the purge)
	r := c.Lookup(ctx, ns, q)
	if r.Hit && r.Answer.Chunks[0] == "stale" {
		t.Fatalf("the answer whose miss came before the purge is served after it: %q", r.Answer.Chunks)
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

// PROBE: while the log is down the outbox keeps every put's entry (and its
// answer) alive, up to Outbox (10000) puts, whatever MaxEntries/MaxBytes
// say: entries the cache evicted long ago stay in memory.
func TestProbeOutboxOutlivesCacheBounds(t *testing.T) {
	ctx := context.Background()
	c := cache.New(cache.Config{MaxEntries: 10, MaxBytes: 1 << 20})
	stop, err := c.Share(ctx, failLog{}, cache.ShareConfig{MaxBackoff: 50 * time.Millisecond, Timeout: 50 * time.Millisecond})
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
		c.Store(ctx, ns, "question number "+string(rune('a'+i%26))+string(rune('a'+i/26%26))+string(rune('a'+i/676)), cache.Answer{Chunks: []string{string(big)}})
	}
	st := c.ShareStatus()
	if held := int64(st.Pending) * int64(len(big)); held > 1<<20 {
		t.Fatalf("cache bounded to 10 entries / 1 MiB, but the outbox holds %d puts (~%d MiB of answers)", st.Pending, held>>20)
	}
}
