package web_test

import (
	"context"
	"encoding/json"
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
)

// proxiedStore is a shared-state Store on the Redis at url (a proxy),
// with the client options of cmd/sluice: short dial and I/O timeouts, no
// retries inside the client.
func proxiedStore(t testing.TB, url, prefix string) *redisstate.Store {
	t.Helper()
	client := func() *redis.Client {
		opt, err := redis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = time.Second, time.Second, time.Second
		opt.MaxRetries, opt.DialerRetries, opt.ContextTimeoutEnabled = -1, 1, true
		c := redis.NewClient(opt)
		t.Cleanup(func() { c.Close() })
		return c
	}
	return redisstate.New(client(), client(), prefix, nil)
}

// readWatch is a Shared that remembers the read errors that mean a broken
// log ("out of order": an entry after a gap).
type readWatch struct {
	orchestrator.Shared
	mu     sync.Mutex
	broken []string
}

func (w *readWatch) Read(ctx context.Context, id string, after int, wait time.Duration) ([]string, *stream.End, error) {
	d, end, err := w.Shared.Read(ctx, id, after, wait)
	if err != nil && strings.Contains(err.Error(), "out of order") {
		w.mu.Lock()
		w.broken = append(w.broken, err.Error())
		w.mu.Unlock()
	}
	return d, end, err
}

func (w *readWatch) Broken() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.broken...)
}

// outage is two instances sharing a real Redis through a proxy that the
// test cuts, stalls and restores.
type outage struct {
	t      *testing.T
	a, b   *env
	bWatch *readWatch
	proxy  *redistest.Proxy
	url    string // the real Redis
	prefix string
	chunks []string
}

// outageCfg is the orchestrator setting of both instances: a heartbeat
// of 100 ms (liveness expires after 300 ms) and a total cap shorter than
// the outages played, so that every task outlives its deadline while
// Redis is away.
var outageCfg = orchestrator.Config{TotalTimeout: 3 * time.Second, SharedHeartbeat: 100 * time.Millisecond}

func newOutage(t *testing.T) *outage {
	t.Helper()
	url, prefix := redistest.Redis(t)
	px, purl := redistest.NewProxy(t, url)
	o := &outage{t: t, proxy: px, url: url, prefix: prefix,
		chunks: []string{"one ", "two ", "three ", "four ", "five ", "six"}}
	o.a = newEnv(t, envOpts{Shared: proxiedStore(t, purl, prefix), Orch: outageCfg, NoCache: true})
	o.bWatch = &readWatch{Shared: proxiedStore(t, purl, prefix)}
	o.b = newEnv(t, envOpts{Shared: o.bWatch, Orch: outageCfg, NoCache: true})
	// About 0.9 s per answer: tasks started just before a cut end during it.
	o.a.Up.SetScript(upstreamtest.Script{Chunks: o.chunks, Gap: 150 * time.Millisecond})
	return o
}

// submit starts n async tasks on A and returns their ids.
func (o *outage) submit(n int, tag string) []string {
	o.t.Helper()
	var ids []string
	for i := range n {
		var created struct{ ID string }
		if st, _ := o.a.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": tag + " " + strconv.Itoa(i)}, &created); st != 202 {
			o.t.Fatalf("POST /v1/tasks on A (%s): %d", tag, st)
		}
		ids = append(ids, created.ID)
	}
	return ids
}

// readyz returns A's /readyz status and body.
func (o *outage) readyz() (int, map[string]string) {
	o.t.Helper()
	var body map[string]string
	st, _ := o.a.doJSON(http.MethodGet, "/readyz", nil, &body)
	return st, body
}

