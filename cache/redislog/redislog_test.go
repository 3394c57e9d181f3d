package redislog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cache/redislog"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var bg = context.Background()

// fleet is the caches of one deployment on one Redis target: every
// instance shares one change log prefix.
type fleet struct {
	t      *testing.T
	url    string
	prefix string
}

func newFleet(t *testing.T, target redistest.Target) *fleet {
	t.Helper()
	_, prefix := redistest.Redis(t)
	return &fleet{t: t, url: target.URL, prefix: prefix}
}

// log returns a change log of the fleet through url ("" = the target's).
func (f *fleet) log(url string, maxLen int64) *redislog.Log {
	if url == "" {
		url = f.url
	}
	return redislog.New(redistest.Universal(f.t, url), redislog.Config{Prefix: f.prefix, MaxLen: maxLen})
}

// instance starts a shared cache through url ("" = the target's); it is
// stopped when the test ends.
func (f *fleet) instance(url string, cfg cache.Config, sc cache.ShareConfig) *cache.Cache {
	f.t.Helper()
	c := cache.New(cfg)
	if sc.Block == 0 {
		sc.Block = 100 * time.Millisecond
	}
	if sc.MaxBackoff == 0 {
		sc.MaxBackoff = 100 * time.Millisecond
	}
	if sc.Timeout == 0 {
		sc.Timeout = 500 * time.Millisecond
	}
	stop, err := c.Share(bg, f.log(url, 0), sc)
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(stop)
	return c
}

// three starts three instances of the default configuration.
func (f *fleet) three() (a, b, c *cache.Cache) {
	return f.instance("", cache.Config{}, cache.ShareConfig{}), f.instance("", cache.Config{}, cache.ShareConfig{}),
		f.instance("", cache.Config{}, cache.ShareConfig{})
}

// eventually polls cond every 10ms for at most 10s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// caughtUp waits until c has read the whole log and appended its outbox.
func caughtUp(t *testing.T, c *cache.Cache, lg *redislog.Log) {
	t.Helper()
	eventually(t, "caught up", func() bool {
		st := c.ShareStatus()
		if st.Pending != 0 {
			return false
		}
		_, last, err := lg.Read(bg, st.Position, 1, 0)
		return err == nil && last == st.Position
	})
}

var (
	wms       = cache.Namespace{Tenant: "t1", Namespace: "wms", Model: "m"}
	question  = "How many units of SKU-10234 are left in zone A?"
	paraphase = "Please tell me how many units of SKU-10234 remain in zone A"
	answer    = cache.Answer{Chunks: []string{"42 ", "units"}}
)

func hit(c *cache.Cache, ns cache.Namespace, q string) cache.Result {
	return c.Lookup(bg, ns, q)
}

// each runs fn once per Redis target (a single server, a cluster), as
// subtests, with a fleet of its own.
func each(t *testing.T, fn func(f *fleet)) {
	t.Helper()
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) { fn(newFleet(t, target)) })
	}
}

// (a) A put on A is an exact and a semantic hit on B and C, with the
// answer's chunks as stored.
func TestPutIsHitEverywhere(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a, b, c := f.three()
		a.Store(bg, wms, question, a.Generation(wms), answer)
		for name, x := range map[string]*cache.Cache{"B": b, "C": c} {
			eventually(t, "exact hit on "+name, func() bool { return x.Explain(bg, wms, question).Decision == cache.DecisionHit })
			r := hit(x, wms, question)
			if !r.Hit || r.Kind != cache.KindExact || strings.Join(r.Answer.Chunks, "|") != "42 |units" {
				t.Fatalf("%s exact: %+v", name, r)
			}
			if r := hit(x, wms, paraphase); !r.Hit || r.Kind != cache.KindSemantic {
				t.Fatalf("%s semantic: %+v", name, r)
			}
			if r := hit(x, wms, "How many units of SKU-10235 are left in zone A?"); r.Hit {
				t.Fatalf("%s: another SKU hit: %+v", name, r)
			}
			other := wms
			other.Tenant = "t2"
			if r := hit(x, other, question); r.Hit {
				t.Fatalf("%s: another tenant hit: %+v", name, r)
			}
		}
		if st := b.ShareStatus(); !st.Enabled || !st.Up || st.Applied < 1 || st.Position == "" {
			t.Fatalf("B's status: %+v", st)
		}
		if st := a.ShareStatus(); st.Appended != 1 || st.Applied != 0 {
			t.Fatalf("A's status: %+v (its own put is not applied again)", st)
		}
	})
}

