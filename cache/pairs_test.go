package cache_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/cache"
)

// pair is one line of an evaluation file (shared/data/README.md).
type pair struct {
	ID, A, B, Lang, Expect, Why, Domain string
}

// pairFile is one evaluation file and the false-hit rate it may have.
type pairFile struct {
	path string
	// maxFalse is the false-hit rate allowed on its miss pairs: 0 for the
	// project's own files, 1% for public corpora labelled by others.
	maxFalse float64
}

// pairFiles returns the evaluation files: every file in testdata (this
// package's own pairs, written apart from the development set), the
// development set beside the repository, the public PAWS-X sample, plus
// SLUICE_CACHE_PAIRS (comma-separated paths).
func pairFiles(t *testing.T) []pairFile {
	t.Helper()
	own, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var files []pairFile
	for _, f := range own {
		files = append(files, pairFile{f, 0})
	}
	dev := filepath.Join("..", "..", "shared", "data", "cache-pairs.jsonl")
	if _, err := os.Stat(dev); err == nil {
		files = append(files, pairFile{dev, 0})
	} else {
		t.Log("../../shared/data/cache-pairs.jsonl not found: the development set is not evaluated")
	}
	paws := filepath.Join("..", "..", "shared", "data", "public", "pawsx-zh-dev.jsonl")
	if _, err := os.Stat(paws); err == nil {
		files = append(files, pairFile{paws, 0.01})
	} else {
		t.Log("../../shared/data/public/pawsx-zh-dev.jsonl not found: the PAWS-X sample is not evaluated")
	}
	for _, f := range strings.Split(os.Getenv("SLUICE_CACHE_PAIRS"), ",") {
		if f = strings.TrimSpace(f); f != "" {
			files = append(files, pairFile{f, 0})
		}
	}
	return files
}

func readPairs(t *testing.T, path string) []pair {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer f.Close()
	var out []pair
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p pair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return out
}

// TestPairs evaluates every pair on its own namespace: store a, look up b.
// Every exact pair must hit as exact and no miss pair may hit; semantic
// recall and the score distribution are reported.
func TestPairs(t *testing.T) {
	for _, file := range pairFiles(t) {
		t.Run(filepath.Base(file.path), func(t *testing.T) {
			evalPairs(t, readPairs(t, file.path), file.maxFalse)
		})
	}
}

// evalPairs checks one file: every exact pair hits as exact, and the miss
// pairs have at most maxFalse false hits (each one an error when maxFalse
// is 0, logged otherwise).
func evalPairs(t *testing.T, pairs []pair, maxFalse float64) { //nolint:thelper // a subtest's body: its lines are the ones to report
	ctx := context.Background()
	c := cache.New(cache.Config{})
	type tally struct{ hits, total int }
	recall := map[string]*tally{}
	count := func(key string, hit bool) {
		if recall[key] == nil {
			recall[key] = &tally{}
		}
		recall[key].total++
		if hit {
			recall[key].hits++
		}
	}
	scores := map[string][]float64{}
	exactHits, exactTotal, falseHits, missTotal := 0, 0, 0, 0
	for _, p := range pairs {
		ns := cache.Namespace{Namespace: "eval-" + p.ID, Model: "sim-1"}
		c.Store(ctx, ns, p.A, c.Generation(ns), cache.Answer{Chunks: []string{"answer to " + p.ID}})
		x := c.Explain(ctx, ns, p.B)
		r := c.Lookup(ctx, ns, p.B)
		if got := map[bool]cache.Decision{true: cache.DecisionHit, false: cache.DecisionMiss}[r.Hit]; got != x.Decision || (r.Hit && r.Kind != x.Kind) {
			t.Errorf("%s: Explain says %s/%s (%s), Lookup says %s/%s", p.ID, x.Decision, x.Kind, x.Reason, got, r.Kind)
		}
		best := x.Score
		scores[p.Expect] = append(scores[p.Expect], best)
		switch p.Expect {
		case "exact":
			exactTotal++
			if r.Hit && r.Kind == "exact" {
				exactHits++
			} else {
				t.Errorf("%s: exact pair missed (hit=%v kind=%q): %q vs %q, reason %q", p.ID, r.Hit, r.Kind, p.A, p.B, x.Reason)
			}
		case "semantic":
			count("all", r.Hit)
			count("lang="+p.Lang, r.Hit)
			count("domain="+p.Domain, r.Hit)
			if !r.Hit {
				t.Logf("semantic miss %s: score %.3f, reason %q\n\ta=%q\n\tb=%q facets %v", p.ID, best, x.Reason, p.A, p.B, x.Query.Facets)
			}
		case "miss":
			missTotal++
			if r.Hit {
				falseHits++
				var cf []string
				if len(x.Candidates) > 0 {
					cf = x.Candidates[0].Facets
				}
				report := t.Errorf
				if maxFalse > 0 {
					report = t.Logf
				}
				report("FALSE HIT %s (%s): score %.3f, kind %s, reason %q\n\ta=%q facets %v\n\tb=%q facets %v",
					p.ID, p.Why, r.Score, r.Kind, x.Reason, p.A, cf, p.B, x.Query.Facets)
			}
		}
	}
	t.Logf("exact: %d/%d hit as exact; false hits on miss pairs: %d/%d", exactHits, exactTotal, falseHits, missTotal)
	if missTotal > 0 && float64(falseHits) > maxFalse*float64(missTotal) {
		t.Errorf("false hits %d/%d = %.1f%%, more than %.0f%%", falseHits, missTotal, 100*float64(falseHits)/float64(missTotal), 100*maxFalse)
	}
	keys := make([]string, 0, len(recall))
	for k := range recall {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		r := recall[k]
		t.Logf("semantic recall %-14s %2d/%2d = %.0f%%", k, r.hits, r.total, 100*float64(r.hits)/float64(r.total))
	}
	for _, class := range []string{"exact", "semantic", "miss"} {
		s := scores[class]
		if len(s) == 0 {
			continue
		}
		slices.Sort(s)
		t.Logf("score %-8s n=%3d min %.3f median %.3f max %.3f  %s", class, len(s), s[0], s[len(s)/2], s[len(s)-1], histogram(s))
	}
}

// histogram buckets scores for the report: <0.8, 0.8-0.9, 0.9-0.92,
// 0.92-0.95, >=0.95.
func histogram(s []float64) string {
	edges := []float64{0.8, 0.9, 0.92, 0.95}
	labels := []string{"<0.80", "0.80-0.90", "0.90-0.92", "0.92-0.95", ">=0.95"}
	counts := make([]int, len(labels))
	for _, x := range s {
		i := sort.SearchFloat64s(edges, x+1e-12)
		if i > 0 && x < edges[i-1] {
			i--
		}
		counts[i]++
	}
	var b strings.Builder
	for i, l := range labels {
		fmt.Fprintf(&b, "%s:%d ", l, counts[i])
	}
	return b.String()
}