// waitFor polls cond (a few ms apart: nothing signals these states) for
// at most d.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// endAllOnA waits until every task has ended on A, then until their
// deadlines have passed, so that a follower that judged by deadlines
// alone would call them lost.
func (o *outage) endAllOnA(ids []string) {
	o.t.Helper()
	for _, id := range ids {
		task := o.a.Orch.GetAny(id)
		select {
		case <-task.Done():
		case <-time.After(10 * time.Second):
			o.t.Fatalf("task %s did not end on A", id)
		}
		if v := task.View(); v.Status != orchestrator.StatusDone || v.Text != strings.Join(o.chunks, "") {
			o.t.Fatalf("A's own view during the outage: %+v", v)
		}
	}
	waitFor(o.t, 10*time.Second, "deadlines passed", func() bool {
		for _, id := range ids {
			if time.Now().Before(o.a.Orch.GetAny(id).CreatedAt.Add(outageCfg.TotalTimeout + 500*time.Millisecond)) {
				return false
			}
		}
		return true
	})
}

// seenDoneOnB asserts that B shows every task done with the whole text,
// once Redis is back (polling: the writes kept on A go out when its
// heartbeat finds Redis again).
func (o *outage) seenDoneOnB(ids []string) {
	o.t.Helper()
	want := strings.Join(o.chunks, "")
	for _, id := range ids {
		var v orchestrator.View
		waitFor(o.t, 20*time.Second, "task "+id+" done on B", func() bool {
			v = orchestrator.View{}
			st, _ := o.b.doJSON(http.MethodGet, "/v1/tasks/"+id, nil, &v)
			return st == 200 && v.Status.Final()
		})
		if v.Status != orchestrator.StatusDone || v.Text != want || v.FinishReason != "stop" || v.Chunks != len(o.chunks) {
			o.t.Fatalf("B's view of %s after the outage: %+v", id, v)
		}
		if r := o.b.events(id, 0); r.Text != want || r.Terminal.Type != "done" {
			o.t.Fatalf("B's replay of %s after the outage: %+v", id, r)
		}
	}
	if broken := o.bWatch.Broken(); len(broken) > 0 {
		o.t.Fatalf("B read broken logs: %q", broken)
	}
	waitFor(o.t, 10*time.Second, "A's backlog empty", func() bool {
		st := o.a.Orch.SharedStatus()
		return st.Up && st.PendingTasks == 0 && st.PendingBytes == 0
	})
	if st, body := o.readyz(); st != 200 || body["redis"] != "ok" {
		o.t.Fatalf("A's /readyz after the outage: %d %v", st, body)
	}
	if d := o.a.Orch.SharedStatus().Dropped; d != 0 {
		o.t.Fatalf("A dropped %d tasks' writes", d)
	}
}

// follow reads a task's events on B in the background; the result comes
// on the channel when the stream ends.
func (o *outage) follow(id string) <-chan string {
	got := make(chan string, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, o.b.URL+"/v1/tasks/"+id+"/events", nil)
	resp, err := o.b.HTTP.Do(req)
	if err != nil {
		cancel()
		o.t.Fatal(err)
	}
	go func() {
		defer cancel()
		defer resp.Body.Close()
		var text, terminal string
		for ev, err := range sse.Read(resp.Body, nil) {
			if err != nil {
				got <- "read error: " + err.Error()
				return
			}
			switch ev.Type {
			case "delta":
				var d struct{ Text string }
				_ = json.Unmarshal([]byte(ev.Data), &d)
				text += d.Text
			case "meta":
			default:
				terminal = ev.Type + " " + ev.Data
			}
		}
		got <- text + "|" + terminal
	}()
	return got
}

