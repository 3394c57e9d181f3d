package orchestrator_test

import (
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// byPrompt is an upstream that stalls (until cancelled) for the prompt
// "stall" and sends the prompt's length in "x" chunks of 100 bytes for the
// others ("n=350" sends 350 bytes).
type byPrompt struct{}

func (byPrompt) Name() string { return "byprompt" }
func (byPrompt) Stream(ctx context.Context, req upstream.Request, out chan<- upstream.Chunk) error {
	p := req.Messages[len(req.Messages)-1].Content
	if p == "stall" {
		<-ctx.Done()
		return ctx.Err()
	}
	n, _ := strconv.Atoi(strings.TrimPrefix(p, "n="))
	for n > 0 {
		c := min(n, 100)
		n -= c
		select {
		case out <- upstream.Chunk{Text: strings.Repeat("x", c)}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

func ask(q string) orchestrator.Request {
	return orchestrator.Request{Question: q, NoCache: true, Messages: []upstream.Message{{Role: "user", Content: q}}}
}

// Issue 10, item 2: under a flood of finished tasks the store stays
// within both its count and its byte limit, drops the tasks that ended
// first, and never drops a running task (on the old code all 600 were
// kept for the TTL).
func TestRetentionBoundedOldestFinishedFirst(t *testing.T) {
	const maxTasks, maxBytes = 100, 300 << 10
	o := newOrch(t, orchestrator.Config{Budget: 8, MaxRetainedTasks: maxTasks, MaxRetainedBytes: maxBytes}, byPrompt{}, nil)
	running, err := o.Submit(context.Background(), ask("stall"))
	if err != nil {
		t.Fatal(err)
	}
	defer o.Cancel("", running.ID)
	var ids []string
	maxSeen := orchestrator.RetentionStats{}
	for i := range 600 {
		n := 100 // small tasks, then large ones: first the count binds, then the bytes
		if i >= 300 {
			n = 4000
		}
		task, err := o.Submit(context.Background(), ask("n="+strconv.Itoa(n)))
		if err != nil {
			t.Fatal(err)
		}
		if v := wait(t, task); v.Status != orchestrator.StatusDone || len(v.Text) != n {
			t.Fatalf("task %d: %s, %d bytes", i, v.Status, len(v.Text))
		}
		ids = append(ids, task.ID)
		st, _ := o.Retention()
		if st.Finished > maxTasks || st.FinishedBytes > maxBytes {
			t.Fatalf("after %d tasks the store holds %d finished, %d bytes; limits %d and %d", i+1, st.Finished, st.FinishedBytes, maxTasks, maxBytes)
		}
		maxSeen.Finished = max(maxSeen.Finished, st.Finished)
		maxSeen.FinishedBytes = max(maxSeen.FinishedBytes, st.FinishedBytes)
		if i == 299 && st.Finished != maxTasks {
			t.Fatalf("after 300 small tasks %d are kept, want the count limit %d", st.Finished, maxTasks)
		}
	}
	// The kept ones are the last to end, without a gap.
	kept := 0
	for i := len(ids) - 1; i >= 0 && o.Get("", ids[i]) != nil; i-- {
		kept++
	}
	for i := range len(ids) - kept {
		if o.Get("", ids[i]) != nil {
			t.Fatalf("task %d kept while a later one was dropped: not oldest first", i)
		}
	}
	st, _ := o.Retention()
	if kept != st.Finished || kept < 20 {
		t.Fatalf("kept %d of the newest, store says %d finished", kept, st.Finished)
	}
	if o.Get("", running.ID) == nil || running.Status() != orchestrator.StatusRunning {
		t.Fatal("the running task was dropped")
	}
	t.Logf("600 tasks: at most %d finished / %d bytes kept (limits %d / %d); %d evicted; the last %d kept",
		maxSeen.Finished, maxSeen.FinishedBytes, maxTasks, maxBytes, st.Evicted, kept)
}

// A task's answer is cut at MaxAnswerBytes (on a character boundary): it
// ends partial with finish reason length and its notice, its upstream
// call is stopped and its slot given back.
func TestMaxAnswerBytesCutsPartial(t *testing.T) {
	up := &endless{chunk: "héllo ", stopped: make(chan struct{}, 1)} // 7 bytes a chunk
	o := newOrch(t, orchestrator.Config{Budget: 1, MaxAnswerBytes: 37}, up, nil)
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	v := wait(t, task)
	end := task.Transcript().Ended()
	if v.Status != orchestrator.StatusPartial || v.FinishReason != string(orchestrator.FinishLength) || end.Event != orchestrator.EventPartial ||
		end.Code != orchestrator.CodeAnswerTooLarge || !strings.Contains(end.Notice, "size limit of 37 bytes") {
		t.Fatalf("cut task %+v, end %+v", v, end)
	}
	// 5 whole chunks (35 bytes), then "h": "é" would end at byte 38.
	if want := strings.Repeat("héllo ", 5) + "h"; v.Text != want || !utf8.ValidString(v.Text) {
		t.Fatalf("text %q (%d bytes), want %q", v.Text, len(v.Text), want)
	}
	// The cut stream's slot is held for CutSettle (100ms), then given back.
	deadline := time.Now().Add(5 * time.Second)
	for st := o.Gates()[0].Stats(); st.InFlight != 0 || st.AcquiredTotal != st.ReleasedTotal; st = o.Gates()[0].Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("slot not given back: %+v", st)
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case <-up.stopped:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream call went on after the cut")
	}
	// The cut answer is not cached: the same question runs again.
	again, err := o.Submit(context.Background(), orchestrator.Request{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(t, again); v.Cache.Status == "hit" {
		t.Fatal("a cut answer was cached")
	}
}

// endless streams chunk until cancelled, then closes stopped.
type endless struct {
	chunk   string
	stopped chan struct{}
}

func (e *endless) Name() string { return "endless" }
func (e *endless) Stream(ctx context.Context, _ upstream.Request, out chan<- upstream.Chunk) error {
	defer func() {
		select {
		case e.stopped <- struct{}{}:
		default:
		}
	}()
	for {
		select {
		case out <- upstream.Chunk{Text: e.chunk}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// heapAfterGC is the live heap.
func heapAfterGC() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Issue 10, item 2: N cache hits keep at most MaxRetainedTasks tasks, and
// a hit shares the cached chunks instead of copying them, so the heap
// grows by a bounded amount however many hits come (on the old code it
// grew by ~3 KiB per hit for the TTL).
func TestCacheHitHeapBounded(t *testing.T) {
	const hits, kept = 20000, 200
	chunks := make([]string, 200) // a 200-chunk answer of 4 KiB
	for i := range chunks {
		chunks[i] = strings.Repeat("y", 20)
	}
	c := cache.New(cache.Config{})
	o := newOrch(t, orchestrator.Config{MaxRetainedTasks: kept}, burst{chunks}, c)
	first, err := o.Submit(context.Background(), orchestrator.Request{Question: "the answer?"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, first)
	before := heapAfterGC()
	for range hits {
		task, err := o.Submit(context.Background(), orchestrator.Request{Question: "the answer?"})
		if err != nil || task.Cache.Status != "hit" {
			t.Fatalf("not a hit: %v %+v", err, task)
		}
	}
	after := heapAfterGC()
	growth := int64(after) - int64(before)
	// Each kept hit holds its task and the 200 running lengths of its
	// transcript (~3.5 KiB); the text and the chunk array are shared.
	if limit := int64(kept) * 8 << 10; growth > limit {
		t.Fatalf("%d hits grew the heap by %d KiB, more than %d KiB for %d kept tasks", hits, growth>>10, limit>>10, kept)
	}
	t.Logf("%d hits (%d kept): heap grew %d KiB", hits, kept, growth>>10)
}

// TestRetainedHeapPerTask measures the heap a small finished task holds,
// which Task.Size's fixed overhead must not underestimate (the byte limit
// would not hold).
func TestRetainedHeapPerTask(t *testing.T) {
	const n = 5000
	c := cache.New(cache.Config{})
	o := newOrch(t, orchestrator.Config{MaxRetainedTasks: -1, MaxRetainedBytes: -1}, burst{[]string{"forty", "-two"}}, c)
	first, err := o.Submit(context.Background(), orchestrator.Request{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, first)
	before := heapAfterGC()
	tasks := make([]*orchestrator.Task, 0, n)
	for range n {
		task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q"})
		if err != nil {
			t.Fatal(err)
		}
		tasks = append(tasks, task)
	}
	per := (int64(heapAfterGC()) - int64(before)) / n
	if size := tasks[0].Size(); per > size {
		t.Fatalf("a small task holds %d bytes of heap, Size says %d", per, size)
	}
	t.Logf("a small finished task (cache hit) holds %d bytes of heap; Size counts %d", per, tasks[0].Size())
	runtime.KeepAlive(tasks)
}

// TestRetentionEvictsTheLargestTenantFirst: one tenant's flood of
// finished tasks (cache hits cost it nothing) evicts its own tasks, not
// another tenant's, under the count limit and under the byte limit.
func TestRetentionEvictsTheLargestTenantFirst(t *testing.T) {
	for _, cfg := range []orchestrator.Config{
		{MaxRetainedTasks: 20},
		{MaxRetainedBytes: 40 << 10},
	} {
		o := newOrch(t, cfg, byPrompt{}, nil)
		submit := func(tenant, q string) *orchestrator.Task {
			t.Helper()
			req := ask(q)
			req.Tenant = tenant
			task, err := o.Submit(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			wait(t, task)
			return task
		}
		b := submit("b", "n=300")
		for i := range 200 {
			submit("a", "n="+strconv.Itoa(100+i%5))
		}
		if o.Get("b", b.ID) == nil {
			t.Fatalf("limits %d tasks / %d bytes: tenant a's flood evicted tenant b's only task", cfg.MaxRetainedTasks, cfg.MaxRetainedBytes)
		}
		if st, _ := o.Retention(); cfg.MaxRetainedTasks > 0 && st.Finished > cfg.MaxRetainedTasks || cfg.MaxRetainedBytes > 0 && st.FinishedBytes > cfg.MaxRetainedBytes {
			t.Fatalf("limits %d tasks / %d bytes: the store holds %+v", cfg.MaxRetainedTasks, cfg.MaxRetainedBytes, st)
		}
	}
}
