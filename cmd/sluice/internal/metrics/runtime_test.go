package metrics_test

import (
	"runtime"
	"testing"

	dto "github.com/prometheus/client_model/go"

	"github.com/sluice-dev/sluice/cmd/sluice/internal/metrics"
)

// TestRuntimeTailHistograms: /metrics carries the Go runtime's
// scheduling-latency and GC-pause histograms, and the GC cycle count,
// which `sluice load` reads to attribute a tail (issue 16); before, the
// default go_ set had neither histogram. The sluice_runtime_ copies are
// in power-of-two buckets.
func TestRuntimeTailHistograms(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{})
	runtime.GC() // at least one pause and one cycle to see
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatalf("gather: %v", err)
	}
	got := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		got[mf.GetName()] = mf
	}
	for _, name := range []string{"go_sched_latencies_seconds", "go_sched_pauses_total_gc_seconds", "sluice_runtime_sched_latency_seconds", "sluice_runtime_gc_pause_seconds"} {
		mf := got[name]
		if mf == nil {
			t.Errorf("%s is not exported", name)
			continue
		}
		if mf.GetType() != dto.MetricType_HISTOGRAM || len(mf.GetMetric()) != 1 {
			t.Errorf("%s: %v with %d series, want one histogram", name, mf.GetType(), len(mf.GetMetric()))
			continue
		}
		h := mf.GetMetric()[0].GetHistogram()
		if len(h.GetBucket()) < 5 || h.GetSampleCount() == 0 {
			t.Errorf("%s: %d buckets, %d samples; want buckets and samples", name, len(h.GetBucket()), h.GetSampleCount())
		}
	}
	if h := got["sluice_runtime_sched_latency_seconds"]; h != nil && len(h.GetMetric()[0].GetHistogram().GetBucket()) != 21 {
		t.Errorf("sluice_runtime_sched_latency_seconds has %d buckets, want 21 (2^10 … 2^30 ns)", len(h.GetMetric()[0].GetHistogram().GetBucket()))
	}
	if mf := got["go_gc_duration_seconds"]; mf == nil || mf.GetMetric()[0].GetSummary().GetSampleCount() == 0 {
		t.Errorf("go_gc_duration_seconds (the GC cycle count) is missing or zero: %v", mf)
	}
}
