package orchestrator_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// flakyUp fails with 503 before any output for a share of its calls, and
// otherwise streams its chunks after a short pause; it counts its calls
// and the model names it was asked for.
type flakyUp struct {
	name     string
	failRate float64
	chunks   []string
	pause    time.Duration
	calls    atomic.Int64
	mu       sync.Mutex
	models   map[string]int
}

func (f *flakyUp) Name() string { return f.name }
func (f *flakyUp) Stream(ctx context.Context, req upstream.Request, out chan<- upstream.Chunk) error {
	f.calls.Add(1)
	f.mu.Lock()
	if f.models == nil {
		f.models = map[string]int{}
	}
	f.models[req.Model]++
	f.mu.Unlock()
	if rand.Float64() < f.failRate {
		return &upstream.StatusError{Code: 503}
	}
	select {
	case <-time.After(f.pause):
	case <-ctx.Done():
		return ctx.Err()
	}
	for _, c := range f.chunks {
		select {
		case out <- upstream.Chunk{Text: c}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func newRoutesOrch(t *testing.T, cfg orchestrator.Config, specs ...orchestrator.RouteSpec) *orchestrator.Orchestrator {
	t.Helper()
	return newOrchDeps(t, cfg, orchestrator.Deps{Routes: specs, Logger: quiet})
}

// gatesSettled waits until every gate of o holds nothing and has had
// every slot it granted back.
func gatesSettled(t *testing.T, o *orchestrator.Orchestrator) {
	t.Helper()
	eventually(t, "every gate idle with every slot back", func() bool {
		for _, g := range o.Gates() {
			st := g.Stats()
			if st.InFlight != 0 || st.Waiting != 0 || st.Queued != 0 || st.AcquiredTotal != st.ReleasedTotal {
				return false
			}
		}
		return true
	})
}

func TestNewRoutesChecksItsInput(t *testing.T) {
	a := orchestrator.RouteSpec{Name: "a", Upstream: burst{}}
	b := orchestrator.RouteSpec{Name: "b", Upstream: burst{}}
	for _, tc := range []struct {
		name string
		cfg  orchestrator.Config
		deps orchestrator.Deps
		want string
	}{
		{"both", orchestrator.Config{}, orchestrator.Deps{Upstream: burst{}, Routes: []orchestrator.RouteSpec{a}}, "not both"},
		{"duplicate", orchestrator.Config{}, orchestrator.Deps{Routes: []orchestrator.RouteSpec{a, a}}, `two routes named "a"`},
		{"nil upstream", orchestrator.Config{}, orchestrator.Deps{Routes: []orchestrator.RouteSpec{{Name: "x"}}}, "no upstream"},
		{"unknown route", orchestrator.Config{DefaultModel: "m", Models: map[string][]orchestrator.Target{"m": {{Upstream: "c"}}}},
			orchestrator.Deps{Routes: []orchestrator.RouteSpec{a, b}}, `no route named "c"`},
		{"listed twice", orchestrator.Config{DefaultModel: "m", Models: map[string][]orchestrator.Target{"m": {{Upstream: "a"}, {Upstream: "b"}, {Upstream: "a", Model: "other"}}}},
			orchestrator.Deps{Routes: []orchestrator.RouteSpec{a, b}}, `model "m" lists route "a" twice`},
		{"empty list", orchestrator.Config{DefaultModel: "m", Models: map[string][]orchestrator.Target{"m": {{Upstream: "a"}}, "n": nil}},
			orchestrator.Deps{Routes: []orchestrator.RouteSpec{a, b}}, `model "n" has no upstream`},
		{"default model", orchestrator.Config{DefaultModel: "x", Models: map[string][]orchestrator.Target{"m": {{Upstream: "a"}}}},
			orchestrator.Deps{Routes: []orchestrator.RouteSpec{a, b}}, `default model "x"`},
	} {
		if _, err := orchestrator.New(tc.cfg, tc.deps); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}

// TestRoutesEachHaveTheirSettings: one gate and one breaker per route,
// with the route's own budget, queue and breaker settings and Config's
// where it sets none.
func TestRoutesEachHaveTheirSettings(t *testing.T) {
	o := newRoutesOrch(t, orchestrator.Config{Budget: 9, QueueLimit: 7},
		orchestrator.RouteSpec{Name: "a", Upstream: burst{}, Budget: 2, QueueLimit: 3},
		orchestrator.RouteSpec{Name: "b", Upstream: burst{}})
	gs, bs := o.Gates(), o.Breakers()
	if len(gs) != 2 || len(bs) != 2 {
		t.Fatalf("%d gates, %d breakers", len(gs), len(bs))
	}
	if st := gs[0].Stats(); st.Name != "a" || st.Limit != 2 || st.QueueLimit != 3 {
		t.Fatalf("gate a %+v", st)
	}
	if st := gs[1].Stats(); st.Name != "b" || st.Limit != 9 || st.QueueLimit != 7 {
		t.Fatalf("gate b %+v", st)
	}
	if bs[0].Name() != "a" || bs[1].Name() != "b" {
		t.Fatalf("breakers %s, %s", bs[0].Name(), bs[1].Name())
	}
	// Without Config.Models every model goes to every route, a first.
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", Model: "anything"})
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(t, task); v.Upstream != "a" || v.Status != orchestrator.StatusDone {
		t.Fatalf("%+v", v)
	}
}

// TestRouteTTFTIsTheRoutes: a route's own TTFT timeout applies (not
// Config's), and a TTFT timeout is no reason to fall back.
func TestRouteTTFTIsTheRoutes(t *testing.T) {
	b := &flakyUp{name: "b", chunks: []string{"b"}}
	o := newRoutesOrch(t, orchestrator.Config{TTFTTimeout: time.Minute},
		orchestrator.RouteSpec{Name: "a", Upstream: stall{}, TTFTTimeout: 100 * time.Millisecond},
		orchestrator.RouteSpec{Name: "b", Upstream: b})
	start := time.Now()
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	v := wait(t, task)
	if v.FinishReason != string(orchestrator.FinishTTFTTimeout) || v.Upstream != "a" || time.Since(start) > 100*time.Millisecond+tol {
		t.Fatalf("%+v after %s, want ttft_timeout on a after 100ms", v, time.Since(start))
	}
	if b.calls.Load() != 0 {
		t.Fatal("a TTFT timeout fell back to b")
	}
	gatesSettled(t, o)
}

// TestFallbackStormReleasesEverySlot: many interactive and async tasks,
// some cancelled, on a route that fails half its calls before any output
// and a second one that answers; small budgets so that admission falls
// back too. Every task ends: done with the whole answer, refused,
// cancelled, or failed by a when b had no room; and every slot of both
// gates is released exactly once.
func TestFallbackStormReleasesEverySlot(t *testing.T) {
	a := &flakyUp{name: "a", failRate: 0.5, chunks: []string{"x", "y"}, pause: 2 * time.Millisecond}
	b := &flakyUp{name: "b", chunks: []string{"x", "y"}, pause: 2 * time.Millisecond}
	o := newRoutesOrch(t, orchestrator.Config{
		AcquireTimeout: 20 * time.Millisecond, RetryBackoff: time.Millisecond, BreakerMinCalls: -1,
		DefaultModel: "m", Models: map[string][]orchestrator.Target{"m": {{Upstream: "a"}, {Upstream: "b", Model: "m-b"}}},
	},
		orchestrator.RouteSpec{Name: "a", Upstream: a, Budget: 3, QueueLimit: 5},
		orchestrator.RouteSpec{Name: "b", Upstream: b, Budget: 4, QueueLimit: 50})
	const n = 200
	var wg sync.WaitGroup
	var done, refused, cancelled, failed atomic.Int64
	errs := make(chan string, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			submit := o.Submit
			if i%2 == 1 {
				submit = o.SubmitAsync
			}
			task, err := submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
			var ref *orchestrator.Refusal
			switch {
			case errors.As(err, &ref):
				refused.Add(1)
				return
			case err != nil:
				errs <- err.Error()
				return
			}
			if i%7 == 0 {
				o.Cancel("", task.ID)
			}
			v := wait(t, task)
			switch {
			case v.Status == orchestrator.StatusCancelled:
				cancelled.Add(1)
			case v.Status == orchestrator.StatusDone && v.Text == "xy" && (v.Upstream == "a" || v.Upstream == "b"):
				done.Add(1)
			case i%7 == 0 && v.Text == "xy":
				done.Add(1) // the cancel came after the end
			case v.Status == orchestrator.StatusFailed && v.Upstream == "a" && v.Error != nil && v.Error.Code == orchestrator.CodeUpstreamError:
				// a failed it and b had no room within its acquire
				// timeout: the task ends with a's error.
				failed.Add(1)
			default:
				errs <- "task " + string(v.Status) + " " + v.Upstream + " " + v.Text
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	if done.Load() == 0 || done.Load()+refused.Load()+cancelled.Load()+failed.Load() != n {
		t.Fatalf("done %d refused %d cancelled %d failed %d of %d", done.Load(), refused.Load(), cancelled.Load(), failed.Load(), n)
	}
	gatesSettled(t, o)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.models["m"] != 0 || b.models["m-b"] == 0 {
		t.Fatalf("b was asked for %v, want m-b only", b.models)
	}
	t.Logf("done %d refused %d cancelled %d failed %d; calls a %d b %d", done.Load(), refused.Load(), cancelled.Load(), failed.Load(), a.calls.Load(), b.calls.Load())
}

// TestFallbackWaitsInTheNextQueueAndCancels: an async task whose first
// route fails falls back into the next route's queue (full budget); a
// cancel there ends it cancelled, and both gates get every slot back.
func TestFallbackWaitsInTheNextQueueAndCancels(t *testing.T) {
	a := &flakyUp{name: "a", failRate: 1}
	o := newRoutesOrch(t, orchestrator.Config{MaxRetries: -1},
		orchestrator.RouteSpec{Name: "a", Upstream: a},
		orchestrator.RouteSpec{Name: "b", Upstream: stall{}, Budget: 1})
	// The held task: b's only slot (a refuses it at once: its circuit
	// never opens, but a fails it, so it falls back to b and stalls).
	held, err := o.Submit(context.Background(), orchestrator.Request{Question: "held"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the first task on b", func() bool { return held.View().Upstream == "b" && o.Gates()[1].Stats().InFlight == 1 })
	task, err := o.SubmitAsync(context.Background(), orchestrator.Request{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the task waiting in b's queue", func() bool { return o.Gates()[1].Stats().Queued == 1 })
	if v := task.View(); v.Upstream != "b" || v.Status != orchestrator.StatusQueued {
		t.Fatalf("%+v, want waiting for b", v)
	}
	o.Cancel("", task.ID)
	if v := wait(t, task); v.Status != orchestrator.StatusCancelled {
		t.Fatalf("%+v, want cancelled", v)
	}
	o.Cancel("", held.ID)
	wait(t, held)
	gatesSettled(t, o)
	if st := o.Breakers()[0].State(); st != pipeline.BreakerClosed && st != pipeline.BreakerOpen {
		t.Fatalf("breaker %v", st)
	}
}

// TestUnknownModel: a model Config.Models does not list is refused before
// the cache or any slot.
func TestUnknownModel(t *testing.T) {
	o := newRoutesOrch(t, orchestrator.Config{DefaultModel: "m", Models: map[string][]orchestrator.Target{"m": {{Upstream: "a"}}}},
		orchestrator.RouteSpec{Name: "a", Upstream: burst{[]string{"x"}}})
	_, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", Model: "n"})
	var um *orchestrator.UnknownModelError
	if !errors.As(err, &um) || um.Model != "n" || len(um.Known) != 1 || um.Known[0] != "m" {
		t.Fatalf("%v", err)
	}
	if names := o.ModelNames(); len(names) != 1 || names[0] != "m" {
		t.Fatalf("ModelNames %v", names)
	}
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(t, task); v.Model != "m" || v.Text != "x" {
		t.Fatalf("%+v", v)
	}
	gatesSettled(t, o)
}
