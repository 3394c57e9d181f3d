package web_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

func TestCacheOverHTTP(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{TotalTimeout: 5 * time.Second}})
	answer := []string{"Zone A ", "holds ", "42 ", "units."}
	e.Up.SetScript(upstreamtest.Script{Chunks: answer})
	q := "How many SKU-10234 are left in zone A?"

	resp, r := e.stream(map[string]any{"prompt": q, "namespace": "wms"})
	if resp.Header.Get("X-Cache") != "MISS" || r.Meta["cache"].(map[string]any)["status"] != "miss" {
		t.Fatalf("first ask: X-Cache %q meta %v", resp.Header.Get("X-Cache"), r.Meta)
	}

	t.Run("exact hit replays the original chunking without the upstream", func(t *testing.T) {
		before := e.Up.Requests()
		resp, r := e.stream(map[string]any{"prompt": "  how many SKU-10234 are left in zone a？ ", "namespace": "wms"})
		if resp.Header.Get("X-Cache") != "HIT" || resp.Header.Get("X-Cache-Kind") != "exact" {
			t.Fatalf("headers %v", resp.Header)
		}
		if r.Text != strings.Join(answer, "") || r.Deltas != len(answer) || r.Terminal.Type != "done" {
			t.Fatalf("replay: %d deltas %q %+v", r.Deltas, r.Text, r.Terminal)
		}
		if e.Up.Requests() != before {
			t.Fatal("a hit called the upstream")
		}
		v := e.waitFinal(resp.Header.Get("X-Task-Id"))
		if v.Cache.Status != "hit" || v.Cache.Kind != "exact" || v.Text != r.Text {
			t.Fatalf("task %+v", v)
		}
	})
	t.Run("semantic hit carries its score", func(t *testing.T) {
		resp, r := e.stream(map[string]any{"prompt": "what quantity of SKU-10234 is left in zone A", "namespace": "wms"})
		if resp.Header.Get("X-Cache") != "HIT" {
			t.Fatalf("the builtin embedder missed a plain paraphrase: X-Cache %s", resp.Header.Get("X-Cache"))
		}
		if resp.Header.Get("X-Cache-Kind") != "semantic" || resp.Header.Get("X-Cache-Score") == "" || r.Text != strings.Join(answer, "") {
			t.Fatalf("semantic hit: %v", resp.Header)
		}
	})
	t.Run("a different SKU never hits", func(t *testing.T) {
		resp, _ := e.stream(map[string]any{"prompt": "How many SKU-10235 are left in zone A?", "namespace": "wms"})
		if resp.Header.Get("X-Cache") != "MISS" {
			t.Fatalf("SKU-10235 got %s", resp.Header.Get("X-Cache"))
		}
	})
	t.Run("nocache bypasses reads and writes", func(t *testing.T) {
		before := e.Up.Requests()
		resp, _ := e.stream(map[string]any{"prompt": q, "namespace": "wms", "nocache": true})
		if resp.Header.Get("X-Cache") != "BYPASS" || e.Up.Requests() != before+1 {
			t.Fatalf("nocache: %s, upstream calls %d", resp.Header.Get("X-Cache"), e.Up.Requests()-before)
		}
		e.stream(map[string]any{"prompt": "only asked with nocache", "nocache": true})
		resp, _ = e.stream(map[string]any{"prompt": "only asked with nocache"})
		if resp.Header.Get("X-Cache") != "MISS" {
			t.Fatal("a nocache answer was stored")
		}
	})
	t.Run("namespaces and models are separate", func(t *testing.T) {
		resp, _ := e.stream(map[string]any{"prompt": q, "namespace": "other"})
		if resp.Header.Get("X-Cache") != "MISS" {
			t.Fatal("another namespace got a hit")
		}
		resp, _ = e.stream(map[string]any{"prompt": q, "namespace": "wms", "model": "another-model"})
		if resp.Header.Get("X-Cache") != "MISS" {
			t.Fatal("another model got a hit")
		}
	})
	t.Run("async hit is done at once", func(t *testing.T) {
		var created struct{ ID, Status string }
		st, hdr := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": q, "namespace": "wms"}, &created)
		if st != 202 || created.Status != "done" || hdr.Get("X-Cache") != "HIT" {
			t.Fatalf("async hit: %d %+v %v", st, created, hdr)
		}
	})
	t.Run("lookup explains and changes nothing", func(t *testing.T) {
		stats := func() cache.NamespaceStats {
			var out struct{ Namespaces []cache.NamespaceStats }
			e.doJSON(http.MethodGet, "/v1/cache/stats", nil, &out)
			for _, s := range out.Namespaces {
				if s.Name == "wms" && s.Model == "sim-1" {
					return s
				}
			}
			t.Fatalf("no stats for wms: %+v", out)
			return cache.NamespaceStats{}
		}
		before := stats()
		var ex cache.Explanation
		e.doJSON(http.MethodGet, "/v1/cache/lookup?namespace=wms&q="+strings.ReplaceAll("How many SKU-10236 are left in zone A?", " ", "+"), nil, &ex)
		if ex.Decision != "miss" || !strings.Contains(ex.Reason, "facet mismatch") || ex.Threshold != 0.92 ||
			len(ex.Candidates) == 0 || ex.Candidates[0].FacetsMatch || len(ex.Query.Facets) == 0 || ex.Key == "" {
			t.Fatalf("explanation %+v", ex)
		}
		var ex2 cache.Explanation
		e.doJSON(http.MethodPost, "/v1/cache/lookup", map[string]any{"q": q, "namespace": "wms"}, &ex2)
		if ex2.Decision != "hit" || ex2.Kind != "exact" || ex2.Reason != "exact key" {
			t.Fatalf("POST explanation %+v", ex2)
		}
		if ex.Stage != "facets" || ex2.Stage != "exact" || ex.Verify != nil || ex2.Verify != nil {
			t.Fatalf("stages %q %v, %q %v; want facets and exact, no verification", ex.Stage, ex.Verify, ex2.Stage, ex2.Verify)
		}
		after := stats()
		if after != before {
			t.Fatalf("lookup changed counters: %+v -> %+v", before, after)
		}
		if before.Entries != 2 || before.HitsExact < 2 || before.Misses < 1 || before.Bypasses < 1 {
			t.Fatalf("stats %+v", before)
		}
	})
	t.Run("lookup names the verification that refused a near-duplicate", func(t *testing.T) {
		e.stream(map[string]any{"prompt": "Does Marta Quill report to Ivo Brandt?", "namespace": "roles"})
		var raw map[string]any
		e.doJSON(http.MethodPost, "/v1/cache/lookup", map[string]any{"q": "Does Ivo Brandt report to Marta Quill?", "namespace": "roles"}, &raw)
		v, _ := raw["verification"].(map[string]any)
		if raw["decision"] != "miss" || raw["stage"] != "verify" || v == nil || v["passed"] != false ||
			v["check"] == "" || v["question"] != "Does Marta Quill report to Ivo Brandt?" ||
			!strings.HasPrefix(raw["reason"].(string), "verification refused: ") {
			t.Fatalf("explanation %v", raw)
		}
		resp, _ := e.stream(map[string]any{"prompt": "Does Ivo Brandt report to Marta Quill?", "namespace": "roles"})
		if resp.Header.Get("X-Cache") != "MISS" {
			t.Fatalf("a role swap was served from the cache: X-Cache %s", resp.Header.Get("X-Cache"))
		}
	})
	t.Run("purge drops the namespace", func(t *testing.T) {
		var out struct{ Deleted int }
		if st, _ := e.doJSON(http.MethodDelete, "/v1/cache/namespaces/wms", nil, &out); st != 200 || out.Deleted < 1 {
			t.Fatalf("purge: %d %+v", st, out)
		}
		resp, _ := e.stream(map[string]any{"prompt": q, "namespace": "wms"})
		if resp.Header.Get("X-Cache") != "MISS" {
			t.Fatal("hit after purge")
		}
	})
}

