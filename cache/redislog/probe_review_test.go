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

// PROBE: a put waiting in A's outbox across a Redis restart (empty) keeps
// the generation of the old epoch (2). After the restart B purges the scope
// (generation 1 of the new epoch); A's put is then appended as current
// (2 >= 1) and B serves the answer computed before its purge.
func TestProbeOutboxPutAcrossEpochResurrects(t *testing.T) {
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
		caughtUp(t, a, lb)
		caughtUp(t, b, lb)
		time.Sleep(300 * time.Millisecond)
		caughtUp(t, b, lb)
		if hit(b, wms, question).Hit {
			t.Fatal("B serves A's answer whose miss came before B's purge (a put of the old epoch appended as current)")
		}
	})
}

// PROBE: a failover (async replica promoted) or an RDB restore loses the
// last writes but keeps the epoch: the generation of a scope goes back
// (1 -> 0). The next purge (B) moves it to 1 again, which A already knows:
// A ignores it and keeps serving the purged entry.
func TestProbeGenerationGoesBackAfterLostWrite(t *testing.T) {
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

// PROBE: every scope ever purged stays a field of the generations hash
// (no TTL, no cleanup), read in full (HGETALL) by every instance every 30 s
// and kept in every instance's map: a tenant purging made-up namespaces
// grows Redis and every instance's memory without bound.
func TestProbeGenerationsGrowWithoutBound(t *testing.T) {
	each(t, func(f *fleet) {
		t := f.t
		a := f.instance("", cache.Config{}, cache.ShareConfig{})
		lb := f.log("", 0)
		for i := range 2000 {
			a.Purge("t1", fmt.Sprintf("ns-%d", i))
		}
		caughtUp(t, a, lb)
		_, gens, _ := lb.Keys()
		n, err := redistest.Universal(t, f.url).HLen(bg, gens).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n > 1000 {
			t.Fatalf("%d generations kept for namespaces that never held an entry", n)
		}
	})
}

// PROBE (a test the suite lacks): a purge trimmed from the log while B was
// disconnected still reaches B, through the generations read after the
// reconnection. No existing test fails when resync ignores the
// generations; this one does.
func TestProbeTrimmedPurgeReachesOnReconnect(t *testing.T) {
	f := newFleet(t, redistest.Targets(t)[0])
	proxy, proxied := redistest.NewProxy(t, f.url)
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

// PROBE: a reader that falls behind past the trimmed front reads on from
// its position without an error: the purges trimmed meanwhile are not
// applied until the next periodic resync (Resync, 30 s by default): B
// serves a purged entry meanwhile.
func TestProbeReaderBehindTrimMissesPurge(t *testing.T) {
	f := newFleet(t, redistest.Targets(t)[0])
	mk := func(lg cache.ChangeLog) *cache.Cache {
		c := cache.New(cache.Config{})
		stop, err := c.Share(bg, lg, cache.ShareConfig{Block: 100 * time.Millisecond, MaxBackoff: 100 * time.Millisecond, Timeout: 500 * time.Millisecond})
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
	sb.held.Store(false)
	caughtUp(t, b, f.log("", 0))
	time.Sleep(500 * time.Millisecond)
	if hit(b, wms, question).Hit {
		t.Fatal("B read past a trimmed purge without noticing; it serves the purged entry until its next resync")
	}
}
