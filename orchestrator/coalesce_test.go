package orchestrator_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream"
)

func askCacheable(q string) orchestrator.Request {
	return orchestrator.Request{Question: q, Messages: []upstream.Message{{Role: "user", Content: q}}}
}

type admitted struct {
	t   *orchestrator.Task
	adm orchestrator.Admission
	err error
}

// The leader's client leaving while it waits for a slot does not drop the
// joiner's place: the wait goes on for the joiner, which gets the one
// task once the slot is free. When every waiting client has left, the wait
// ends and nothing is left behind (no gate waiter, no table entry).
func TestCoalesceLeaderLeavesWhileWaiting(t *testing.T) {
	up := &paced{chunks: []string{"a", "b"}, gap: 5 * time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 1, AcquireTimeout: 10 * time.Second}, up, nil)
	g := o.Gates()[0]
	hold, err := g.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	admit := func(ctx context.Context, q string, res chan<- admitted) {
		task, adm, err := o.Admit(ctx, askCacheable(q), orchestrator.Interactive)
		res <- admitted{task, adm, err}
	}

	lctx, leave := context.WithCancel(context.Background())
	lres, jres := make(chan admitted, 1), make(chan admitted, 1)
	go admit(lctx, "q", lres)
	eventually(t, "the leader waiting", func() bool { return o.CoalesceStats().Waiting == 1 && g.Stats().Waiting == 1 })
	go admit(context.Background(), "q", jres)
	eventually(t, "the joiner waiting", func() bool { return o.CoalesceStats().Waiting == 2 })
	leave()
	eventually(t, "the leader gone", func() bool { return o.CoalesceStats().Waiting == 1 })
	if st := g.Stats(); st.Waiting != 1 || st.InFlight != 1 {
		t.Fatalf("gate after the leader left: %+v; want its wait kept for the joiner", st)
	}
	hold.Release()
	j := <-jres
	l := <-lres
	if j.err != nil || !j.adm.Coalesced {
		t.Fatalf("joiner: %+v", j)
	}
	if l.t != nil && l.t != j.t {
		t.Fatalf("leader and joiner got different tasks")
	}
	if v := wait(t, j.t); v.Status != orchestrator.StatusDone || v.Text != "ab" {
		t.Fatalf("task: %+v", v)
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream calls %d, want 1", n)
	}

	// Everyone leaves while waiting: the wait ends, nothing is left.
	hold, err = g.Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	c1, leave1 := context.WithCancel(context.Background())
	c2, leave2 := context.WithCancel(context.Background())
	go admit(c1, "q2", lres)
	eventually(t, "the leader waiting", func() bool { return o.CoalesceStats().Waiting == 1 })
	go admit(c2, "q2", jres)
	eventually(t, "both waiting", func() bool { return o.CoalesceStats().Waiting == 2 })
	leave1()
	leave2()
	for _, r := range []admitted{<-lres, <-jres} {
		if !errors.Is(r.err, context.Canceled) || r.t != nil {
			t.Fatalf("a client that left while waiting: %+v", r)
		}
	}
	eventually(t, "the gate and table empty", func() bool {
		return g.Stats().Waiting == 0 && o.CoalesceStats() == orchestrator.CoalesceStats{Limit: 10000}
	})
	hold.Release()
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream calls %d, want 1", n)
	}
}

// The table is bounded: when full, a new generation runs on its own (not
// joinable); an identical request still joins the one in the table.
func TestCoalesceTableBounded(t *testing.T) {
	up := &paced{chunks: []string{"a", "b", "c"}, gap: 50 * time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 8, MaxCoalesced: 1}, up, nil)
	ctx := context.Background()
	a, _, err := o.Admit(ctx, askCacheable("a"), orchestrator.Async)
	if err != nil {
		t.Fatal(err)
	}
	b1, _, err := o.Admit(ctx, askCacheable("b"), orchestrator.Async)
	if err != nil {
		t.Fatal(err)
	}
	b2, adm, err := o.Admit(ctx, askCacheable("b"), orchestrator.Async)
	if err != nil || adm.Coalesced || b2 == b1 {
		t.Fatalf("with the table full, b joined b: %v %+v", err, adm)
	}
	a2, adm, err := o.Admit(ctx, askCacheable("a"), orchestrator.Async)
	if err != nil || !adm.Coalesced || a2 != a {
		t.Fatalf("a did not join a: %v %+v", err, adm)
	}
	if st := o.CoalesceStats(); st.Generations != 1 {
		t.Fatalf("table: %+v, want 1 generation", st)
	}
	for _, task := range []*orchestrator.Task{a, b1, b2} {
		wait(t, task)
	}
	if n := up.calls.Load(); n != 3 {
		t.Fatalf("upstream calls %d, want 3", n)
	}
	if st := o.CoalesceStats(); st.Generations != 0 {
		t.Fatalf("table after the end: %+v", st)
	}
}

// Release cancels a shared task only when every request that shared it
// released it; a task nobody joined is cancelled by its one Release.
func TestCoalesceReleaseRefcount(t *testing.T) {
	up := &paced{chunks: []string{"a", "b", "c", "d", "e", "f", "g", "h"}, gap: 30 * time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 8}, up, nil)
	ctx := context.Background()
	var tasks [3]*orchestrator.Task
	var wg sync.WaitGroup
	for i := range tasks {
		wg.Go(func() {
			task, _, err := o.Admit(ctx, askCacheable("shared"), orchestrator.Interactive)
			if err != nil {
				t.Error(err)
			}
			tasks[i] = task
		})
	}
	wg.Wait()
	if tasks[0] != tasks[1] || tasks[1] != tasks[2] {
		t.Fatal("three identical requests got different tasks")
	}
	task := tasks[0]
	o.Release("", task.ID)
	o.Release("", task.ID)
	n := task.Transcript().Len()
	eventually(t, "the task going on", func() bool { return task.Transcript().Len() > n })
	if st := task.Status(); st.Final() {
		t.Fatalf("released by 2 of 3, the task is %s", st)
	}
	o.Release("", task.ID)
	if v := wait(t, task); v.Status != orchestrator.StatusCancelled {
		t.Fatalf("released by all 3: %s, want cancelled", v.Status)
	}

	alone, _, err := o.Admit(ctx, askCacheable("alone"), orchestrator.Interactive)
	if err != nil {
		t.Fatal(err)
	}
	o.Release("", alone.ID)
	if v := wait(t, alone); v.Status != orchestrator.StatusCancelled {
		t.Fatalf("a task nobody joined, released: %s", v.Status)
	}
}
