package cache_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cache"
)

var ctx = context.Background()

func ans(s string) cache.Answer { return cache.Answer{Chunks: []string{s}} }

// fakeClock is a settable Config.Now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// funcEmbedder is an Embedder made of a function.
type funcEmbedder func(ctx context.Context, text string) ([]float32, error)

func (f funcEmbedder) Name() string { return "func" }
func (f funcEmbedder) Embed(ctx context.Context, text string) ([]float32, error) {
	return f(ctx, text)
}

var (
	_ cache.Embedder = funcEmbedder(nil)
	_ cache.Embedder = cache.Builtin{}
	_ cache.Embedder = (*cache.OpenAIEmbedder)(nil)
)

func statsOf(c *cache.Cache, ns cache.Namespace) cache.NamespaceStats {
	for _, s := range c.Stats() {
		if s.Namespace == ns.String() {
			return s
		}
	}
	return cache.NamespaceStats{}
}

func TestExactAndSemantic(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{})
	ns := cache.Namespace{Namespace: "wms", Model: "m"}
	c.Store(ctx, ns, "How many units of SKU-10234 are left in zone A?", c.Generation(ns), ans("42"))

	r := c.Lookup(ctx, ns, "  how many units of sku-10234 are left in zone a ??")
	if !r.Hit || r.Kind != "exact" || r.Score != 1 || r.Answer.Chunks[0] != "42" {
		t.Fatalf("exact lookup = %+v", r)
	}
	r = c.Lookup(ctx, ns, "Please tell me how many units of SKU-10234 remain in zone A")
	if !r.Hit || r.Kind != "semantic" || r.Score < c.Threshold() {
		t.Fatalf("semantic lookup = %+v", r)
	}
	r = c.Lookup(ctx, ns, "How many units of SKU-10235 are left in zone A?")
	if r.Hit {
		t.Fatalf("other SKU hit: %+v", r)
	}
	x := c.Explain(ctx, ns, "How many units of SKU-10235 are left in zone A?")
	if x.Decision != "miss" || x.Reason != "facet mismatch: sku-10235 != sku-10234" {
		t.Errorf("explain = %+v", x)
	}
	s := statsOf(c, ns)
	if s.HitsExact != 1 || s.HitsSemantic != 1 || s.Misses != 1 || s.Entries != 1 || s.Bytes <= 0 {
		t.Errorf("stats = %+v", s)
	}
}

func TestExplainReasonsAndNoCounters(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	if x := c.Explain(ctx, ns, "anything"); x.Reason != "no entries in namespace" || x.Decision != "miss" {
		t.Errorf("empty namespace: %+v", x)
	}
	c.Store(ctx, ns, "What does HTTP 503 mean?", c.Generation(ns), ans("unavailable"))
	c.Lookup(ctx, ns, "What does HTTP 503 mean") // one hit on the entry
	before := c.Stats()

	x := c.Explain(ctx, ns, "what does http 503 mean?")
	if x.Decision != "hit" || x.Kind != "exact" || x.Reason != "exact key" || x.Key != cache.ExactKey(ns, "what does http 503 mean") {
		t.Errorf("exact explain = %+v", x)
	}
	x = c.Explain(ctx, ns, "What is the meaning of HTTP 503?")
	if x.Decision != "hit" || x.Kind != "semantic" || !strings.HasPrefix(x.Reason, "score ") || !strings.HasSuffix(x.Reason, ">= threshold 0.92 and facets match") {
		t.Errorf("semantic explain = %+v", x)
	}
	if len(x.Candidates) != 1 || !x.Candidates[0].FacetsMatch || x.Candidates[0].Hits != 1 || x.Candidates[0].TTLS != 86400 {
		t.Errorf("candidates = %+v", x.Candidates)
	}
	x = c.Explain(ctx, ns, "How do I restart Redis?")
	if x.Decision != "miss" || !strings.HasPrefix(x.Reason, "below threshold: best ") || !strings.HasSuffix(x.Reason, " < 0.92") {
		t.Errorf("below-threshold explain = %+v", x)
	}
	if x.Namespace != "n@m" || x.Threshold != 0.92 || x.Query.Normalized != "how do i restart redis" {
		t.Errorf("explain header = %+v", x)
	}
	after := c.Stats()
	if len(before) != len(after) || before[0] != after[0] {
		t.Errorf("Explain changed counters: %+v -> %+v", before, after)
	}
	if x := c.Explain(ctx, ns, "What does HTTP 503 mean"); x.Candidates[0].Hits != 1 {
		t.Errorf("Explain bumped hits: %+v", x.Candidates[0])
	}
}