// (b) A purge on A reaches B and C and stays done: a later change of
// another scope (which moves every reader past the purge) does not bring
// the entry back, and other scopes keep theirs.
func TestPurgeReachesEveryInstanceAndStays(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a, b, c := f.three()
		keep := cache.Namespace{Tenant: "t1", Namespace: "other", Model: "m"}
		a.Store(bg, wms, question, a.Generation(wms), answer)
		b.Store(bg, keep, question, b.Generation(keep), answer)
		for _, x := range []*cache.Cache{a, b, c} {
			eventually(t, "both entries everywhere", func() bool { return hit(x, wms, question).Hit && hit(x, keep, question).Hit })
		}
		if n := a.Purge("t1", "wms"); n != 1 {
			t.Fatalf("purge on A dropped %d", n)
		}
		for _, x := range []*cache.Cache{b, c} {
			eventually(t, "purge reached", func() bool { return !hit(x, wms, question).Hit })
		}
		c.Store(bg, keep, "What does HTTP 503 mean?", c.Generation(keep), answer) // moves every reader on
		for name, x := range map[string]*cache.Cache{"A": a, "B": b, "C": c} {
			eventually(t, "later put everywhere", func() bool { return hit(x, keep, "What does HTTP 503 mean?").Hit })
			if r := hit(x, wms, question); r.Hit {
				t.Fatalf("%s: purged entry came back: %+v", name, r)
			}
			if r := hit(x, keep, question); !r.Hit {
				t.Fatalf("%s: another scope's entry was purged", name)
			}
		}
	})
}

// (b-i) A put made under the generation before a purge is refused when it
// reaches the log after the purge: by the log itself (atomically), and by
// the instance that computed it, which also drops its local entry. The
// answer of a miss that came before a purge is not stored after it.
func TestStalePutAfterPurgeIsRefused(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		lg := f.log("", 0)
		ctx := context.Background()
		epoch, gens, err := lg.Generations(ctx)
		if err != nil || epoch == "" || len(gens) != 0 {
			t.Fatalf("generations of a new log: %q %v %v", epoch, gens, err)
		}
		if _, err := lg.Append(ctx, cache.Change{Op: cache.ChangePurge, Epoch: "another", Scope: cache.Scope{Tenant: "t1", Namespace: "wms"}}); !errors.Is(err, cache.ErrEpoch) {
			t.Fatalf("append under another epoch: %v, want ErrEpoch", err)
		}
		g, err := lg.Append(ctx, cache.Change{Op: cache.ChangePurge, Epoch: epoch, Origin: "x", Scope: cache.Scope{Tenant: "t1", Namespace: "wms"}})
		if err != nil || g != 1 {
			t.Fatalf("purge: gen %d, %v", g, err)
		}
		if e2, gens, err := lg.Generations(ctx); err != nil || e2 != epoch || gens[cache.Scope{Tenant: "t1", Namespace: "wms"}] != 1 {
			t.Fatalf("generations after a purge: %q %v %v", e2, gens, err)
		}
		put := cache.Change{Op: cache.ChangePut, Epoch: epoch, Origin: "x", Gen: 0, Scope: cache.Scope{Tenant: "t1", Namespace: "wms"},
			Model: "m", Question: question, Chunks: answer.Chunks, Created: time.Now()}
		if _, err := lg.Append(ctx, put); !errors.Is(err, cache.ErrStale) {
			t.Fatalf("stale put: %v, want ErrStale", err)
		}
		put.Gen = 1
		if g, err := lg.Append(ctx, put); err != nil || g != 1 {
			t.Fatalf("current put: %d %v", g, err)
		}

		// Through the caches: A's put waits (A cannot reach Redis) while
		// B purges; when A is back, the log refuses it and A drops it.
		proxy, proxied := redistest.NewCut(t, f.url)
		a := f.instance(proxied, cache.Config{}, cache.ShareConfig{})
		b := f.instance("", cache.Config{}, cache.ShareConfig{})
		c := f.instance("", cache.Config{}, cache.ShareConfig{})
		ns := cache.Namespace{Tenant: "t9", Namespace: "wms", Model: "m"}
		caughtUp(t, a, f.log(proxied, 0))
		proxy.Cut()
		if r := hit(a, ns, question); r.Hit {
			t.Fatal("hit before any put")
		}
		a.Store(bg, ns, question, a.Generation(ns), answer) // the answer of that miss
		if !hit(a, ns, question).Hit {
			t.Fatal("A does not serve its own put while Redis is down")
		}
		b.Purge("t9", "wms")
		eventually(t, "B's purge appended", func() bool { return b.ShareStatus().Pending == 0 })
		proxy.Restore()
		eventually(t, "A's queued put refused and dropped", func() bool { return a.ShareStatus().Refused == 1 && !hit(a, ns, question).Hit })
		caughtUp(t, b, f.log("", 0))
		caughtUp(t, c, f.log("", 0))
		for name, x := range map[string]*cache.Cache{"B": b, "C": c} {
			if r := hit(x, ns, question); r.Hit {
				t.Fatalf("%s: the pre-purge answer came back: %+v", name, r)
			}
		}

		// A miss on A before a purge on B, stored on A after the purge
		// reached A: not stored at all.
		miss := hit(a, ns, paraphase)
		if miss.Hit {
			t.Fatal("unexpected hit")
		}
		b.Purge("t9", "wms")
		eventually(t, "second purge reached A", func() bool {
			return a.ShareStatus().Applied >= 1 && b.ShareStatus().Pending == 0 && a.ShareStatus().Position != ""
		})
		caughtUp(t, a, f.log(proxied, 0))
		a.Store(bg, ns, paraphase, miss.Gen, answer)
		if r := hit(a, ns, paraphase); r.Hit {
			t.Fatalf("an answer computed before the purge was stored after it: %+v", r)
		}
		// A new miss, after the purge, is stored and shared.
		a.Store(bg, ns, paraphase, hit(a, ns, paraphase).Gen, answer)
		eventually(t, "a fresh put reaches C", func() bool { return hit(c, ns, paraphase).Hit })
	})
}

