package pipeline_test

import (
	"cmp"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/pipeline"
)

// load holds permits of g: saturate keeps every slot of the limit taken
// (a demand above the limit), as a busy upstream's callers do.
type load struct {
	g       *pipeline.Gate
	permits []*pipeline.Permit
}

func (l *load) saturate(t *testing.T) {
	t.Helper()
	lim := l.g.Stats().Limit
	for len(l.permits) > lim {
		l.permits[len(l.permits)-1].Release()
		l.permits = l.permits[:len(l.permits)-1]
	}
	for len(l.permits) < lim {
		p, err := l.g.TryAcquire()
		if err != nil {
			t.Fatalf("saturate to %d with %d held: %v", lim, len(l.permits), err)
		}
		l.permits = append(l.permits, p)
	}
}

func (l *load) releaseAll() {
	for _, p := range l.permits {
		p.Release()
	}
	l.permits = nil
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// window feeds one window of n first tokens of ttft each, sent after the
// last change and reported at 100ms steps from at; it returns the time
// after the window.
func window(a *pipeline.Adaptive, at time.Time, n int, ttft time.Duration) time.Time {
	for i := range n {
		now := at.Add(time.Duration(i+1) * 100 * time.Millisecond)
		a.Observe(pipeline.Observation{Signal: pipeline.SignalTTFT, Start: now.Add(-ttft), At: now, TTFT: ttft})
	}
	return at.Add(time.Duration(n) * 100 * time.Millisecond)
}

// The limit grows by √limit per window while it is in use and the time to
// first token stays at its baseline, up to Max; the trajectory is exact.
func TestAdaptiveGrowsWhileBusyAndFast(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 4})
	a := pipeline.NewAdaptive(g, pipeline.AdaptiveConfig{Enabled: true, Min: 2, Max: 30, Interval: time.Second, MinSamples: 10}, nil)
	l := &load{g: g}
	defer l.releaseAll()
	var got []int
	at := t0
	for range 8 {
		l.saturate(t)
		at = window(a, at, 10, 100*time.Millisecond)
		got = append(got, a.Limit())
	}
	// 4 → 4+2 = 6 → 6+2.449 = 8.449 → +2.907 = 11.356 → +3.370 = 14.726
	// → +3.837 = 18.563 → +4.309 = 22.872 → +4.782 = 27.654 → 30 (Max).
	want := []int{6, 8, 11, 14, 18, 22, 27, 30}
	if !slices.Equal(got, want) {
		t.Fatalf("limits %v, want %v", got, want)
	}
	if lim := g.Stats().Limit; lim != 30 {
		t.Fatalf("gate limit %d, want 30", lim)
	}
	st := a.Stats()
	if st.Changes[pipeline.ReasonGrowth] != 8 || st.Changes[pipeline.ReasonLatency] != 0 || len(st.Recent) != 8 ||
		st.Recent[0] != (pipeline.LimitChange{At: t0.Add(time.Second), From: 4, To: 6, Reason: pipeline.ReasonGrowth}) {
		t.Fatalf("stats %+v", st)
	}
	if st.BaselineTTFTMs != 100 || st.RecentTTFTMs != 100 {
		t.Fatalf("baseline %vms recent %vms, want 100 and 100", st.BaselineTTFTMs, st.RecentTTFTMs)
	}
}

// A limit nobody reaches does not grow: an idle evening must not leave a
// limit far above what the upstream was ever seen to take.
func TestAdaptiveDoesNotGrowWhenIdle(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 10})
	a := pipeline.NewAdaptive(g, pipeline.AdaptiveConfig{Enabled: true, Max: 100, MinSamples: 10}, nil)
	at := t0
	for range 5 {
		at = window(a, at, 10, 100*time.Millisecond)
	}
	if a.Limit() != 10 || len(a.Stats().Recent) != 0 {
		t.Fatalf("limit %d, changes %v; want 10 and none", a.Limit(), a.Stats().Recent)
	}
}

