package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// opCounter is an instance's shared state that counts the calls made to
// it by operation (one call is one Redis command, pipeline or script).
type opCounter struct {
	orchestrator.Shared
	mu  sync.Mutex
	ops map[string]int
}

func countOps(s orchestrator.Shared) *opCounter {
	return &opCounter{Shared: s, ops: map[string]int{}}
}

func (c *opCounter) add(op string) {
	c.mu.Lock()
	c.ops[op]++
	c.mu.Unlock()
}

// take returns the counts so far and starts again from zero. Heartbeats
// are left out: they are per instance and period, not per request.
func (c *opCounter) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.ops
	c.ops = map[string]int{}
	delete(m, "beat")
	delete(m, "alive")
	return m
}

func (c *opCounter) Start(ctx context.Context, rec orchestrator.Record, ttl time.Duration) error {
	c.add("start")
	return c.Shared.Start(ctx, rec, ttl)
}

func (c *opCounter) Append(ctx context.Context, id string, first int, deltas []string, ttl time.Duration) error {
	c.add("append")
	return c.Shared.Append(ctx, id, first, deltas, ttl)
}

func (c *opCounter) Finish(ctx context.Context, rec orchestrator.Record, end stream.End, ttl time.Duration) error {
	c.add("finish")
	return c.Shared.Finish(ctx, rec, end, ttl)
}

func (c *opCounter) Load(ctx context.Context, id string) (orchestrator.Record, error) {
	c.add("load")
	return c.Shared.Load(ctx, id)
}

func (c *opCounter) Read(ctx context.Context, id string, after int, wait time.Duration) ([]string, *stream.End, error) {
	c.add("read")
	return c.Shared.Read(ctx, id, after, wait)
}

func (c *opCounter) Beat(ctx context.Context, instance string, ttl time.Duration) (bool, error) {
	c.add("beat")
	return c.Shared.Beat(ctx, instance, ttl)
}

func (c *opCounter) Alive(ctx context.Context, instance string) (bool, error) {
	c.add("alive")
	return c.Shared.Alive(ctx, instance)
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func fmtOps(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return fmt.Sprintf("%d (%s)", total(m), strings.Join(parts, " "))
}

// waitKnown polls e (a few ms apart) until it knows task id, for at most
// 10 s: the record is written before the task's creator is answered only
// while Redis answers within 250 ms, else in the background.
func (e *env) waitKnown(id string) {
	e.t.Helper()
	waitFor(e.t, 10*time.Second, "task "+id+" unknown on the other instance", func() bool {
		st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+id, nil, nil)
		return st == http.StatusOK
	})
}

// follow reads a task's events on e from the start until its terminal
// event, and returns when its first delta came, the text and the
// terminal event.
func (e *env) follow(ctx context.Context, id string) (first time.Time, text string, terminal sse.Event) {
	e.t.Helper()
	resp := e.do(ctx, http.MethodGet, "/v1/tasks/"+id+"/events", nil)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		e.t.Errorf("GET events of %s: %d", id, resp.StatusCode)
		return first, "", terminal
	}
	for ev, err := range sse.Read(resp.Body, nil) {
		if err != nil {
			e.t.Errorf("following %s: %v", id, err)
			return first, text, terminal
		}
		switch ev.Type {
		case "delta":
			if first.IsZero() {
				first = time.Now()
			}
			var d struct{ Text string }
			if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
				e.t.Errorf("delta of %s: %v", id, err)
			}
			text += d.Text
		case "meta":
		default:
			return first, text, ev
		}
	}
	e.t.Errorf("events of %s ended without a terminal event", id)
	return first, text, terminal
}

// TestSharedFlushBoundsRedisWrites: a 2 s answer of 60 chunks, followed
// live from another instance, costs its owner about duration / window
// appends (SharedFlush), not one per chunk, and the follower gets every
// delta. The bound is a count: appends ≤ (time from first token to end)
// / window + 2 (the first delta at once, the last window's rest). With
// -v it logs the Redis operations per answer on each instance and the
// first token's delay on the follower, for the old 20 ms window and the
// 100 ms default: the figures of docs/performance.md ("Fleet").
func TestSharedFlushBoundsRedisWrites(t *testing.T) {
	chunks := make([]string, 60)
	for i := range chunks {
		chunks[i] = fmt.Sprintf("w%02d ", i)
	}
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			for _, flush := range []time.Duration{20 * time.Millisecond, 100 * time.Millisecond} {
				t.Run(flush.String(), func(t *testing.T) {
					storeA, open := redistest.NewOn(t, target.URL)
					ca, cb := countOps(storeA), countOps(open())
					cfg := orchestrator.Config{SharedFlush: flush}
					a := newEnv(t, envOpts{Shared: ca, Orch: cfg, NoCache: true})
					b := newEnv(t, envOpts{Shared: cb, Orch: cfg, NoCache: true})
					// The first token comes late enough for both readers
					// to be attached before it.
					a.Up.SetScript(upstreamtest.Script{Chunks: chunks, TTFT: 300 * time.Millisecond, Gap: 33 * time.Millisecond})
					var created struct{ ID string }
					if st, _ := a.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "a long answer"}, &created); st != 202 {
						t.Fatalf("POST /v1/tasks on A: %d", st)
					}
					b.waitKnown(created.ID)
					cb.take() // B's polls until it knew the task are not the follow's
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					var (
						wg     sync.WaitGroup
						firstA time.Time
					)
					wg.Go(func() { firstA, _, _ = a.follow(ctx, created.ID) })
					firstB, text, terminal := b.follow(ctx, created.ID)
					wg.Wait()
					if text != strings.Join(chunks, "") || terminal.Type != "done" {
						t.Fatalf("B followed %q then %q", text, terminal.Type)
					}
					v := a.waitFinal(created.ID)
					opsA, opsB := ca.take(), cb.take()
					if v.FirstTokenMs == nil || v.TotalMs == nil {
						t.Fatalf("A's view: %+v", v)
					}
					streaming := time.Duration(*v.TotalMs-*v.FirstTokenMs) * time.Millisecond
					bound := int(streaming/flush) + 2
					if n := opsA["append"]; n < 1 || n > bound || opsA["finish"] != 1 {
						t.Fatalf("A wrote %s for %d chunks streamed in %s; want 1..%d appends and one finish", fmtOps(opsA), len(chunks), streaming, bound)
					}
					t.Logf("FIGURE target=%s flush=%s chunks=%d streaming=%s owner_ops=%s follower_ops=%s follower_first_delta_after_owner=%s",
						target.Name, flush, len(chunks), streaming.Round(time.Millisecond), fmtOps(opsA), fmtOps(opsB),
						firstB.Sub(firstA).Round(100*time.Microsecond))
				})
			}
		})
	}
}

