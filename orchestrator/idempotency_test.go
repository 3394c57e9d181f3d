package orchestrator_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// Concurrent repeats of one request with one key, arriving while the
// first is being admitted, all get the first's task: one upstream call.
func TestSubmitOnceConcurrentRepeatsShareOneTask(t *testing.T) {
	up := &paced{chunks: []string{"a", "b"}, gap: 10 * time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 4, AcquireTimeout: time.Second}, up, nil)
	req := ask("once")
	req.IdempotencyKey = "k"
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		ids      = map[string]int{}
		attached int
	)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			task, att, err := o.SubmitOnce(context.Background(), req, orchestrator.Interactive)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			ids[task.ID]++
			if att {
				attached++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if len(ids) != 1 || attached != 19 {
		t.Fatalf("20 repeats made tasks %v, %d attached; want one task, 19 attached", ids, attached)
	}
	for id := range ids {
		wait(t, o.Get("", id))
	}
	if n := up.calls.Load(); n != 1 {
		t.Fatalf("upstream calls %d, want 1", n)
	}
}

// A key whose task the store dropped is free again; the key table is
// bounded (the oldest keys are forgotten first).
func TestSubmitOnceKeysBounded(t *testing.T) {
	o := newOrch(t, orchestrator.Config{MaxRetainedTasks: 2, MaxIdempotencyKeys: 3}, burst{[]string{"x"}}, nil)
	submit := func(key, q string) (*orchestrator.Task, bool, error) {
		r := ask(q)
		r.IdempotencyKey = key
		task, att, err := o.SubmitOnce(context.Background(), r, orchestrator.Async)
		if task != nil {
			wait(t, task)
		}
		return task, att, err
	}
	first, _, err := submit("k0", "q0")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := submit("k0", "other"); !errors.Is(err, orchestrator.ErrIdempotencyConflict) {
		t.Fatalf("same key, other request: %v", err)
	}
	for i := 1; i <= 3; i++ { // drops k0's task (2 kept) and k0 itself (3 keys kept)
		if _, _, err := submit("k"+strconv.Itoa(i), "q"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	again, att, err := submit("k0", "other")
	if err != nil || att || again.ID == first.ID {
		t.Fatalf("a forgotten key: err %v, attached %v", err, att)
	}
	if _, att, _ := submit("k3", "q3"); !att {
		t.Fatal("a kept key did not attach")
	}
}

// A repeat after the key's task failed is a retry: it gets a new task.
func TestSubmitOnceRetriesAFailedTask(t *testing.T) {
	up := &flaky{}
	o := newOrch(t, orchestrator.Config{MaxRetries: -1}, up, nil)
	req := ask("flaky")
	req.IdempotencyKey = "retry-me"
	first, _, err := o.SubmitOnce(context.Background(), req, orchestrator.Interactive)
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(t, first); v.Status != orchestrator.StatusFailed {
		t.Fatalf("first call: %s, want failed", v.Status)
	}
	second, attached, err := o.SubmitOnce(context.Background(), req, orchestrator.Interactive)
	if err != nil || attached || second.ID == first.ID {
		t.Fatalf("repeat after a failure: err %v, attached %v", err, attached)
	}
	if v := wait(t, second); v.Status != orchestrator.StatusDone {
		t.Fatalf("retry: %s", v.Status)
	}
	third, attached, err := o.SubmitOnce(context.Background(), req, orchestrator.Interactive)
	if err != nil || !attached || third.ID != second.ID {
		t.Fatalf("repeat after the good retry: err %v, attached %v", err, attached)
	}
	if n := up.calls.Load(); n != 2 {
		t.Fatalf("upstream calls %d, want 2", n)
	}
}

// flaky fails its first call with a 500 and answers the next ones.
type flaky struct{ calls atomic.Int64 }

func (f *flaky) Name() string { return "flaky" }
func (f *flaky) Stream(ctx context.Context, _ upstream.Request, out chan<- upstream.Chunk) error {
	if f.calls.Add(1) == 1 {
		return &upstream.StatusError{Code: 500}
	}
	select {
	case out <- upstream.Chunk{Text: "ok"}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSubmitOnceKeysFairBetweenTenants: when the key table is full, the
// tenant holding the most keys loses its oldest: tenant a's flood of keys
// does not push out tenant b's one key, so b's retry still attaches (no
// second upstream call).
func TestSubmitOnceKeysFairBetweenTenants(t *testing.T) {
	o := newOrch(t, orchestrator.Config{MaxIdempotencyKeys: 10}, burst{[]string{"x"}}, nil)
	submit := func(tenant, key, q string) (*orchestrator.Task, bool) {
		t.Helper()
		r := ask(q)
		r.Tenant, r.IdempotencyKey = tenant, key
		task, att, err := o.SubmitOnce(context.Background(), r, orchestrator.Async)
		if err != nil {
			t.Fatal(err)
		}
		wait(t, task)
		return task, att
	}
	first, _ := submit("b", "b-key", "b's question")
	for i := range 100 {
		submit("a", "a-key-"+strconv.Itoa(i), "a's question "+strconv.Itoa(i))
	}
	again, att := submit("b", "b-key", "b's question")
	if !att || again.ID != first.ID {
		t.Fatalf("tenant a's flood of keys pushed out tenant b's key (attached %v)", att)
	}
}
