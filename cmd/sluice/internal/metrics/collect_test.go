package metrics_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cmd/sluice/internal/metrics"
	"github.com/sluice-dev/sluice/pipeline"
)

// gather collects m on a pedantic registry (which checks every metric
// against its description) into families.
func gather(t testing.TB, m *metrics.Metrics) families {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	f := families{}
	for _, mf := range mfs {
		f[mf.GetName()] = mf
	}
	return f
}

// fakeCache is a CacheSource whose stats the test sets.
type fakeCache struct {
	mu    sync.Mutex
	stats []cache.NamespaceStats
}

func (c *fakeCache) Stats() []cache.NamespaceStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]cache.NamespaceStats(nil), c.stats...)
}

func (c *fakeCache) add(s cache.NamespaceStats) {
	c.mu.Lock()
	c.stats = append(c.stats, s)
	c.mu.Unlock()
}

func TestCacheNamespaceLabelIsCapped(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{MaxNamespaces: 2, NoRuntime: true})
	c := &fakeCache{}
	// Two tenants share request namespace "a": one label value, summed.
	c.add(cache.NamespaceStats{Namespace: "t1/a/m", Tenant: "t1", Name: "a", Model: "m", Entries: 1, HitsExact: 1, Misses: 2})
	c.add(cache.NamespaceStats{Namespace: "t2/a/m", Tenant: "t2", Name: "a", Model: "m", Entries: 2, HitsSemantic: 3, Misses: 1})
	c.add(cache.NamespaceStats{Namespace: "t1/b/m", Tenant: "t1", Name: "b", Model: "m", Entries: 1, Evictions: 4})
	m.WatchCache(c)
	f := gather(t, m)
	if got := f.get("sluice_cache_entries", "namespace", "a"); got != 3 {
		t.Errorf("entries{a} = %v, want 3", got)
	}
	if got := f.get("sluice_cache_lookups_total", "namespace", "a", "result", "hit", "kind", "semantic"); got != 3 {
		t.Errorf("semantic hits{a} = %v, want 3", got)
	}
	if got := f.get("sluice_cache_evictions_total", "namespace", "b"); got != 4 {
		t.Errorf("evictions{b} = %v, want 4", got)
	}

	// The cap is reached: later namespaces are summed under (other), and
	// the admitted ones keep their own series.
	c.add(cache.NamespaceStats{Namespace: "t1/c/m", Tenant: "t1", Name: "c", Model: "m", Entries: 5, Misses: 5})
	c.add(cache.NamespaceStats{Namespace: "t1/d/m", Tenant: "t1", Name: "d", Model: "m", Entries: 7, Misses: 1})
	f = gather(t, m)
	if got := f.get("sluice_cache_entries", "namespace", metrics.OtherNamespace); got != 12 {
		t.Errorf("entries{(other)} = %v, want 12", got)
	}
	if got := f.get("sluice_cache_lookups_total", "namespace", metrics.OtherNamespace, "result", "miss"); got != 6 {
		t.Errorf("misses{(other)} = %v, want 6", got)
	}
	if got := f.get("sluice_cache_entries", "namespace", "c"); got != 0 {
		t.Errorf("namespace c has its own series beyond the cap")
	}
	if got := len(f["sluice_cache_entries"].GetMetric()); got != 3 {
		t.Errorf("%d entries series, want 3 (a, b, (other))", got)
	}
	if got := f.get("sluice_cache_namespaces"); got != 5 {
		t.Errorf("namespaces = %v, want 5", got)
	}

	// A nil *cache.Cache is no source.
	m.WatchCache((*cache.Cache)(nil))
	if f := gather(t, m); f["sluice_cache_entries"] != nil {
		t.Error("cache metrics after WatchCache(nil)")
	}
}

// fakeGates is a GateSource over real gates and breakers.
type fakeGates struct {
	g []*pipeline.Gate
	b []*pipeline.Breaker
}

func (f fakeGates) Gates() []*pipeline.Gate       { return f.g }
func (f fakeGates) Breakers() []*pipeline.Breaker { return f.b }

func TestGatesAreReadAtScrapeTime(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{NoRuntime: true})
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 3, QueueLimit: 5})
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Name: "up"})
	m.WatchGates(fakeGates{g: []*pipeline.Gate{g}, b: []*pipeline.Breaker{b}})

	var held []*pipeline.Permit
	for range 2 {
		p, err := g.Acquire(t.Context(), 0)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	f := gather(t, m)
	for name, want := range map[string]float64{
		"sluice_gate_in_flight": 2, "sluice_gate_limit": 3, "sluice_gate_queue_limit": 5,
		"sluice_gate_acquired_total": 2, "sluice_gate_released_total": 0,
	} {
		if got := f.get(name, "upstream", "up"); got != want {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if got := f.get("sluice_breaker_state", "upstream", "up", "state", "closed"); got != 1 {
		t.Errorf("breaker closed = %v, want 1", got)
	}
	for _, p := range held {
		p.Release()
	}
	if got := gather(t, m).get("sluice_gate_in_flight", "upstream", "up"); got != 0 {
		t.Errorf("in flight after release = %v, want 0", got)
	}
}

func TestObserveRedis(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{NoRuntime: true})
	m.ObserveRedis("get", 2*time.Millisecond, nil)
	m.ObserveRedis("get", 3*time.Millisecond, errors.New("i/o timeout"))
	m.ObserveRedis("GET key:123", time.Millisecond, nil) // not an operation name
	f := gather(t, m)
	for _, c := range []struct {
		lv   []string
		want float64
	}{
		{[]string{"op", "get", "result", "ok"}, 1},
		{[]string{"op", "get", "result", "error"}, 1},
		{[]string{"op", "other"}, 1},
	} {
		if got := f.get("sluice_redis_operations_total", c.lv...); got != c.want {
			t.Errorf("redis ops %v = %v, want %v", c.lv, got, c.want)
		}
	}
	if got := f.get("sluice_redis_operation_duration_seconds_count", "op", "get"); got != 2 {
		t.Errorf("redis latency count = %v, want 2", got)
	}
}

// TestClassesAreReadAtScrapeTime: the per-class gauges and counter follow
// the gate's classes (label "class").
func TestClassesAreReadAtScrapeTime(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{NoRuntime: true})
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 4, QueueLimit: 5})
	m.WatchGates(fakeGates{g: []*pipeline.Gate{g}, b: []*pipeline.Breaker{pipeline.NewBreaker(pipeline.BreakerConfig{Name: "up"})}})
	batch := pipeline.Who{Class: pipeline.ClassBatch}
	var held []*pipeline.Permit
	for range 4 {
		p, err := g.TryAcquireAs(batch)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, p)
	}
	c, err := g.EnqueueAs(batch)
	if err != nil {
		t.Fatal(err)
	}
	f := gather(t, m)
	for _, w := range []struct {
		name, class string
		want        float64
	}{
		{"sluice_gate_class_in_flight", "batch", 4}, {"sluice_gate_class_in_flight", "interactive", 0},
		{"sluice_gate_class_waiting", "batch", 1}, {"sluice_gate_class_queued", "batch", 1},
		{"sluice_gate_class_guaranteed", "interactive", 2}, {"sluice_gate_class_guaranteed", "batch", 2},
		{"sluice_gate_class_acquired_total", "batch", 4},
	} {
		if got := f.get(w.name, "upstream", "up", "class", w.class); got != w.want {
			t.Errorf("%s{class=%q} = %v, want %v", w.name, w.class, got, w.want)
		}
	}
	c.Abandon()
	for _, p := range held {
		p.Release()
	}
}
