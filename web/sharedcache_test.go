package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cache/redislog"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// TestCacheSharedAcrossInstances: three instances share their cache
// through one change log in a real Redis. An answer streamed on A is a
// HIT on B (exact) and on C (semantic) without their upstreams, and B's
// inspection endpoint explains the hit; a purge on A (DELETE) makes it a
// MISS on B and C, and the answer B then gets from its upstream is the one
// C serves.
func TestCacheSharedAcrossInstances(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			instance := func() *env {
				lg := redislog.New(redistest.Universal(t, target.URL), redislog.Config{Prefix: prefix})
				return newEnv(t, envOpts{CacheLog: lg})
			}
			a, b, c := instance(), instance(), instance()
			answer := []string{"Zone A ", "holds ", "42 ", "units."}
			for _, e := range []*env{a, b, c} {
				e.Up.SetScript(upstreamtest.Script{Chunks: answer})
			}
			q := "How many SKU-10234 are left in zone A?"
			lookup := func(e *env, q string) cache.Explanation {
				var x cache.Explanation
				if st, _ := e.doJSON(http.MethodGet, "/v1/cache/lookup?namespace=wms&q="+url.QueryEscape(q), nil, &x); st != 200 {
					t.Fatalf("lookup: %d", st)
				}
				return x
			}
			poll := func(what string, cond func() bool) {
				t.Helper()
				deadline := time.Now().Add(10 * time.Second)
				for !cond() {
					if time.Now().After(deadline) {
						t.Fatalf("not within 10s: %s", what)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}

			resp, r := a.stream(map[string]any{"prompt": q, "namespace": "wms"})
			if resp.Header.Get("X-Cache") != "MISS" || r.Text != strings.Join(answer, "") {
				t.Fatalf("A: X-Cache %q %q", resp.Header.Get("X-Cache"), r.Text)
			}
			poll("B explains a hit", func() bool { return lookup(b, q).Decision == cache.DecisionHit })
			x := lookup(b, q)
			if x.Kind != cache.KindExact || x.Stage != cache.StageExact || len(x.Candidates) != 1 || x.Candidates[0].Question != q {
				t.Fatalf("B's explanation: %+v", x)
			}

			resp, r = b.stream(map[string]any{"prompt": q, "namespace": "wms"})
			if resp.Header.Get("X-Cache") != "HIT" || resp.Header.Get("X-Cache-Kind") != "exact" ||
				r.Meta["cache"].(map[string]any)["status"] != "hit" {
				t.Fatalf("B: X-Cache %q meta %v", resp.Header.Get("X-Cache"), r.Meta)
			}
			if r.Text != strings.Join(answer, "") || r.Deltas != len(answer) || r.Terminal.Type != "done" {
				t.Fatalf("B's replay: %d deltas %q", r.Deltas, r.Text)
			}
			poll("C has it", func() bool { return lookup(c, q).Decision == cache.DecisionHit })
			resp, _ = c.stream(map[string]any{"prompt": "what quantity of SKU-10234 is left in zone A", "namespace": "wms"})
			if resp.Header.Get("X-Cache") != "HIT" || resp.Header.Get("X-Cache-Kind") != "semantic" {
				t.Fatalf("C paraphrase: %v", resp.Header)
			}
			if b.Up.Requests() != 0 || c.Up.Requests() != 0 {
				t.Fatalf("hits called the upstream: B %d, C %d", b.Up.Requests(), c.Up.Requests())
			}

			var purged struct{ Deleted int }
			if st, _ := a.doJSON(http.MethodDelete, "/v1/cache/namespaces/wms", nil, &purged); st != 200 || purged.Deleted != 1 {
				t.Fatalf("purge on A: %d %+v", st, purged)
			}
			for name, e := range map[string]*env{"B": b, "C": c} {
				poll("purge reached "+name, func() bool { return lookup(e, q).Decision == cache.DecisionMiss })
			}
			// Asked again on B after the purge: a MISS, a fresh answer from
			// B's upstream, which is then what C serves (never the purged one).
			fresh := []string{"Zone A ", "now holds ", "7."}
			b.Up.SetScript(upstreamtest.Script{Chunks: fresh})
			resp, r = b.stream(map[string]any{"prompt": q, "namespace": "wms"})
			if resp.Header.Get("X-Cache") != "MISS" || r.Text != strings.Join(fresh, "") || b.Up.Requests() != 1 {
				t.Fatalf("B after the purge: X-Cache %s %q", resp.Header.Get("X-Cache"), r.Text)
			}
			poll("C has the fresh answer", func() bool { return lookup(c, q).Decision == cache.DecisionHit })
			resp, r = c.stream(map[string]any{"prompt": q, "namespace": "wms"})
			if resp.Header.Get("X-Cache") != "HIT" || r.Text != strings.Join(fresh, "") {
				t.Fatalf("C after the purge: X-Cache %s %q (want the fresh answer)", resp.Header.Get("X-Cache"), r.Text)
			}
			var ready map[string]string
			if st, _ := b.doJSON(http.MethodGet, "/readyz", nil, &ready); st != 200 || ready["cache_log"] != "ok" {
				t.Fatalf("B's /readyz: %d %v", st, ready)
			}
		})
	}
}

// TestCacheSharedRedisDown: while B cannot reach the change log it still
// answers (no 5xx), caches and serves locally, and /readyz says the log is
// degraded (still 200); once Redis is back B's answer reaches A.
func TestCacheSharedRedisDown(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			proxy, proxied := redistest.NewCut(t, target.URL)
			a := newEnv(t, envOpts{CacheLog: redislog.New(redistest.Universal(t, target.URL), redislog.Config{Prefix: prefix})})
			b := newEnv(t, envOpts{CacheLog: redislog.New(redistest.Universal(t, proxied), redislog.Config{Prefix: prefix})})
			b.Up.SetScript(upstreamtest.Script{Chunks: []string{"dock ", "7"}})
			proxy.Cut()
			q := "Which dock takes the 3pm wave in zone C?"
			for i, want := range []string{"MISS", "HIT"} {
				resp, r := b.stream(map[string]any{"prompt": q, "namespace": "wms"})
				if resp.Header.Get("X-Cache") != want || r.Text != "dock 7" || r.Terminal.Type != "done" {
					t.Fatalf("ask %d on B while Redis is cut: X-Cache %s %q %s", i, resp.Header.Get("X-Cache"), r.Text, r.Terminal.Type)
				}
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				var ready map[string]string
				st, _ := b.doJSON(http.MethodGet, "/readyz", nil, &ready)
				if st != 200 {
					t.Fatalf("/readyz %d while the cache log is down: %v", st, ready)
				}
				if strings.HasPrefix(ready["cache_log"], "degraded: ") {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("/readyz never said degraded: %v", ready)
				}
				time.Sleep(10 * time.Millisecond)
			}
			proxy.Restore()
			for deadline = time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				var x cache.Explanation
				a.doJSON(http.MethodGet, "/v1/cache/lookup?namespace=wms&q="+url.QueryEscape(q), nil, &x)
				if x.Decision == cache.DecisionHit {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("B's answer never reached A after Redis came back")
				}
			}
			resp, _ := a.stream(map[string]any{"prompt": q, "namespace": "wms"})
			if resp.Header.Get("X-Cache") != "HIT" || a.Up.Requests() != 0 {
				t.Fatalf("A: X-Cache %s, upstream calls %d", resp.Header.Get("X-Cache"), a.Up.Requests())
			}
		})
	}
}
