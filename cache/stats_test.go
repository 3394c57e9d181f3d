package cache_test

import (
	"fmt"
	"testing"

	"github.com/sluice-dev/sluice/cache"
)

// TestStatsAreBounded: counters exist for at most MaxNamespaces effective
// namespaces, the most recently used (before: one per namespace ever
// seen, kept forever and walked on every stats request). A namespace
// whose counters were dropped keeps its entries, and is counted again
// once used.
func TestStatsAreBounded(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{MaxNamespaces: 3})
	first := cache.Namespace{Tenant: "a", Namespace: "first", Model: "m"}
	c.Store(ctx, first, "q", c.Generation(first), ans("x"))
	for i := range 1000 {
		c.Lookup(ctx, cache.Namespace{Tenant: "a", Namespace: "n", Model: fmt.Sprintf("model-%d", i)}, "q")
	}
	st := c.Stats()
	if len(st) != 3 {
		t.Fatalf("%d namespaces have counters; want 3 (MaxNamespaces)", len(st))
	}
	for _, s := range st {
		if s.Namespace == first.String() {
			t.Fatalf("the least recently used namespace kept its counters")
		}
	}
	if r := c.Lookup(ctx, first, "q"); !r.Hit {
		t.Fatal("dropping a namespace's counters dropped its entries")
	}
	if s := statsOf(c, first); s.Entries != 1 || s.HitsExact != 1 {
		t.Fatalf("counters of a namespace used again: %+v", s)
	}
	if len(c.Stats()) != 3 {
		t.Fatalf("%d namespaces have counters; want 3", len(c.Stats()))
	}
}

// TestPurgeDropsStats: a purge removes the namespace's counters with its
// entries (before: the counters stayed forever), for every model, even
// the entries of a namespace whose counters had been dropped already.
func TestPurgeDropsStats(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{MaxNamespaces: 2})
	wms1 := cache.Namespace{Tenant: "a", Namespace: "wms", Model: "m1"}
	wms2 := cache.Namespace{Tenant: "a", Namespace: "wms", Model: "m2"}
	ops := cache.Namespace{Tenant: "a", Namespace: "ops", Model: "m1"}
	other := cache.Namespace{Tenant: "b", Namespace: "wms", Model: "m1"}
	c.Store(ctx, wms1, "q", c.Generation(wms1), ans("x")) // its counters are dropped by the next two
	c.Store(ctx, wms2, "q", c.Generation(wms2), ans("x"))
	c.Store(ctx, ops, "q", c.Generation(ops), ans("x"))
	c.Store(ctx, other, "q", c.Generation(other), ans("x"))
	if n := c.Purge("a", "wms"); n != 2 {
		t.Fatalf("Purge = %d; want 2 (both models, counted or not)", n)
	}
	for _, s := range c.Stats() {
		if s.Tenant == "a" && s.Name == "wms" {
			t.Fatalf("purged namespace still has counters: %+v", s)
		}
	}
	for _, ns := range []cache.Namespace{wms1, wms2} {
		if r := c.Lookup(ctx, ns, "q"); r.Hit {
			t.Fatalf("%v: purged entry hit", ns)
		}
	}
	for _, ns := range []cache.Namespace{ops, other} {
		if r := c.Lookup(ctx, ns, "q"); !r.Hit {
			t.Fatalf("%v: entry of another namespace or tenant purged", ns)
		}
	}
}
