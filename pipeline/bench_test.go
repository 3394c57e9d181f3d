package pipeline_test

import (
	"context"
	"testing"

	"github.com/sluice-dev/sluice/pipeline"
)

// BenchmarkGateAdmission is the cost of one admission: take a slot and
// give it back.
func BenchmarkGateAdmission(b *testing.B) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 64})
	b.Run("serial", func(b *testing.B) {
		for b.Loop() {
			p, err := g.TryAcquire()
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				p, err := g.Acquire(context.Background(), 0)
				if err == nil {
					p.Release()
				}
			}
		})
	})
}

// BenchmarkWatchRelay is the watchdog stage's cost per chunk: a channel
// hand-off and a timer reset.
func BenchmarkWatchRelay(b *testing.B) {
	in := make(chan int)
	done := make(chan error, 1)
	go func() {
		for i := range b.N {
			in <- i
		}
		done <- nil
	}()
	n := 0
	err := pipeline.Watch(context.Background(), pipeline.WatchConfig{TTFT: 1e9, Idle: 1e9}, in, done, func(int) { n++ })
	if err != nil || n != b.N {
		b.Fatalf("err %v, n %d", err, n)
	}
}