func TestNamespaceIsolation(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{})
	base := cache.Namespace{Tenant: "a", Namespace: "wms", Model: "m1"}
	q := "Where is SKU-30517 stored?"
	c.Store(ctx, base, q, c.Generation(base), ans("A-01"))
	for _, ns := range []cache.Namespace{
		{Tenant: "a", Namespace: "wms", Model: "m2"},
		{Tenant: "a", Namespace: "ops", Model: "m1"},
		{Tenant: "b", Namespace: "wms", Model: "m1"},
		{Namespace: "wms", Model: "m1"},
	} {
		if r := c.Lookup(ctx, ns, q); r.Hit {
			t.Errorf("%v hit an entry of %v", ns, base)
		}
		if x := c.Explain(ctx, ns, q); x.Decision != "miss" || len(x.Candidates) != 0 {
			t.Errorf("%v explain sees %v: %+v", ns, base, x)
		}
	}
	if r := c.Lookup(ctx, base, q); !r.Hit {
		t.Error("own namespace missed")
	}
}

func TestPurge(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{})
	for _, m := range []string{"m1", "m2"} {
		c.Store(ctx, cache.Namespace{Tenant: "a", Namespace: "wms", Model: m}, "q1", c.Generation(cache.Namespace{Tenant: "a", Namespace: "wms", Model: m}), ans("x"))
		c.Store(ctx, cache.Namespace{Tenant: "a", Namespace: "wms", Model: m}, "q2", c.Generation(cache.Namespace{Tenant: "a", Namespace: "wms", Model: m}), ans("x"))
	}
	c.Store(ctx, cache.Namespace{Tenant: "b", Namespace: "wms", Model: "m1"}, "q1", c.Generation(cache.Namespace{Tenant: "b", Namespace: "wms", Model: "m1"}), ans("x"))
	c.Store(ctx, cache.Namespace{Tenant: "a", Namespace: "ops", Model: "m1"}, "q1", c.Generation(cache.Namespace{Tenant: "a", Namespace: "ops", Model: "m1"}), ans("x"))
	if n := c.Purge("a", "wms"); n != 4 {
		t.Errorf("Purge = %d; want 4", n)
	}
	if r := c.Lookup(ctx, cache.Namespace{Tenant: "a", Namespace: "wms", Model: "m2"}, "q1"); r.Hit {
		t.Error("purged entry hit")
	}
	if r := c.Lookup(ctx, cache.Namespace{Tenant: "b", Namespace: "wms", Model: "m1"}, "q1"); !r.Hit {
		t.Error("other tenant's entry purged")
	}
	if r := c.Lookup(ctx, cache.Namespace{Tenant: "a", Namespace: "ops", Model: "m1"}, "q1"); !r.Hit {
		t.Error("other namespace's entry purged")
	}
	st := c.Stats()
	for i := 1; i < len(st); i++ {
		if st[i-1].Namespace >= st[i].Namespace {
			t.Errorf("Stats not sorted: %q before %q", st[i-1].Namespace, st[i].Namespace)
		}
	}
}

