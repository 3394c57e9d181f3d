package orchestrator_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
)

// The cost of several routes on the submit path: one route (the
// SLUICE_UPSTREAM shortcut), two routes whose first has its circuit open
// (fallback at admission), and two whose first fails each call with a
// 503 before any output (fallback in the task). The upstreams answer at
// once, so the figures are sluice's own work per task.
func BenchmarkRoutes(b *testing.B) {
	fast := func() *flakyUp { return &flakyUp{name: "b", chunks: []string{"a", "b"}} }
	cases := []struct {
		name  string
		cfg   orchestrator.Config
		specs func() []orchestrator.RouteSpec
		prime bool // one failing call first, to open a's circuit
	}{
		{"one route", orchestrator.Config{Budget: 1000}, func() []orchestrator.RouteSpec {
			return []orchestrator.RouteSpec{{Name: "b", Upstream: fast()}}
		}, false},
		{"first circuit open", orchestrator.Config{Budget: 1000, MaxRetries: -1}, func() []orchestrator.RouteSpec {
			return []orchestrator.RouteSpec{
				{Name: "a", Upstream: &flakyUp{name: "a", failRate: 1}, BreakerMinCalls: 1, BreakerCoolDown: time.Hour},
				{Name: "b", Upstream: fast()}}
		}, true},
		{"first fails before output", orchestrator.Config{Budget: 1000, MaxRetries: -1, BreakerMinCalls: -1}, func() []orchestrator.RouteSpec {
			return []orchestrator.RouteSpec{{Name: "a", Upstream: &flakyUp{name: "a", failRate: 1}}, {Name: "b", Upstream: fast()}}
		}, false},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			o, err := orchestrator.New(tc.cfg, orchestrator.Deps{Routes: tc.specs(), Logger: quiet})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = o.Shutdown(ctx)
			}()
			req := orchestrator.Request{Question: "q", NoCache: true}
			if tc.prime {
				task, err := o.Submit(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				<-task.Done()
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				task, err := o.Submit(context.Background(), req)
				if err != nil {
					b.Fatal(err)
				}
				<-task.Done()
				if v := task.View(); v.Text != "ab" {
					b.Fatalf("%+v", v)
				}
			}
		})
	}
}