// TestRedisOutageLosesNothing: Redis is cut (connections closed, new ones
// refused) for longer than the tasks' deadlines and the heartbeat TTL.
// Tasks that were running and tasks created during the outage end on A
// meanwhile; /readyz on A stays 200 and says "degraded". Once Redis is
// back, B shows every one of them done with the whole text (none called
// lost), a reader that followed one on B through the outage gets its
// whole stream and a done, and A's backlog drains.
func TestRedisOutageLosesNothing(t *testing.T) {
	o := newOutage(t)
	before := o.submit(4, "before the cut")
	// B follows the first one live, from before the cut.
	waitFor(t, 10*time.Second, "B sees the first task", func() bool {
		st, _ := o.b.doJSON(http.MethodGet, "/v1/tasks/"+before[0], nil, nil)
		return st == 200
	})
	followed := o.follow(before[0])

	o.proxy.Cut()
	during := o.submit(4, "during the cut")
	waitFor(t, 5*time.Second, "/readyz on A says degraded", func() bool {
		st, body := o.readyz()
		if st != 200 {
			t.Fatalf("/readyz on A with Redis cut: %d %v", st, body)
		}
		return strings.HasPrefix(body["redis"], "degraded: ")
	})
	all := append(before, during...)
	o.endAllOnA(all)
	if st := o.a.Orch.SharedStatus(); st.Up || st.PendingTasks != len(all) || st.PendingBytes == 0 {
		t.Fatalf("A's backlog during the outage: %+v, want %d tasks", st, len(all))
	}
	if st, body := o.readyz(); st != 200 || !strings.Contains(body["redis"], strconv.Itoa(len(all))+" tasks") {
		t.Fatalf("/readyz on A with a backlog: %d %v", st, body)
	}

	o.proxy.Restore()
	o.seenDoneOnB(all)
	if got, want := <-followed, strings.Join(o.chunks, "")+"|done "; !strings.HasPrefix(got, want) {
		t.Fatalf("B's reader across the outage: %q, want %q...", got, want)
	}
}

// TestRedisRestartedEmpty: while Redis is away it loses everything (a
// restart without persistence: every key of the deployment is deleted).
// A publishes again the tasks it holds: one finished and published before
// the outage, ones that were streaming (whose logs would now have a gap)
// and ones created during it. B reads them all whole, in order.
func TestRedisRestartedEmpty(t *testing.T) {
	o := newOutage(t)
	published, streaming := o.publishedThenStreaming("streaming at the cut")

	o.proxy.Cut()
	redistest.Empty(t, o.url, o.prefix)
	during := o.submit(2, "during the cut")
	o.endAllOnA(append(streaming, during...))
	o.proxy.Restore()
	o.seenDoneOnB(append(append(published, streaming...), during...))
}

// TestRedisKilledAndRestarted: a redis-server of the test's own is killed
// (SIGKILL) while tasks stream and started again empty (no persistence),
// its scripts forgotten too. As with TestRedisRestartedEmpty, A publishes
// again what it holds and B reads every task whole, in order.
func TestRedisKilledAndRestarted(t *testing.T) {
	srv, url := redistest.NewServer(t)
	const prefix = "sluice:"
	o := &outage{t: t, url: url, prefix: prefix, chunks: []string{"one ", "two ", "three ", "four ", "five ", "six"}}
	o.a = newEnv(t, envOpts{Shared: proxiedStore(t, url, prefix), Orch: outageCfg, NoCache: true})
	o.bWatch = &readWatch{Shared: proxiedStore(t, url, prefix)}
	o.b = newEnv(t, envOpts{Shared: o.bWatch, Orch: outageCfg, NoCache: true})
	o.a.Up.SetScript(upstreamtest.Script{Chunks: o.chunks, Gap: 150 * time.Millisecond})

	published, streaming := o.publishedThenStreaming("streaming at the kill")

	srv.Kill()
	waitFor(t, 5*time.Second, "/readyz on A says degraded", func() bool {
		st, body := o.readyz()
		return st == 200 && strings.HasPrefix(body["redis"], "degraded: ")
	})
	during := o.submit(2, "while Redis is dead")
	o.endAllOnA(append(streaming, during...))
	srv.Start()
	o.seenDoneOnB(append(append(published, streaming...), during...))
}

