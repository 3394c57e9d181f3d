package redislog_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cache/redislog"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

// heldLog fails its appends while held (its instance cannot reach Redis
// for writing); reads pass.
type heldLog struct {
	*redislog.Log
	held atomic.Bool
}

func (h *heldLog) Append(ctx context.Context, ch cache.Change) (uint64, error) {
	if h.held.Load() {
		return 0, errors.New("held")
	}
	return h.Log.Append(ctx, ch)
}

func (f *fleet) heldInstance() (*cache.Cache, *heldLog) {
	f.t.Helper()
	c := cache.New(cache.Config{})
	h := &heldLog{Log: f.log("", 0)}
	stop, err := c.Share(bg, h, cache.ShareConfig{Block: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Timeout: 500 * time.Millisecond})
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(stop)
	return c, h
}

// A put waiting in A's outbox across a Redis restart (empty) was made
// under generation 2 of the old epoch. After the restart B purges the
// scope (generation 1 of the new epoch): A's put goes with generation 0 of
// the new epoch, so the log refuses it and A drops its entry; B never
// serves the answer computed before its purge.
func TestPutWaitingAcrossAnEmptyRestartStaysBehindALaterPurge(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a, ha := f.heldInstance()
		b := f.instance("", cache.Config{}, cache.ShareConfig{})
		lb := f.log("", 0)
		a.Purge("t1", "wms")
		a.Purge("t1", "wms") // generation 2
		caughtUp(t, a, lb)
		caughtUp(t, b, lb)
		ha.held.Store(true) // A's writes fail (Redis down for A)
		if hit(a, wms, question).Hit {
			t.Fatal("hit")
		}
		a.Store(bg, wms, question, a.Generation(wms), answer) // waits in A's outbox, Gen 2
		// Redis loses everything (a restart without persistence).
		stream, gens, epoch := lb.Keys()
		if err := redistest.Universal(t, f.url).Del(bg, stream, gens, epoch).Err(); err != nil {
			t.Fatal(err)
		}
		b.Purge("t1", "wms") // after the restart: generation 1 of the new epoch
		eventually(t, "B's purge appended", func() bool { st := b.ShareStatus(); return st.Pending == 0 && st.Appended >= 1 })
		ha.held.Store(false)
		eventually(t, "A's put refused", func() bool { st := a.ShareStatus(); return st.Pending == 0 && st.Refused == 1 })
		caughtUp(t, a, lb)
		caughtUp(t, b, lb)
		if hit(b, wms, question).Hit {
			t.Fatal("B serves A's answer whose miss came before B's purge (a put of the old epoch appended as current)")
		}
		if hit(a, wms, question).Hit {
			t.Fatal("A still serves its answer the log refused")
		}
	})
}

// A failover (an async replica promoted) or an RDB restore loses the last
// writes but keeps the epoch: the generation of a scope goes back (1 ->
// 0). B's next purge carries the generation B knows (2 with its own), so
// it moves the scope past every generation an instance knows and reaches
// A, which drops the purged entry.
func TestPurgeAfterTheLogLostAGenerationReachesEveryInstance(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		b := f.instance("", cache.Config{}, cache.ShareConfig{})
		lb := f.log("", 0)
		b.Purge("t1", "wms") // generation 1 everywhere
		caughtUp(t, b, lb)
		caughtUp(t, a, lb)
		a.Store(bg, wms, question, a.Generation(wms), answer)
		caughtUp(t, a, lb)
		eventually(t, "B has it", func() bool { return hit(b, wms, question).Hit })
		// The promoted replica had not received the purge's HINCRBY.
		_, gens, _ := lb.Keys()
		if err := redistest.Universal(t, f.url).HDel(bg, gens, "2:t1wms").Err(); err != nil {
			t.Fatal(err)
		}
		b.Purge("t1", "wms")
		caughtUp(t, b, lb)
		caughtUp(t, a, lb)
		if hit(a, wms, question).Hit {
			t.Fatal("B's purge never reached A: the log's generation went back to one A already knew")
		}
	})
}

// A purge trimmed from the log while B was disconnected still reaches B,
// through the generations read after the reconnection (this test fails
// when the generations read at a resync are not applied).
func TestTrimmedPurgeReachesAReconnectedInstance(t *testing.T) {
	each(t, func(f *fleet) { trimmedPurgeReachesAReconnectedInstance(f) })
}