// (b-ii) A warm start replays the kept log: the entries put and not
// purged are hits, the purged ones never come back, whatever the order
// in which the generations and the log are read.
func TestWarmStartDoesNotResurrect(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		gone := cache.Namespace{Tenant: "t1", Namespace: "gone", Model: "m"}
		kept := cache.Namespace{Tenant: "t1", Namespace: "kept", Model: "m"}
		a.Store(bg, gone, question, a.Generation(gone), answer)
		a.Store(bg, kept, question, a.Generation(kept), answer)
		a.Purge("t1", "gone")
		a.Store(bg, kept, "What does HTTP 503 mean?", a.Generation(kept), answer)
		lg := f.log("", 0)
		caughtUp(t, a, lg)

		d := f.instance("", cache.Config{}, cache.ShareConfig{})
		caughtUp(t, d, lg)
		if !hit(d, kept, question).Hit || !hit(d, kept, "What does HTTP 503 mean?").Hit {
			t.Fatal("warm start lost kept entries")
		}
		if r := hit(d, gone, question); r.Hit {
			t.Fatalf("warm start brought a purged entry back: %+v", r)
		}

		// A put of the old generation left in the log by a writer that
		// did not check (as a pub/sub replica would) is still not applied
		// on a warm start: the generations are read first.
		client := redistest.Universal(t, f.url)
		stream, _, _ := lg.Keys()
		raw, _ := json.Marshal(map[string]any{"tenant": "t1", "ns": "gone", "model": "m", "q": "What is a pallet?", "a": []string{"x"}})
		if err := client.XAdd(bg, &redis.XAddArgs{Stream: stream, Values: []any{"op", "put", "gen", "0", "origin", "rogue", "body", string(raw)}}).Err(); err != nil {
			t.Fatal(err)
		}
		e := f.instance("", cache.Config{}, cache.ShareConfig{})
		caughtUp(t, e, lg)
		caughtUp(t, d, lg)
		for name, x := range map[string]*cache.Cache{"D": d, "E": e} {
			if r := hit(x, gone, "What is a pallet?"); r.Hit {
				t.Fatalf("%s applied a put of a purged generation", name)
			}
		}
	})
}

// (c) A purge made while B cannot reach Redis reaches B when it is back:
// B resumes from its position, and a put made meanwhile arrives too.
func TestPurgeWhileDisconnectedReachesOnReconnect(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		proxy, proxied := redistest.NewCut(t, f.url)
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		b := f.instance(proxied, cache.Config{}, cache.ShareConfig{})
		c := f.instance("", cache.Config{}, cache.ShareConfig{})
		a.Store(bg, wms, question, a.Generation(wms), answer)
		eventually(t, "hit on B", func() bool { return hit(b, wms, question).Hit })
		proxy.Cut()
		eventually(t, "B sees the outage", func() bool { return !b.ShareStatus().Up })
		a.Purge("t1", "wms")
		later := cache.Namespace{Tenant: "t1", Namespace: "later", Model: "m"}
		c.Store(bg, later, question, c.Generation(later), answer)
		eventually(t, "purge on C", func() bool { return !hit(c, wms, question).Hit })
		if !hit(b, wms, question).Hit {
			t.Fatal("B should still serve its copy while it cannot hear the purge")
		}
		st := b.ShareStatus()
		if st.Up || st.Err == "" || st.Errors == 0 {
			t.Fatalf("B's status while cut: %+v", st)
		}
		proxy.Restore()
		eventually(t, "purge reached B after reconnect", func() bool { return !hit(b, wms, question).Hit })
		eventually(t, "put made meanwhile reached B", func() bool { return hit(b, later, question).Hit })
		eventually(t, "B up", func() bool { return b.ShareStatus().Up })
	})
}

