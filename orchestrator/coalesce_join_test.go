package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// A task whose last share was given back (its only "detach": false client
// left) is being cancelled: an identical request that comes right after
// (the client reconnecting) must not join it and end cancelled, but start
// a fresh generation. The same for a task cancelled outright (DELETE).
func TestCoalesceNoJoinAfterRelease(t *testing.T) {
	for _, how := range []string{"release", "cancel"} {
		t.Run(how, func(t *testing.T) {
			up := &paced{chunks: []string{"a", "b", "c", "d", "e", "f"}, gap: 20 * time.Millisecond}
			o := newOrch(t, orchestrator.Config{Budget: 4}, up, nil)
			ctx := context.Background()
			for i := range 20 {
				q := fmt.Sprintf("q%d", i)
				first, _, err := o.Admit(ctx, askCacheable(q), orchestrator.Interactive)
				if err != nil {
					t.Fatal(err)
				}
				if how == "release" {
					o.Release("", first.ID)
				} else {
					o.Cancel("", first.ID)
				}
				again, adm, err := o.Admit(ctx, askCacheable(q), orchestrator.Interactive)
				if err != nil {
					t.Fatal(err)
				}
				if again == first || adm.Coalesced {
					t.Fatalf("%s: the request after the %s joined the dying task %s", q, how, first.ID)
				}
				if v := wait(t, again); v.Status != orchestrator.StatusDone {
					t.Fatalf("%s: the fresh request ended %s, want done", q, v.Status)
				}
				if v := wait(t, first); v.Status != orchestrator.StatusCancelled {
					t.Fatalf("%s: the %sd task ended %s, want cancelled", q, how, v.Status)
				}
			}
		})
	}
	// A task that still has a holder stays joinable: of two sharers, one
	// leaving leaves it to the other and to newcomers.
	t.Run("one of two left", func(t *testing.T) {
		up := &paced{chunks: []string{"a", "b", "c"}, gap: 20 * time.Millisecond}
		o := newOrch(t, orchestrator.Config{Budget: 4}, up, nil)
		first, _, err := o.Admit(context.Background(), askCacheable("q"), orchestrator.Interactive)
		if err != nil {
			t.Fatal(err)
		}
		second, adm, err := o.Admit(context.Background(), askCacheable("q"), orchestrator.Interactive)
		if err != nil || second != first || !adm.Coalesced {
			t.Fatalf("second request: joined %v, err %v", adm.Coalesced, err)
		}
		o.Release("", first.ID)
		third, adm, err := o.Admit(context.Background(), askCacheable("q"), orchestrator.Interactive)
		if err != nil || third != first || !adm.Coalesced {
			t.Fatalf("third request: joined %v, err %v; want the task still held", adm.Coalesced, err)
		}
		if v := wait(t, first); v.Status != orchestrator.StatusDone || v.Joined != 2 {
			t.Fatalf("shared task: %s, joined %d; want done, 2", v.Status, v.Joined)
		}
		if n := up.calls.Load(); n != 1 {
			t.Fatalf("%d upstream calls, want 1", n)
		}
	})
}

// The priority class is part of the coalescing key: an interactive request
// identical to a batch-class one waiting for its slot does not wait in the
// batch line nor share its refusal; it takes the interactive share's slot
// as soon as one frees.
func TestCoalesceInteractiveNeverSharesBatchWait(t *testing.T) {
	up := &paced{chunks: []string{"a"}, gap: time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 2, InteractiveShare: 0.5, AcquireTimeout: 400 * time.Millisecond}, up, nil)
	g := o.Gates()[0]
	batch := pipeline.Who{Class: pipeline.ClassBatch}
	h1, err := g.AcquireAs(context.Background(), batch, 0)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := g.AcquireAs(context.Background(), batch, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release()
	// A batch claim already waiting ahead: the batch leader is refused
	// when its acquire wait runs out.
	b0 := make(chan *pipeline.Permit, 1)
	go func() { p, _ := g.AcquireAs(context.Background(), batch, 5*time.Second); b0 <- p }()
	eventually(t, "the batch claim waiting", func() bool { return g.Stats().Waiting == 1 })
	lreq := askCacheable("same")
	lreq.Class = "batch"
	lres := make(chan admitted, 1)
	go func() {
		task, adm, err := o.Admit(context.Background(), lreq, orchestrator.Interactive)
		lres <- admitted{task, adm, err}
	}()
	eventually(t, "the batch leader waiting", func() bool { return g.Stats().Waiting == 2 })
	jreq := askCacheable("same")
	jreq.Class = "interactive"
	jres := make(chan admitted, 1)
	go func() {
		task, adm, err := o.Admit(context.Background(), jreq, orchestrator.Interactive)
		jres <- admitted{task, adm, err}
	}()
	eventually(t, "the interactive request in its own line", func() bool { return g.Stats().Classes["interactive"].Waiting == 1 })
	h1.Release() // one slot frees: interactive is below its share
	j := <-jres  // bounded: AcquireTimeout
	if j.err != nil || j.adm.Coalesced {
		t.Fatalf("interactive request: coalesced %v, err %v; want its own task", j.adm.Coalesced, j.err)
	}
	if v := wait(t, j.t); v.Status != orchestrator.StatusDone || v.Priority != "interactive" {
		t.Fatalf("interactive task: %s %s", v.Status, v.Priority)
	}
	l := <-lres
	var ref *orchestrator.Refusal
	if !errors.As(l.err, &ref) {
		t.Fatalf("batch leader: %+v; want refused (its line had no slot)", l)
	}
	if p := <-b0; p != nil {
		p.Release()
	}
}

