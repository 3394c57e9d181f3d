package load

import (
	"context"
	"io"
	"iter"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The server's /metrics series a run reads before and after itself
// (cmd/sluice/internal/metrics registers the runtime histograms; of their
// two copies, sluice's power-of-two buckets are read: a server that
// exports client_golang's decade copy exports them too).
const (
	metricCPU        = "process_cpu_seconds_total"
	metricGCCycles   = "go_gc_duration_seconds_count"
	metricMallocs    = "go_memstats_mallocs_total"
	metricAllocBytes = "go_memstats_alloc_bytes_total"
	metricSchedLat   = "sluice_runtime_sched_latency_seconds"
	metricGCPause    = "sluice_runtime_gc_pause_seconds"
	maxMetricsLength = 8 << 20
)

// serverStats is what the server's GET /metrics says of its process at
// one moment: CPU seconds, GC cycles, and the runtime's scheduling
// latency and GC pause histograms. A field the server does not export
// stays zero (ok false, or a histogram with no buckets).
type serverStats struct {
	cpu, gcCycles, mallocs, allocBytes     float64
	cpuOK, gcCyclesOK, mallocsOK, allocsOK bool
	sched, gcPause                         histogram
}

// histogram is a Prometheus classic histogram: the upper bounds (le) in
// ascending order, the last one +Inf, with their cumulative counts.
type histogram struct {
	le    []float64
	count []float64
}

// scrapeServer reads serverStats from GET /metrics; ok is false when it
// cannot (the server unreachable, a key needed).
func scrapeServer(ctx context.Context, hc *http.Client, server, apiKey string) (serverStats, bool) {
	text, ok := getMetrics(ctx, hc, server, apiKey)
	if !ok {
		return serverStats{}, false
	}
	return parseServerStats(text), true
}

// getMetrics is the text of the server's GET /metrics (at most
// maxMetricsLength of it); ok is false when it cannot be read.
func getMetrics(ctx context.Context, hc *http.Client, server, apiKey string) (text string, ok bool) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, server+"/metrics", nil)
	if err != nil {
		return "", false
	}
	if apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+apiKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", false
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return "", false
	}
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxMetricsLength))
	return string(b), true
}

// metricSamples yields the name (with its labels, as written) and value
// of every sample line of a Prometheus text exposition.
func metricSamples(text string) iter.Seq2[string, float64] {
	return func(yield func(string, float64) bool) {
		for line := range strings.SplitSeq(text, "\n") {
			if line == "" || line[0] == '#' {
				continue
			}
			name, value, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
			if err != nil {
				continue
			}
			if !yield(name, v) {
				return
			}
		}
	}
}

// parseServerStats reads serverStats from the Prometheus text exposition
// format. Series with labels other than le are not read (these metrics
// have none).
func parseServerStats(text string) serverStats {
	var s serverStats
	for name, v := range metricSamples(text) {
		switch name {
		case metricCPU:
			s.cpu, s.cpuOK = v, true
		case metricGCCycles:
			s.gcCycles, s.gcCyclesOK = v, true
		case metricMallocs:
			s.mallocs, s.mallocsOK = v, true
		case metricAllocBytes:
			s.allocBytes, s.allocsOK = v, true
		default:
			base, le, ok := bucketOf(name)
			if !ok {
				continue
			}
			switch base {
			case metricSchedLat:
				s.sched.add(le, v)
			case metricGCPause:
				s.gcPause.add(le, v)
			}
		}
	}
	return s
}

// bucketOf splits `name_bucket{le="x"}` into name and x.
func bucketOf(series string) (string, float64, bool) {
	name, rest, ok := strings.Cut(series, `_bucket{le="`)
	if !ok {
		return "", 0, false
	}
	bound, ok := strings.CutSuffix(rest, `"}`)
	if !ok {
		return "", 0, false
	}
	le, err := strconv.ParseFloat(bound, 64) // "+Inf" parses as +Inf
	if err != nil {
		return "", 0, false
	}
	return name, le, true
}

// add records a bucket; the exposition lists buckets in ascending order,
// but a bucket out of order is put in its place.
func (h *histogram) add(le, cumulative float64) {
	i, _ := slices.BinarySearch(h.le, le)
	h.le = slices.Insert(h.le, i, le)
	h.count = slices.Insert(h.count, i, cumulative)
}

// since returns h less an earlier reading of the same histogram: the
// observations between the two. ok is false when the buckets differ or
// a count went down (the server restarted).
func (h histogram) since(before histogram) (histogram, bool) {
	if len(h.le) == 0 || !slices.Equal(h.le, before.le) {
		return histogram{}, false
	}
	d := histogram{le: h.le, count: make([]float64, len(h.count))}
	for i := range h.count {
		d.count[i] = h.count[i] - before.count[i]
		if d.count[i] < 0 {
			return histogram{}, false
		}
	}
	return d, true
}