// (c') A purge made on B while B cannot reach Redis is appended when it
// is back, and reaches A and C; B serves and stores locally meanwhile,
// never failing.
func TestPurgeMadeWhileDisconnectedIsAppendedLater(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		proxy, proxied := redistest.NewCut(t, f.url)
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		b := f.instance(proxied, cache.Config{}, cache.ShareConfig{})
		a.Store(bg, wms, question, a.Generation(wms), answer)
		eventually(t, "hit on B", func() bool { return hit(b, wms, question).Hit })
		proxy.Cut()
		for range 3 { // merged into one purge of 3 steps while waiting
			b.Purge("t1", "wms")
		}
		local := cache.Namespace{Tenant: "t1", Namespace: "local", Model: "m"}
		b.Store(bg, local, question, b.Generation(local), answer)
		if !hit(b, local, question).Hit {
			t.Fatal("B does not serve locally while Redis is down")
		}
		// The three purges wait as one (two when the first was being
		// appended when the others came: it is never merged into), plus
		// the put; unmerged they would be four.
		eventually(t, "B's changes wait", func() bool { st := b.ShareStatus(); return (st.Pending == 2 || st.Pending == 3) && !st.Up })
		if !hit(a, wms, question).Hit {
			t.Fatal("A lost its entry before the purge could reach it")
		}
		proxy.Restore()
		eventually(t, "B's purge reached A", func() bool { return !hit(a, wms, question).Hit })
		eventually(t, "B's put reached A", func() bool { return hit(a, local, question).Hit })
		if st := b.ShareStatus(); st.Dropped != 0 {
			t.Fatalf("dropped: %+v", st)
		}
		// The log moved the generation as far as B did (3 purges), so a
		// purge from A afterwards is newer than what B knows, and reaches it.
		if _, gens, err := f.log("", 0).Generations(bg); err != nil || gens[cache.Scope{Tenant: "t1", Namespace: "wms"}] != 3 {
			t.Fatalf("generations after B's 3 purges: %v %v", gens, err)
		}
		a.Store(bg, wms, question, a.Generation(wms), answer)
		eventually(t, "A's new put reaches B", func() bool { return hit(b, wms, question).Hit })
		a.Purge("t1", "wms")
		eventually(t, "A's purge reaches B", func() bool { return !hit(b, wms, question).Hit })
	})
}

// pausedLog holds the first append until hold is closed and then fails
// it, as a Redis cut under an append in flight: more changes come while
// it is in flight, and it is retried after them. The others pass.
type pausedLog struct {
	*redislog.Log
	hold    chan struct{} // closed: the held append fails
	entered chan struct{} // closed: the first append is being held
	first   sync.Once
}