func TestCutAnswersAreNotCached(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{TTFTTimeout: 200 * time.Millisecond, IdleTimeout: 200 * time.Millisecond, MaxRetries: -1}})
	scripts := map[string]upstreamtest.Script{
		"partial":   {Chunks: []string{"a", "b"}, StallAfterChunks: 1},
		"failed":    {Status: 500},
		"truncated": {Chunks: []string{"a", "b"}, DropAfterChunks: 1},
		"no token":  {StallAfterHeaders: true},
	}
	for name, sc := range scripts {
		e.Up.SetScript(sc)
		e.stream(map[string]any{"prompt": "cut " + name})
		e.Up.SetScript(upstreamtest.Script{Chunks: []string{"fresh"}})
		resp, r := e.stream(map[string]any{"prompt": "cut " + name})
		if resp.Header.Get("X-Cache") != "MISS" || r.Text != "fresh" {
			t.Fatalf("%s answer was cached: %s %q", name, resp.Header.Get("X-Cache"), r.Text)
		}
	}
}

// TestCacheHitWhileBudgetFull: a hit needs no slot, so it is served even
// when every slot is taken and misses are refused.
func TestCacheHitWhileBudgetFull(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1}})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"cached answer"}})
	e.stream(map[string]any{"prompt": "what is cached"})
	e.Up.SetScript(upstreamtest.Script{StallAfterHeaders: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hold := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": "hold the slot", "detach": false})
	defer hold.Body.Close()
	if hold.StatusCode != 200 {
		t.Fatalf("holder: %d", hold.StatusCode)
	}
	var refusal struct{ Error struct{ Code string } }
	if st, _ := e.doJSON(http.MethodPost, "/v1/stream", map[string]any{"prompt": "a miss"}, &refusal); st != 503 {
		t.Fatalf("a miss with the budget full: %d", st)
	}
	resp, r := e.stream(map[string]any{"prompt": "what is cached"})
	if resp.Header.Get("X-Cache") != "HIT" || r.Text != "cached answer" {
		t.Fatalf("hit with the budget full: %s %q", resp.Header.Get("X-Cache"), r.Text)
	}
	cancel()
	io.Copy(io.Discard, hold.Body)
	e.waitIdle()
}

// BenchmarkCacheHitHTTP is a cache hit served end to end over HTTP: POST
// /v1/stream, the whole replayed event stream read.
func BenchmarkCacheHitHTTP(b *testing.B) {
	e := newEnv(b, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks(40, "word")})
	e.stream(map[string]any{"prompt": "benchmark question about SKU-1"})
	body := `{"prompt":"benchmark question about SKU-1"}`
	b.ResetTimer()
	for b.Loop() {
		req, _ := http.NewRequest(http.MethodPost, e.URL+"/v1/stream", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.HTTP.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.Header.Get("X-Cache") != "HIT" {
			b.Fatal("not a hit")
		}
	}
}

// TestTokenLimitedAnswersAreDoneButNotCached: an answer the upstream ends
// at max_tokens is done with finish_reason "length" (on the task API and
// the OpenAI door), and never cached: a later request without the limit
// must not get the short answer.
func TestTokenLimitedAnswersAreDoneButNotCached(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"one ", "two ", "three ", "four"}})
	resp, r := e.stream(map[string]any{"prompt": "count to four", "max_tokens": 2})
	if r.Text != "one two " || r.Terminal.Type != "done" || !strings.Contains(r.Terminal.Data, `"finish_reason":"length"`) {
		t.Fatalf("limited answer: %q %+v", r.Text, r.Terminal)
	}
	if v := e.waitFinal(resp.Header.Get("X-Task-Id")); v.Status != orchestrator.StatusDone || v.FinishReason != "length" {
		t.Fatalf("task %+v", v)
	}
	resp, r = e.stream(map[string]any{"prompt": "count to four"})
	if resp.Header.Get("X-Cache") != "MISS" || r.Text != "one two three four" {
		t.Fatalf("after a limited answer: %s %q", resp.Header.Get("X-Cache"), r.Text)
	}
	var out struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
			Message      struct{ Content string }
		}
	}
	e.doJSON(http.MethodPost, "/v1/chat/completions", map[string]any{
		"messages": []map[string]string{{"role": "user", "content": "count again"}}, "max_tokens": 3,
	}, &out)
	if len(out.Choices) != 1 || out.Choices[0].FinishReason != "length" || out.Choices[0].Message.Content != "one two three " {
		t.Fatalf("OpenAI door with max_tokens: %+v", out)
	}
}