// TestSharedFlushFirstDeltaAndEndAtOnce: with a window of an hour, a
// follower on another instance still gets the first delta while the
// task runs (it stalls after it), and the end as soon as the task is
// cancelled: neither waits for the window.
func TestSharedFlushFirstDeltaAndEndAtOnce(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			storeA, open := redistest.NewOn(t, target.URL)
			ca := countOps(storeA)
			cfg := orchestrator.Config{SharedFlush: time.Hour}
			a := newEnv(t, envOpts{Shared: ca, Orch: cfg, NoCache: true})
			b := newEnv(t, envOpts{Shared: open(), Orch: cfg, NoCache: true})
			a.Up.SetScript(upstreamtest.Script{Chunks: []string{"first ", "never"}, StallAfterChunks: 1})
			var created struct{ ID string }
			if st, _ := a.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "a stalled answer"}, &created); st != 202 {
				t.Fatalf("POST /v1/tasks on A: %d", st)
			}
			b.waitKnown(created.ID)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp := b.do(ctx, http.MethodGet, "/v1/tasks/"+created.ID+"/events", nil)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET events on B: %d", resp.StatusCode)
			}
			var (
				text     string
				terminal *sse.Event
			)
			for ev, err := range sse.Read(resp.Body, nil) {
				if err != nil {
					t.Fatalf("following on B: %v", err)
				}
				switch ev.Type {
				case "delta":
					var d struct{ Text string }
					if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
						t.Fatal(err)
					}
					text += d.Text
					// The first delta reached B, the window is far from
					// over, and the task still runs: cancel it on A.
					if st := a.Orch.GetAny(created.ID).Status(); st != orchestrator.StatusRunning {
						t.Fatalf("A's task is %s", st)
					}
					if st, _ := a.doJSON(http.MethodDelete, "/v1/tasks/"+created.ID, nil, nil); st != 200 {
						t.Fatalf("DELETE on A: %d", st)
					}
				case "meta":
				default:
					terminal = &ev
				}
				if terminal != nil {
					break
				}
			}
			if text != "first " || terminal == nil || terminal.Type != "error" || !strings.Contains(terminal.Data, `"code":"cancelled"`) {
				t.Fatalf("B's stream: %q then %+v", text, terminal)
			}
			a.waitIdle()
			if ops := ca.take(); ops["append"] != 1 || ops["finish"] != 1 {
				t.Fatalf("A wrote %s; want one append and one finish", fmtOps(ops))
			}
		})
	}
}

// TestFollowerFirstToken: short answers followed on another instance
// start with the owner's first delta, whichever the window. With -v it
// logs how much later the follower's first delta comes than the owner's
// own stream's, over 10 answers (median and worst): the first-token
// figure of docs/performance.md ("Fleet"). No timing is asserted.
func TestFollowerFirstToken(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			storeA, open := redistest.NewOn(t, target.URL)
			a := newEnv(t, envOpts{Shared: storeA, NoCache: true})
			b := newEnv(t, envOpts{Shared: open(), NoCache: true})
			a.Up.SetScript(upstreamtest.Script{Chunks: []string{"one ", "two ", "three"}, TTFT: 100 * time.Millisecond, Gap: 10 * time.Millisecond})
			var added []time.Duration
			for i := range 10 {
				var created struct{ ID string }
				if st, _ := a.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": fmt.Sprintf("short answer %d", i)}, &created); st != 202 {
					t.Fatalf("POST /v1/tasks on A: %d", st)
				}
				b.waitKnown(created.ID)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				var (
					wg     sync.WaitGroup
					firstA time.Time
				)
				wg.Go(func() { firstA, _, _ = a.follow(ctx, created.ID) })
				firstB, text, terminal := b.follow(ctx, created.ID)
				wg.Wait()
				cancel()
				if text != "one two three" || terminal.Type != "done" {
					t.Fatalf("B followed %q then %q", text, terminal.Type)
				}
				added = append(added, firstB.Sub(firstA))
			}
			slices.Sort(added)
			t.Logf("FIGURE target=%s follower_first_delta_after_owner median=%s max=%s (n=%d)",
				target.Name, added[len(added)/2].Round(100*time.Microsecond), added[len(added)-1].Round(100*time.Microsecond), len(added))
		})
	}
}
