package metrics

import (
	"math"
	rtmetrics "runtime/metrics"
	"slices"
	"testing"
)

// TestRebucket: a runtime histogram's buckets are summed under the first
// exported bound at or above their upper end, cumulatively.
func TestRebucket(t *testing.T) {
	ns := func(n float64) float64 { return n / 1e9 }
	h := &rtmetrics.Float64Histogram{
		Buckets: []float64{math.Inf(-1), 0, ns(512), ns(640), ns(1024), ns(1280), ns(2048), math.Inf(1)},
		Counts:  []uint64{1, 2, 3, 0, 4, 5, 6},
	}
	count, sum, buckets := rebucket(h, []float64{ns(1024), ns(2048), ns(4096)})
	if count != 21 {
		t.Errorf("count %d, want 21", count)
	}
	if want := ns(3*512 + 4*1024 + 5*1280 + 6*2048); math.Abs(sum-want) > 1e-15 {
		t.Errorf("sum %g, want %g (each bucket's lower end)", sum, want)
	}
	want := map[float64]uint64{ns(1024): 6, ns(2048): 15, ns(4096): 15}
	for le, n := range want {
		if buckets[le] != n {
			t.Errorf("le %g: %d, want %d (all %v)", le, buckets[le], n, buckets)
		}
	}
}

// TestRuntimeBucketsSplitExactly: every exported bound is a bound of the
// runtime's own time histogram, so the re-bucketing moves no
// observation (the claim in docs/metrics.md).
func TestRuntimeBucketsSplitExactly(t *testing.T) {
	for _, name := range newRuntimeScraper().samples {
		s := []rtmetrics.Sample{{Name: name}}
		rtmetrics.Read(s)
		if s[0].Value.Kind() != rtmetrics.KindFloat64Histogram {
			t.Fatalf("%s: kind %v", name, s[0].Value.Kind())
		}
		rb := s[0].Value.Float64Histogram().Buckets
		for _, le := range runtimeBuckets {
			if !slices.Contains(rb, le) {
				t.Errorf("%s: %g is not a runtime bucket bound", name, le)
			}
		}
	}
}