func TestTTL(t *testing.T) {
	t.Parallel()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	c := cache.New(cache.Config{TTL: time.Hour, Now: clk.Now})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	c.Store(ctx, ns, "What does HTTP 503 mean?", c.Generation(ns), ans("x"))
	clk.Add(59 * time.Minute)
	if r := c.Lookup(ctx, ns, "What does HTTP 503 mean?"); !r.Hit {
		t.Fatal("live entry missed")
	}
	if x := c.Explain(ctx, ns, "What does HTTP 503 mean?"); x.Candidates[0].AgeS != 59*60 || x.Candidates[0].TTLS != 60 {
		t.Errorf("age/ttl = %d/%d", x.Candidates[0].AgeS, x.Candidates[0].TTLS)
	}
	clk.Add(time.Minute)
	if r := c.Lookup(ctx, ns, "What does HTTP 503 mean?"); r.Hit {
		t.Error("expired entry hit (exact)")
	}
	if r := c.Lookup(ctx, ns, "What is the meaning of HTTP 503?"); r.Hit {
		t.Error("expired entry hit (semantic)")
	}
}

func TestEvictionByEntries(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{MaxEntries: 3})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	for _, q := range []string{"SKU-1", "SKU-2", "SKU-3"} {
		c.Store(ctx, ns, q, c.Generation(ns), ans(q))
	}
	c.Lookup(ctx, ns, "SKU-1") // SKU-2 is now the least recently used
	c.Store(ctx, ns, "SKU-4", c.Generation(ns), ans("4"))
	if r := c.Lookup(ctx, ns, "SKU-2"); r.Hit {
		t.Error("LRU entry not evicted")
	}
	for _, q := range []string{"SKU-1", "SKU-3", "SKU-4"} {
		if r := c.Lookup(ctx, ns, q); !r.Hit {
			t.Errorf("%s evicted", q)
		}
	}
	if s := statsOf(c, ns); s.Entries != 3 || s.Evictions != 1 {
		t.Errorf("stats = %+v", s)
	}
}

func TestEvictionByBytes(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{MaxBytes: 3 * 8192, EmbedTimeout: -1})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	big := strings.Repeat("x", 7000)
	for _, q := range []string{"q1", "q2", "q3", "q4"} {
		c.Store(ctx, ns, q, c.Generation(ns), ans(big))
	}
	s := statsOf(c, ns)
	if s.Entries != 3 || s.Evictions != 1 || s.Bytes > 3*8192 {
		t.Errorf("stats = %+v", s)
	}
	if r := c.Lookup(ctx, ns, "q1"); r.Hit {
		t.Error("oldest entry kept")
	}
	c.Store(ctx, ns, "huge", c.Generation(ns), ans(strings.Repeat("y", 1<<20)))
	if r := c.Lookup(ctx, ns, "huge"); r.Hit {
		t.Error("entry larger than MaxBytes stored")
	}
}

func TestDeterministicID(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	c.Store(ctx, ns, "Cancel wave W-3301", c.Generation(ns), ans("old"))
	c.Store(ctx, ns, "cancel wave w-3301.", c.Generation(ns), ans("new"))
	if s := statsOf(c, ns); s.Entries != 1 {
		t.Errorf("entries = %d; want 1", s.Entries)
	}
	if r := c.Lookup(ctx, ns, "Cancel wave W-3301"); r.Answer.Chunks[0] != "new" {
		t.Errorf("answer = %v; want the replacement", r.Answer)
	}
}

func TestSlowEmbedder(t *testing.T) {
	t.Parallel()
	block := funcEmbedder(func(ctx context.Context, _ string) ([]float32, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	})
	const timeout = 50 * time.Millisecond
	c := cache.New(cache.Config{Embedder: block, EmbedTimeout: timeout})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	c.Store(ctx, ns, "What does HTTP 503 mean?", c.Generation(ns), ans("x")) // exact tier only
	start := time.Now()
	r := c.Lookup(ctx, ns, "What is the meaning of HTTP 503?")
	if d := time.Since(start); r.Hit || d > 20*timeout {
		t.Errorf("semantic lookup: hit=%v after %v", r.Hit, d)
	}
	if r := c.Lookup(ctx, ns, "what does http 503 mean"); !r.Hit || r.Kind != "exact" {
		t.Errorf("exact tier with a slow embedder: %+v", r)
	}
	if x := c.Explain(ctx, ns, "What is the meaning of HTTP 503?"); x.Reason != "embedder unavailable: exact tier only" {
		t.Errorf("reason = %q", x.Reason)
	}
}

