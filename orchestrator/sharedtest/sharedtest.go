// Package sharedtest is the behaviour every implementation of
// orchestrator.Shared must have, as one suite: orchestrator/redisstate runs
// it against a real Redis, orchestrator/sharedmem against its in-memory
// store. Each case opens its own pair of clients.
package sharedtest

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
)

// Open returns two clients of one fresh shared state (two instances of a
// deployment; they may be the same value for an in-process store).
type Open func(t *testing.T) (a, b orchestrator.Shared)

// Run runs every case of the suite as a subtest.
func Run(t *testing.T, open Open) { //nolint:thelper // a case of the suite, not a helper
	t.Helper()
	for _, c := range []struct {
		name string
		run  func(*testing.T, Open)
	}{
		{"LogRoundTrip", logRoundTrip},
		{"CancelRequests", cancelRequests},
		{"WritesRefuseGaps", writesRefuseGaps},
		{"Heartbeat", heartbeat},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, open) })
	}
}

// logRoundTrip: what one instance writes, another reads back in
// order, with the cursor semantics of Last-Event-ID, and a reader waiting
// for the next entry wakes when it is written.
func logRoundTrip(t *testing.T, open Open) { //nolint:thelper // a case of the suite, not a helper
	w, r := open(t)
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
	final.View.Status, final.View.FinishReason = orchestrator.StatusDone, string(orchestrator.FinishStop)
	if err := w.Finish(ctx, final, stream.End{Event: orchestrator.EventDone, FinishReason: string(orchestrator.FinishStop), Chunks: 3, TotalMs: 42}, time.Minute); err != nil {
		t.Fatal(err)
	}
	d, end, err := r.Read(ctx, id, 1, time.Second)
	if err != nil || !slices.Equal(d, []string{"b", "c"}) || end == nil || end.Event != orchestrator.EventDone || end.TotalMs != 42 {
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
	rec2 := orchestrator.Record{View: orchestrator.View{ID: id2, Status: orchestrator.StatusRunning}}
	if err := w.Start(ctx, rec2, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, w2 := range []struct {
		first  int
		deltas []string
	}{{1, []string{"a", "b"}}, {1, []string{"a", "b"}}, {2, []string{"b", "c", "d"}}} {
		if err := w.Append(ctx, id2, w2.first, w2.deltas, time.Minute); err != nil {
			t.Fatalf("Append(%d, %q) again: %v", w2.first, w2.deltas, err)
		}
	}
	fin := stream.End{Event: orchestrator.EventDone, FinishReason: string(orchestrator.FinishStop), Chunks: 4}
	rec2.View.Status = orchestrator.StatusDone
	for range 2 {
		if err := w.Finish(ctx, rec2, fin, time.Minute); err != nil {
			t.Fatalf("Finish again: %v", err)
		}
	}
	if d, e, err := r.Read(ctx, id2, 0, 0); err != nil || !slices.Equal(d, []string{"a", "b", "c", "d"}) || e == nil {
		t.Fatalf("log after repeated writes: %q %+v %v", d, e, err)
	}
}

// cancelRequests: a cancellation asked on one instance reaches the
// subscription of another; the subscription ends with its context.
func cancelRequests(t *testing.T, open Open) { //nolint:thelper // a case of the suite, not a helper
	owner, asker := open(t)
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

// writesRefuseGaps: a write that would leave a hole in a task's log,
// or a log without its record (Redis lost the task), writes nothing and
// says so with ErrSharedGap; published again from its start, the task
// reads whole and in order.
func writesRefuseGaps(t *testing.T, open Open) { //nolint:thelper // a case of the suite, not a helper
	w, r := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const id = "0d9c6a9e-5b1b-4c55-9d43-1a1f7f0c1e03"
	rec := orchestrator.Record{Tenant: "acme", Owner: "inst-1", View: orchestrator.View{ID: id, Status: orchestrator.StatusRunning}}
	end := stream.End{Event: orchestrator.EventDone, FinishReason: string(orchestrator.FinishStop), Chunks: 3}

	// No record: nothing is written.
	if err := w.Append(ctx, id, 1, []string{"a"}, time.Minute); !errors.Is(err, orchestrator.ErrSharedGap) {
		t.Fatalf("Append without a record: %v, want ErrSharedGap", err)
	}
	if err := w.Finish(ctx, rec, end, time.Minute); !errors.Is(err, orchestrator.ErrSharedGap) {
		t.Fatalf("Finish without a record: %v, want ErrSharedGap", err)
	}
	if _, err := r.Load(ctx, id); !errors.Is(err, orchestrator.ErrNotShared) {
		t.Fatalf("a refused Finish wrote the record: %v", err)
	}
	// A record but a log that does not reach the write.
	if err := w.Start(ctx, rec, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := w.Append(ctx, id, 3, []string{"c"}, time.Minute); !errors.Is(err, orchestrator.ErrSharedGap) {
		t.Fatalf("Append after a gap: %v, want ErrSharedGap", err)
	}
	if err := w.Append(ctx, id, 1, []string{"a"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := w.Finish(ctx, rec, end, time.Minute); !errors.Is(err, orchestrator.ErrSharedGap) {
		t.Fatalf("Finish after a gap: %v, want ErrSharedGap", err)
	}
	if err := w.Append(ctx, id, 1, []string{"a", "b", "c"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	rec.View.Status = orchestrator.StatusDone
	if err := w.Finish(ctx, rec, end, time.Minute); err != nil {
		t.Fatal(err)
	}
	if d, e, err := r.Read(ctx, id, 0, 0); err != nil || !slices.Equal(d, []string{"a", "b", "c"}) || e == nil || e.Event != orchestrator.EventDone {
		t.Fatalf("log: %q %+v %v", d, e, err)
	}
	if got, err := r.Load(ctx, id); err != nil || got.View.Status != orchestrator.StatusDone || got.Owner != "inst-1" {
		t.Fatalf("record: %+v %v", got, err)
	}
}

// heartbeat: an instance is alive while its beats are renewed and
// not after their TTL; the first beat of each instance (or its first one
// after Redis was emptied) reports the shared state lost, the next ones do
// not.
func heartbeat(t *testing.T, open Open) { //nolint:thelper // a case of the suite, not a helper
	a, b := open(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if ok, err := b.Alive(ctx, "inst-a"); err != nil || ok {
		t.Fatalf("Alive before any beat: %v %v", ok, err)
	}
	if lost, err := a.Beat(ctx, "inst-a", 300*time.Millisecond); err != nil || !lost {
		t.Fatalf("first beat: lost=%v %v, want lost", lost, err)
	}
	if lost, err := a.Beat(ctx, "inst-a", 300*time.Millisecond); err != nil || lost {
		t.Fatalf("second beat: lost=%v %v", lost, err)
	}
	// Each instance learns of a loss: the first beat of another reports
	// it too, whoever beat before.
	if lost, err := b.Beat(ctx, "inst-b", 300*time.Millisecond); err != nil || !lost {
		t.Fatalf("first beat of another instance: lost=%v %v, want lost", lost, err)
	}
	if ok, err := b.Alive(ctx, "inst-a"); err != nil || !ok {
		t.Fatalf("Alive after a beat: %v %v", ok, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		ok, err := b.Alive(ctx, "inst-a")
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the heartbeat never expired")
		}
		time.Sleep(20 * time.Millisecond) // polling an expiry
	}
}
