package orchestrator_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/sharedmem"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// The sharing logic (shared.go) against an in-memory shared state: two
// orchestrators sharing one sharedmem.Mem are two instances of a
// deployment. web/, redisstate and orphan_test.go keep end-to-end tests
// with Redis.

// sharedHeartbeat is the heartbeat of these tests' instances.
const sharedHeartbeat = 50 * time.Millisecond

// sharedCfg is the configuration of an instance in these tests.
func sharedCfg(instance string) orchestrator.Config {
	cfg := orchestrator.Config{Instance: instance, SharedHeartbeat: sharedHeartbeat, MaxRetries: -1}
	orchestrator.ShortSharedTiming(&cfg)
	return cfg
}

// newShared returns an instance named instance that shares m.
func newShared(t testing.TB, m *sharedmem.Mem, instance string, up upstream.Upstream) *orchestrator.Orchestrator {
	t.Helper()
	return newOrchDeps(t, sharedCfg(instance), orchestrator.Deps{Upstream: up, Logger: quiet, Shared: m})
}

// gated is an upstream that sends each chunk when the test says so
// (one value on next per chunk), then ends.
type gated struct {
	chunks []string
	next   chan struct{}
}

func newGated(chunks ...string) *gated { return &gated{chunks: chunks, next: make(chan struct{})} }

