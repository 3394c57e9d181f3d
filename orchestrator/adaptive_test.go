package orchestrator_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// noLeases is a fleet budget store that is never called.
type noLeases struct{ pipeline.Leases }

// An adaptive budget moves this instance's limit: with a fleet budget it
// is refused before anything starts.
func TestAdaptiveNeedsALocalBudget(t *testing.T) {
	_, err := orchestrator.New(orchestrator.Config{Adaptive: pipeline.AdaptiveConfig{Enabled: true}},
		orchestrator.Deps{Upstream: upstream.NewSim(upstream.SimConfig{}), Leases: noLeases{}, Logger: quiet})
	if err == nil {
		t.Fatal("an adaptive fleet budget was accepted")
	}
}

// An upstream that answers 429 beyond its capacity: the adaptive limit
// comes down (reason overload) from the 429s the tasks get, and the
// breaker, which would open after one failure, stays closed: a 429 is
// the limit's business. A fixed budget has no adaptive state.
func TestAdaptiveLimitBacksOffOnUpstream429s(t *testing.T) {
	sim := upstream.NewSim(upstream.SimConfig{Capacity: 2, Overflow: -1, TTFTMedian: 20 * time.Millisecond, TTFTSigma: -1,
		GapMedian: 5 * time.Millisecond, GapSigma: -1, Chunks: 5})
	o := newOrch(t, orchestrator.Config{
		Budget: 8, QueueLimit: 100, MaxRetries: -1, BreakerMinCalls: 1,
		Adaptive: pipeline.AdaptiveConfig{Enabled: true, Min: 1, Interval: time.Millisecond, MinSamples: 4},
	}, sim, nil)
	a := o.Adaptives()[0]
	if a == nil || a.Limit() != 8 {
		t.Fatalf("adaptive %v, want one starting at the budget 8", a)
	}
	var wg sync.WaitGroup
	for round := 0; round < 20 && a.Stats().Changes[pipeline.ReasonOverload] == 0; round++ {
		for i := range 8 {
			task, err := o.SubmitAsync(context.Background(), orchestrator.Request{Question: "q" + strconv.Itoa(round*8+i), NoCache: true})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() { wait(t, task) })
		}
		wg.Wait()
	}
	st := a.Stats()
	if st.Changes[pipeline.ReasonOverload] == 0 || st.Target >= 8 || sim.Stats().Rejected == 0 {
		t.Fatalf("after %d upstream 429s: adaptive %+v, want an overload decrease", sim.Stats().Rejected, st)
	}
	if got := o.Gates()[0].Stats().Limit; got != st.Limit {
		t.Fatalf("gate limit %d, adaptive limit %d", got, st.Limit)
	}
	if s := o.Breakers()[0].State(); s != pipeline.BreakerClosed {
		t.Fatalf("breaker %s after 429s with an adaptive budget, want closed", s)
	}
	fixed := newOrch(t, orchestrator.Config{}, upstream.NewSim(upstream.SimConfig{}), nil)
	if a := fixed.Adaptives(); len(a) != 1 || a[0] != nil {
		t.Fatalf("a fixed budget's adaptives: %v", a)
	}
}