// TestCacheKeepsContextsApartOverHTTP: on the OpenAI doors the same last
// question after other turns, or under other instructions, is not served
// the first conversation's answer.
func TestCacheKeepsContextsApartOverHTTP(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"an ", "answer"}})
	chat := func(msgs ...map[string]string) string {
		t.Helper()
		resp := e.do(context.Background(), http.MethodPost, "/v1/chat/completions", map[string]any{"messages": msgs})
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("chat: %d", resp.StatusCode)
		}
		return resp.Header.Get("X-Cache")
	}
	turn := func(role, text string) map[string]string { return map[string]string{"role": role, "content": text} }
	q := turn("user", "how many are left?")
	if c := chat(turn("user", "Tell me about zone A"), turn("assistant", "Zone A holds pallets."), q); c != "MISS" {
		t.Fatalf("first conversation: %s", c)
	}
	if c := chat(turn("user", "Tell me about zone A"), turn("assistant", "Zone A holds pallets."), q); c != "HIT" {
		t.Fatalf("the same conversation again: %s", c)
	}
	if c := chat(turn("user", "Tell me about zone B freezers"), turn("assistant", "Zone B holds freezers."), q); c != "MISS" {
		t.Fatalf("another conversation, the same last question: %s", c)
	}
	respond := func(body map[string]any) string {
		t.Helper()
		resp := e.do(context.Background(), http.MethodPost, "/v1/responses", body)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("responses: %d", resp.StatusCode)
		}
		return resp.Header.Get("X-Cache")
	}
	if c := respond(map[string]any{"input": "how many are left?"}); c != "MISS" {
		t.Fatalf("the lone question: %s", c)
	}
	if c := respond(map[string]any{"input": "how many are left?"}); c != "HIT" {
		t.Fatalf("the lone question again: %s", c)
	}
	if c := respond(map[string]any{"input": "how many are left?", "instructions": "Answer only in French"}); c != "MISS" {
		t.Fatalf("the same question under other instructions: %s", c)
	}
}

