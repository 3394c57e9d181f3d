package metrics

import (
	"math"
	rtmetrics "runtime/metrics"

	"github.com/prometheus/client_golang/prometheus"
)

// runtimeBuckets are the upper bounds of the runtime histograms sluice
// exports itself: powers of two from 2^10 ns (~1 µs) to 2^30 ns
// (~1.07 s). The runtime's own time buckets split every power of two
// from 2^9 ns, so these sums are exact, and a quantile is placed within
// a factor of two (client_golang's go_ copies use powers of ten).
var runtimeBuckets = func() []float64 {
	var b []float64
	for k := 10; k <= 30; k++ {
		b = append(b, float64(int64(1)<<k)/1e9)
	}
	return b
}()

// runtimeScraper reads the runtime's scheduling-latency and GC-pause
// histograms at scrape time (runtime/metrics) and re-buckets them to
// runtimeBuckets.
type runtimeScraper struct {
	descs   []*prometheus.Desc
	samples []string // the runtime/metrics name of each desc
}

func newRuntimeScraper() *runtimeScraper {
	return &runtimeScraper{
		descs:   []*prometheus.Desc{newDesc(nameRuntimeSched), newDesc(nameRuntimeGCPause)},
		samples: []string{"/sched/latencies:seconds", "/sched/pauses/total/gc:seconds"},
	}
}

func (r *runtimeScraper) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range r.descs {
		ch <- d
	}
}

func (r *runtimeScraper) Collect(ch chan<- prometheus.Metric) {
	s := make([]rtmetrics.Sample, len(r.samples))
	for i, name := range r.samples {
		s[i].Name = name
	}
	rtmetrics.Read(s)
	for i := range s {
		if s[i].Value.Kind() != rtmetrics.KindFloat64Histogram {
			continue // not in this Go version
		}
		count, sum, buckets := rebucket(s[i].Value.Float64Histogram(), runtimeBuckets)
		ch <- prometheus.MustNewConstHistogram(r.descs[i], count, sum, buckets)
	}
}

// rebucket sums a runtime histogram (bucket i holds values in
// [Buckets[i], Buckets[i+1])) into cumulative counts at the upper bounds
// le: a runtime bucket counts under the first bound at or above its upper
// end. The sum is estimated from each runtime bucket's lower end (its
// upper end for the first, open one), as the runtime keeps none.
func rebucket(h *rtmetrics.Float64Histogram, le []float64) (count uint64, sum float64, buckets map[float64]uint64) {
	buckets = make(map[float64]uint64, len(le))
	j := 0
	for i, n := range h.Counts {
		lo, hi := h.Buckets[i], h.Buckets[i+1]
		for j < len(le) && le[j]*(1+1e-9) < hi {
			buckets[le[j]] = count
			j++
		}
		count += n
		if math.IsInf(lo, -1) {
			lo = hi
		}
		if !math.IsInf(lo, 0) {
			sum += float64(n) * lo
		}
	}
	for ; j < len(le); j++ {
		buckets[le[j]] = count
	}
	return count, sum, buckets
}
