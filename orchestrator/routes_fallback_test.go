package orchestrator_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// failing answers 503 before any output; it counts its calls and closes
// called on the first one.
type failing struct {
	calls  atomic.Int64
	once   sync.Once
	called chan struct{}
}

func newFailing() *failing { return &failing{called: make(chan struct{})} }

func (f *failing) Name() string { return "failing" }
func (f *failing) Stream(context.Context, upstream.Request, chan<- upstream.Chunk) error {
	f.calls.Add(1)
	f.once.Do(func() { close(f.called) })
	return &upstream.StatusError{Code: 503}
}

// fallbackLog records the fallbacks it is told of, and signals each one.
type fallbackLog struct {
	mu   sync.Mutex
	fb   []string
	told chan struct{}
}

func newFallbackLog() *fallbackLog { return &fallbackLog{told: make(chan struct{}, 16)} }

func (*fallbackLog) Refused(string, string)                                                 {}
func (*fallbackLog) BudgetWait(string, time.Duration)                                       {}
func (*fallbackLog) BreakerTransition(string, pipeline.BreakerState, pipeline.BreakerState) {}
func (*fallbackLog) UpstreamAttempt(string, string, int)                                    {}
func (*fallbackLog) Retry(string)                                                           {}
func (*fallbackLog) FirstToken(string, time.Duration)                                       {}
func (*fallbackLog) ChunkGap(string, time.Duration)                                         {}
func (*fallbackLog) TaskEnded(orchestrator.View)                                            {}
func (f *fallbackLog) Fallback(up, reason string) {
	f.mu.Lock()
	f.fb = append(f.fb, up+":"+reason)
	f.mu.Unlock()
	f.told <- struct{}{}
}

func (f *fallbackLog) got() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.fb)
}