func (g *gated) Name() string { return "gated" }
func (g *gated) Stream(ctx context.Context, _ upstream.Request, out chan<- upstream.Chunk) error {
	for _, c := range g.chunks {
		select {
		case <-g.next:
		case <-ctx.Done():
			return ctx.Err()
		}
		select {
		case out <- upstream.Chunk{Text: c}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// release lets the next chunk go.
func (g *gated) release(t testing.TB) {
	t.Helper()
	select {
	case g.next <- struct{}{}:
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream never asked for its next chunk")
	}
}

// readAll follows a task's transcript to its end, within 10 s, and
// returns its deltas and end.
func readAll(t testing.TB, task *orchestrator.Task) ([]string, stream.End) {
	t.Helper()
	var deltas []string
	timeout := time.After(10 * time.Second)
	for after := 0; ; {
		p := task.Transcript().Read(after, 0)
		deltas = append(deltas, p.Deltas...)
		after = p.Last()
		if p.End != nil {
			return deltas, *p.End
		}
		if len(p.Deltas) > 0 {
			continue
		}
		select {
		case <-p.Changed:
		case <-timeout:
			t.Fatalf("task %s: no end within 10s; deltas so far %q", task.ID, deltas)
		}
	}
}

// eventually polls cond until it holds, failing after 10 s.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 10s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling state that has no signal
	}
}

// publishedWhole reports whether m holds the task's log with exactly
// deltas and an end.
func publishedWhole(m *sharedmem.Mem, id string, deltas []string) bool {
	d, end := m.Log(id)
	return end != nil && slices.Equal(d, deltas)
}

// A task followed from the other instance reads the same deltas and end
// as on its owner, live (it is followed while it runs), and its view
// there names the same status; a cancel asked on B stops it on A.
func TestSharedFollowFromAnotherInstance(t *testing.T) {
	m := sharedmem.New()
	up := newGated("alpha ", "beta ", "gamma")
	a := newShared(t, m, "inst-a", up)
	b := newShared(t, m, "inst-b", burst{})

	task, err := a.SubmitAsync(context.Background(), orchestrator.Request{Tenant: "acme", Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	up.release(t)
	eventually(t, "the first delta published", func() bool { d, _ := m.Log(task.ID); return len(d) == 1 })
	if b.Follow("other-tenant", task.ID) != nil {
		t.Fatal("another tenant followed the task")
	}
	remote := b.Follow("acme", task.ID)
	if remote == nil {
		t.Fatal("B does not find A's running task")
	}
	if st := remote.Status(); st != orchestrator.StatusRunning {
		t.Fatalf("B's view of A's running task: %s", st)
	}
	up.release(t)
	up.release(t)

	own, ownEnd := readAll(t, task)
	got, gotEnd := readAll(t, remote)
	if !slices.Equal(got, own) || strings.Join(got, "") != "alpha beta gamma" {
		t.Fatalf("followed on B: %q; on A: %q", got, own)
	}
	if gotEnd.Event != orchestrator.EventDone || gotEnd.FinishReason != ownEnd.FinishReason || gotEnd.Chunks != ownEnd.Chunks {
		t.Fatalf("end on B %+v, on A %+v", gotEnd, ownEnd)
	}
	if v := wait(t, remote); v.Status != orchestrator.StatusDone || v.Text != "alpha beta gamma" || v.FinishReason != string(orchestrator.FinishStop) {
		t.Fatalf("B's final view: %+v", v)
	}
	if v := b.Get("acme", task.ID).View(); v.Status != orchestrator.StatusDone || v.Text != "alpha beta gamma" {
		t.Fatalf("B's lookup after the end: %+v", v)
	}

	// A cancel asked on B reaches A's task.
	up2 := newGated("never")
	a2 := newShared(t, m, "inst-a2", up2)
	running, err := a2.SubmitAsync(context.Background(), orchestrator.Request{Tenant: "acme", Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		got := b.CancelAndWait(ctx, "acme", running.ID)
		if got == nil {
			t.Fatal("B does not find A's task to cancel")
		}
		if got.Status() == orchestrator.StatusCancelled {
			break
		}
		// The subscription to cancel requests may start after the first
		// request (pub/sub): ask again, as a client would.
		if ctx.Err() != nil {
			t.Fatalf("A's task not cancelled from B: %+v", running.View())
		}
	}
	if v := wait(t, running); v.Status != orchestrator.StatusCancelled {
		t.Fatalf("A's task after B's cancel: %+v", v)
	}
}

// A follower calls a task's owner lost only once the owner's heartbeat
// has been missing for a whole heartbeat TTL (3 periods), and never while
// the owner beats: the task of a live owner past its deadline is followed
// until its end comes.
func TestSharedOwnerLostOnlyAfterHeartbeatMisses(t *testing.T) {
	m := sharedmem.New()
	a := newShared(t, m, "inst-a", burst{})
	b := newShared(t, m, "inst-b", burst{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	put := func(id, owner string) orchestrator.Record {
		rec := orchestrator.Record{Tenant: "acme", Owner: owner, Deadline: time.Now().Add(-time.Minute), View: orchestrator.View{
			ID: id, Status: orchestrator.StatusRunning, Model: "sim-1", Namespace: "default", CreatedAt: time.Now().Add(-time.Minute),
		}}
		if err := m.Start(ctx, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := m.Append(ctx, id, 1, []string{"half"}, time.Minute); err != nil {
			t.Fatal(err)
		}
		return rec
	}
	const gone, alive = "task-of-a-stopped-owner", "task-of-a-live-owner"
	put(gone, "an-instance-that-stopped")
	rec := put(alive, a.Config().Instance)

	start := time.Now()
	lost := b.Follow("acme", gone)
	if lost == nil {
		t.Fatal("B does not find the task")
	}
	deltas, end := readAll(t, lost)
	if took := time.Since(start); took < 3*sharedHeartbeat {
		t.Fatalf("called lost after %s, before a whole heartbeat TTL (%s)", took, 3*sharedHeartbeat)
	}
	// It had output: a cut, as when an upstream drops mid-stream.
	if strings.Join(deltas, "") != "half" || end.Event != orchestrator.EventPartial || end.FinishReason != string(orchestrator.FinishUpstreamError) ||
		!strings.Contains(end.Notice, "cut short (the instance running this task stopped answering)") {
		t.Fatalf("following a task whose owner stopped: %q %+v", deltas, end)
	}
	if v := lost.View(); v.Status != orchestrator.StatusPartial || v.FinishReason != string(orchestrator.FinishUpstreamError) || v.Text != "half" {
		t.Fatalf("the lost task's view: %+v", v)
	}

	followed := b.Follow("acme", alive)
	if followed == nil {
		t.Fatal("B does not find the live owner's task")
	}
	// What must not happen within many heartbeat TTLs: the follower
	// ending the task of an owner that beats.
	select {
	case <-followed.Done():
		t.Fatalf("a task of a live owner was ended: %+v", followed.View())
	case <-time.After(10 * sharedHeartbeat):
	}
	if v := followed.View(); v.Status != orchestrator.StatusRunning || v.Text != "half" {
		t.Fatalf("B's view of a live owner's task: %+v", v)
	}
	// Its owner ends it: the follower gets the end.
	rec.View.Status, rec.View.FinishReason = orchestrator.StatusDone, string(orchestrator.FinishStop)
	if err := m.Finish(ctx, rec, stream.End{Event: orchestrator.EventDone, FinishReason: string(orchestrator.FinishStop), Chunks: 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if v := wait(t, followed); v.Status != orchestrator.StatusDone || v.Text != "half" {
		t.Fatalf("the live owner's task on B after its end: %+v", v)
	}
}

// While the shared state is down, tasks are served and their writes
// wait in the backlog (SharedStatus counts them); once it answers again,
// each task is published whole and in order, and the other instance
// reads them.
func TestSharedOutageBacklogPublishedAfterRecovery(t *testing.T) {
	m := sharedmem.New()
	chunks := []string{"one ", "two ", "three ", "four"}
	a := newShared(t, m, "inst-a", burst{chunks})
	b := newShared(t, m, "inst-b", burst{})

	m.Fail(nil)
	eventually(t, "A sees the outage", func() bool { return !a.SharedStatus().Up })
	var ids []string
	for range 5 {
		task, err := a.SubmitAsync(context.Background(), orchestrator.Request{Tenant: "acme", Question: "q"})
		if err != nil {
			t.Fatal(err)
		}
		if v := wait(t, task); v.Status != orchestrator.StatusDone || v.Text != strings.Join(chunks, "") {
			t.Fatalf("a task served during the outage: %+v", v)
		}
		ids = append(ids, task.ID)
	}
	// Each task's pending bytes are counted as its writes are retried.
	text := int64(len(strings.Join(chunks, "")))
	eventually(t, "the backlog holds the tasks and their text", func() bool {
		st := a.SharedStatus()
		return st.PendingTasks == len(ids) && st.PendingBytes == int64(len(ids))*text
	})
	if st := a.SharedStatus(); st.Dropped != 0 || st.Err == "" {
		t.Fatalf("status during the outage: %+v", st)
	}
	for _, id := range ids {
		if d, end := m.Log(id); d != nil || end != nil {
			t.Fatalf("task %s written during the outage: %q %+v", id, d, end)
		}
	}

	m.Recover()
	eventually(t, "the backlog published", func() bool {
		st := a.SharedStatus()
		return st.Up && st.PendingTasks == 0 && st.PendingBytes == 0
	})
	for _, id := range ids {
		eventually(t, "task "+id+" published whole", func() bool { return publishedWhole(m, id, chunks) })
		v := b.Get("acme", id)
		if v == nil {
			t.Fatalf("B does not find %s", id)
		}
		if got := wait(t, v); got.Status != orchestrator.StatusDone || got.Text != strings.Join(chunks, "") {
			t.Fatalf("B's view of %s: %+v", id, got)
		}
	}
	if st := a.SharedStatus(); st.Dropped != 0 {
		t.Fatalf("tasks dropped: %+v", st)
	}
}

// byQuestion is an upstream that hands each request to the upstream
// named by its question.
type byQuestion map[string]upstream.Upstream

func (byQuestion) Name() string { return "byquestion" }
func (u byQuestion) Stream(ctx context.Context, req upstream.Request, out chan<- upstream.Chunk) error {
	return u[req.Messages[0].Content].Stream(ctx, req, out)
}

// ask is a request whose question is q.
func askShared(q string) orchestrator.Request {
	return orchestrator.Request{Tenant: "acme", Question: q, Messages: []upstream.Message{{Role: "user", Content: q}}}
}

// When the shared state restarts empty, the heartbeat finds it lost and
// the finished tasks are published again; a running task's mirror meets
// the gap and publishes it again from its start: its log has no hole.
// (One instance runs while the state restarts: the loss is reported to
// the first instance that beats after it, see the Shared.Beat contract.)
func TestSharedRestartedEmptyRepublishes(t *testing.T) {
	m := sharedmem.New()
	chunks := []string{"kept ", "whole"}
	gate := newGated("first ", "second ", "third")
	a := newShared(t, m, "inst-a", byQuestion{"done": burst{chunks}, "running": gate})

	done, err := a.SubmitAsync(context.Background(), askShared("done"))
	if err != nil {
		t.Fatal(err)
	}
	wait(t, done)
	eventually(t, "the finished task published", func() bool { return publishedWhole(m, done.ID, chunks) })

	running, err := a.SubmitAsync(context.Background(), askShared("running"))
	if err != nil {
		t.Fatal(err)
	}
	gate.release(t)
	eventually(t, "the running task's first delta published", func() bool { d, _ := m.Log(running.ID); return len(d) == 1 })

	m.Restart()
	eventually(t, "the finished task published again", func() bool { return publishedWhole(m, done.ID, chunks) })
	gate.release(t)
	gate.release(t)
	wait(t, running)
	eventually(t, "the running task published whole", func() bool {
		return publishedWhole(m, running.ID, []string{"first ", "second ", "third"})
	})
	b := newShared(t, m, "inst-b", burst{})
	for _, id := range []string{done.ID, running.ID} {
		task := b.Get("acme", id)
		if task == nil {
			t.Fatalf("B does not find %s after the restart", id)
		}
		if v := wait(t, task); v.Status != orchestrator.StatusDone {
			t.Fatalf("B's view of %s after the restart: %+v", id, v)
		}
	}
	if st := a.SharedStatus(); st.Dropped != 0 || st.PendingTasks != 0 {
		t.Fatalf("status after the restart: %+v", st)
	}
}

// Every instance publishes its own tasks again after the shared state
// restarted empty, whichever instance beats first.
func TestSharedRestartedEmptyEveryOwnerRepublishes(t *testing.T) {
	m := sharedmem.New()
	chunks := []string{"kept ", "whole"}
	a := newShared(t, m, "inst-a", burst{chunks})
	b := newShared(t, m, "inst-b", burst{chunks})
	var ids []string
	for _, o := range []*orchestrator.Orchestrator{a, b} {
		task, err := o.SubmitAsync(context.Background(), askShared("q"))
		if err != nil {
			t.Fatal(err)
		}
		wait(t, task)
		ids = append(ids, task.ID)
	}
	for _, id := range ids {
		eventually(t, "the task published", func() bool { return publishedWhole(m, id, chunks) })
	}
	m.Restart()
	for _, id := range ids {
		eventually(t, "the task published again", func() bool { return publishedWhole(m, id, chunks) })
	}
}