// A window whose TTFT is above Tolerance × baseline takes 10% to 20% off
// the limit (Tolerance·baseline/TTFT, within [0.8, 0.9]); one only
// slightly above waits for the next window to confirm it.
func TestAdaptiveBacksOffOnSlowFirstTokens(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 40})
	a := pipeline.NewAdaptive(g, pipeline.AdaptiveConfig{Enabled: true, Max: 100, MinSamples: 10, Tolerance: 1.25}, nil)
	at := window(a, t0, 10, 100*time.Millisecond) // the baseline: 100ms (not busy: no growth)
	if a.Limit() != 40 {
		t.Fatalf("limit %d after a calm idle window, want 40", a.Limit())
	}
	at = window(a, at, 10, 200*time.Millisecond) // 1.25·100/200 = 0.625, at least 0.8: 40 → 32
	if a.Limit() != 32 {
		t.Fatalf("limit %d after TTFT 2× baseline, want 32", a.Limit())
	}
	at = window(a, at.Add(time.Second), 10, 140*time.Millisecond) // 1.4× (< 1.5·1.25): wait for a second window
	if a.Limit() != 32 {
		t.Fatalf("limit %d after one window slightly slow, want 32 still", a.Limit())
	}
	window(a, at, 10, 140*time.Millisecond) // confirmed: 1.25/1.4 = 0.89: 32 → 28.6
	st := a.Stats()
	if a.Limit() != 28 || st.Changes[pipeline.ReasonLatency] != 2 {
		t.Fatalf("limit %d, changes %v; want 28 after two ttft decreases", a.Limit(), st.Changes)
	}
	// The baseline rose only a little under the slow windows.
	if st.BaselineTTFTMs < 100 || st.BaselineTTFTMs > 110 {
		t.Fatalf("baseline %vms, want it near 100ms", st.BaselineTTFTMs)
	}
}

// An overload answer (429, 503) multiplies the limit by Backoff at the end
// of its window; observations of calls sent before that change are stale
// and ignored, so one burst of 429s costs one decrease, not one each.
func TestAdaptiveBacksOffOnOverloadOnce(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 40})
	var seen []pipeline.LimitChange
	a := pipeline.NewAdaptive(g, pipeline.AdaptiveConfig{Enabled: true, Min: 5, MinSamples: 10}, func(c pipeline.LimitChange) { seen = append(seen, c) })
	sent := t0
	at := t0
	for i := range 10 {
		at = t0.Add(time.Duration(i+1) * 100 * time.Millisecond)
		a.Observe(pipeline.Observation{Signal: pipeline.SignalOverload, Start: sent, At: at})
	}
	if a.Limit() != 30 {
		t.Fatalf("limit %d after a window of 429s, want 40·0.75 = 30", a.Limit())
	}
	// More 429s of calls sent before the change: stale.
	for i := range 30 {
		a.Observe(pipeline.Observation{Signal: pipeline.SignalOverload, Start: sent, At: at.Add(time.Duration(i+1) * 100 * time.Millisecond)})
	}
	if a.Limit() != 30 || len(seen) != 1 || seen[0].From != 40 || seen[0].To != 30 || seen[0].Reason != pipeline.ReasonOverload {
		t.Fatalf("limit %d, changes %+v; want one change 40→30 (overload)", a.Limit(), seen)
	}
	// Fresh 429s bring it down again, never below Min.
	at = at.Add(5 * time.Second)
	for range 10 {
		for i := range 10 {
			now := at.Add(time.Duration(i+1) * 100 * time.Millisecond)
			a.Observe(pipeline.Observation{Signal: pipeline.SignalOverload, Start: now, At: now})
		}
		at = at.Add(time.Second)
	}
	if a.Limit() != 5 || g.Stats().Limit != 5 {
		t.Fatalf("limit %d (gate %d), want Min 5", a.Limit(), g.Stats().Limit)
	}
	if st := a.Stats(); len(st.Recent) > 16 || st.Changes[pipeline.ReasonOverload] != int64(len(seen)) {
		t.Fatalf("ring %d, changes %v, seen %d", len(st.Recent), st.Changes, len(seen))
	}
}

