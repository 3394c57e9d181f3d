package redisstate_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/stream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestLogRoundTrip: what one instance writes, another reads back in
// order, with the cursor semantics of Last-Event-ID, and a reader waiting
// for the next entry wakes when it is written.
func TestLogRoundTrip(t *testing.T) {
	w, open := redistest.New(t)
	r := open()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const id = "0d9c6a9e-5b1b-4c55-9d43-1a1f7f0c1e01"

	if _, err := r.Load(ctx, id); !errors.Is(err, orchestrator.ErrNotShared) {
		t.Fatalf("Load of an unknown task: %v, want ErrNotShared", err)
	}
	rec := orchestrator.Record{Tenant: "acme", View: orchestrator.View{ID: id, Status: orchestrator.StatusRunning, Model: "m", Namespace: "ns"}}
	if err := w.Start(ctx, rec, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := r.Load(ctx, id); err != nil || got.Tenant != "acme" || got.View.Status != orchestrator.StatusRunning || got.View.Model != "m" {
		t.Fatalf("Load: %+v %v", got, err)
	}
	if d, end, err := r.Read(ctx, id, 0, 10*time.Millisecond); err != nil || d != nil || end != nil {
		t.Fatalf("Read of an empty log: %q %v %v", d, end, err)
	}

	// A reader blocked on the log wakes when the deltas are written.
	type page struct {
		d   []string
		end *stream.End
		err error
	}
	got := make(chan page, 1)
	go func() {
		d, end, err := r.Read(ctx, id, 0, 5*time.Second)
		got <- page{d, end, err}
	}()
	if err := w.Append(ctx, id, 1, []string{"a", "b"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if p := <-got; p.err != nil || !slices.Equal(p.d, []string{"a", "b"}) || p.end != nil {
		t.Fatalf("woken reader: %+v", p)
	}
	if err := w.Append(ctx, id, 3, []string{"c"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	final := rec
	final.View.Status, final.View.FinishReason = orchestrator.StatusDone, "stop"
	if err := w.Finish(ctx, final, stream.End{Event: "done", FinishReason: "stop", Chunks: 3, TotalMs: 42}, time.Minute); err != nil {
		t.Fatal(err)
	}
	d, end, err := r.Read(ctx, id, 1, time.Second)
	if err != nil || !slices.Equal(d, []string{"b", "c"}) || end == nil || end.Event != "done" || end.TotalMs != 42 {
		t.Fatalf("Read after 1: %q %+v %v", d, end, err)
	}
	if d, end, err := r.Read(ctx, id, 3, time.Second); err != nil || d != nil || end == nil {
		t.Fatalf("Read after the last delta: %q %+v %v", d, end, err)
	}
	if got, err := r.Load(ctx, id); err != nil || got.View.Status != orchestrator.StatusDone {
		t.Fatalf("final record: %+v %v", got, err)
	}

	// Writes whose answer was lost are sent again: already written
	// entries are skipped, the rest is added, nothing is duplicated.
	const id2 = "0d9c6a9e-5b1b-4c55-9d43-1a1f7f0c1e02"
	for _, w2 := range []struct {
		first  int
		deltas []string
	}{{1, []string{"a", "b"}}, {1, []string{"a", "b"}}, {2, []string{"b", "c", "d"}}} {
		if err := w.Append(ctx, id2, w2.first, w2.deltas, time.Minute); err != nil {
			t.Fatalf("Append(%d, %q) again: %v", w2.first, w2.deltas, err)
		}
	}
	fin := stream.End{Event: "done", FinishReason: "stop", Chunks: 4}
	rec2 := orchestrator.Record{View: orchestrator.View{ID: id2, Status: orchestrator.StatusDone}}
	for range 2 {
		if err := w.Finish(ctx, rec2, fin, time.Minute); err != nil {
			t.Fatalf("Finish again: %v", err)
		}
	}
	if d, e, err := r.Read(ctx, id2, 0, 0); err != nil || !slices.Equal(d, []string{"a", "b", "c", "d"}) || e == nil {
		t.Fatalf("log after repeated writes: %q %+v %v", d, e, err)
	}
}

// TestCancelRequests: a cancellation asked on one instance reaches the
// subscription of another; the subscription ends with its context.
func TestCancelRequests(t *testing.T) {
	owner, open := redistest.New(t)
	asker := open()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ids := owner.Cancels(ctx)
	deadline := time.After(10 * time.Second)
	// The subscription starts in the background: ask until it hears.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for heard := false; !heard; {
		select {
		case <-tick.C:
			if err := asker.RequestCancel(ctx, "task-1"); err != nil {
				t.Fatal(err)
			}
		case id := <-ids:
			if id != "task-1" {
				t.Fatalf("heard %q", id)
			}
			heard = true
		case <-deadline:
			t.Fatal("the cancel request never arrived")
		}
	}
	cancel()
	for range ids { // drains, then ends when the subscription closes
	}
}