// Two requests of one question on both sides of a purge: the one that
// began before it finishes last, and its answer is not cached (each
// request stores under the generation its own lookup saw); the answer of
// the one that began after it is.
func TestAnswerStartedBeforeAPurgeIsNotCachedAfterIt(t *testing.T) {
	e := newEnv(t, envOpts{})
	release := make(chan struct{})
	e.Up.SetHandler(func(_ upstreamtest.ChatRequest, n int) upstreamtest.Script {
		if n == 1 {
			<-release // request 1's answer comes after request 2's
			return upstreamtest.Script{Chunks: []string{"stale"}}
		}
		return upstreamtest.Script{Chunks: []string{"fresh"}}
	})
	var released bool
	defer func() {
		if !released {
			close(release)
		}
	}()
	q := "How many units of SKU-10234 are left in zone A?"
	var created struct{ ID string }
	if st, hdr := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": q, "namespace": "wms"}, &created); st != 202 || hdr.Get("X-Cache") != "MISS" {
		t.Fatalf("request 1: %d %v", st, hdr)
	}
	for deadline := time.Now().Add(10 * time.Second); e.Up.Requests() < 1; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("request 1 never reached the upstream")
		}
	}
	if st, _ := e.doJSON(http.MethodDelete, "/v1/cache/namespaces/wms", nil, nil); st != 200 {
		t.Fatalf("purge: %d", st)
	}
	resp, r := e.stream(map[string]any{"prompt": q, "namespace": "wms"})
	if resp.Header.Get("X-Cache") != "MISS" || r.Text != "fresh" {
		t.Fatalf("request 2: X-Cache %s %q", resp.Header.Get("X-Cache"), r.Text)
	}
	close(release)
	released = true
	if v := e.waitFinal(created.ID); v.Status != orchestrator.StatusDone {
		t.Fatalf("request 1: %+v", v)
	}
	resp, r = e.stream(map[string]any{"prompt": q, "namespace": "wms"})
	if resp.Header.Get("X-Cache") != "HIT" || r.Text != "fresh" {
		t.Fatalf("after both: X-Cache %s %q, want a hit on the answer made after the purge", resp.Header.Get("X-Cache"), r.Text)
	}
}