// total is the number of observations (the +Inf bucket).
func (h histogram) total() float64 {
	if len(h.count) == 0 {
		return 0
	}
	return h.count[len(h.count)-1]
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile
// does: it finds the bucket holding rank q·total and interpolates
// linearly between the bucket's lower bound (the previous upper bound, 0
// for the first bucket) and its upper bound. A rank in the +Inf bucket
// returns the highest finite bound. It is NaN with no observations.
func (h histogram) quantile(q float64) float64 {
	n := h.total()
	if n == 0 {
		return math.NaN()
	}
	rank := q * n
	for i, c := range h.count {
		if c < rank {
			continue
		}
		if math.IsInf(h.le[i], 1) {
			if i == 0 {
				return math.NaN()
			}
			return h.le[i-1]
		}
		lower, below := 0.0, 0.0
		if i > 0 {
			lower, below = h.le[i-1], h.count[i-1]
		}
		if c == below { // rank 0 in an empty run of buckets
			return h.le[i]
		}
		return lower + (h.le[i]-lower)*(rank-below)/(c-below)
	}
	return h.le[len(h.le)-1]
}

// max is the upper bound of the highest bucket with an observation: the
// largest observation is at most this (+Inf when it is in the last
// bucket). It is NaN with no observations.
func (h histogram) max() float64 {
	for i := len(h.count) - 1; i >= 0; i-- {
		below := 0.0
		if i > 0 {
			below = h.count[i-1]
		}
		if h.count[i] > below {
			return h.le[i]
		}
	}
	return math.NaN()
}

// RuntimeReport is what the server's Go runtime did during a run, from
// the difference of two GET /metrics: the waits a request's latency can
// hide. The histograms are sluice's own power-of-two copies of the
// runtime's, so their quantiles place a value within a factor of two
// (interpolated).
type RuntimeReport struct {
	SchedLatency      HistogramSummary `json:"sched_latency_us"` // time goroutines waited runnable before they ran
	GCPause           HistogramSummary `json:"gc_pause_us"`      // stop-the-world pauses of the GC
	GCCycles          float64          `json:"gc_cycles"`
	GCCyclesPer1kReqs float64          `json:"gc_cycles_per_1k_requests"` // per 1,000 completed or refused requests
	AllocsPerRequest  float64          `json:"allocs_per_request"`        // heap allocations per completed or refused request
	BytesPerRequest   float64          `json:"alloc_bytes_per_request"`   // heap bytes allocated per completed or refused request
}

// HistogramSummary summarizes a histogram's observations in µs: p50 and
// p99 interpolated within their bucket, max the upper bound of the
// highest bucket used (-1: beyond the highest finite bound). A summary
// of no observations is all zero.
type HistogramSummary struct {
	Count float64 `json:"count"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max_le"`
}

func summarizeHistogram(h histogram) HistogramSummary {
	n := h.total()
	if n == 0 {
		return HistogramSummary{}
	}
	us := func(s float64) float64 {
		if math.IsInf(s, 1) {
			return -1
		}
		return math.Round(s*1e7) / 10 // seconds to µs, one decimal
	}
	return HistogramSummary{Count: n, P50: us(h.quantile(0.5)), P99: us(h.quantile(0.99)), Max: us(h.max())}
}

// runtimeReport is the difference between two readings, per the run's
// requests; nil when the server exports none of it.
func runtimeReport(before, after serverStats, requests int) *RuntimeReport {
	sched, schedOK := after.sched.since(before.sched)
	pause, pauseOK := after.gcPause.since(before.gcPause)
	gcOK := before.gcCyclesOK && after.gcCyclesOK
	if !schedOK && !pauseOK && !gcOK {
		return nil
	}
	r := &RuntimeReport{SchedLatency: summarizeHistogram(sched), GCPause: summarizeHistogram(pause)}
	if gcOK {
		r.GCCycles = after.gcCycles - before.gcCycles
		if requests > 0 {
			r.GCCyclesPer1kReqs = round1(r.GCCycles * 1000 / float64(requests))
		}
	}
	if requests > 0 && before.mallocsOK && after.mallocsOK {
		r.AllocsPerRequest = math.Round((after.mallocs - before.mallocs) / float64(requests))
	}
	if requests > 0 && before.allocsOK && after.allocsOK {
		r.BytesPerRequest = math.Round((after.allocBytes - before.allocBytes) / float64(requests))
	}
	return r
}

// String prints the summary as "p50 1.2µs · p99 3.4µs · max ≤ 5.6µs (n 7)".
func (s HistogramSummary) String() string {
	if s.Count == 0 {
		return "none"
	}
	us := func(v float64) string {
		switch {
		case v < 0:
			return "+Inf"
		case v >= 1000:
			return strconv.FormatFloat(v/1000, 'f', 2, 64) + "ms"
		}
		return strconv.FormatFloat(v, 'f', 1, 64) + "µs"
	}
	return "p50 " + us(s.P50) + " · p99 " + us(s.P99) + " · max ≤ " + us(s.Max) + " (n " + strconv.FormatFloat(s.Count, 'f', 0, 64) + ")"
}
