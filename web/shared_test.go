package web_test

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	sse "github.com/tmaxmax/go-sse"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// TestTasksAcrossInstances: two instances share state through a real
// Redis. A task that runs on A can be polled, replayed, resumed with
// Last-Event-ID and followed live on B, and cancelled from B, without B
// ever calling its own upstream; events tokens of A work on B; another
// tenant still cannot see it. On each Redis deployment (redistest.Targets:
// one server, a Redis Cluster).
func TestTasksAcrossInstances(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) { tasksAcrossInstances(t, target.URL) })
	}
}

func tasksAcrossInstances(t *testing.T, url string) {
	t.Helper()
	storeA, another := redistest.NewOn(t, url)
	keys := map[string]string{"key-a": "a", "key-b": "b"}
	authA := []string{"Authorization", "Bearer key-a"}
	authB := []string{"Authorization", "Bearer key-b"}
	secret := []byte("one deployment, one events token key")
	a := newEnv(t, envOpts{Shared: storeA, Web: web.Config{APIKeys: keys, TokenSecret: secret}, Orch: orchestrator.Config{Budget: 2}})
	b := newEnv(t, envOpts{Shared: another(), Web: web.Config{APIKeys: keys, TokenSecret: secret}})

	t.Run("finished task: poll, replay and resume on the other instance", func(t *testing.T) {
		chunks := []string{"one ", "two ", "three ", "four ", "five"}
		a.Up.SetScript(upstreamtest.Script{Chunks: chunks})
		var created struct {
			ID        string
			EventsURL string `json:"events_url"`
		}
		if st, _ := a.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "shared one", "nocache": true}, &created, authA...); st != 202 {
			t.Fatalf("POST /v1/tasks on A: %d", st)
		}

		// The task is known everywhere once A has answered; B shows it
		// whole once the rest of its log has reached Redis.
		var v orchestrator.View
		if st, _ := b.doJSON(http.MethodGet, "/v1/tasks/"+created.ID, nil, &v, authA...); st != 200 {
			t.Fatalf("GET on B: %d", st)
		}
		v = b.waitFinal(created.ID, authA...)
		if v.Status != orchestrator.StatusDone || v.Text != strings.Join(chunks, "") || v.Chunks != len(chunks) ||
			v.FinishReason != "stop" || v.FirstTokenMs == nil || v.TotalMs == nil || v.Cache.Status != "bypass" {
			t.Fatalf("B's view: %+v", v)
		}

		r := b.events(created.ID, 0, authA...)
		if r.Text != strings.Join(chunks, "") || r.Deltas != len(chunks) || r.Terminal.Type != "done" || r.Meta["id"] != created.ID {
			t.Fatalf("replay on B: %+v", r)
		}
		r = b.events(created.ID, 2, authA...)
		if r.Text != "three four five" || r.Events[1].ID != "3" || r.Terminal.Type != "done" {
			t.Fatalf("resume after 2 on B: %+v", r)
		}

		// A browser's events_url carries a token instead of the key.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp := b.do(ctx, http.MethodGet, created.EventsURL, nil)
		r2 := summarise(t, readEvents(t, resp.Body))
		resp.Body.Close()
		if resp.StatusCode != 200 || r2.Text != strings.Join(chunks, "") {
			t.Fatalf("A's events_url on B: %d %q", resp.StatusCode, r2.Text)
		}

		for _, path := range []string{"/v1/tasks/" + created.ID, "/v1/tasks/" + created.ID + "/events"} {
			if st, _ := b.doJSON(http.MethodGet, path, nil, nil, authB...); st != 404 {
				t.Fatalf("tenant b reads tenant a's task on B (%s): %d", path, st)
			}
		}
		if st, _ := b.doJSON(http.MethodGet, "/v1/tasks/00000000-0000-4000-8000-000000000000", nil, nil, authA...); st != 404 {
			t.Fatalf("unknown id on B: %d", st)
		}
	})

	t.Run("running task: follow live and cancel from the other instance", func(t *testing.T) {
		a.Up.SetScript(upstreamtest.Script{Chunks: []string{"alpha ", "beta ", "gamma ", "never"}, StallAfterChunks: 3})
		var created struct{ ID string }
		if st, _ := a.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "shared two", "nocache": true}, &created, authA...); st != 202 {
			t.Fatalf("POST /v1/tasks on A: %d", st)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp := b.do(ctx, http.MethodGet, "/v1/tasks/"+created.ID+"/events", nil, authA...)
		defer resp.Body.Close()
		var (
			text     string
			deltas   int
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
				deltas++
				if deltas < 3 {
					continue
				}
				// Three deltas reached B while the task still runs on A
				// (its upstream stalls): B follows live. Cancel it from B.
				if st := a.Orch.GetAny(created.ID).Status(); st != orchestrator.StatusRunning {
					t.Fatalf("A's task is %s while B follows it", st)
				}
				var v orchestrator.View
				if st, _ := b.doJSON(http.MethodGet, "/v1/tasks/"+created.ID, nil, &v, authA...); st != 200 || v.Status != orchestrator.StatusRunning ||
					v.FirstTokenMs == nil || v.Chunks < 3 {
					t.Fatalf("B's view of the running task: %d %+v", st, v)
				}
				if st, _ := b.doJSON(http.MethodDelete, "/v1/tasks/"+created.ID, nil, &v, authA...); st != 200 || v.Status != orchestrator.StatusCancelled {
					t.Fatalf("DELETE on B: %d %+v", st, v)
				}
			case "meta":
			default:
				terminal = &ev
			}
			if terminal != nil {
				break
			}
		}
		if terminal == nil || terminal.Type != "error" || !strings.Contains(terminal.Data, `"code":"cancelled"`) || text != "alpha beta gamma " {
			t.Fatalf("B's stream: %q then %+v", text, terminal)
		}
		a.waitFinalAs(created.ID, authA)
		if st := a.Orch.GetAny(created.ID).Status(); st != orchestrator.StatusCancelled {
			t.Fatalf("A's task after a cancel from B: %s", st)
		}
		a.waitIdle()
	})
	t.Run("cache hit on A is a finished task on B", func(t *testing.T) {
		a.Up.SetScript(upstreamtest.Script{Chunks: []string{"cached ", "on A"}})
		ask := map[string]any{"prompt": "which dock for wave 7?"}
		var first, hit struct{ ID string }
		if st, _ := a.doJSON(http.MethodPost, "/v1/tasks", ask, &first, authA...); st != 202 {
			t.Fatalf("POST on A: %d", st)
		}
		a.waitFinalAs(first.ID, authA)
		if st, hdr := a.doJSON(http.MethodPost, "/v1/tasks", ask, &hit, authA...); st != 202 || hdr.Get("X-Cache") != "HIT" {
			t.Fatalf("second POST on A: %d %s", st, hdr.Get("X-Cache"))
		}
		v := b.waitFinal(hit.ID, authA...)
		if v.Status != orchestrator.StatusDone || v.Text != "cached on A" || v.Cache.Status != "hit" || v.Cache.Kind != "exact" {
			t.Fatalf("B's view of A's hit: %+v", v)
		}
		if _, hdr := b.doJSON(http.MethodGet, "/v1/tasks/"+hit.ID, nil, nil, authA...); hdr.Get("X-Cache") != "HIT" {
			t.Fatalf("B's X-Cache for A's hit: %q", hdr.Get("X-Cache"))
		}
	})

	t.Run("owner gone: a follower ends the stream instead of waiting for ever", func(t *testing.T) {
		// Records that no instance will ever finish, as if their owner had
		// died: created long ago, no end; one with a delta, one without.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		orphan := func(id string, deltas ...string) {
			t.Helper()
			rec := orchestrator.Record{Tenant: "a", Deadline: time.Now().Add(-time.Hour), View: orchestrator.View{
				ID: id, Status: orchestrator.StatusRunning, Model: "sim-1", Namespace: "default",
				CreatedAt: time.Now().Add(-time.Hour),
			}}
			if err := storeA.Start(ctx, rec, time.Minute); err != nil {
				t.Fatal(err)
			}
			if len(deltas) > 0 {
				if err := storeA.Append(ctx, id, 1, deltas, time.Minute); err != nil {
					t.Fatal(err)
				}
			}
		}
		const cut, empty = "6f1d2c3b-0000-4000-8000-00000000dead", "6f1d2c3b-0000-4000-8000-0000000dead0"
		orphan(cut, "half an answer")
		orphan(empty)

		// With output: cut, as when an upstream drops mid-stream.
		r := b.events(cut, 0, authA...)
		if r.Text != "half an answer" || r.Terminal.Type != "partial" || !strings.Contains(r.Terminal.Data, `"finish_reason":"upstream_error"`) ||
			!strings.Contains(r.Terminal.Data, "cut short (the instance running this task stopped answering)") {
			t.Fatalf("following a task whose owner is gone: %+v", r)
		}
		if v := b.waitFinal(cut, authA...); v.Status != orchestrator.StatusPartial || v.FinishReason != "upstream_error" || v.Text != "half an answer" || v.Error != nil {
			t.Fatalf("B's view: %+v", v)
		}
		// Without output: failed.
		r = b.events(empty, 0, authA...)
		if r.Text != "" || r.Terminal.Type != "error" || !strings.Contains(r.Terminal.Data, `"code":"upstream_error"`) || !strings.Contains(r.Terminal.Data, "stopped answering") {
			t.Fatalf("following a task without output whose owner is gone: %+v", r)
		}
		if v := b.waitFinal(empty, authA...); v.Status != orchestrator.StatusFailed || v.FinishReason != "upstream_error" || v.Error == nil || v.Error.Code != "upstream_error" {
			t.Fatalf("B's view of the task without output: %+v", v)
		}
	})

	t.Run("long finished task: whole at the first look", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		const id = "6f1d2c3b-0000-4000-8000-0000000001f4"
		deltas := make([]string, 1500) // more than one page of the log
		for i := range deltas {
			deltas[i] = "w" + strconv.Itoa(i) + " "
		}
		rec := orchestrator.Record{Tenant: "a", Deadline: time.Now(), View: orchestrator.View{
			ID: id, Status: orchestrator.StatusDone, FinishReason: "stop", Model: "sim-1", Namespace: "default", CreatedAt: time.Now(),
		}}
		if err := storeA.Start(ctx, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := storeA.Append(ctx, id, 1, deltas, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := storeA.Finish(ctx, rec, stream.End{Event: "done", FinishReason: "stop", Chunks: len(deltas)}, time.Minute); err != nil {
			t.Fatal(err)
		}
		var v orchestrator.View
		if st, _ := b.doJSON(http.MethodGet, "/v1/tasks/"+id, nil, &v, authA...); st != 200 || v.Status != orchestrator.StatusDone ||
			v.Chunks != len(deltas) || v.Text != strings.Join(deltas, "") {
			t.Fatalf("first look on B: %d %s, %d chunks", st, v.Status, v.Chunks)
		}
	})

	t.Run("cancel that no owner hears: DELETE answers in bounded time", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		const id = "6f1d2c3b-0000-4000-8000-0000000000ff"
		rec := orchestrator.Record{Tenant: "a", Deadline: time.Now().Add(time.Minute), View: orchestrator.View{
			ID: id, Status: orchestrator.StatusRunning, Model: "sim-1", Namespace: "default", CreatedAt: time.Now(),
		}}
		if err := storeA.Start(ctx, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		var v orchestrator.View
		if st, _ := b.doJSON(http.MethodDelete, "/v1/tasks/"+id, nil, &v, authA...); st != 200 || v.Status != orchestrator.StatusRunning {
			t.Fatalf("DELETE of a task nobody runs: %d %+v", st, v)
		}
		if took := time.Since(start); took > 10*time.Second {
			t.Fatalf("DELETE took %s", took)
		}
	})

	if n := b.Up.Requests(); n != 0 {
		t.Fatalf("B called its own upstream %d times", n)
	}
}