func (h *pausedLog) Append(ctx context.Context, ch cache.Change) (uint64, error) {
	held := false
	h.first.Do(func() { held = true })
	if !held {
		return h.Log.Append(ctx, ch)
	}
	close(h.entered)
	select {
	case <-h.hold:
		return 0, errors.New("paused: the connection was cut under the append")
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// Purges made while B's first purge is in flight wait behind it (merged
// into one of two steps), then a put made after them; the first purge
// fails and is retried after them. The log moves the scope as far as B
// did (3), not further (the retried purge carried B's generation with
// the waiting purges' steps, which they added again: 5), so B's put is
// appended under the generation B stored it with, kept on B and served
// by A. (TestPurgeMadeWhileDisconnectedIsAppendedLater meets this order
// by chance, under load; here it is made.)
func TestPurgesWaitingBehindOneBeingAppendedMoveTheLogOnce(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		hl := &pausedLog{Log: f.log("", 0), hold: make(chan struct{}), entered: make(chan struct{})}
		release := sync.OnceFunc(func() { close(hl.hold) })
		b := cache.New(cache.Config{})
		// A long Timeout: the held append must not time out (and then be
		// merged into) while the test makes the others.
		stop, err := b.Share(bg, hl, cache.ShareConfig{Block: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Timeout: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		t.Cleanup(release) // before stop: cleanups run last first
		a.Store(bg, wms, question, a.Generation(wms), answer)
		eventually(t, "hit on B", func() bool { return hit(b, wms, question).Hit })
		b.Purge("t1", "wms")
		select {
		case <-hl.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("B's purge was not appended within 10s")
		}
		b.Purge("t1", "wms")
		b.Purge("t1", "wms")
		fresh := "Which dock receives the inbound pallets today?"
		b.Store(bg, wms, fresh, b.Generation(wms), cache.Answer{Chunks: []string{"dock 4"}})
		if st := b.ShareStatus(); st.Pending != 3 {
			t.Fatalf("waiting: %+v; want 3: the purge being appended, the two after it merged, the put", st)
		}
		release()
		lg := f.log("", 0)
		caughtUp(t, b, lg)
		if _, gens, err := lg.Generations(bg); err != nil || gens[cache.Scope{Tenant: "t1", Namespace: "wms"}] != 3 {
			t.Fatalf("generations after B's 3 purges: %v %v; want 3", gens, err)
		}
		if st := b.ShareStatus(); st.Refused != 0 || st.Dropped != 0 || st.Appended != 3 || st.Errors == 0 {
			t.Fatalf("B's changes: %+v; want the failed append, then 3 appended (2 purges, 1 put), none refused or dropped", st)
		}
		if r := hit(b, wms, fresh); !r.Hit {
			t.Fatal("B lost the answer it stored after its purges")
		}
		eventually(t, "B's put reached A", func() bool { return hit(a, wms, fresh).Hit })
		if hit(a, wms, question).Hit {
			t.Fatal("B's purges did not reach A")
		}
	})
}

// (d) What decides a hit is computed locally from the question: a put
// whose wire data claims other facets, another normalized text, another
// key and another question's vector cannot make a wrong hit.
func TestWireCannotDecideAHit(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		b := f.instance("", cache.Config{}, cache.ShareConfig{})
		lg := f.log("", 0)
		other := "How many units of SKU-10235 are left in zone A?"
		lie := map[string]any{
			"tenant": "t1", "ns": "wms", "model": "m", "q": question, "a": []string{"42"},
			"created_ms": time.Now().UnixMilli(), "emb": cache.Builtin{}.Name(), "dim": cache.BuiltinDim,
			// Claims of the wire that must not be believed.
			"normalized": strings.ToLower(other), "facets": []string{"id:sku-10235", "zone:a"},
			"key": cache.ExactKey(wms, strings.ToLower(other)),
			"vec": cache.EncodeVector(builtinVec(t, other)),
		}
		raw, _ := json.Marshal(lie)
		stream, _, _ := lg.Keys()
		if err := redistest.Universal(t, f.url).XAdd(bg, &redis.XAddArgs{Stream: stream,
			Values: []any{"op", "put", "gen", "0", "origin", "rogue", "body", string(raw)}}).Err(); err != nil {
			t.Fatal(err)
		}
		caughtUp(t, b, lg)
		if r := hit(b, wms, other); r.Hit {
			t.Fatalf("the wire's claims made a wrong hit: %+v", r)
		}
		x := b.Explain(bg, wms, question)
		if x.Decision != cache.DecisionHit || x.Kind != cache.KindExact {
			t.Fatalf("the put's own question: %+v", x)
		}
		if len(x.Candidates) != 1 || strings.Join(x.Candidates[0].Facets, ",") != strings.Join(x.Query.Facets, ",") ||
			strings.Contains(strings.Join(x.Candidates[0].Facets, ","), "10235") {
			t.Fatalf("facets not computed locally: %+v", x.Candidates)
		}
		if r := hit(b, wms, paraphase); !r.Hit || r.Kind != cache.KindSemantic {
			t.Fatalf("the local vector does not serve a paraphrase: %+v", r)
		}
		// Garbage on the wire is skipped, never applied, and the reader
		// goes on.
		if err := redistest.Universal(t, f.url).XAdd(bg, &redis.XAddArgs{Stream: stream,
			Values: []any{"op", "put", "gen", "zero", "body", "{"}}).Err(); err != nil {
			t.Fatal(err)
		}
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		a.Store(bg, wms, "What does HTTP 503 mean?", a.Generation(wms), answer)
		eventually(t, "reader goes on after garbage", func() bool { return hit(b, wms, "What does HTTP 503 mean?").Hit })
	})
}

