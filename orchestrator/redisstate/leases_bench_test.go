package redisstate_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/pipeline"
)

// BenchmarkFleetSlot measures what the cluster budget adds before a
// stream starts: the time from Acquire to a permit (the time to first
// token a request gains), local gate against cluster gate, and the Redis
// calls per slot (acquire, release, renewals). Run with
//
//	SLUICE_TEST_REDIS_URL=redis://127.0.0.1:6379/12 go test -run '^$' -bench FleetSlot -benchtime 3000x ./orchestrator/redisstate/
func BenchmarkFleetSlot(b *testing.B) {
	b.Run("local", func(b *testing.B) {
		g := pipeline.NewGate(pipeline.GateConfig{Name: "fake", Limit: 64})
		defer g.Close()
		for b.Loop() {
			p, err := g.Acquire(context.Background(), time.Second)
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
	for _, target := range redistest.Targets(b) {
		b.Run("cluster-"+target.Name, func(b *testing.B) {
			_, prefix := redistest.Redis(b)
			var ops atomic.Int64
			l := redisstate.NewLeases(redistest.Universal(b, target.URL), prefix, "fake", 15*time.Second,
				func(string, time.Duration, error) { ops.Add(1) })
			defer l.Close()
			g := pipeline.NewGate(pipeline.GateConfig{Name: "fake", Limit: 64, Cluster: pipeline.ClusterConfig{Leases: l}})
			defer func() { g.Close(); <-g.Stopped() }()
			ops.Store(0)
			var waited time.Duration
			for b.Loop() {
				start := time.Now()
				p, err := g.Acquire(context.Background(), time.Second)
				waited += time.Since(start)
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
				// Let the release reach Redis, so that the next Acquire
				// measures an acquire alone (as a request's TTFT sees it).
				for g.Stats().PendingReleases > 0 {
					time.Sleep(20 * time.Microsecond)
				}
			}
			b.ReportMetric(float64(ops.Load())/float64(b.N), "redis-calls/slot")
			b.ReportMetric(float64(waited.Microseconds())/float64(b.N), "acquire-µs")
		})
	}
}