// TestSharedStateUnreachable: with Redis down, an instance still answers
// every request of its own (the tasks just are not shared), unknown ids
// are 404 rather than errors, and nothing is left running.
func TestSharedStateUnreachable(t *testing.T) {
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 100 * time.Millisecond, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true})
	t.Cleanup(func() { rc.Close() })
	e := newEnv(t, envOpts{Shared: redisstate.New(rc, nil, "sluice-test:down:", nil)})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"works ", "alone"}})
	resp, r := e.stream(map[string]any{"prompt": "redis is down"})
	if r.Text != "works alone" || r.Terminal.Type != "done" {
		t.Fatalf("stream with Redis down: %+v", r)
	}
	id := resp.Header.Get("X-Task-Id")
	if v := e.waitFinal(id); v.Text != "works alone" {
		t.Fatalf("own task with Redis down: %+v", v)
	}
	if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/00000000-0000-4000-8000-000000000000", nil, nil); st != 404 {
		t.Fatalf("unknown id with Redis down: %d", st)
	}
	e.waitIdle()
}

// events reads a task's event stream from e, resuming after after (0: from
// the start).
func (e *env) events(id string, after int, hdr ...string) streamResult {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if after > 0 {
		hdr = append(hdr, "Last-Event-ID", strconv.Itoa(after))
	}
	resp := e.do(ctx, http.MethodGet, "/v1/tasks/"+id+"/events", nil, hdr...)
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		e.t.Fatalf("GET events of %s: %d", id, resp.StatusCode)
	}
	return summarise(e.t, readEvents(e.t, resp.Body))
}