// An interactive request identical to a batch task still queued does not
// join it (it would wait behind the whole batch queue): it gets its own
// task on the interactive share's first free slot.
func TestCoalesceInteractiveNeverJoinsQueuedBatch(t *testing.T) {
	up := &paced{chunks: []string{"a"}, gap: time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 2, InteractiveShare: 0.5, AcquireTimeout: 5 * time.Second}, up, nil)
	g := o.Gates()[0]
	batch := pipeline.Who{Class: pipeline.ClassBatch}
	h1, err := g.AcquireAs(context.Background(), batch, 0)
	if err != nil {
		t.Fatal(err)
	}
	h2, err := g.AcquireAs(context.Background(), batch, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release()
	queued, _, err := o.Admit(context.Background(), askCacheable("same"), orchestrator.Async) // a batch job
	if err != nil || queued.Status() != orchestrator.StatusQueued {
		t.Fatalf("async: %v %v", queued, err)
	}
	jres := make(chan admitted, 1)
	go func() {
		task, adm, err := o.Admit(context.Background(), askCacheable("same"), orchestrator.Interactive)
		jres <- admitted{task, adm, err}
	}()
	eventually(t, "the interactive request in its own line", func() bool { return g.Stats().Classes["interactive"].Waiting == 1 })
	h1.Release() // one slot: interactive holds 0 < its share 1
	var j admitted
	select {
	case j = <-jres:
	case <-time.After(10 * time.Second):
		t.Fatal("interactive request not admitted")
	}
	if j.err != nil || j.adm.Coalesced || j.t == queued {
		t.Fatalf("interactive request: coalesced %v, err %v; want its own task", j.adm.Coalesced, j.err)
	}
	if st := queued.Status(); st != orchestrator.StatusQueued {
		t.Fatalf("the batch task is %s; want still queued (the slot went to interactive)", st)
	}
	if v := wait(t, j.t); v.Status != orchestrator.StatusDone || v.Priority != "interactive" {
		t.Fatalf("interactive task: %s %s", v.Status, v.Priority)
	}
	h2.Release()
	if v := wait(t, queued); v.Status != orchestrator.StatusDone {
		t.Fatalf("batch task: %s", v.Status)
	}
}

