package load

import (
	"bytes"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"
)

// Two readings of a server's GET /metrics, as client_golang writes them
// (the runtime histograms here in decade buckets: the math does not
// depend on the bounds).
const (
	metricsBefore = `# HELP go_gc_duration_seconds A summary of the wall-time pause (stop-the-world) duration in garbage collection cycles.
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds{quantile="0.5"} 0.0001
go_gc_duration_seconds_sum 0.002
go_gc_duration_seconds_count 5
go_info{version="go1.26.8"} 1
# TYPE sluice_runtime_sched_latency_seconds histogram
sluice_runtime_sched_latency_seconds_bucket{le="1e-06"} 100
sluice_runtime_sched_latency_seconds_bucket{le="1e-05"} 150
sluice_runtime_sched_latency_seconds_bucket{le="0.0001"} 180
sluice_runtime_sched_latency_seconds_bucket{le="0.001"} 190
sluice_runtime_sched_latency_seconds_bucket{le="0.01"} 200
sluice_runtime_sched_latency_seconds_bucket{le="+Inf"} 200
sluice_runtime_sched_latency_seconds_sum 0.05
sluice_runtime_sched_latency_seconds_count 200
# TYPE sluice_runtime_gc_pause_seconds histogram
sluice_runtime_gc_pause_seconds_bucket{le="6.399999999999999e-08"} 0
sluice_runtime_gc_pause_seconds_bucket{le="8.191999999999999e-05"} 3
sluice_runtime_gc_pause_seconds_bucket{le="0.0009175039999999999"} 5
sluice_runtime_gc_pause_seconds_bucket{le="0.010485759999999998"} 5
sluice_runtime_gc_pause_seconds_bucket{le="+Inf"} 5
sluice_runtime_gc_pause_seconds_sum 0.001
sluice_runtime_gc_pause_seconds_count 5
process_cpu_seconds_total 10
go_memstats_mallocs_total 1e+06
go_memstats_alloc_bytes_total 5e+07
`
	// Between the two: sched latencies 200 in [0, 1µs], 500 in (1, 10µs],
	// 200 in (10, 100µs], 80 in (0.1, 1ms], 20 in (1, 10ms]; GC pauses 9
	// in (81.92µs, 0.9175ms] and one beyond 10.49ms; 20 GC cycles.
	metricsAfter = `go_gc_duration_seconds_count 25
sluice_runtime_sched_latency_seconds_bucket{le="1e-06"} 300
sluice_runtime_sched_latency_seconds_bucket{le="1e-05"} 850
sluice_runtime_sched_latency_seconds_bucket{le="0.0001"} 1080
sluice_runtime_sched_latency_seconds_bucket{le="0.001"} 1170
sluice_runtime_sched_latency_seconds_bucket{le="0.01"} 1200
sluice_runtime_sched_latency_seconds_bucket{le="+Inf"} 1200
sluice_runtime_gc_pause_seconds_bucket{le="6.399999999999999e-08"} 0
sluice_runtime_gc_pause_seconds_bucket{le="8.191999999999999e-05"} 3
sluice_runtime_gc_pause_seconds_bucket{le="0.0009175039999999999"} 14
sluice_runtime_gc_pause_seconds_bucket{le="0.010485759999999998"} 14
sluice_runtime_gc_pause_seconds_bucket{le="+Inf"} 15
process_cpu_seconds_total 1.25e+01
go_memstats_mallocs_total 1.3e+06
go_memstats_alloc_bytes_total 8.6e+07
`
)

