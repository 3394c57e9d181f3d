package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/cache/text"
)

// decision is the outcome of one lookup, made by decide alone: Lookup acts
// on it (counts it and serves the hit) and Explain renders it, so that the
// two always decide alike.
type decision struct {
	key        string
	normalized string
	facets     []string
	hit        *entry
	kind       Kind
	score      float64 // the hit's score, or the best score seen
	reason     string
	stage      Stage         // the stage that decided
	verify     *Verification // the verification of the best candidate, if one was verified
	candidates []Candidate   // recorded with explain only
}

// maxCandidates is the number of candidates an Explanation lists.
const maxCandidates = 5

// decide makes the cache decision for question in ns without changing
// anything. The stages run in this order, and the first that settles the
// question names itself in decision.stage:
//
//   - "blank": a question that normalizes to nothing ("   ", "???") is
//     never cached: a miss, whatever is stored;
//   - "exact": a live entry under the exact key is the hit;
//   - "long": a question past MaxSemanticRunes (normalized) is neither
//     analysed nor embedded: when the exact key missed, it is a miss;
//   - "empty": nothing is cached in the namespace;
//   - "content": the question has neither content nor facets to compare
//     once stop words are taken out ("the", "🔥🔥"), or the embedder
//     returned the zero vector: exact tier only, since all such questions
//     would look alike to the embedding (one of facets only, "IB-5521
//     吗", goes on: its facets decide);
//   - "embedder": the question has no vector (exact tier only);
//   - the scan scores the live entries of the namespace with equal facets
//     (the facet bucket); with explain it scores the whole namespace, to
//     record the candidates and the reason of a miss;
//   - "verify": the best entries at or above the threshold with equal
//     facets (at most maxVerify, best first) go to the verification stage;
//     the first it accepts is the hit, and when it refuses them all, the
//     best one's refusal is the reason;
//   - with explain only, a miss is then told apart: "facets" when an entry
//     at or above the threshold has other facets, "score" when none reaches
//     the threshold. Without explain, such a miss names no stage or reason.
func (c *Cache) decide(ctx context.Context, ns Namespace, question string, explain bool) decision {
	now := c.cfg.Now()
	norm, long := c.tooLong(question)
	nsKey := ns.String()
	d := decision{key: ExactKey(ns, norm), normalized: norm}

	// Stage "blank".
	if norm == "" {
		d.facets = []string{}
		d.reason, d.stage = "nothing left after normalization: not cached", StageBlank
		return d
	}

	c.mu.RLock()
	e, ok := c.st.get(d.key)
	live, _ := c.st.nsCount(nsKey)
	c.mu.RUnlock()

	if long {
		d.facets = []string{}
		d.reason = fmt.Sprintf("question longer than %d characters: exact tier only", c.cfg.MaxSemanticRunes)
	}

	// Stage "exact".
	if ok && !e.expired(now) {
		d.hit, d.kind, d.score, d.reason, d.stage = e, KindExact, 1, "exact key", StageExact
		if !long && explain {
			d.facets = text.Facets(norm)
		}
		if explain {
			d.candidates = []Candidate{c.candidate(e, 1, d.facets, now)}
		}
		return d
	}
	if long {
		d.stage = StageLong
		return d
	}

	// Stage "empty".
	r := readOf(norm)
	d.facets = r.facets
	if live == 0 {
		d.reason, d.stage = "no entries in namespace", StageEmpty
		return d
	}

	// Stages "content" and "embedder".
	vec, err := c.embed(ctx, norm, r)
	switch {
	case errors.Is(err, errNoFeatures):
		d.reason, d.stage = "no words or facets to compare (only punctuation, symbols or stop words): exact tier only", StageContent
		return d
	case errors.Is(err, errZeroVector):
		d.reason, d.stage = "the embedder returned a zero vector: exact tier only", StageContent
		return d
	case err != nil:
		d.reason, d.stage = "embedder unavailable: exact tier only", StageEmbedder
		return d
	}

	// The scan: the best entry with equal facets, the maxVerify best with
	// equal facets at or above the threshold and, with explain, the most
	// similar entries whatever their facets.
	facetKey := strings.Join(d.facets, "\x1f")
	type scored struct {
		e     *entry
		score float64
	}
	th := c.cfg.Threshold
	var best scored    // best live entry with equal facets
	var above []scored // the maxVerify best live entries with equal facets at or above the threshold, best first
	var top []scored
	c.mu.RLock()
	var bucket *string
	if !explain {
		bucket = &facetKey
	}
	c.st.scan(nsKey, bucket, vec, func(e *entry, score float32) bool {
		s := float64(score)
		if !explain && best.e != nil && s <= best.score && (s < th || len(above) == maxVerify && s <= above[maxVerify-1].score) {
			return true // cannot replace best or join the verified: skip reading e
		}
		if e.expired(now) {
			return true
		}
		if e.facetKey == facetKey {
			if best.e == nil || s > best.score {
				best = scored{e, s}
			}
			if s >= th && (len(above) < maxVerify || s > above[maxVerify-1].score) {
				// Keep the maxVerify best, best first.
				if len(above) == maxVerify {
					above = above[:maxVerify-1]
				}
				k := sort.Search(len(above), func(i int) bool { return above[i].score < s })
				above = slices.Insert(above, k, scored{e, s})
			}
		}
		if explain {
			top = append(top, scored{e, s})
		}
		return true
	})
	if explain {
		sort.Slice(top, func(i, j int) bool { return top[i].score > top[j].score })
		if len(top) > maxCandidates {
			top = top[:maxCandidates]
		}
		for _, t := range top {
			d.candidates = append(d.candidates, c.candidate(t.e, t.score, d.facets, now))
		}
	}
	c.mu.RUnlock()
	if best.e != nil {
		d.score = best.score
	}

	// Stage "verify".
	if len(above) > 0 {
		q := signature(question)
		var qFeatures []builtinFeature // read once for up to maxVerify candidates
		builtin := isBuiltin(c.cfg.Embedder)
		if builtin {
			qFeatures = builtinFeatures(r.content)
		}
		for i, cand := range above {
			stored := c.storedReadingOf(cand.e, builtin)
			var check, why string
			score := cand.score
			// The hashed vectors may have collided: the exact score decides
			// first (it is the cheaper of the two), and a hit reports the
			// lower of the two, so that a hit at one threshold is a hit at
			// every lower one (sluice cache eval reads it so).
			if builtin {
				s := builtinExactScore(qFeatures, stored.features)
				if s < th {
					check, why = "score", fmt.Sprintf("exact score %.2f < threshold %.2f (the hashed vectors collided at %.2f)", s, th, cand.score)
				}
				score = min(score, s)
			}
			if check == "" {
				check, why = verifyPair(q, stored.signature())
			}
			v := &Verification{Passed: check == "", Check: check, Reason: why, Question: cand.e.question}
			if i == 0 || v.Passed {
				d.verify = v
			}
			if v.Passed {
				d.hit, d.kind, d.score, d.stage = cand.e, KindSemantic, score, StageVerify
				d.reason = fmt.Sprintf("score %.2f >= threshold %.2f and facets match", score, th)
				return d
			}
		}
		d.stage = StageVerify
		d.reason = fmt.Sprintf("verification refused: %s", d.verify.Reason)
		return d
	}
	if !explain {
		return d
	}

	// Stages "facets" and "score", for the explanation of a miss; "empty"
	// again when every entry of the namespace has expired.
	if len(top) == 0 {
		d.reason, d.stage = "no entries in namespace", StageEmpty
		return d
	}
	d.score = top[0].score
	// The most similar entry at or above the threshold whose facets differ
	// explains a miss better than "below threshold".
	for _, t := range top {
		if t.score >= th && t.e.facetKey != facetKey {
			q, e := facetDiff(d.facets, t.e.facets)
			d.reason = fmt.Sprintf("facet mismatch: %s != %s", q, e)
			d.stage = StageFacets
			return d
		}
	}
	d.stage = StageScore
	d.reason = fmt.Sprintf("below threshold: best %.2f < %.2f", top[0].score, th)
	return d
}