// An async request (POST /v1/tasks never waits for budget) identical to an
// interactive-class request still waiting for its slot is not held in that
// wait: it is queued on its own at once.
func TestCoalesceAsyncNeverWaitsOnInteractiveLeader(t *testing.T) {
	up := &paced{chunks: []string{"a"}, gap: time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 1, AcquireTimeout: 30 * time.Second}, up, nil)
	g := o.Gates()[0]
	hold, err := g.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	lres := make(chan admitted, 1)
	go func() {
		task, adm, err := o.Admit(context.Background(), askCacheable("q"), orchestrator.Interactive)
		lres <- admitted{task, adm, err}
	}()
	eventually(t, "the leader waiting", func() bool { return g.Stats().Waiting == 1 && o.CoalesceStats().Waiting == 1 })
	req := askCacheable("q")
	req.Class = "interactive" // the same class: the same key
	ares := make(chan admitted, 1)
	go func() {
		task, adm, err := o.Admit(context.Background(), req, orchestrator.Async)
		ares <- admitted{task, adm, err}
	}()
	var a admitted
	select {
	case a = <-ares:
	case <-time.After(10 * time.Second): // far below the leader's 30 s wait
		t.Fatal("the async request waits on the interactive leader's budget wait")
	}
	if a.err != nil || a.adm.Coalesced || a.t.Status() != orchestrator.StatusQueued {
		t.Fatalf("async request: %+v; want its own queued task", a)
	}
	if st := o.CoalesceStats(); st.Waiting != 1 {
		t.Fatalf("the leader no longer waits: %+v", st)
	}
	hold.Release()
	l := <-lres
	if l.err != nil {
		t.Fatal(l.err)
	}
	for _, task := range []*orchestrator.Task{l.t, a.t} {
		if v := wait(t, task); v.Status != orchestrator.StatusDone {
			t.Fatalf("task %s: %s", task.ID, v.Status)
		}
	}
}

// failAfter fails with a 503 after d: its route falls back.
type failAfter struct{ d time.Duration }

func (failAfter) Name() string { return "failafter" }
func (f failAfter) Stream(ctx context.Context, _ upstream.Request, _ chan<- upstream.Chunk) error {
	tm := time.NewTimer(f.d)
	defer tm.Stop()
	select {
	case <-tm.C:
	case <-ctx.Done():
		return ctx.Err()
	}
	return &upstream.StatusError{Code: 503}
}

// coalesceCounter is an Observer that records the upstream label of every
// coalesced request.
type coalesceCounter struct {
	mu   sync.Mutex
	seen map[string]int
}

func (*coalesceCounter) Refused(string, string)                                                 {}
func (*coalesceCounter) BudgetWait(string, time.Duration)                                       {}
func (*coalesceCounter) BreakerTransition(string, pipeline.BreakerState, pipeline.BreakerState) {}
func (*coalesceCounter) UpstreamAttempt(string, string, int)                                    {}
func (*coalesceCounter) Retry(string)                                                           {}
func (*coalesceCounter) FirstToken(string, time.Duration)                                       {}
func (*coalesceCounter) ChunkGap(string, time.Duration)                                         {}
func (*coalesceCounter) TaskEnded(orchestrator.View)                                            {}
func (c *coalesceCounter) Coalesced(up string) {
	c.mu.Lock()
	c.seen[up]++
	c.mu.Unlock()
}

// Joiners label the coalesced metric with the task's route while the task
// goroutine falls back to another route: no data race (run with -race).
// The joiners run in a goroutine of their own that touches nothing else of
// the task, so only the label's read can order it with the fallback.
func TestCoalesceJoinersDuringFallback(t *testing.T) {
	obs := &coalesceCounter{seen: map[string]int{}}
	o, err := orchestrator.New(orchestrator.Config{Budget: 4, MaxRetries: -1}, orchestrator.Deps{Logger: quiet, Observer: obs,
		Routes: []orchestrator.RouteSpec{
			{Name: "a", Upstream: failAfter{30 * time.Millisecond}},
			{Name: "b", Upstream: &paced{chunks: []string{"x", "y"}, gap: 30 * time.Millisecond}},
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	lead, _, err := o.Admit(context.Background(), askCacheable("q"), orchestrator.Interactive)
	if err != nil {
		t.Fatal(err)
	}
	stop, joined := make(chan struct{}), make(chan int, 1)
	go func() {
		n := 0
		defer func() { joined <- n }()
		for {
			select {
			case <-stop:
				return
			case <-lead.Done():
				return
			default:
			}
			if task, adm, err := o.Admit(context.Background(), askCacheable("q"), orchestrator.Interactive); err == nil && adm.Coalesced && task == lead {
				n++
			}
		}
	}()
	eventually(t, "the fallback to b", func() bool { return lead.View().Upstream == "b" })
	close(stop)
	n := <-joined
	v := wait(t, lead)
	if v.Status != orchestrator.StatusDone || v.Upstream != "b" || n == 0 {
		t.Fatalf("task: %s on %s, %d joiners", v.Status, v.Upstream, n)
	}
	obs.mu.Lock()
	defer obs.mu.Unlock()
	if obs.seen["a"]+obs.seen["b"] != n {
		t.Fatalf("coalesced labels %v, want %d in all", obs.seen, n)
	}
}