// TestRedisStalled: a Redis that accepts connections and never answers.
// A's streams are not held by it, /readyz stays 200 and says degraded,
// and once Redis answers again B sees every task whole.
func TestRedisStalled(t *testing.T) {
	o := newOutage(t)
	o.proxy.Stall()
	waitFor(t, 5*time.Second, "/readyz on A says degraded", func() bool {
		st, body := o.readyz()
		return st == 200 && strings.HasPrefix(body["redis"], "degraded: ")
	})
	var ids []string
	for i := range 3 {
		start := time.Now()
		resp, r := o.a.stream(map[string]any{"prompt": "stalled " + strconv.Itoa(i)})
		if r.Text != strings.Join(o.chunks, "") || r.Terminal.Type != "done" {
			t.Fatalf("stream with Redis stalled: %+v", r)
		}
		// 6 chunks 150 ms apart; the shared-state call bound (250 ms)
		// at most once, with a wide margin for this noisy machine.
		if took := time.Since(start); took > 3*time.Second {
			t.Fatalf("a stalled Redis held a stream %s", took)
		}
		ids = append(ids, resp.Header.Get("X-Task-Id"))
	}
	ids = append(ids, o.submit(2, "stalled async")...)
	o.endAllOnA(ids)
	o.proxy.Restore()
	o.seenDoneOnB(ids)
}

