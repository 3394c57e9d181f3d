package cache

import "context"

// Explain returns the decision Lookup would make for question in ns and
// why, changing nothing: no counter, no hit count, no LRU position. Its
// candidates are the five most similar live entries of the namespace
// (whatever their facets), its reason one of "exact key", "score S >=
// threshold T and facets match", "facet mismatch: Q != E", "below
// threshold: best S < T", "no entries in namespace", "embedder
// unavailable: exact tier only", "nothing left after normalization: not
// cached", "no words or facets to compare (…): exact tier only", "the embedder
// returned a zero vector: exact tier only" or "verification refused:
// WHY". Stage names
// the stage that decided and Verify what the verification stage said.
func (c *Cache) Explain(ctx context.Context, ns Namespace, question string) Explanation {
	d := c.decide(ctx, ns, question, true)
	x := Explanation{
		Decision:   DecisionMiss,
		Score:      d.score,
		Threshold:  c.cfg.Threshold,
		Namespace:  ns.String(),
		Key:        d.key,
		Query:      Query{Normalized: d.normalized, Facets: d.facets},
		Candidates: d.candidates,
		Reason:     d.reason,
		Stage:      d.stage,
		Verify:     d.verify,
	}
	if x.Candidates == nil {
		x.Candidates = []Candidate{}
	}
	if x.Query.Facets == nil {
		x.Query.Facets = []string{}
	}
	if d.hit != nil {
		x.Decision, x.Kind = DecisionHit, d.kind
	}
	return x
}