// TestRuntimeReportFromMetricsDelta: a run's runtime figures are the
// quantiles of the difference of two /metrics readings, interpolated
// within a bucket as Prometheus' histogram_quantile does.
func TestRuntimeReportFromMetricsDelta(t *testing.T) {
	before, after := parseServerStats(metricsBefore), parseServerStats(metricsAfter)
	if !before.cpuOK || before.cpu != 10 || after.cpu != 12.5 {
		t.Errorf("cpu %v (%v) → %v, want 10 → 12.5", before.cpu, before.cpuOK, after.cpu)
	}
	r := runtimeReport(before, after, 1000)
	if r == nil {
		t.Fatal("no runtime report")
	}
	// p50: rank 500 of 1000 falls in (1µs, 10µs], 300 of its 500:
	// 1 + 9·300/500 = 6.4µs. p99: rank 990 in (1ms, 10ms], 10 of its
	// 20: 1000 + 9000·10/20 = 5500µs. The highest bucket used ends at
	// 10ms.
	wantSched := HistogramSummary{Count: 1000, P50: 6.4, P99: 5500, Max: 10000}
	if r.SchedLatency != wantSched {
		t.Errorf("sched latency %+v, want %+v", r.SchedLatency, wantSched)
	}
	// p50: rank 5 of 10 in (81.92µs, 917.504µs], 5 of its 9:
	// 81.92 + 835.584·5/9 = 546.1µs. p99: rank 9.9 in +Inf, so the
	// highest finite bound; max beyond it (-1).
	wantPause := HistogramSummary{Count: 10, P50: 546.1, P99: 10485.8, Max: -1}
	if r.GCPause != wantPause {
		t.Errorf("gc pause %+v, want %+v", r.GCPause, wantPause)
	}
	if r.GCCycles != 20 || r.GCCyclesPer1kReqs != 20 {
		t.Errorf("gc %v cycles, %v per 1k requests; want 20, 20", r.GCCycles, r.GCCyclesPer1kReqs)
	}
	if r.AllocsPerRequest != 300 || r.BytesPerRequest != 36000 {
		t.Errorf("%v allocations, %v bytes per request; want 300, 36000", r.AllocsPerRequest, r.BytesPerRequest)
	}

	b, err := json.Marshal(&Report{ServerRuntime: r})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"sched_latency_us":{"count":1000,"p50":6.4,"p99":5500,"max_le":10000}`, `"gc_cycles_per_1k_requests":20`} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
	var text bytes.Buffer
	writeLoadReport(&text, Config{}, &Report{ServerRuntime: r})
	for _, want := range []string{"p50 6.4µs · p99 5.50ms · max ≤ 10.00ms (n 1000)", "20 cycles · 20.0 per 1,000 requests · pauses p50 546.1µs · p99 10.49ms · max ≤ +Inf (n 10)", "300 allocations · 35.2 KiB per request"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text report lacks %q:\n%s", want, text.String())
		}
	}
}

// TestRuntimeReportNeedsMatchingReadings: a histogram whose buckets
// changed or whose counts went down (another process answered, the
// server restarted) gives no figures rather than wrong ones, and a
// server without the runtime metrics gives no report.
func TestRuntimeReportNeedsMatchingReadings(t *testing.T) {
	before, after := parseServerStats(metricsBefore), parseServerStats(metricsAfter)
	if r := runtimeReport(after, before, 10); r == nil || r.SchedLatency.Count != 0 || r.GCPause.Count != 0 {
		t.Errorf("counts that went down gave %+v", r)
	}
	other := parseServerStats(strings.ReplaceAll(metricsAfter, `le="0.01"`, `le="0.02"`))
	if r := runtimeReport(before, other, 10); r.SchedLatency.Count != 0 || r.GCPause.Count != 10 {
		t.Errorf("other buckets gave %+v", r)
	}
	if r := runtimeReport(parseServerStats("process_cpu_seconds_total 1\n"), parseServerStats("process_cpu_seconds_total 2\n"), 10); r != nil {
		t.Errorf("no runtime metrics gave %+v", r)
	}
	both := parseServerStats(metricsAfter + "go_sched_latencies_seconds_bucket{le=\"1.024e-06\"} 7\ngo_sched_latencies_seconds_bucket{le=\"+Inf\"} 9\n")
	if !slices.Equal(both.sched.le, parseServerStats(metricsAfter).sched.le) || len(both.gcPause.le) != 5 {
		t.Errorf("with client_golang's copy beside, read sched %v and pauses %v; want sluice's only", both.sched.le, both.gcPause.le)
	}
	if q := (histogram{}).quantile(0.99); !math.IsNaN(q) {
		t.Errorf("quantile of nothing = %v, want NaN", q)
	}
}