// TestEmbedderIgnoringContext: an embedder that ignores its context still
// cannot hold a lookup past EmbedTimeout.
func TestEmbedderIgnoringContext(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	stuck := funcEmbedder(func(context.Context, string) ([]float32, error) {
		<-release
		return nil, errors.New("late")
	})
	c := cache.New(cache.Config{Embedder: stuck, EmbedTimeout: 20 * time.Millisecond})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	c.Store(ctx, ns, "q", c.Generation(ns), ans("x"))
	if r := c.Lookup(ctx, ns, "other q"); r.Hit {
		t.Error("hit without an embedding")
	}
}

func TestFailingEmbedder(t *testing.T) {
	t.Parallel()
	fail := funcEmbedder(func(context.Context, string) ([]float32, error) { return nil, errors.New("down") })
	c := cache.New(cache.Config{Embedder: fail})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	c.Store(ctx, ns, "What does HTTP 503 mean?", c.Generation(ns), ans("x"))
	if r := c.Lookup(ctx, ns, "What does HTTP 503 mean?"); !r.Hit || r.Kind != "exact" {
		t.Errorf("exact = %+v", r)
	}
	if r := c.Lookup(ctx, ns, "What is the meaning of HTTP 503?"); r.Hit {
		t.Errorf("semantic = %+v", r)
	}
	if s := statsOf(c, ns); s.HitsExact != 1 || s.Misses != 1 {
		t.Errorf("stats = %+v", s)
	}
}

func TestBypass(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	c.Bypass(ns)
	c.Bypass(ns)
	if s := statsOf(c, ns); s.Bypasses != 2 || s.Name != "n" || s.Model != "m" {
		t.Errorf("stats = %+v", s)
	}
}