// Raising the limit grants waiting claims in FIFO order; lowering it
// revokes nothing and grants nothing until in-flight is below it.
func TestGateSetLimitGrantsOldestFirst(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 1})
	hold, _ := g.TryAcquire()
	var claims []*pipeline.Claim
	for range 3 {
		c, err := g.Enqueue()
		if err != nil {
			t.Fatal(err)
		}
		claims = append(claims, c)
	}
	g.SetLimit(3)
	ready := func(c *pipeline.Claim) bool {
		select {
		case <-c.Ready():
			return true
		default:
			return false
		}
	}
	if !ready(claims[0]) || !ready(claims[1]) || ready(claims[2]) {
		t.Fatal("raising the limit to 3 must grant the two oldest claims, not the third")
	}
	var permits []*pipeline.Permit
	for _, c := range claims[:2] {
		p, err := c.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		permits = append(permits, p)
	}
	g.SetLimit(1)
	if st := g.Stats(); st.InFlight != 3 || st.Limit != 1 {
		t.Fatalf("after lowering: %+v, want 3 in flight (nothing revoked) and limit 1", st)
	}
	hold.Release()
	permits[0].Release()
	if ready(claims[2]) {
		t.Fatal("granted with 1 in flight at limit 1")
	}
	permits[1].Release()
	if !ready(claims[2]) {
		t.Fatal("not granted once in-flight fell below the limit")
	}
	p, _ := claims[2].Wait(context.Background())
	p.Release()
	g.SetLimit(0)
	if g.Stats().Limit != 1 {
		t.Fatal("SetLimit(0) must keep at least 1")
	}
}

// model is a saturated upstream of hidden capacity c in discrete time:
// with n streams in flight the TTFT is base·(1 + 4·(n−c)/c)·noise beyond
// c, and beyond 1.5·c the excess calls are answered 429.
type model struct {
	c    int
	base time.Duration
	rng  *rand.Rand
	// sigma is the TTFT noise's: log-normal, e^(sigma·Z). default: 0.3
	sigma float64
	// counted
	calls, rejected int
}

// run feeds the controller windows of a second each for d of saturated
// load (every slot of the limit in use) and returns the limit at each
// second but in probe windows.
func (m *model) run(t *testing.T, a *pipeline.Adaptive, l *load, at *time.Time, d time.Duration) []int {
	t.Helper()
	var limits []int
	for end := at.Add(d); at.Before(end); {
		l.saturate(t)
		n := a.Limit()
		// A stream lasts ~1s: n calls a second, reported evenly.
		for i := range n {
			now := at.Add(time.Duration(i+1) * time.Second / time.Duration(n))
			sent := now.Add(-50 * time.Millisecond)
			m.calls++
			// The load a call meets is the limit when it is sent: a
			// gate sends no call while the limit is in flight.
			if n := a.Limit(); float64(n) > 1.5*float64(m.c) && i >= int(1.5*float64(m.c)) {
				m.rejected++
				a.Observe(pipeline.Observation{Signal: pipeline.SignalOverload, Start: sent, At: now})
				continue
			}
			f := 1.0
			if n := a.Limit(); n > m.c {
				f += 4 * float64(n-m.c) / float64(m.c)
			}
			ttft := time.Duration(float64(m.base) * f * math.Exp(cmp.Or(m.sigma, 0.3)*m.rng.NormFloat64()))
			a.Observe(pipeline.Observation{Signal: pipeline.SignalTTFT, Start: sent, At: now, TTFT: ttft})
		}
		*at = at.Add(time.Second)
		if st := a.Stats(); !st.Probing {
			limits = append(limits, st.Limit) // a probe window's half limit is not the limit found
		}
	}
	return limits
}

