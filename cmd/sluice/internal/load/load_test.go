package load

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestLoadPromptsAreDeterministicAndVaried(t *testing.T) {
	gen := func(seed uint64, repeat float64, n int) (ps []string, reps int) {
		g := newPromptGen(seed, repeat)
		for range n {
			p, rep := g.Next()
			ps = append(ps, p)
			if rep {
				reps++
			}
		}
		return ps, reps
	}
	a, repsA := gen(7, 0.3, 1000)
	b, _ := gen(7, 0.3, 1000)
	c, _ := gen(8, 0.3, 1000)
	if strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Error("the same seed gave other prompts")
	}
	if strings.Join(a, "\n") == strings.Join(c, "\n") {
		t.Error("another seed gave the same prompts")
	}
	if repsA < 250 || repsA > 350 {
		t.Errorf("%d repeats of 1000 at 0.3", repsA)
	}
	seen := map[string]bool{}
	for _, p := range a {
		seen[p] = true
	}
	if len(seen) < 600 { // a few generated prompts coincide
		t.Errorf("only %d distinct prompts of 1000 at repeat 0.3", len(seen))
	}
	none, reps := gen(1, 0, 200)
	seen = map[string]bool{}
	for _, p := range none {
		seen[p] = true
	}
	if reps != 0 || len(seen) < 195 {
		t.Errorf("repeat 0: %d repeats, %d distinct of 200", reps, len(seen))
	}
	templates := map[string]bool{}
	for _, p := range a {
		templates[strings.Fields(p)[0]+" "+strings.Fields(p)[1]] = true
	}
	if len(templates) < 6 {
		t.Errorf("prompts start only with %v", templates)
	}
}

func TestLoadPercentiles(t *testing.T) {
	var d []time.Duration
	for i := 100; i >= 1; i-- {
		d = append(d, time.Duration(i)*time.Millisecond)
	}
	s := summarize(d)
	if s != (LatencySummary{Count: 100, P50: 50, P90: 90, P95: 95, P99: 99, P999: 100, Max: 100}) {
		t.Errorf("%+v", s)
	}
	if s := summarize([]time.Duration{7 * time.Millisecond}); s.P50 != 7 || s.P99 != 7 || s.Max != 7 {
		t.Errorf("one sample: %+v", s)
	}
	if s := summarize(nil); s.Count != 0 {
		t.Errorf("none: %+v", s)
	}
}

// TestPlotIsWellFormedSVG: both kinds of plot parse as XML and draw one
// line per series that has points.
func TestPlotIsWellFormedSVG(t *testing.T) {
	one := &Report{Endpoint: "chat", Rate: 10, InflightSeries: []InflightPoint{{0, 0}, {0.5, 3}, {1, 1}}}
	several := []*Report{
		{Endpoint: "chat", Rate: 100, TTFT: LatencySummary{P50: 1, P99: 9}, Total: LatencySummary{P50: 2, P99: 20}},
		{Endpoint: "chat", Rate: 200, TTFT: LatencySummary{P50: 1.5, P99: 30}, Total: LatencySummary{P50: 3, P99: 300}},
	}
	for name, c := range map[string]struct {
		reps  []*Report
		lines int
	}{"in flight": {[]*Report{one}, 1}, "percentiles": {several, 4}} {
		svg := Plot(c.reps)
		d := xml.NewDecoder(bytes.NewReader(svg))
		for {
			_, err := d.Token()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: not XML: %v\n%s", name, err, svg)
			}
		}
		if n := strings.Count(string(svg), `stroke-width="2"`); n != c.lines {
			t.Errorf("%s: %d lines, want %d", name, n, c.lines)
		}
	}
}

// TestAdaptiveSegmentsCountEachCapacitysOwn429s: a stretch's 429s once
// settled are the ones seen while its capacity held; those the next
// capacity's first sample shows (the change's transient) belong to the
// next stretch, and a stretch that ends out of the band never settled.
func TestAdaptiveSegmentsCountEachCapacitysOwn429s(t *testing.T) {
	s := func(at float64, target, capacity int, reqs, rej int64) AdaptiveSample {
		return AdaptiveSample{T: at, Limit: target, Target: target, Capacity: capacity, Requests: reqs, Rejected: rej}
	}
	samples := []AdaptiveSample{
		s(0, 60, 20, 0, 0), s(1, 30, 20, 100, 40), // above the band, 429s while it comes down
		s(2, 22, 20, 150, 40), s(3, 21, 20, 200, 41), s(4, 23, 20, 250, 41), // settled: 1 of 100
		s(5, 23, 10, 260, 51), s(6, 11, 10, 300, 52), s(7, 10, 10, 340, 52), // halved: 10 429s before the first sample
		s(8, 9, 10, 380, 52), s(9, 13, 10, 420, 53), // out of the band at the end: never settled
	}
	segs := segments(samples, 0.2)
	if len(segs) != 2 {
		t.Fatalf("segments: %+v", segs)
	}
	a, b := segs[0], segs[1]
	if a.Capacity != 20 || a.From != 0 || a.To != 5 || a.SettledAfter != 2 || a.Requests != 100 || a.Rejected != 1 ||
		a.LimitMin != 21 || a.LimitMax != 23 {
		t.Errorf("capacity 20: %+v, want settled after 2s with 1 of 100 429s, limit 21-23, to 5s", a)
	}
	if b.Capacity != 10 || b.SettledAfter != -1 || b.Requests != 0 || b.Rejected != 0 {
		t.Errorf("capacity 10: %+v, want never settled (13 > 12 at the end)", b)
	}
}

// TestWaitUntil: the schedule's wait never ends before the send time
// (the Go timer takes it close, a precise sleep the rest), ends at once
// for a time already past, and ends early, false, when the run ends.
func TestWaitUntil(t *testing.T) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for _, d := range []time.Duration{-time.Second, 0, 500 * time.Microsecond, timerSlack, 3 * timerSlack} {
		at := time.Now().Add(d)
		if !waitUntil(context.Background(), timer, at) {
			t.Fatalf("%s: false without an end", d)
		}
		if now := time.Now(); now.Before(at) {
			t.Errorf("%s: returned %s before the time", d, at.Sub(now))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- waitUntil(ctx, timer, time.Now().Add(time.Hour)) }()
	cancel()
	if <-done {
		t.Error("true after the run ended")
	}
	cancel()
	if waitUntil(ctx, timer, time.Now().Add(time.Millisecond)) {
		t.Error("true within the slack after the run ended")
	}
}
