package cache_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-dev/sluice/cache"
)

// TestQuestionsWithoutContentNeverMatchSemantically is the reviewer's
// repro: "???" stored, then "!!!", "the", "a" and "🔥🔥" looked up in the
// same namespace. They all have no content to compare, and the builtin
// embedder used to give them one shared "empty" feature: "!!!" was an exact
// hit of "???" (both normalize to ""), and the others semantic hits at
// score 1 with the "???" answer. Now a question that normalizes to nothing
// is never cached, and one with neither content nor facets (stop words,
// symbols) uses the exact tier only. One whose words are all facets or
// stop words still matches another of equal facets: the facets decide.
func TestQuestionsWithoutContentNeverMatchSemantically(t *testing.T) {
	t.Parallel()
	c := cache.New(cache.Config{})
	ns := cache.Namespace{Namespace: "zz1", Model: "m"}
	for _, q := range []string{"???", "!!!", "the", "a", "🔥🔥", "   ", "\u0000", "IB-5521 收货了吗"} {
		if r := c.Lookup(ctx, ns, q); r.Hit {
			t.Errorf("%q: %s hit at score %.3f with %q; want a miss", q, r.Kind, r.Score, r.Answer.Chunks)
		}
		c.Store(ctx, ns, q, c.Generation(ns), ans("answer to "+q))
	}
	// Blank after normalization: never cached, so another blank question
	// cannot take its answer.
	for _, q := range []string{"???", "!!!", "   "} {
		if r := c.Lookup(ctx, ns, q); r.Hit {
			t.Errorf("%q after store: %s hit with %q; want a miss (not cached)", q, r.Kind, r.Answer.Chunks)
		}
		x := c.Explain(ctx, ns, q)
		if x.Decision != cache.DecisionMiss || x.Stage != cache.StageBlank || x.Query.Normalized != "" || len(x.Candidates) != 0 ||
			!strings.Contains(x.Reason, "not cached") {
			t.Errorf("explain %q: decision %s, stage %q, reason %q, candidates %v", q, x.Decision, x.Stage, x.Reason, x.Candidates)
		}
	}
	// No content: its own exact key only, and never another's answer.
	for _, q := range []string{"the", "a", "🔥🔥", "\u0000", "IB-5521 收货了吗"} {
		if r := c.Lookup(ctx, ns, q); !r.Hit || r.Kind != cache.KindExact || r.Answer.Chunks[0] != "answer to "+q {
			t.Errorf("%q after store: %+v; want its own exact hit", q, r)
		}
	}
	for _, q := range []string{"an", "🔥", "of the"} {
		if r := c.Lookup(ctx, ns, q); r.Hit {
			t.Errorf("%q: %s hit at score %.3f with %q; want a miss", q, r.Kind, r.Score, r.Answer.Chunks)
		}
		x := c.Explain(ctx, ns, q)
		if x.Decision != cache.DecisionMiss || x.Stage != cache.StageContent || x.Score != 0 || len(x.Candidates) != 0 ||
			!strings.Contains(x.Reason, "exact tier only") {
			t.Errorf("explain %q: decision %s, stage %q, score %.3f, reason %q, candidates %v", q, x.Decision, x.Stage, x.Score, x.Reason, x.Candidates)
		}
	}
	// Facets alone decide between questions whose words are all facets
	// or stop words: the same document asked again in other words is a
	// hit, another document is not.
	if r := c.Lookup(ctx, ns, "IB-5521 收货了没有"); !r.Hit || r.Kind != cache.KindSemantic || r.Answer.Chunks[0] != "answer to IB-5521 收货了吗" {
		t.Errorf("IB-5521 收货了没有: %+v; want the semantic hit of IB-5521 收货了吗", r)
	}
	if r := c.Lookup(ctx, ns, "IB-5522 收货了没有"); r.Hit {
		t.Errorf("IB-5522 收货了没有: %s hit with %q; want a miss (another document)", r.Kind, r.Answer.Chunks)
	}
	// A real question is not matched with them either, and those without
	// facets are not among its candidates (they have no vector).
	x := c.Explain(ctx, ns, "What is the stock of SKU-1?")
	for _, cd := range x.Candidates {
		if len(cd.Facets) == 0 || cd.FacetsMatch || cd.Score > 0 {
			t.Errorf("a question without content is a candidate of a real one: %+v", cd)
		}
	}
}

// TestEmptyEmbeddingsAreSimilarToNothing: two questions without content
// have zero vectors, and their similarity is 0, not 1 (the builtin
// embedder used to give them one shared feature).
func TestEmptyEmbeddingsAreSimilarToNothing(t *testing.T) {
	t.Parallel()
	a, _ := cache.Builtin{}.Embed(ctx, "???")
	b, _ := cache.Builtin{}.Embed(ctx, "the")
	var dot float32
	for i := range a {
		dot += a[i] * b[i]
		if a[i] != 0 || b[i] != 0 {
			t.Fatalf("element %d of the embedding of a question without content: %v, %v; want the zero vector", i, a[i], b[i])
		}
	}
	if dot != 0 {
		t.Fatalf("similarity of two empty embeddings: %v; want 0", dot)
	}
}

// TestZeroVectorOfAnEmbeddingsEndpointIsExactOnly: an OpenAI-compatible
// endpoint that answers the zero vector for every question (a model that
// knows none of its words) must not make them all match each other: the
// questions use the exact tier only, and the lookup says why.
func TestZeroVectorOfAnEmbeddingsEndpointIsExactOnly(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"data":[{"embedding":[0,0,0,0,0,0,0,0]}]}`))
	}))
	defer srv.Close()
	c := cache.New(cache.Config{Embedder: &cache.OpenAIEmbedder{BaseURL: srv.URL, Model: "zero", Client: srv.Client()},
		EmbedTimeout: 5e9})
	ns := cache.Namespace{Namespace: "n", Model: "m"}
	c.Store(ctx, ns, "What is the capital of Freedonia?", c.Generation(ns), ans("Fredville"))
	if r := c.Lookup(ctx, ns, "What is the capital of Freedonia?"); !r.Hit || r.Kind != cache.KindExact {
		t.Fatalf("exact lookup: %+v; want an exact hit", r)
	}
	q := "How tall is the Eiffel tower?"
	if r := c.Lookup(ctx, ns, q); r.Hit {
		t.Fatalf("%q: %s hit at score %.3f with %q; want a miss", q, r.Kind, r.Score, r.Answer.Chunks)
	}
	x := c.Explain(ctx, ns, q)
	if x.Decision != cache.DecisionMiss || x.Stage != cache.StageContent || !strings.Contains(x.Reason, "zero vector") || len(x.Candidates) != 0 {
		t.Fatalf("explain: decision %s, stage %q, reason %q, candidates %v", x.Decision, x.Stage, x.Reason, x.Candidates)
	}
	if calls.Load() == 0 {
		t.Fatal("the endpoint was never called")
	}
}