// TestSharedStateStalled: a Redis that accepts connections and never
// answers holds no request longer than the shared-state call bound
// (250 ms, asserted with a wide margin for this noisy machine): answers
// stream, unknown ids are 404.
func TestSharedStateStalled(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			held = append(held, c) // read nothing, answer nothing
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	})
	// The timeouts of the process's own client (cmd/sluice/redis.go): a
	// call stuck on the stalled server, such as the cancel channel's
	// SUBSCRIBE, which no context interrupts, ends within them, and so
	// does Shutdown.
	rc := redis.NewClient(&redis.Options{Addr: ln.Addr().String(), MaxRetries: -1, ContextTimeoutEnabled: true,
		DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second})
	t.Cleanup(func() { rc.Close() })
	e := newEnv(t, envOpts{Shared: redisstate.New(rc, nil, "sluice-test:stalled:", nil)})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"not ", "held"}})
	for i := range 3 {
		start := time.Now()
		_, r := e.stream(map[string]any{"prompt": "redis stalls " + strconv.Itoa(i)})
		if r.Text != "not held" {
			t.Fatalf("stream with Redis stalled: %+v", r)
		}
		start2 := time.Now()
		if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/00000000-0000-4000-8000-000000000000", nil, nil); st != 404 {
			t.Fatalf("unknown id with Redis stalled: %d", st)
		}
		if d1, d2 := start2.Sub(start), time.Since(start2); d1 > 2*time.Second || d2 > 2*time.Second {
			t.Fatalf("a stalled Redis held a stream %s and a lookup %s (bound 250 ms)", d1, d2)
		}
	}
}
