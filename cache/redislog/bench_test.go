package redislog_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cache/redislog"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

// benchFleet returns two caches sharing one change log (A and B) and a
// counter of the Redis calls both make.
func benchFleet(b *testing.B) (a, bb *cache.Cache, ops *atomic.Int64) {
	b.Helper()
	url, prefix := redistest.Redis(b)
	ops = &atomic.Int64{}
	count := func(string, time.Duration, error) { ops.Add(1) }
	open := func() *cache.Cache {
		c := cache.New(cache.Config{})
		lg := redislog.New(redistest.Universal(b, url), redislog.Config{Prefix: prefix, Observe: count})
		stop, err := c.Share(bg, lg, cache.ShareConfig{Block: 100 * time.Millisecond})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(stop)
		return c
	}
	return open(), open(), ops
}

// BenchmarkHit: a lookup that hits on B, with and without the shared
// log wired: a hit never touches Redis, so both cost the same.
func BenchmarkHit(b *testing.B) {
	for _, shared := range []bool{false, true} {
		for _, kind := range []string{"exact", "semantic"} {
			b.Run(fmt.Sprintf("shared=%v/%s", shared, kind), func(b *testing.B) {
				var c *cache.Cache
				if shared {
					a, cb, _ := benchFleet(b)
					a.Store(bg, wms, question, a.Generation(wms), answer)
					deadline := time.Now().Add(10 * time.Second)
					for !cb.Lookup(bg, wms, question).Hit {
						if time.Now().After(deadline) {
							b.Fatal("no hit on B")
						}
						time.Sleep(time.Millisecond)
					}
					c = cb
				} else {
					c = cache.New(cache.Config{})
					c.Store(bg, wms, question, c.Generation(wms), answer)
				}
				q := question
				if kind == "semantic" {
					q = paraphase
				}
				b.ResetTimer()
				for b.Loop() {
					if r := c.Lookup(bg, wms, q); !r.Hit || string(r.Kind) != kind {
						b.Fatalf("%+v", r)
					}
				}
			})
		}
	}
}

// BenchmarkPut: Store on A, with and without the shared log (the
// caller's cost: the append is the writer goroutine's), and the time
// until the entry is a hit on B; redis-ops/put counts every Redis call
// of A and B (appends, blocking reads, generations) per put.
func BenchmarkPut(b *testing.B) {
	b.Run("store/local", func(b *testing.B) {
		c := cache.New(cache.Config{})
		i := 0
		for b.Loop() {
			c.Store(bg, wms, fmt.Sprintf("What is the stock of SKU-%d in zone B?", i), c.Generation(wms), answer)
			i++
		}
	})
	b.Run("store/shared", func(b *testing.B) {
		a, _, _ := benchFleet(b)
		i := 0
		for b.Loop() {
			a.Store(bg, wms, fmt.Sprintf("What is the stock of SKU-%d in zone B?", i), a.Generation(wms), answer)
			i++
		}
		b.StopTimer()
		deadline := time.Now().Add(30 * time.Second)
		for a.ShareStatus().Pending > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	})
	b.Run("visible-on-B", func(b *testing.B) {
		a, cb, ops := benchFleet(b)
		i := 0
		ops.Store(0)
		for b.Loop() {
			q := fmt.Sprintf("What is the stock of SKU-%d in zone B?", i)
			i++
			a.Store(bg, wms, q, a.Generation(wms), answer)
			for !cb.Lookup(bg, wms, q).Hit {
				time.Sleep(50 * time.Microsecond)
			}
		}
		b.ReportMetric(float64(ops.Load())/float64(i), "redis-ops/put")
	})
}