// TestFallbackReachesARoutePassedOverBusy: route a (the model's first)
// is busy when the request comes, so admission takes b, which has a free
// slot; b fails (503) before any output. The task falls back to a, which
// was passed over untried (not refused): it waits a's acquire timeout,
// gets the slot once it is freed and is served by a. b is tried once.
func TestFallbackReachesARoutePassedOverBusy(t *testing.T) {
	a, b := &paced{chunks: []string{"from a"}}, newFailing()
	obs := newFallbackLog()
	o, err := orchestrator.New(orchestrator.Config{Budget: 1, AcquireTimeout: 10 * time.Second, MaxRetries: -1},
		orchestrator.Deps{Logger: quiet, Observer: obs,
			Routes: []orchestrator.RouteSpec{{Name: "a", Upstream: a}, {Name: "b", Upstream: b}}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	hold, err := o.Gates()[0].Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	released := make(chan struct{})
	go func() { // a is free again once b has been asked
		defer close(released)
		select {
		case <-b.called:
		case <-time.After(10 * time.Second):
		}
		hold.Release()
	}()
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	v := wait(t, task)
	<-released
	if v.Status != orchestrator.StatusDone || v.Upstream != "a" || v.Text != "from a" {
		t.Fatalf("task %s on %q with %q (error %+v); want done on a (b failed before output, a was only busy)", v.Status, v.Upstream, v.Text, v.Error)
	}
	if na, nb := a.calls.Load(), b.calls.Load(); na != 1 || nb != 1 {
		t.Fatalf("a called %d times, b %d; want once each", na, nb)
	}
	// a was passed over busy at admission, then b passed the task on.
	if got, want := obs.got(), []string{"a:overloaded", "b:upstream_error"}; !slices.Equal(got, want) {
		t.Errorf("fallbacks %v, want %v", got, want)
	}
	gatesSettled(t, o)
}

// TestFallbackNeverTriesARouteTwice: a is busy and refuses at once
// (acquire timeout negative), b has a free slot and fails before output.
// The task falls back to a, which refuses, and ends with b's error: b is
// not asked again, and every slot is back.
func TestFallbackNeverTriesARouteTwice(t *testing.T) {
	a, b := &paced{chunks: []string{"from a"}}, newFailing()
	o := newRoutesOrch(t, orchestrator.Config{Budget: 1, MaxRetries: -1},
		orchestrator.RouteSpec{Name: "a", Upstream: a, AcquireTimeout: -1}, orchestrator.RouteSpec{Name: "b", Upstream: b})
	hold, err := o.Gates()[0].Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
	if err != nil {
		t.Fatalf("refused: %v", err)
	}
	v := wait(t, task)
	hold.Release()
	if v.Status != orchestrator.StatusFailed || v.Error == nil || v.Error.Code != orchestrator.CodeUpstreamError || v.Upstream != "b" {
		t.Fatalf("task %s on %q (error %+v); want failed upstream_error on b", v.Status, v.Upstream, v.Error)
	}
	if na, nb := a.calls.Load(), b.calls.Load(); na != 0 || nb != 1 {
		t.Fatalf("a called %d times, b %d; want 0 and 1", na, nb)
	}
	gatesSettled(t, o)
}

// TestFallbacksCountedOncePerRoute: every route is busy; a and b refuse
// at once, c is taken after a wait. Each of a and b passed the request on
// once, and is counted once.
func TestFallbacksCountedOncePerRoute(t *testing.T) {
	obs := newFallbackLog()
	mk := func(n string) *paced { return &paced{chunks: []string{n}} }
	o, err := orchestrator.New(orchestrator.Config{Budget: 1, AcquireTimeout: 10 * time.Second}, orchestrator.Deps{Logger: quiet, Observer: obs,
		Routes: []orchestrator.RouteSpec{{Name: "a", Upstream: mk("a"), AcquireTimeout: -1}, {Name: "b", Upstream: mk("b"), AcquireTimeout: -1}, {Name: "c", Upstream: mk("c")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	var holds []*pipeline.Permit
	for _, g := range o.Gates() {
		p, err := g.Acquire(context.Background(), 0)
		if err != nil {
			t.Fatal(err)
		}
		holds = append(holds, p)
	}
	released := make(chan struct{})
	go func() { // c is freed once a and b have refused
		defer close(released)
		for range 2 {
			select {
			case <-obs.told:
			case <-time.After(10 * time.Second):
			}
		}
		holds[2].Release()
	}()
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	v := wait(t, task)
	<-released
	holds[0].Release()
	holds[1].Release()
	if v.Status != orchestrator.StatusDone || v.Upstream != "c" {
		t.Fatalf("task %s on %q, want done on c", v.Status, v.Upstream)
	}
	if got, want := obs.got(), []string{"a:overloaded", "b:overloaded"}; !slices.Equal(got, want) {
		t.Errorf("fallbacks %v, want %v (each route that passed the request on, once)", got, want)
	}
	gatesSettled(t, o)
}

// TestFallbackAdaptiveObservationsGoToTheirRoute: each route has its own
// adaptive budget (RouteSpec.Adaptive; Config.Adaptive is off, and the
// third route keeps a fixed one). a answers 503 before any output and the
// task falls back to b, which answers. a's controller sees the overload
// (and backs off), b's sees the time to first token and no overload.
func TestFallbackAdaptiveObservationsGoToTheirRoute(t *testing.T) {
	ad := pipeline.AdaptiveConfig{Enabled: true, Min: 1, Interval: time.Nanosecond, MinSamples: 1, ProbeEvery: -1}
	a, b := newFailing(), &paced{chunks: []string{"from b"}, gap: time.Millisecond}
	o := newRoutesOrch(t, orchestrator.Config{Budget: 4, MaxRetries: -1},
		orchestrator.RouteSpec{Name: "a", Upstream: a, Adaptive: ad},
		orchestrator.RouteSpec{Name: "b", Upstream: b, Adaptive: ad},
		orchestrator.RouteSpec{Name: "c", Upstream: &paced{chunks: []string{"c"}}})
	as := o.Adaptives()
	if len(as) != 3 || as[0] == nil || as[1] == nil || as[2] != nil {
		t.Fatalf("adaptives %v, want a and b adaptive, c fixed", as)
	}
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(t, task); v.Status != orchestrator.StatusDone || v.Upstream != "b" {
		t.Fatalf("task %s on %q, want done on b", v.Status, v.Upstream)
	}
	sa, sb := as[0].Stats(), as[1].Stats()
	if sa.Changes[pipeline.ReasonOverload] != 1 || sa.Limit >= 4 || sa.RecentTTFTMs != 0 {
		t.Errorf("a's adaptive %+v, want one overload decrease below 4 and no TTFT (a answered 503)", sa)
	}
	if sb.Changes[pipeline.ReasonOverload] != 0 || sb.Limit != 4 || sb.RecentTTFTMs <= 0 {
		t.Errorf("b's adaptive %+v, want b's TTFT, no overload, limit 4", sb)
	}
	if st := o.Gates()[2].Stats(); st.Limit != 4 {
		t.Errorf("c's fixed budget is %d, want 4", st.Limit)
	}
	gatesSettled(t, o)
}

// busyOnRetry answers 503 before any output once another request waits
// for its route's slot, so that the task's retry finds the slot taken.
type busyOnRetry struct {
	gate  *pipeline.Gate
	calls atomic.Int64
}

func (u *busyOnRetry) Name() string { return "busy-on-retry" }
func (u *busyOnRetry) Stream(ctx context.Context, _ upstream.Request, _ chan<- upstream.Chunk) error {
	u.calls.Add(1)
	for u.gate.Stats().Waiting == 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
	return &upstream.StatusError{Code: 503}
}

// TestRetryWaitsTheRoutesAcquireTimeout: a retry takes its route's slot
// again with the route's acquire timeout (RouteSpec.AcquireTimeout), not
// Config's. a refuses at once when busy; its first call fails (503) while
// another request waits for a's slot, which it gets when the task gives
// it back for the retry. The retry is refused at once and the task falls
// back to b, while the other request still holds a's slot (with Config's
// 10 s wait, it would wait for that slot instead).
func TestRetryWaitsTheRoutesAcquireTimeout(t *testing.T) {
	a := &busyOnRetry{}
	b := &paced{chunks: []string{"from b"}}
	o := newRoutesOrch(t, orchestrator.Config{Budget: 1, AcquireTimeout: 10 * time.Second, MaxRetries: 1, RetryBackoff: 10 * time.Millisecond},
		orchestrator.RouteSpec{Name: "a", Upstream: a, AcquireTimeout: -1}, orchestrator.RouteSpec{Name: "b", Upstream: b})
	a.gate = o.Gates()[0]
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	hold, err := a.gate.Acquire(context.Background(), 10*time.Second) // waits for the task's slot on a
	if err != nil {
		t.Fatalf("the other request got no slot on a: %v", err)
	}
	defer hold.Release()
	select {
	case <-task.Done():
	case <-time.After(5 * time.Second):
		t.Fatalf("task not final while a's slot is held: %+v (its retry waits Config's acquire timeout, not a's)", task.View())
	}
	if v := task.View(); v.Status != orchestrator.StatusDone || v.Upstream != "b" || v.Text != "from b" {
		t.Fatalf("task %s on %q with %q, want done on b", v.Status, v.Upstream, v.Text)
	}
	if n := a.calls.Load(); n != 1 {
		t.Fatalf("a called %d times, want 1 (the retry found no slot)", n)
	}
}
