package orchestrator_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// burst is an in-memory upstream that sends its chunks as fast as they
// are taken.
type burst struct{ chunks []string }

func (b burst) Name() string { return "burst" }
func (b burst) Stream(ctx context.Context, _ upstream.Request, out chan<- upstream.Chunk) error {
	for _, c := range b.chunks {
		select {
		case out <- upstream.Chunk{Text: c}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

func newOrch(t testing.TB, cfg orchestrator.Config, up upstream.Upstream, c orchestrator.Cache) *orchestrator.Orchestrator {
	t.Helper()
	return newOrchDeps(t, cfg, orchestrator.Deps{Upstream: up, Cache: c, Logger: quiet})
}

// newOrchDeps is orchestrator.New of cfg and deps, shut down when t ends.
func newOrchDeps(t testing.TB, cfg orchestrator.Config, deps orchestrator.Deps) *orchestrator.Orchestrator {
	t.Helper()
	o, err := orchestrator.New(cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := o.Shutdown(ctx); err != nil {
			t.Error(err)
		}
	})
	return o
}

func wait(t testing.TB, task *orchestrator.Task) orchestrator.View {
	t.Helper()
	select {
	case <-task.Done():
	case <-time.After(10 * time.Second):
		t.Fatalf("task not final: %+v", task.View())
	}
	return task.View()
}

func TestNewNeedsAnUpstream(t *testing.T) {
	if _, err := orchestrator.New(orchestrator.Config{}, orchestrator.Deps{}); err == nil {
		t.Fatal("New without an upstream must fail")
	}
}

func TestCacheHitTakesNoSlotAndOnlyStopIsStored(t *testing.T) {
	c := cache.New(cache.Config{})
	o := newOrch(t, orchestrator.Config{Budget: 1}, burst{[]string{"forty", "-two"}}, c)
	req := orchestrator.Request{Question: "the answer?", Messages: []upstream.Message{{Role: "user", Content: "the answer?"}}}
	first, err := o.Submit(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(t, first); v.Status != orchestrator.StatusDone || v.Text != "forty-two" || v.Cache.Status != "miss" {
		t.Fatalf("first %+v", v)
	}
	// Hold the only slot, then ask again: the hit needs none.
	hold, err := o.Gates()[0].TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Release()
	hit, err := o.Submit(context.Background(), req)
	if err != nil {
		t.Fatalf("a hit was refused with the budget full: %v", err)
	}
	v := hit.View()
	if v.Status != orchestrator.StatusDone || v.Text != "forty-two" || v.Cache.Status != "hit" || v.Chunks != 2 {
		t.Fatalf("hit %+v", v)
	}
	var ref *orchestrator.Refusal
	if _, err := o.Submit(context.Background(), orchestrator.Request{Question: "a miss", NoCache: true}); !errors.As(err, &ref) || ref.Code != orchestrator.CodeOverloaded {
		t.Fatalf("a miss with the budget full: %v", err)
	}
}

func TestTenantsDoNotSeeEachOthersTasks(t *testing.T) {
	o := newOrch(t, orchestrator.Config{}, burst{[]string{"x"}}, nil)
	task, err := o.Submit(context.Background(), orchestrator.Request{Tenant: "a", Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	wait(t, task)
	if o.Get("b", task.ID) != nil || o.Cancel("b", task.ID) != nil {
		t.Fatal("tenant b reached tenant a's task")
	}
	if o.Get("a", task.ID) == nil {
		t.Fatal("tenant a lost its task")
	}
}

// BenchmarkRelayPerChunk is the pipeline's own cost per chunk: upstream
// channel -> watchdog -> transcript, for a task of 1000 chunks.
func BenchmarkRelayPerChunk(b *testing.B) {
	const n = 1000
	chunks := strings.Split(strings.Repeat("tok ", n), " ")[:n]
	o := newOrch(b, orchestrator.Config{Budget: 64}, burst{chunks}, nil)
	b.ReportAllocs()
	for b.Loop() {
		task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
		if err != nil {
			b.Fatal(err)
		}
		<-task.Done()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/chunk")
}

// TestPromptsAreNotLoggedByDefault: the question and the answer reach
// the log only with LogPrompts.
func TestPromptsAreNotLoggedByDefault(t *testing.T) {
	for _, on := range []bool{false, true} {
		var buf syncBuffer
		o, err := orchestrator.New(orchestrator.Config{LogPrompts: on}, orchestrator.Deps{
			Upstream: burst{[]string{"private ", "answer"}}, Logger: slog.New(slog.NewTextHandler(&buf, nil)),
		})
		if err != nil {
			t.Fatal(err)
		}
		task, err := o.Submit(context.Background(), orchestrator.Request{Question: "my secret question", NoCache: true})
		if err != nil {
			t.Fatal(err)
		}
		wait(t, task)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		o.Shutdown(ctx)
		cancel()
		logged := buf.String()
		if !strings.Contains(logged, "task_id="+task.ID) {
			t.Fatalf("no task end line: %s", logged)
		}
		has := strings.Contains(logged, "secret question") || strings.Contains(logged, "private answer")
		if has != on {
			t.Fatalf("LogPrompts=%v, prompt or answer in the log: %v\n%s", on, has, logged)
		}
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSubmitRacingShutdown: tasks submitted while Shutdown runs either
// start before it waits (and are final when it returns) or are refused
// with ErrClosed. Quick tasks let the running count touch zero often, the
// moment a late registration would slip past Shutdown's wait.
func TestSubmitRacingShutdown(t *testing.T) {
	for i := range 200 {
		o, err := orchestrator.New(orchestrator.Config{Budget: 64}, orchestrator.Deps{Upstream: burst{[]string{"a"}}, Logger: quiet})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		var mu sync.Mutex
		var tasks []*orchestrator.Task
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 20 {
					task, err := o.SubmitAsync(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
					if err != nil {
						if !errors.Is(err, orchestrator.ErrClosed) {
							t.Errorf("submit: %v", err)
						}
						continue
					}
					mu.Lock()
					tasks = append(tasks, task)
					mu.Unlock()
				}
			}()
		}
		time.Sleep(time.Duration(i%50) * time.Microsecond) // vary where Shutdown lands among the submits
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := o.Shutdown(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
		mu.Lock()
		for _, task := range tasks {
			if !task.Status().Final() {
				t.Fatalf("task %s still %s after Shutdown returned", task.ID, task.Status())
			}
		}
		mu.Unlock()
		wg.Wait()
		if st := o.Gates()[0].Stats(); st.InFlight != 0 || st.AcquiredTotal != st.ReleasedTotal {
			t.Fatalf("gate after shutdown: %+v", st)
		}
	}
}

// stall is an upstream that sends nothing until cancelled.
type stall struct{}

func (stall) Name() string { return "stall" }
func (stall) Stream(ctx context.Context, _ upstream.Request, _ chan<- upstream.Chunk) error {
	<-ctx.Done()
	return ctx.Err()
}

// panickyCache panics on Store: the task must still end.
type panickyCache struct{}

func (panickyCache) Lookup(context.Context, cache.Namespace, string) cache.Result {
	return cache.Result{}
}
func (panickyCache) Store(context.Context, cache.Namespace, string, cache.Generation, cache.Answer) {
	panic("cache bug")
}
func (panickyCache) Bypass(cache.Namespace) {}

func TestPanicInCacheStoreStillEndsTheTask(t *testing.T) {
	o := newOrch(t, orchestrator.Config{}, burst{[]string{"a"}}, panickyCache{})
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q"})
	if err != nil {
		t.Fatal(err)
	}
	if v := wait(t, task); v.Status != orchestrator.StatusDone || task.Transcript().Ended() == nil {
		t.Fatalf("task %+v", v)
	}
}

// TestHalfOpenAdmitsOneInteractiveProbe: after the cool-down exactly one
// interactive request is let through as the probe; the others are refused
// before their stream starts, not failed inside it.
func TestHalfOpenAdmitsOneInteractiveProbe(t *testing.T) {
	o := newOrch(t, orchestrator.Config{BreakerMinCalls: 1, BreakerCoolDown: 50 * time.Millisecond, MaxRetries: -1}, stall{}, nil)
	// Open the breaker (the stalling upstream cannot fail by itself).
	b := o.Breakers()[0]
	d, _, _ := b.Allow()
	d(pipeline.Failure)
	deadline := time.Now().Add(5 * time.Second)
	for b.State() != pipeline.BreakerHalfOpen {
		if time.Now().After(deadline) {
			t.Fatal("breaker never half-opened")
		}
		time.Sleep(5 * time.Millisecond) // waiting out the cool-down is waiting for the clock
	}
	// The probe stays out (the upstream stalls) while the others ask; a
	// cancelled probe would tell nothing of the upstream and let the next
	// request probe again, so the admitted ones are cancelled only after.
	admitted, refused := 0, 0
	for range 5 {
		task, err := o.Submit(context.Background(), orchestrator.Request{Question: "probe", NoCache: true})
		var ref *orchestrator.Refusal
		switch {
		case err == nil:
			admitted++
			defer o.Cancel("", task.ID)
		case errors.As(err, &ref) && ref.Code == orchestrator.CodeUpstreamUnavailable:
			refused++
		default:
			t.Fatalf("submit: %v", err)
		}
	}
	if admitted != 1 || refused != 4 {
		t.Fatalf("half-open: %d admitted, %d refused; want 1 and 4", admitted, refused)
	}
}

// TestStatusFinalWhenTheEndIsPublished: a reader that sees a task's
// terminal event and then asks for the task sees it final, never still
// running (a client polling right after the stream ended saw "running"
// on a loaded machine when the status was set after the event).
func TestStatusFinalWhenTheEndIsPublished(t *testing.T) {
	o := newOrch(t, orchestrator.Config{Budget: 8}, burst{[]string{"a", "b"}}, nil)
	for i := range 300 {
		task, err := o.SubmitAsync(context.Background(), orchestrator.Request{Question: "q" + strconv.Itoa(i), NoCache: true})
		if err != nil {
			t.Fatal(err)
		}
		tr := task.Transcript()
		for after := 0; ; {
			p := tr.Read(after, 0)
			after = p.Last()
			if p.End != nil {
				break
			}
			if len(p.Deltas) == 0 {
				select {
				case <-p.Changed:
				case <-time.After(10 * time.Second):
					t.Fatal("no end")
				}
			}
		}
		if st := task.Status(); !st.Final() {
			t.Fatalf("task %d: terminal event published while the status is %s", i, st)
		}
	}
}

// TestCacheKeepsConversationsApart: the same last question after other
// turns, under other instructions or with another token limit is another
// question; only the same context (or a lone question) is a hit.
func TestCacheKeepsConversationsApart(t *testing.T) {
	c := cache.New(cache.Config{})
	o := newOrch(t, orchestrator.Config{}, burst{[]string{"an ", "answer"}}, c)
	ask := func(max int, msgs ...upstream.Message) orchestrator.CacheStatus {
		t.Helper()
		task, err := o.Submit(context.Background(), orchestrator.Request{Question: msgs[len(msgs)-1].Content, Messages: msgs, MaxTokens: max})
		if err != nil {
			t.Fatal(err)
		}
		return wait(t, task).Cache.Status
	}
	user := func(s string) upstream.Message { return upstream.Message{Role: "user", Content: s} }
	sys := func(s string) upstream.Message { return upstream.Message{Role: "system", Content: s} }
	said := func(s string) upstream.Message { return upstream.Message{Role: "assistant", Content: s} }
	q := user("how many are left?")
	zoneA := []upstream.Message{user("Tell me about zone A"), said("Zone A holds pallets."), q}
	zoneB := []upstream.Message{user("Tell me about zone B freezers"), said("Zone B holds freezers."), q}
	for _, step := range []struct {
		what string
		max  int
		msgs []upstream.Message
		want orchestrator.CacheStatus
	}{
		{"after zone A", 0, zoneA, orchestrator.CacheMiss},
		{"after zone A again", 0, zoneA, orchestrator.CacheHit},
		{"after zone B", 0, zoneB, orchestrator.CacheMiss},
		{"alone", 0, []upstream.Message{q}, orchestrator.CacheMiss},
		{"alone again", 0, []upstream.Message{q}, orchestrator.CacheHit},
		{"in French", 0, []upstream.Message{sys("Answer only in French"), q}, orchestrator.CacheMiss},
		{"in French again", 0, []upstream.Message{sys("Answer only in French"), q}, orchestrator.CacheHit},
		{"at most 16 tokens", 16, []upstream.Message{q}, orchestrator.CacheMiss},
		{"at most 16 tokens again", 16, []upstream.Message{q}, orchestrator.CacheHit},
	} {
		if got := ask(step.max, step.msgs...); got != step.want {
			t.Errorf("%s: cache %s, want %s", step.what, got, step.want)
		}
	}
}