// readingKey names a stored question's reading: the entry's exact key
// (which fixes its normalized text) and the question as first asked (what
// the verification reads).
type readingKey struct{ id, question string }

// storedReading is what the verification stage reads of a candidate: the
// weighted features of its content for the exact re-score (with the
// builtin embedder) and its signature, read the first time a lookup needs
// it (a candidate the exact score refuses is never read further). It is
// not changed once made (verifyPair only reads its arguments:
// TestVerifyPairOnlyReads), so lookups share it.
type storedReading struct {
	question string
	features []builtinFeature // nil with a model embedder
	sigOnce  sync.Once
	sig      vsig
}

// signature returns the signature of the stored question, reading it once.
func (r *storedReading) signature() vsig {
	r.sigOnce.Do(func() { r.sig = signature(r.question) })
	return r.sig
}

// maxKeptReading is the longest question, in bytes, whose reading
// c.readings keeps, so that the readings kept stay within about
// Config.Readings × 21 KiB whatever is asked.
const maxKeptReading = 512

// storedReadingOf returns the reading of e, kept in c.readings for the
// next lookup that e is a candidate of.
func (c *Cache) storedReadingOf(e *entry, builtin bool) *storedReading {
	k := readingKey{e.id, e.question}
	keep := c.readings != nil && len(e.question) <= maxKeptReading
	if keep {
		if r, ok := c.readings.Get(k); ok {
			return r
		}
	}
	r := &storedReading{question: e.question}
	if builtin {
		r.features = builtinFeatures(text.Content(e.normalized))
	}
	if keep {
		c.readings.Add(k, r)
	}
	return r
}

// facetDiff returns the facets only the question has and those only the
// entry has, comma-separated, "(none)" for an empty side.
func facetDiff(q, e []string) (string, string) {
	in := func(s []string, x string) bool {
		for _, y := range s {
			if y == x {
				return true
			}
		}
		return false
	}
	var onlyQ, onlyE []string
	for _, x := range q {
		if !in(e, x) {
			onlyQ = append(onlyQ, x)
		}
	}
	for _, x := range e {
		if !in(q, x) {
			onlyE = append(onlyE, x)
		}
	}
	join := func(s []string) string {
		if len(s) == 0 {
			return "(none)"
		}
		return strings.Join(s, ",")
	}
	return join(onlyQ), join(onlyE)
}

// candidate describes e for an Explanation. c.mu may be held for reading.
func (c *Cache) candidate(e *entry, score float64, facets []string, now time.Time) Candidate {
	cd := Candidate{
		Question:    e.question,
		Score:       score,
		Facets:      append([]string{}, e.facets...),
		FacetsMatch: strings.Join(facets, "\x1f") == e.facetKey,
		AgeS:        now.Unix() - e.created.Unix(),
		Hits:        e.hits,
	}
	if !e.expires.IsZero() {
		cd.TTLS = e.expires.Unix() - now.Unix()
	} else {
		cd.TTLS = -1
	}
	return cd
}
