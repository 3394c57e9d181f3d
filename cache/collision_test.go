package cache

import (
	"fmt"
	"testing"

	"github.com/sluice-dev/sluice/cache/text"
)

// Two different words can share a bucket and a sign of the builtin
// embedder's hashed vector; two questions of one such word each then score
// 1.0. The exact score (no hashing) is what the cache serves by.
func TestHashCollisionIsNotAHit(t *testing.T) {
	t.Parallel()
	// Find two made-up words whose features collide (a birthday search:
	// 2048 bucket-and-sign values, a few hundred words).
	seen := map[string]string{}
	var a, b string
	for i := 0; a == "" && i < 5000; i++ {
		w := "zorbl" + letters(i) // letters only: a word, not an identifier
		v := builtinVector(builtinFeatures([]string{"w:" + w}))
		for k, x := range v {
			if x != 0 {
				key := fmt.Sprint(k, x > 0)
				if o, ok := seen[key]; ok {
					a, b = o, w
				}
				seen[key] = w
			}
		}
	}
	if a == "" {
		t.Fatal("no colliding pair found")
	}
	qa, qb := "is the "+a+" ready", "is the "+b+" ready"
	ca, cb := text.Content(text.Normalize(qa)), text.Content(text.Normalize(qb))
	if s := dot(builtinVector(builtinFeatures(ca)), builtinVector(builtinFeatures(cb))); s < 0.99 {
		t.Fatalf("premise: hashed score of %q and %q = %.3f, want a collision", qa, qb, s)
	}
	if s := builtinExactScore(builtinFeatures(ca), builtinFeatures(cb)); s > 0.5 {
		t.Fatalf("exact score of %q and %q = %.3f; want low", qa, qb, s)
	}
	for _, emb := range []Embedder{nil, Builtin{}, &Builtin{}} { // the default, a value, a pointer
		c := New(Config{Embedder: emb})
		ns := Namespace{Namespace: "collide", Model: "m"}
		c.Store(t.Context(), ns, qa, c.Generation(ns), Answer{Chunks: []string{"x"}})
		r := c.Explain(t.Context(), ns, qb)
		if r.Kind != "" {
			t.Fatalf("embedder %T: %q served the answer of %q: %+v", emb, qb, qa, r)
		}
		if r.Verify == nil || r.Verify.Check != "score" {
			t.Fatalf("embedder %T: verification = %+v; want the exact score to refuse", emb, r.Verify)
		}
	}
	if s := builtinExactScore(builtinFeatures(ca), builtinFeatures(ca)); s < 0.999 {
		t.Fatalf("exact score of a question with itself = %.3f", s)
	}
}

// letters spells i in base 26 with a..z.
func letters(i int) string {
	s := ""
	for {
		s = string(rune('a'+i%26)) + s
		i /= 26
		if i == 0 {
			return s
		}
	}
}