// within reports whether every limit is within ±frac of c.
func within(limits []int, c int, frac float64) bool {
	for _, l := range limits {
		if math.Abs(float64(l-c)) > frac*float64(c) {
			return false
		}
	}
	return true
}

// The controller finds a saturated upstream's capacity from far above and
// far below, and follows it when it halves: the limit is within ±20% of
// the capacity after 30 simulated seconds and stays there, and the
// settled limit draws no 429s. The noise is seeded: the trajectory is
// the same on every run.
func TestAdaptiveFindsCapacity(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start int
	}{{"from above", 200}, {"from below", 2}} {
		t.Run(tc.name, func(t *testing.T) {
			g := pipeline.NewGate(pipeline.GateConfig{Limit: tc.start})
			a := pipeline.NewAdaptive(g, pipeline.AdaptiveConfig{Enabled: true, Min: 2, Max: 200, MinSamples: 20}, nil)
			l := &load{g: g}
			defer l.releaseAll()
			m := &model{c: 40, base: 300 * time.Millisecond, rng: rand.New(rand.NewPCG(1, 2))}
			at := t0
			first := m.run(t, a, l, &at, 30*time.Second)
			m.calls, m.rejected = 0, 0
			settled := m.run(t, a, l, &at, 30*time.Second)
			t.Logf("C=40: %v | %v", first, settled)
			if !within(settled, 40, 0.2) {
				t.Fatalf("limits %v after 30s, want all within 40±20%%", settled)
			}
			if m.rejected != 0 {
				t.Fatalf("%d of %d calls answered 429 once settled", m.rejected, m.calls)
			}
			m.c = 20 // the capacity halves
			follow := m.run(t, a, l, &at, 15*time.Second)
			m.calls, m.rejected = 0, 0
			after := m.run(t, a, l, &at, 30*time.Second)
			t.Logf("C=20: %v | %v", follow, after)
			if !within(after, 20, 0.2) {
				t.Fatalf("limits %v from 15s after the capacity halved, want all within 20±20%%", after)
			}
			if m.rejected != 0 {
				t.Fatalf("%d of %d calls answered 429 once settled at the new capacity", m.rejected, m.calls)
			}
		})
	}
}

// Held at the capacity for long, the controller does not drift past it:
// ten minutes of saturated load at capacities from 10 (where ±20% is ±2
// slots) to 40, with noisy first tokens (p99 3× the median, as the
// sim-upstream's defaults), keep every limit within ±20% of the capacity
// and the baseline near the unloaded TTFT.
func TestAdaptiveHoldsTheCapacityWithoutDrift(t *testing.T) {
	for _, c := range []int{10, 20, 40} {
		for seed := range uint64(4) {
			g := pipeline.NewGate(pipeline.GateConfig{Limit: c})
			a := pipeline.NewAdaptive(g, pipeline.AdaptiveConfig{Enabled: true, Min: 2, Max: 4 * c}, nil)
			l := &load{g: g}
			m := &model{c: c, base: 200 * time.Millisecond, sigma: math.Log(3) / 2.326, rng: rand.New(rand.NewPCG(seed, 7))}
			at := t0
			m.run(t, a, l, &at, 30*time.Second)
			held := m.run(t, a, l, &at, 10*time.Minute)
			l.releaseAll()
			st := a.Stats()
			t.Logf("capacity %d, seed %d: limits %d-%d, baseline %vms", c, seed, slices.Min(held), slices.Max(held), st.BaselineTTFTMs)
			if !within(held, c, 0.2) {
				t.Errorf("capacity %d, seed %d: limits %d-%d over ten minutes, want all within ±20%%", c, seed, slices.Min(held), slices.Max(held))
			}
			if st.BaselineTTFTMs > 1.15*200 {
				t.Errorf("capacity %d, seed %d: baseline %vms, want within 15%% of the unloaded 200ms", c, seed, st.BaselineTTFTMs)
			}
		}
	}
}
