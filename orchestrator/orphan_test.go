package orchestrator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// Orphaned tasks against a real Redis (SLUICE_TEST_REDIS_URL; skipped
// without it): instance A runs the tasks and reaches Redis through a
// proxy that the test cuts, which is what other instances see of a
// kill -9 (no more heartbeats, no more writes, no end); instance B
// follows them.

// orphanCap is the total cap of these tests' tasks, and orphanQueueWait
// their queue wait: a deadline that still counted the queue wait would
// leave a task of a dead owner running on B for half a minute.
const (
	orphanCap       = time.Second
	orphanQueueWait = 30 * time.Second
)

// orphanPair returns instance A, instance B and the cut of A from Redis,
// sharing a key prefix of t's own, each running up (B never calls it).
func orphanPair(t *testing.T, budget int, up upstream.Upstream) (a, b *orchestrator.Orchestrator, cutA func()) {
	t.Helper()
	url, prefix := redistest.Redis(t)
	proxy, viaProxy := redistest.NewProxy(t, url)
	instance := func(name, url string) *orchestrator.Orchestrator {
		cfg := sharedCfg(name)
		cfg.Budget, cfg.TotalTimeout, cfg.MaxQueueWait = budget, orphanCap, orphanQueueWait
		store := redisstate.New(redistest.Universal(t, url), redistest.Universal(t, url), prefix, nil)
		return newOrchDeps(t, cfg, orchestrator.Deps{Upstream: up, Logger: quiet, Shared: store})
	}
	return instance("inst-a", viaProxy), instance("inst-b", url), proxy.Cut
}

// followOn returns B's live copy of A's task id once B has n deltas of it.
func followOn(t *testing.T, b *orchestrator.Orchestrator, id string, n int) *orchestrator.Task {
	t.Helper()
	var followed *orchestrator.Task
	eventually(t, "B follows the task", func() bool {
		followed = b.Follow("acme", id)
		return followed != nil
	})
	eventually(t, "B has the task's deltas", func() bool { return followed.Transcript().Len() >= n })
	return followed
}

// A task whose instance dies after some output ends, on the instance
// that follows it, as a task whose upstream dropped mid-stream: partial,
// finish reason upstream_error, the text that reached Redis and the
// notice of a cut. One without output ends failed, with the error.
func TestSharedOrphanWithOutputIsPartial(t *testing.T) {
	cut, empty := newGated("Here is ", "what I ", "found about", "never sent"), newGated("never sent")
	a, b, cutA := orphanPair(t, 0, byQuestion{"cut": cut, "empty": empty})
	ctx := context.Background()
	withOutput, err := a.Submit(ctx, askShared("cut"))
	if err != nil {
		t.Fatal(err)
	}
	without, err := a.Submit(ctx, askShared("empty"))
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		cut.release(t)
	}
	followedCut, followedEmpty := followOn(t, b, withOutput.ID, 3), followOn(t, b, without.ID, 0)
	cutA() // A stops beating and writing mid-answer; the upstreams stall

	deltas, end := readAll(t, followedCut)
	if text := strings.Join(deltas, ""); text != "Here is what I found about" || end.Event != orchestrator.EventPartial ||
		end.FinishReason != string(orchestrator.FinishUpstreamError) ||
		!strings.Contains(end.Notice, "The answer was cut short (the instance running this task stopped answering)") || end.FirstTokenMs < 0 {
		t.Fatalf("B's stream of the task with output: %q then %+v", text, end)
	}
	if v := followedCut.View(); v.Status != orchestrator.StatusPartial || v.FinishReason != string(orchestrator.FinishUpstreamError) ||
		v.Text != "Here is what I found about" || v.Chunks != 3 || v.Error != nil || v.FirstTokenMs == nil {
		t.Fatalf("B's view of the task with output: %+v", v)
	}
	// A lookup that starts no follower (GET on B) says the same.
	if v := b.Get("acme", withOutput.ID).View(); v.Status != orchestrator.StatusPartial || v.Text != "Here is what I found about" {
		t.Fatalf("B's lookup of the task with output: %+v", v)
	}

	deltas, end = readAll(t, followedEmpty)
	if len(deltas) != 0 || end.Event != orchestrator.EventError || end.Code != orchestrator.CodeUpstreamError ||
		!strings.Contains(end.Message, "stopped answering") {
		t.Fatalf("B's stream of the task without output: %q then %+v", deltas, end)
	}
	if v := followedEmpty.View(); v.Status != orchestrator.StatusFailed || v.FinishReason != string(orchestrator.FinishUpstreamError) ||
		v.Error == nil || v.Error.Code != orchestrator.CodeUpstreamError {
		t.Fatalf("B's view of the task without output: %+v", v)
	}
}