// TestFollowerAndOwnerLiveness: a follower calls a task whose deadline
// passed lost only once its owner's heartbeat has been missing for a
// whole TTL; while the owner beats, the task stays running.
func TestFollowerAndOwnerLiveness(t *testing.T) {
	o := newOutage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	store := proxiedStore(t, o.url, o.prefix)
	put := func(id, owner string) {
		rec := orchestrator.Record{Tenant: "", Owner: owner, Deadline: time.Now().Add(-time.Minute), View: orchestrator.View{
			ID: id, Status: orchestrator.StatusRunning, Model: "sim-1", Namespace: "default", CreatedAt: time.Now().Add(-time.Minute),
		}}
		if err := store.Start(ctx, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := store.Append(ctx, id, 1, []string{"half"}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	const gone, alive = "6f1d2c3b-0000-4000-8000-0000000000a1", "6f1d2c3b-0000-4000-8000-0000000000a2"
	put(gone, "an-instance-that-stopped")
	put(alive, o.a.Orch.Config().Instance)

	start := time.Now()
	r := o.b.events(gone, 0)
	// It had output: a cut (partial, with the notice), as when an upstream drops mid-stream.
	if r.Text != "half" || r.Terminal.Type != "partial" || !strings.Contains(r.Terminal.Data, `"finish_reason":"upstream_error"`) ||
		!strings.Contains(r.Terminal.Data, "stopped answering") {
		t.Fatalf("following a task whose owner stopped: %+v", r)
	}
	if took := time.Since(start); took < 3*outageCfg.SharedHeartbeat {
		t.Fatalf("called lost after %s, before a whole heartbeat TTL", took)
	}

	followed := o.follow(alive)
	time.Sleep(10 * outageCfg.SharedHeartbeat) // what must not happen: the follower ending
	select {
	case got := <-followed:
		t.Fatalf("a task of a live owner was ended: %q", got)
	default:
	}
	var v orchestrator.View
	if st, _ := o.b.doJSON(http.MethodGet, "/v1/tasks/"+alive, nil, &v); st != 200 || v.Status != orchestrator.StatusRunning {
		t.Fatalf("B's view of a live owner's task: %d %+v", st, v)
	}
	// Its owner ends it: the follower gets the end.
	rec := orchestrator.Record{Tenant: "", Owner: o.a.Orch.Config().Instance, Deadline: time.Now(), View: orchestrator.View{
		ID: alive, Status: orchestrator.StatusDone, FinishReason: "stop", Model: "sim-1", Namespace: "default", CreatedAt: time.Now().Add(-time.Minute),
	}}
	if err := store.Finish(ctx, rec, stream.End{Event: "done", FinishReason: "stop", Chunks: 1}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if got := <-followed; !strings.HasPrefix(got, "half|done ") {
		t.Fatalf("the live owner's task on B: %q", got)
	}
}

// TestRedisBacklogBound: the write-behind backlog holds at most
// SharedPendingTasks tasks and SharedPendingBytes of their text; the
// tasks beyond either bound are dropped (counted in SharedStatus and
// sluice_shared_dropped_total) and the others are still published whole
// when Redis is back.
func TestRedisBacklogBound(t *testing.T) {
	chunks := []string{"kept ", "whole"} // 10 bytes a task
	for _, bound := range []struct {
		name  string
		tasks int
		bytes int64
	}{{"tasks", 2, 0}, {"bytes", 0, 25}} {
		t.Run(bound.name, func(t *testing.T) {
			url, prefix := redistest.Redis(t)
			px, purl := redistest.NewProxy(t, url)
			cfg := outageCfg
			cfg.SharedPendingTasks, cfg.SharedPendingBytes = bound.tasks, bound.bytes
			o := &outage{t: t, proxy: px, url: url, prefix: prefix, chunks: chunks}
			o.a = newEnv(t, envOpts{Shared: proxiedStore(t, purl, prefix), Orch: cfg, NoCache: true})
			o.bWatch = &readWatch{Shared: proxiedStore(t, purl, prefix)}
			o.b = newEnv(t, envOpts{Shared: o.bWatch, Orch: cfg, NoCache: true})
			o.a.Up.SetScript(upstreamtest.Script{Chunks: o.chunks})

			px.Cut()
			var ids []string
			for i := range 4 {
				id := o.submit(1, "bounded "+strconv.Itoa(i))[0]
				select {
				case <-o.a.Orch.GetAny(id).Done():
				case <-time.After(10 * time.Second):
					t.Fatalf("task %d did not end on A", i)
				}
				waitFor(t, 10*time.Second, "task in the backlog or dropped", func() bool {
					st := o.a.Orch.SharedStatus()
					return st.PendingTasks+int(st.Dropped) == i+1
				})
				ids = append(ids, id)
			}
			// A task joins the backlog with the text it has when a write
			// first fails and may outgrow it at the next failure.
			waitFor(t, 10*time.Second, "2 tasks kept and 2 dropped", func() bool {
				st := o.a.Orch.SharedStatus()
				return st.PendingTasks == 2 && st.Dropped == 2
			})
			if st := o.a.Orch.SharedStatus(); st.PendingBytes > 20 {
				t.Fatalf("backlog with room for 2 after 4 tasks: %+v", st)
			}
			px.Restore()
			waitFor(t, 10*time.Second, "A's backlog empty", func() bool { return o.a.Orch.SharedStatus().PendingTasks == 0 })
			// Which ones were dropped depends on when each one's writes
			// failed: the others are whole on B, the dropped ones unknown.
			want := strings.Join(o.chunks, "")
			kept, dropped := 0, 0
			for i, id := range ids {
				var v orchestrator.View
				st, _ := o.b.doJSON(http.MethodGet, "/v1/tasks/"+id, nil, &v)
				switch {
				case st == 200 && v.Status == orchestrator.StatusDone && v.Text == want:
					kept++
				case st == 404:
					dropped++
				default:
					t.Fatalf("task %d on B: %d %+v", i, st, v)
				}
			}
			if kept != 2 || dropped != 2 {
				t.Fatalf("on B: %d tasks whole, %d unknown; want 2 and 2", kept, dropped)
			}
		})
	}
}

// publishedThenStreaming starts one task on A and lets it end and reach B,
// then starts three that stream slowly (label names them) and waits until
// B has seen deltas of them: the state in which Redis is then lost.
func (o *outage) publishedThenStreaming(label string) (published, streaming []string) {
	t := o.t
	t.Helper()
	published = o.submit(1, "published before")
	o.endAllOnA(published)
	waitFor(t, 10*time.Second, "the first task published", func() bool {
		var v orchestrator.View
		st, _ := o.b.doJSON(http.MethodGet, "/v1/tasks/"+published[0], nil, &v)
		return st == 200 && v.Status == orchestrator.StatusDone
	})
	streaming = o.submit(3, label)
	waitFor(t, 10*time.Second, "deltas of the streaming tasks on B", func() bool {
		var v orchestrator.View
		st, _ := o.b.doJSON(http.MethodGet, "/v1/tasks/"+streaming[2], nil, &v)
		return st == 200 && v.Chunks >= 2
	})
	return published, streaming
}