func trimmedPurgeReachesAReconnectedInstance(f *fleet) {
	t := f.t
	proxy, proxied := redistest.NewCut(t, f.url)
	mk := func(url string) *cache.Cache {
		c := cache.New(cache.Config{})
		lg := redislog.New(redistest.Universal(t, url), redislog.Config{Prefix: f.prefix, MaxLen: 10})
		stop, err := c.Share(bg, lg, cache.ShareConfig{Block: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Timeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return c
	}
	a, b := mk(f.url), mk(proxied)
	a.Store(bg, wms, question, a.Generation(wms), answer)
	eventually(t, "hit on B", func() bool { return hit(b, wms, question).Hit })
	proxy.Cut()
	eventually(t, "B sees the outage", func() bool { return !b.ShareStatus().Up })
	a.Purge("t1", "wms")
	other := cache.Namespace{Tenant: "t1", Namespace: "other", Model: "m"}
	for i := range 400 {
		a.Store(bg, other, fmt.Sprintf("filler question %d about dock %d", i, i), a.Generation(other), answer)
	}
	lg := f.log("", 0)
	caughtUp(t, a, lg)
	stream, _, _ := lg.Keys()
	if n, _ := redistest.Universal(t, f.url).XLen(bg, stream).Result(); n > 300 {
		t.Fatalf("not trimmed: %d", n)
	}
	proxy.Restore()
	eventually(t, "B up", func() bool { return b.ShareStatus().Up })
	caughtUp(t, b, f.log(proxied, 0))
	if hit(b, wms, question).Hit {
		t.Fatal("a purge trimmed from the log never reached B")
	}
}

// slowLog delays reads while held (a reader that fell behind: CPU, GC,
// a burst of puts), without any error.
type slowLog struct {
	*redislog.Log
	held    atomic.Bool
	waiting atomic.Bool
}

func (s *slowLog) Read(ctx context.Context, after string, max int, block time.Duration) ([]cache.Change, string, error) {
	for s.held.Load() && ctx.Err() == nil {
		s.waiting.Store(true)
		time.Sleep(10 * time.Millisecond)
	}
	return s.Log.Read(ctx, after, max, block)
}

// A reader that fell behind past the trimmed front of the log (no error:
// it was slow) notices the gap at its next read, reads the generations
// again and applies the trimmed purge at once, not at the next periodic
// resync (30 s by default, far beyond this test's wait).
func TestReaderBehindTheTrimAppliesTrimmedPurges(t *testing.T) {
	each(t, func(f *fleet) { readerBehindTheTrim(f) })
}

func readerBehindTheTrim(f *fleet) {
	t := f.t
	mk := func(lg cache.ChangeLog) *cache.Cache {
		c := cache.New(cache.Config{})
		stop, err := c.Share(bg, lg, cache.ShareConfig{Block: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Timeout: 500 * time.Millisecond, Resync: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
		return c
	}
	small := func() *redislog.Log {
		return redislog.New(redistest.Universal(t, f.url), redislog.Config{Prefix: f.prefix, MaxLen: 10})
	}
	sb := &slowLog{Log: small()}
	a, b := mk(small()), mk(sb)
	a.Store(bg, wms, question, a.Generation(wms), answer)
	eventually(t, "hit on B", func() bool { return hit(b, wms, question).Hit })
	sb.held.Store(true)
	eventually(t, "B's reader waits", sb.waiting.Load)
	a.Purge("t1", "wms")
	other := cache.Namespace{Tenant: "t1", Namespace: "other", Model: "m"}
	for i := range 400 {
		a.Store(bg, other, fmt.Sprintf("filler question %d about dock %d", i, i), a.Generation(other), answer)
	}
	caughtUp(t, a, f.log("", 0))
	applied := b.ShareStatus().Applied
	sb.held.Store(false)
	caughtUp(t, b, f.log("", 0))
	eventually(t, "B read the fillers kept", func() bool { return b.ShareStatus().Applied > applied })
	if hit(b, wms, question).Hit {
		t.Fatal("B read past a trimmed purge without noticing; it serves the purged entry until its next resync")
	}
}

// A log that lost its last writes (a failover to a replica that had not
// received them, an older snapshot) but kept its epoch: the purge and the
// put A and B read are gone from the stream and the generations. A reader
// whose position is past the log's last entry notices it, starts a new
// epoch, and every instance resets its generations: a purge by an instance
// that never knew the lost generation (C, started after) still reaches A
// and B.
func TestLogThatLostItsLastWritesStartsANewEpoch(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a := f.instance("", cache.Config{}, cache.ShareConfig{Resync: time.Hour})
		b := f.instance("", cache.Config{}, cache.ShareConfig{Resync: time.Hour})
		lg := f.log("", 0)
		a.Store(bg, cache.Namespace{Tenant: "t1", Namespace: "ops", Model: "m"}, "What is a pallet?", a.Generation(wms), answer)
		caughtUp(t, a, lg)
		stream, gens, epoch := lg.Keys()
		rdb := redistest.Universal(t, f.url)
		kept, err := rdb.XRevRangeN(bg, stream, "+", "-", 1).Result()
		if err != nil || len(kept) != 1 {
			t.Fatalf("last entry: %v %v", kept, err)
		}
		epoch0, _ := rdb.Get(bg, epoch).Result()
		b.Purge("t1", "wms") // generation 1, lost below
		caughtUp(t, b, lg)
		a.Store(bg, wms, question, a.Generation(wms), answer)
		caughtUp(t, a, lg)
		eventually(t, "B has A's put", func() bool { return hit(b, wms, question).Hit })

		// The writes after kept are lost; the epoch is not.
		lost, err := rdb.XRange(bg, stream, "("+kept[0].ID, "+").Result()
		if err != nil || len(lost) != 2 {
			t.Fatalf("entries after the kept one: %d %v", len(lost), err)
		}
		for _, m := range lost {
			if err := rdb.XDel(bg, stream, m.ID).Err(); err != nil {
				t.Fatal(err)
			}
		}
		if err := rdb.HDel(bg, gens, "2:t1wms").Err(); err != nil {
			t.Fatal(err)
		}
		eventually(t, "a new epoch", func() bool { e, _ := rdb.Get(bg, epoch).Result(); return e != "" && e != epoch0 })

		c := f.instance("", cache.Config{}, cache.ShareConfig{})
		caughtUp(t, c, lg)
		c.Purge("t1", "wms")
		caughtUp(t, c, lg)
		for name, x := range map[string]*cache.Cache{"A": a, "B": b} {
			eventually(t, "C's purge reached "+name, func() bool { return !hit(x, wms, question).Hit })
		}
	})
}

// A put whose generation is above its scope's in the log means the log
// went back (it lost the purge that made that generation): the log refuses
// it and starts a new epoch.
func TestPutAboveTheLogsGenerationStartsANewEpoch(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		lg := f.log("", 0)
		epoch, _, err := lg.Generations(bg)
		if err != nil {
			t.Fatal(err)
		}
		put := cache.Change{Op: cache.ChangePut, Epoch: epoch, Origin: "x", Gen: 1, Scope: cache.Scope{Tenant: "t1", Namespace: "wms"},
			Model: "m", Question: question, Chunks: answer.Chunks, Created: time.Now()}
		if _, err := lg.Append(bg, put); !errors.Is(err, cache.ErrEpoch) {
			t.Fatalf("a put above the log's generation: %v, want ErrEpoch", err)
		}
		e2, _, err := lg.Generations(bg)
		if err != nil || e2 == epoch {
			t.Fatalf("epoch after: %q (before %q), %v", e2, epoch, err)
		}
		// A purge moves the scope to at least the generation its
		// instance knows.
		g, err := lg.Append(bg, cache.Change{Op: cache.ChangePurge, Epoch: e2, Origin: "x", Scope: put.Scope, Known: 5})
		if err != nil || g != 5 {
			t.Fatalf("purge known 5 over 0: gen %d, %v; want 5", g, err)
		}
		g, err = lg.Append(bg, cache.Change{Op: cache.ChangePurge, Epoch: e2, Origin: "x", Scope: put.Scope, Known: 3, Steps: 2})
		if err != nil || g != 7 {
			t.Fatalf("purge of 2 steps known 3 over 5: gen %d, %v; want 7", g, err)
		}
	})
}