func TestOpenAIEmbedder(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case r.URL.Path != "/v1/embeddings" || r.Method != http.MethodPost:
			http.NotFound(w, r)
		case r.Header.Get("Authorization") != "Bearer k":
			http.Error(w, `{"error":{"message":"bad key"}}`, http.StatusUnauthorized)
		case !strings.Contains(string(body), `"model":"text-embedding-3-small"`) || !strings.Contains(string(body), `"input":"hello"`):
			http.Error(w, "bad body "+string(body), http.StatusBadRequest)
		default:
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[{"object":"embedding","index":0,"embedding":[3.0,0,4.0]}],"model":"text-embedding-3-small","usage":{"prompt_tokens":1,"total_tokens":1}}`)
		}
	}))
	defer srv.Close()
	e := &cache.OpenAIEmbedder{BaseURL: srv.URL + "/v1/", APIKey: "k", Model: "text-embedding-3-small", Client: srv.Client()}
	v, err := e.Embed(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 3 || math.Abs(float64(v[0])-0.6) > 1e-6 || math.Abs(float64(v[2])-0.8) > 1e-6 {
		t.Errorf("vector = %v; want [0.6 0 0.8]", v)
	}
	bad := &cache.OpenAIEmbedder{BaseURL: srv.URL + "/v1", APIKey: "wrong", Model: "text-embedding-3-small"}
	if _, err := bad.Embed(ctx, "hello"); !errors.Is(err, cache.ErrEmbedding) || !strings.Contains(err.Error(), "401") {
		t.Errorf("error = %v", err)
	}
	// Through a Cache: the vectors come from the server.
	c := cache.New(cache.Config{Embedder: e})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	c.Store(ctx, ns, "hello", c.Generation(ns), ans("hi"))
	if x := c.Explain(ctx, ns, "hello"); x.Decision != "hit" {
		t.Errorf("explain = %+v", x)
	}
}

func TestVectorRoundTrip(t *testing.T) {
	t.Parallel()
	v := []float32{0, 1, -1, 0.5, float32(math.Pi), math.SmallestNonzeroFloat32, math.MaxFloat32, float32(math.Inf(-1))}
	b := cache.EncodeVector(v)
	if len(b) != 4*len(v) || b[4] != 0x00 || b[7] != 0x3f { // 1.0 = 0x3f800000, little-endian
		t.Fatalf("encoding % x", b[:8])
	}
	got, err := cache.DecodeVector(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range v {
		if got[i] != v[i] {
			t.Errorf("element %d: %v != %v", i, got[i], v[i])
		}
	}
	if _, err := cache.DecodeVector(b[:5]); !errors.Is(err, cache.ErrVectorLength) {
		t.Errorf("odd length error = %v", err)
	}
}

func TestBuiltinEmbedder(t *testing.T) {
	t.Parallel()
	b := cache.Builtin{}
	v1, _ := b.Embed(ctx, "张伟负责的盘点任务有哪些")
	v2, _ := b.Embed(ctx, "张伟负责的盘点任务有哪些")
	v3, _ := b.Embed(ctx, "张玮负责的盘点任务有哪些")
	if len(v1) != cache.BuiltinDim {
		t.Fatalf("dim = %d", len(v1))
	}
	var n, s12, s13 float64
	for i := range v1 {
		n += float64(v1[i] * v1[i])
		s12 += float64(v1[i] * v2[i])
		s13 += float64(v1[i] * v3[i])
	}
	if math.Abs(n-1) > 1e-5 || math.Abs(s12-1) > 1e-5 {
		t.Errorf("norm %v, self-similarity %v; want 1, 1", n, s12)
	}
	if s13 >= 0.92 {
		t.Errorf("张伟 vs 张玮 score %.3f; want < 0.92", s13)
	}
}

func TestConcurrent(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{MaxEntries: 50})
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := cache.Namespace{Namespace: "n", Model: "m"}
			for i := 0; i < 200; i++ {
				q := "How many units of SKU-" + string(rune('0'+i%10)) + string(rune('0'+g)) + " are left?"
				c.Store(ctx, ns, q, c.Generation(ns), ans("x"))
				c.Lookup(ctx, ns, q)
				c.Explain(ctx, ns, q)
				if i%50 == 0 {
					c.Purge("", "n")
					c.Stats()
				}
			}
		}()
	}
	wg.Wait()
}

// TestEvictionIsFairBetweenTenants: past the entry or byte bound, the
// tenant holding the most loses its least recently used entry: tenant a's
// flood of entries does not evict tenant b's answer.
func TestEvictionIsFairBetweenTenants(t *testing.T) {
	for _, cfg := range []cache.Config{{MaxEntries: 20}, {MaxBytes: 200 << 10}} {
		c := cache.New(cfg)
		b := cache.Namespace{Tenant: "b", Namespace: "n", Model: "m"}
		a := cache.Namespace{Tenant: "a", Namespace: "n", Model: "m"}
		c.Store(ctx, b, "where is pallet 7?", c.Generation(b), ans("aisle 3"))
		for i := range 500 {
			c.Store(ctx, a, "flood question number "+strconv.Itoa(i), c.Generation(a), ans(strings.Repeat("x", 1000)))
		}
		if r := c.Lookup(ctx, b, "where is pallet 7?"); !r.Hit {
			t.Fatalf("bounds %d entries / %d bytes: tenant a's flood evicted tenant b's entry", cfg.MaxEntries, cfg.MaxBytes)
		}
		if r := c.Lookup(ctx, a, "flood question number 499"); !r.Hit {
			t.Fatalf("bounds %d entries / %d bytes: tenant a's newest entry was evicted", cfg.MaxEntries, cfg.MaxBytes)
		}
	}
}