// TestCacheKeysOnStopSequences: an answer made under stop sequences is
// cut at them, so it is only shared with requests of the same stop
// sequences (in any order), on both tiers and on every door; requests
// without stop keep sharing their own answers.
func TestCacheKeysOnStopSequences(t *testing.T) {
	e := newEnv(t, envOpts{})
	q := "How many SKU-10234 are left in zone A?"
	paraphrase := "what quantity of SKU-10234 is left in zone A"
	ask := func(body map[string]any) (status, kind, text string) {
		t.Helper()
		resp, r := e.stream(body)
		return resp.Header.Get("X-Cache"), resp.Header.Get("X-Cache-Kind"), r.Text
	}
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"Zone A holds 42 units.\n", "More below."}})
	if st, _, _ := ask(map[string]any{"prompt": q}); st != "MISS" {
		t.Fatalf("first ask without stop: %s", st)
	}
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"Zone A holds 42 units."}})
	for _, c := range []struct {
		name             string
		body             map[string]any
		status, kind, tx string
	}{
		{"stop after a full answer is cached", map[string]any{"prompt": q, "stop": []string{"\n", "END"}}, "MISS", "", "Zone A holds 42 units."},
		{"the same stop set in another order", map[string]any{"prompt": q, "stop": []string{"END", "\n", "END"}}, "HIT", "exact", "Zone A holds 42 units."},
		{"a paraphrase under the same stop", map[string]any{"prompt": paraphrase, "stop": []string{"\n", "END"}}, "HIT", "semantic", "Zone A holds 42 units."},
		{"without stop: the full answer", map[string]any{"prompt": q}, "HIT", "exact", "Zone A holds 42 units.\nMore below."},
		{"a paraphrase without stop: the full answer", map[string]any{"prompt": paraphrase}, "HIT", "semantic", "Zone A holds 42 units.\nMore below."},
		{"other stop sequences", map[string]any{"prompt": q, "stop": "\n"}, "MISS", "", "Zone A holds 42 units."},
	} {
		if st, kind, text := ask(c.body); st != c.status || kind != c.kind || text != c.tx {
			t.Fatalf("%s: X-Cache %s kind %q text %q, want %s %q %q", c.name, st, kind, text, c.status, c.kind, c.tx)
		}
	}

	// The chat completions door, as a client sees it: a stop request's
	// cut answer is not served to the same question without stop.
	chat := func(body map[string]any) string {
		t.Helper()
		resp := e.do(context.Background(), http.MethodPost, "/v1/chat/completions", body)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("chat: %d", resp.StatusCode)
		}
		return resp.Header.Get("X-Cache")
	}
	msgs := []map[string]string{{"role": "user", "content": "List the zones"}}
	if c := chat(map[string]any{"messages": msgs, "stop": []string{"\n"}}); c != "MISS" {
		t.Fatalf("chat with stop: %s", c)
	}
	if c := chat(map[string]any{"messages": msgs}); c != "MISS" {
		t.Fatalf("chat without stop after a stop answer: %s", c)
	}
	if c := chat(map[string]any{"messages": msgs, "stop": "\n"}); c != "HIT" {
		t.Fatalf("chat with the same stop as a string: %s", c)
	}
}
