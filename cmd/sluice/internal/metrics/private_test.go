package metrics_test

import (
	"context"
	"testing"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cmd/sluice/internal/metrics"
)

// TestNamespaceNamesAreNotExportedByDefault: tenants choose their
// namespace names, so by default the cache metrics sum every namespace
// under one label value (before: the first 100 names were labels, on a
// /metrics that needs no key).
func TestNamespaceNamesAreNotExportedByDefault(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{NoRuntime: true})
	c := &fakeCache{}
	c.add(cache.NamespaceStats{Namespace: "t1/acme-secret-project@m", Tenant: "t1", Name: "acme-secret-project", Model: "m", Entries: 2, Misses: 3})
	c.add(cache.NamespaceStats{Namespace: "t2/wms@m", Tenant: "t2", Name: "wms", Model: "m", Entries: 1, HitsExact: 4})
	m.WatchCache(c)
	f := gather(t, m)
	for _, name := range []string{"sluice_cache_entries", "sluice_cache_lookups_total", "sluice_cache_bytes", "sluice_cache_evictions_total"} {
		for _, s := range f[name].GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "namespace" && l.GetValue() != metrics.OtherNamespace {
					t.Fatalf("%s exports namespace %q", name, l.GetValue())
				}
			}
		}
	}
	if got := f.get("sluice_cache_entries", "namespace", metrics.OtherNamespace); got != 3 {
		t.Errorf("entries{(other)} = %v, want 3", got)
	}
	if got := f.get("sluice_cache_lookups_total", "namespace", metrics.OtherNamespace, "result", "hit", "kind", "exact"); got != 4 {
		t.Errorf("exact hits{(other)} = %v, want 4", got)
	}
}

// TestCacheCountersSurviveDroppedNamespaces: when the cache drops a
// namespace's counters (a purge, or past its cap), the exported counters
// do not go down: the dropped counts are kept under (other).
func TestCacheCountersSurviveDroppedNamespaces(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := metrics.New(metrics.Config{NoRuntime: true})
	c := cache.New(cache.Config{MaxNamespaces: 2})
	m.WatchCache(c)
	misses := func() float64 {
		return gather(t, m).get("sluice_cache_lookups_total", "namespace", metrics.OtherNamespace, "result", "miss")
	}
	for _, name := range []string{"a", "b", "c", "d"} {
		c.Lookup(ctx, cache.Namespace{Tenant: "t", Namespace: name, Model: "m"}, "q")
	}
	if got := misses(); got != 4 {
		t.Fatalf("misses = %v after 4 lookups in 4 namespaces (2 counted), want 4", got)
	}
	c.Purge("t", "d")
	if got := misses(); got != 4 {
		t.Fatalf("misses = %v after a purge, want 4", got)
	}
}

type fakeConns struct{}

func (fakeConns) ConnCounts() (open, reserved int, refused int64) { return 7, 2, 41 }

// TestConnCountsAreScraped: the listener's counts (connections open,
// reserved for operations, refused beyond the cap) are read at scrape
// time.
func TestConnCountsAreScraped(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{NoRuntime: true})
	if f := gather(t, m); f["sluice_http_connections_open"] != nil {
		t.Fatal("connection metrics without a source")
	}
	m.WatchConns(fakeConns{})
	f := gather(t, m)
	for name, want := range map[string]float64{
		"sluice_http_connections_open": 7, "sluice_http_connections_reserved": 2, "sluice_http_connections_refused_total": 41,
	} {
		if got := f.get(name); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
}