func builtinVec(t *testing.T, q string) []float32 {
	t.Helper()
	v, err := cache.Builtin{}.Embed(bg, strings.ToLower(q))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// named is a model embedder: the builtin embedder's vectors, cut to dim,
// under a model name, as two deployments of different models would be.
type named struct {
	name string
	dim  int
}

func (n named) Name() string { return n.name }
func (n named) Embed(ctx context.Context, q string) ([]float32, error) {
	v, err := cache.Builtin{}.Embed(ctx, q)
	return v[:n.dim], err
}

// (e) A vector from another embedder (name or dimension) is never
// compared with local vectors: the entry serves the exact tier only. The
// same embedder's vector is taken as is.
func TestForeignVectorsNeverCompared(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a := f.instance("", cache.Config{Embedder: named{"model-x", cache.BuiltinDim}}, cache.ShareConfig{})
		same := f.instance("", cache.Config{Embedder: named{"model-x", cache.BuiltinDim}}, cache.ShareConfig{})
		otherName := f.instance("", cache.Config{Embedder: named{"model-y", cache.BuiltinDim}}, cache.ShareConfig{})
		otherDim := f.instance("", cache.Config{Embedder: named{"model-x", 512}}, cache.ShareConfig{})
		builtin := f.instance("", cache.Config{}, cache.ShareConfig{})
		otherDim.Store(bg, cache.Namespace{Namespace: "warm", Model: "m"}, "a question of its own", otherDim.Generation(cache.Namespace{Namespace: "warm", Model: "m"}), answer) // knows its dimension
		a.Store(bg, wms, question, a.Generation(wms), answer)
		for name, x := range map[string]*cache.Cache{"same": same, "other name": otherName, "other dimension": otherDim, "builtin": builtin} {
			eventually(t, "exact hit on "+name, func() bool { return hit(x, wms, question).Hit })
		}
		if r := hit(same, wms, paraphase); !r.Hit || r.Kind != cache.KindSemantic {
			t.Fatalf("same embedder: %+v", r)
		}
		// builtin re-embeds locally: its own vectors, a semantic hit.
		if r := hit(builtin, wms, paraphase); !r.Hit || r.Kind != cache.KindSemantic {
			t.Fatalf("builtin: %+v", r)
		}
		for name, x := range map[string]*cache.Cache{"other name": otherName, "other dimension": otherDim} {
			if r := hit(x, wms, paraphase); r.Hit {
				t.Fatalf("%s compared a foreign vector: %+v", name, r)
			}
			if c := x.Explain(bg, wms, paraphase).Candidates; len(c) != 0 {
				t.Fatalf("%s scored a foreign vector: %+v", name, c)
			}
		}
	})
}

// The index stays bounded by MaxEntries and MaxBytes on every instance
// however many puts arrive; an instance that applies its own puts again
// ends with the same entries as one that skips them.
func TestBoundedAndOwnChangesSameEitherWay(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		small := f.instance("", cache.Config{MaxEntries: 5}, cache.ShareConfig{})
		tiny := f.instance("", cache.Config{MaxBytes: 4 << 10}, cache.ShareConfig{})
		own := f.instance("", cache.Config{}, cache.ShareConfig{ApplyOwn: true})
		const n = 60
		for i := range n {
			q := fmt.Sprintf("What is the stock of SKU-%d in zone B?", 20000+i)
			a.Store(bg, wms, q, a.Generation(wms), answer)
			own.Store(bg, wms, q, own.Generation(wms), answer)
		}
		lg := f.log("", 0)
		for _, x := range []*cache.Cache{a, small, tiny, own} {
			caughtUp(t, x, lg)
		}
		count := func(x *cache.Cache) (int, int64) {
			var n int
			var b int64
			for _, s := range x.Stats() {
				n += s.Entries
				b += s.Bytes
			}
			return n, b
		}
		if n, _ := count(small); n != 5 {
			t.Fatalf("MaxEntries 5: %d entries", n)
		}
		if n, b := count(tiny); b > 4<<10 || n == 0 {
			t.Fatalf("MaxBytes 4KiB: %d entries, %d bytes", n, b)
		}
		if na, ba := count(a); na != n || ba <= 0 {
			t.Fatalf("A: %d entries", na)
		}
		if no, _ := count(own); no != n {
			t.Fatalf("applying its own puts again: %d entries, want %d", no, n)
		}
		last := fmt.Sprintf("What is the stock of SKU-%d in zone B?", 20000+n-1)
		if !hit(small, wms, last).Hit || !hit(own, wms, last).Hit {
			t.Fatal("the newest entry is not kept")
		}
	})
}