// A task of a dead instance is called lost once it has outlived its
// total cap, counted from when it got its budget slot, by a few
// heartbeats: not after its queue wait too, whether it ran at once or
// waited in the queue first. Never before the cap: its owner could still
// be ending it.
func TestSharedOrphanLostSoonAfterItsCap(t *testing.T) {
	// slack bounds the heartbeat TTL (150 ms) seen missing for a whole
	// TTL, and the follower's reads (100 ms each), on a loaded machine.
	const slack = 2 * time.Second
	// lostWithin checks that followed ends on B between the total cap and
	// the cap plus slack after its slot, which it got between notBefore
	// and notAfter.
	lostWithin := func(t *testing.T, followed *orchestrator.Task, notBefore, notAfter time.Time) {
		t.Helper()
		select {
		case <-followed.Done():
		case <-time.After(time.Until(notAfter.Add(orphanCap + slack))):
			t.Fatalf("the task of a dead instance is still %s on B %s after its slot (total cap %s, queue wait %s)",
				followed.Status(), orphanCap+slack, orphanCap, orphanQueueWait)
		}
		if ended := time.Since(notBefore); ended < orphanCap {
			t.Fatalf("called lost %s after its slot, before its total cap (%s)", ended, orphanCap)
		}
	}

	t.Run("async task that ran at once", func(t *testing.T) {
		g := newGated("first ", "never sent")
		a, b, cutA := orphanPair(t, 0, g)
		task, err := a.SubmitAsync(context.Background(), askShared("at once"))
		if err != nil {
			t.Fatal(err)
		}
		submitted := time.Now()
		if st := task.Status(); st != orchestrator.StatusRunning {
			t.Fatalf("a task with a free slot is %s", st)
		}
		g.release(t)
		followed := followOn(t, b, task.ID, 1)
		cutA()
		lostWithin(t, followed, task.CreatedAt, submitted)
		if v := followed.View(); v.Status != orchestrator.StatusPartial || v.Text != "first " {
			t.Fatalf("B's view: %+v", v)
		}
	})

	t.Run("async task that waited in the queue", func(t *testing.T) {
		hog, queued := newGated("hog"), newGated("never sent")
		a, b, cutA := orphanPair(t, 1, byQuestion{"hog": hog, "queued": queued})
		ctx := context.Background()
		first, err := a.SubmitAsync(ctx, askShared("hog"))
		if err != nil {
			t.Fatal(err)
		}
		task, err := a.SubmitAsync(ctx, askShared("queued"))
		if err != nil {
			t.Fatal(err)
		}
		if st := task.Status(); st != orchestrator.StatusQueued {
			t.Fatalf("a task behind a budget of 1 is %s", st)
		}
		followed := followOn(t, b, task.ID, 0)
		if st := followed.Status(); st != orchestrator.StatusQueued {
			t.Fatalf("B shows the queued task %s", st)
		}
		released := time.Now()
		hog.release(t) // the first task ends: the queued one gets the slot
		wait(t, first)
		eventually(t, "A runs the queued task", func() bool { return task.Status() == orchestrator.StatusRunning })
		running := time.Now()
		// B learns it runs (and its new deadline) with no delta to show.
		eventually(t, "B shows the task running", func() bool { return followed.Status() == orchestrator.StatusRunning })
		cutA()
		lostWithin(t, followed, released, running)
		if v := followed.View(); v.Status != orchestrator.StatusFailed || v.Error == nil || v.Error.Code != orchestrator.CodeUpstreamError {
			t.Fatalf("B's view: %+v", v)
		}
	})
}
