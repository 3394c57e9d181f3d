package orchestrator_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// paced is an upstream that takes gap before each of its chunks, like a
// model generating, and counts its calls.
type paced struct {
	chunks []string
	gap    time.Duration
	calls  atomic.Int64
}

func (p *paced) Name() string { return "paced" }
func (p *paced) Stream(ctx context.Context, _ upstream.Request, out chan<- upstream.Chunk) error {
	p.calls.Add(1)
	for _, c := range p.chunks {
		tm := time.NewTimer(p.gap)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
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

// Issue 10, item 7: 20 async tasks at budget 1. Each generation takes
// ~100 ms and the total cap is 1 s, so the last ones wait ~2 s in the
// queue. The cap counts from the slot, not from acceptance: every task
// ends done with its whole answer (on the old code most failed with
// "deadline" and no output, never sent upstream).
func TestQueuedTasksDoNotDieOnTheTotalCap(t *testing.T) {
	up := &paced{chunks: []string{"a", "b", "c", "d"}, gap: 25 * time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 1, QueueLimit: 32, TotalTimeout: time.Second, TTFTTimeout: time.Second}, up, nil)
	var tasks []*orchestrator.Task
	for i := range 20 {
		task, err := o.SubmitAsync(context.Background(), orchestrator.Request{Question: "q" + strconv.Itoa(i), NoCache: true})
		if err != nil {
			t.Fatalf("task %d refused: %v", i, err)
		}
		tasks = append(tasks, task)
	}
	queued := 0
	for _, task := range tasks {
		if task.Status() == orchestrator.StatusQueued {
			queued++
		}
	}
	for i, task := range tasks {
		v := wait(t, task)
		if v.Status != orchestrator.StatusDone || v.FinishReason != string(orchestrator.FinishStop) || v.Text != "abcd" {
			t.Errorf("task %d: %s/%s %q, want done/stop \"abcd\" (error %+v)", i, v.Status, v.FinishReason, v.Text, v.Error)
		}
	}
	if n := up.calls.Load(); n != 20 {
		t.Errorf("upstream saw %d calls, want 20", n)
	}
	t.Logf("%d of 20 tasks were queued at submit; the last ended %d ms after acceptance", queued, *wait(t, tasks[19]).TotalMs)
}

// A task that waits in the queue longer than MaxQueueWait fails with its
// own finish reason (overloaded, code queue_timeout), is never sent
// upstream, and gives its place in line back.
func TestQueueWaitLimitFailsWithItsOwnReason(t *testing.T) {
	up := &countingStall{}
	o := newOrch(t, orchestrator.Config{Budget: 1, MaxQueueWait: 100 * time.Millisecond, TotalTimeout: time.Minute, TTFTTimeout: time.Minute}, up, nil)
	holder, err := o.SubmitAsync(context.Background(), orchestrator.Request{Question: "holder", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Cancel("", holder.ID)
	waiter, err := o.SubmitAsync(context.Background(), orchestrator.Request{Question: "waiter", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	if st := waiter.Status(); st != orchestrator.StatusQueued {
		t.Fatalf("second task at budget 1 is %s, want queued", st)
	}
	v := wait(t, waiter)
	if v.Status != orchestrator.StatusFailed || v.FinishReason != string(orchestrator.FinishOverloaded) ||
		v.Error == nil || v.Error.Code != orchestrator.CodeQueueTimeout || v.Text != "" {
		t.Fatalf("queue-timed-out task: %+v (error %+v), want failed/overloaded/queue_timeout", v, v.Error)
	}
	if *v.TotalMs < 100 || *v.TotalMs > 5000 {
		t.Fatalf("queue timeout after %d ms, want about 100", *v.TotalMs)
	}
	end := waiter.Transcript().Ended()
	if end == nil || end.Event != orchestrator.EventError || end.Code != orchestrator.CodeQueueTimeout || end.FinishReason != string(orchestrator.FinishOverloaded) {
		t.Fatalf("terminal event %+v", end)
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream saw %d calls, want only the holder's", n)
	}
	if q := o.Gates()[0].Stats().Queued; q != 0 {
		t.Fatalf("%d still queued after the timeout", q)
	}
	if st := holder.Status(); st != orchestrator.StatusRunning {
		t.Fatalf("the running holder is %s", st)
	}
}

// countingStall stalls until cancelled and counts its calls.
type countingStall struct{ calls atomic.Int64 }

func (s *countingStall) Name() string { return "stall" }
func (s *countingStall) Stream(ctx context.Context, _ upstream.Request, _ chan<- upstream.Chunk) error {
	s.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}