// TTL counts from the entry's creation, not from its arrival.
func TestTTLCountsFromCreation(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		past := func() time.Time { return time.Now().Add(-2 * time.Hour) }
		a := f.instance("", cache.Config{Now: past, TTL: 24 * time.Hour}, cache.ShareConfig{})
		short := f.instance("", cache.Config{TTL: time.Hour}, cache.ShareConfig{})
		long := f.instance("", cache.Config{TTL: 3 * time.Hour}, cache.ShareConfig{})
		a.Store(bg, wms, question, a.Generation(wms), answer)
		eventually(t, "hit on long", func() bool { return hit(long, wms, question).Hit })
		caughtUp(t, short, f.log("", 0))
		if hit(short, wms, question).Hit {
			t.Fatal("an entry created 2h ago served under a 1h TTL")
		}
		x := long.Explain(bg, wms, question)
		if len(x.Candidates) != 1 || x.Candidates[0].TTLS > 3600 || x.Candidates[0].TTLS < 3500 || x.Candidates[0].AgeS < 7100 {
			t.Fatalf("TTL on long does not count from creation: %+v", x.Candidates)
		}
	})
}

// While Redis is down the cache keeps serving and storing locally; puts
// wait in the bounded outbox (the oldest dropped past it) and are
// appended when Redis is back; the status says so.
func TestRedisDownServesLocally(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		proxy, proxied := redistest.NewCut(t, f.url)
		a := f.instance(proxied, cache.Config{}, cache.ShareConfig{Outbox: 3})
		b := f.instance("", cache.Config{}, cache.ShareConfig{})
		caughtUp(t, a, f.log(proxied, 0))
		proxy.Cut()
		for i := range 5 {
			a.Store(bg, wms, fmt.Sprintf("What is the stock of SKU-%d in zone B?", 30000+i), a.Generation(wms), answer)
		}
		for i := range 5 {
			if !hit(a, wms, fmt.Sprintf("What is the stock of SKU-%d in zone B?", 30000+i)).Hit {
				t.Fatal("A does not serve locally")
			}
		}
		eventually(t, "A degraded", func() bool {
			st := a.ShareStatus()
			return !st.Up && st.Err != "" && st.Pending <= 4 && st.Dropped >= 1 && st.Dropped+int64(st.Pending) == 5
		})
		dropped := a.ShareStatus().Dropped
		proxy.Restore()
		eventually(t, "A up", func() bool { st := a.ShareStatus(); return st.Up && st.Pending == 0 && st.Lag == 0 })
		caughtUp(t, b, f.log("", 0))
		reached := 0
		for i := range 5 {
			if hit(b, wms, fmt.Sprintf("What is the stock of SKU-%d in zone B?", 30000+i)).Hit {
				reached++
			}
		}
		if st := a.ShareStatus(); int64(reached) != 5-dropped || st.Appended != int64(reached) {
			t.Fatalf("%d puts reached B, %d dropped: %+v", reached, dropped, st)
		}
		if !hit(b, wms, "What is the stock of SKU-30004 in zone B?").Hit {
			t.Fatal("the newest put did not reach B")
		}
	})
}

// Share twice fails; stop is idempotent and leaves no goroutine (checked
// by goleak for the whole package).
func TestShareTwiceAndStop(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		c := cache.New(cache.Config{})
		stop, err := c.Share(bg, f.log("", 0), cache.ShareConfig{Block: 50 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Share(bg, f.log("", 0), cache.ShareConfig{}); err == nil {
			t.Fatal("shared twice")
		}
		stop()
		stop()
		if c.ShareStatus().Enabled {
			t.Fatal("still shared after stop")
		}
		c.Store(bg, wms, question, c.Generation(wms), answer) // local only, no panic
		if !hit(c, wms, question).Hit {
			t.Fatal("not local after stop")
		}
	})
}

// A Redis restarted empty (no persistence) loses the log and the
// generations: the instances notice the new epoch, and a purge made after
// the restart still reaches every instance (its generation starts again
// from 1, below the ones they knew), as do puts; entries cached before the
// restart keep serving until purged.
func TestRedisRestartedEmpty(t *testing.T) {
	srv, url := redistest.NewServer(t)
	f := &fleet{t: t, url: url, prefix: "restart:"}
	a := f.instance("", cache.Config{}, cache.ShareConfig{})
	b := f.instance("", cache.Config{}, cache.ShareConfig{})
	for range 3 { // the generation of t1/wms is 3 before the restart
		a.Purge("t1", "wms")
	}
	a.Store(bg, wms, question, a.Generation(wms), answer)
	eventually(t, "hit on B before the restart", func() bool { return hit(b, wms, question).Hit })

	srv.Kill()
	eventually(t, "both see the outage", func() bool { return !a.ShareStatus().Up && !b.ShareStatus().Up })
	srv.Start()
	eventually(t, "both back", func() bool { return a.ShareStatus().Up && b.ShareStatus().Up })
	if !hit(b, wms, question).Hit {
		t.Fatal("B lost its entries with Redis")
	}
	a.Purge("t1", "wms")
	eventually(t, "a purge after the restart reaches B", func() bool { return !hit(b, wms, question).Hit })
	b.Store(bg, wms, paraphase, b.Generation(wms), answer)
	eventually(t, "a put after the restart reaches A", func() bool { return hit(a, wms, paraphase).Hit })
}

