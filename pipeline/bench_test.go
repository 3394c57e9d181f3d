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

// BenchmarkGateClassAdmission is the cost of one admission through the
// class-aware calls: a batch claim, and a claim of a capped tenant (the
// slow path, with its per-tenant count).
func BenchmarkGateClassAdmission(b *testing.B) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 64, TenantMaxShare: 0.5})
	b.Run("batch", func(b *testing.B) {
		for b.Loop() {
			p, err := g.TryAcquireAs(pipeline.Who{Class: pipeline.ClassBatch})
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
	b.Run("capped-tenant", func(b *testing.B) {
		for b.Loop() {
			p, err := g.TryAcquireAs(pipeline.Who{Class: pipeline.ClassBatch, Tenant: "a"})
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
	})
	b.Run("handoff", func(b *testing.B) {
		// A full gate: every release hands the slot to a waiting claim
		// chosen by the classes' order.
		h := pipeline.NewGate(pipeline.GateConfig{Limit: 1})
		p, _ := h.TryAcquire()
		for i := 0; b.Loop(); i++ {
			c, err := h.EnqueueAs(pipeline.Who{Class: pipeline.Classes()[i%2]})
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
			if p, err = c.Wait(context.Background()); err != nil {
				b.Fatal(err)
			}
		}
		p.Release()
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