// An entry whose question and answer pass MaxPutBytes is kept on the
// instance that made it and never reaches the log, so the log (and an
// instance warming up from it) holds at most about MaxLen x MaxPutBytes
// whatever clients send; one in the log anyway (appended by an instance
// of another configuration) is not applied. Before the bound, distinct
// ~900 KB prompts made the log ~560 KB an entry: ~5.6 GB of Redis at the
// default 10000 entries.
func TestLargeEntriesAreNotShared(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		b := f.instance("", cache.Config{}, cache.ShareConfig{})
		big := strings.Repeat("lorem ipsum dolor sit amet ", 900<<10/27)
		var bigs []string
		for i := range 3 {
			q := fmt.Sprintf("Summarise document %d: %s", i, big)
			bigs = append(bigs, q)
			a.Store(bg, wms, q, a.Generation(wms), answer)
		}
		longAnswer := cache.Answer{Chunks: []string{strings.Repeat("a long answer ", 20<<10/14)}}
		a.Store(bg, wms, "Write the whole manual of zone C", a.Generation(wms), longAnswer)
		a.Store(bg, wms, question, a.Generation(wms), answer)
		lg := f.log("", 0)
		caughtUp(t, a, lg)
		caughtUp(t, b, lg)
		if r := hit(b, wms, question); !r.Hit {
			t.Fatalf("the small entry is not shared: %+v", r)
		}
		for i, q := range append(bigs, "Write the whole manual of zone C") {
			if r := hit(b, wms, q); r.Hit {
				t.Fatalf("large entry %d is shared: %s hit on B", i, r.Kind)
			}
			if r := hit(a, wms, q); !r.Hit || r.Kind != cache.KindExact {
				t.Fatalf("large entry %d is not kept on the instance that made it: %+v", i, r)
			}
		}
		if st := a.ShareStatus(); st.Oversize != 4 || st.Appended != 1 || st.Dropped != 0 {
			t.Fatalf("A's status: %+v; want 4 oversize, 1 appended", st)
		}
		changes, _, err := lg.Read(bg, "", 1000, 0)
		if err != nil {
			t.Fatal(err)
		}
		var logged int
		for _, ch := range changes {
			n := len(ch.Question)
			for _, c := range ch.Chunks {
				n += len(c)
			}
			if n > cache.DefaultMaxPutBytes {
				t.Fatalf("the log holds a put of %d bytes (bound %d)", n, cache.DefaultMaxPutBytes)
			}
			logged += n
		}
		if len(changes) != 1 || logged > 1<<10 {
			t.Fatalf("the log holds %d changes, %d bytes; want the small put only", len(changes), logged)
		}

		// A large put appended by an instance with a larger bound is not
		// applied here; the put after it is.
		epoch, _, err := lg.Generations(bg)
		if err != nil {
			t.Fatal(err)
		}
		put := func(q string, chunks []string) {
			t.Helper()
			_, err := lg.Append(bg, cache.Change{Epoch: epoch, Op: cache.ChangePut, Origin: "other", Scope: cache.Scope{Tenant: wms.Tenant, Namespace: wms.Namespace},
				Model: wms.Model, Question: q, Chunks: chunks, Created: time.Now(), Embedder: cache.Builtin{}.Name(), Dim: cache.BuiltinDim})
			if err != nil {
				t.Fatal(err)
			}
		}
		put(bigs[0]+" again", answer.Chunks)
		put("How many units of SKU-777 are left in zone A?", answer.Chunks)
		caughtUp(t, b, lg)
		if r := hit(b, wms, "How many units of SKU-777 are left in zone A?"); !r.Hit {
			t.Fatalf("the small put after the large one is not applied: %+v", r)
		}
		if r := hit(b, wms, bigs[0]+" again"); r.Hit {
			t.Fatalf("a large put read from the log is applied: %s hit", r.Kind)
		}
	})
}
