package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/sluice-dev/sluice/cache"
)

const cacheEvalUsage = `usage: sluice cache eval --pairs FILE.jsonl [--pairs FILE.jsonl ...] [flags]

Calibrates the cache threshold for an embedder. Every pair of the files
(JSON Lines: id, a, b, expect = exact | semantic | miss; the format of the
cache evaluation sets) runs through a real in-process cache with this
embedder, the facet guard and the verification stage: a is stored in a
fresh namespace, b is looked up. For each threshold it prints precision
(hits on semantic pairs / all hits), recall (semantic pairs hit) and the
false-hit rate (miss pairs hit), the last also for the score alone without
the guard and the verification, and the exact pairs hit as exact (which
must be all). It also counts the paraphrases the guard or the
verification refuse at any score: the recall no threshold can buy.
Choose the threshold for your data where the false-hit rate
is 0 (or as low as you accept) and recall is highest; set it with
SLUICE_CACHE_THRESHOLD. Nothing is sent upstream; with --embeddings every
question is sent to that endpoint.

flags:
`

// evalThresholds are the thresholds the evaluation reports: 0.50 to 0.99.
func evalThresholds() []float64 {
	var ts []float64
	for i := 50; i <= 99; i++ {
		ts = append(ts, float64(i)/100)
	}
	return ts
}

// evalPair is one line of a pair file.
type evalPair struct {
	ID     string `json:"id"`
	A      string `json:"a"`
	B      string `json:"b"`
	Expect string `json:"expect"`
	file   int
}

// evalOutcome is what the cache did with one pair at a threshold near 0:
// at threshold T it is a hit when hit && (exact || score >= T).
type evalOutcome struct {
	hit, exact bool
	score      float64 // the score the decision used
	raw        float64 // the best score of any candidate, facets or not
	stage      cache.Stage
	embedErr   bool
}

// evalRow is the result at one threshold.
type evalRow struct {
	Threshold      float64 `json:"threshold"`
	Hits           int     `json:"hits"`            // semantic pairs hit
	FalseHits      int     `json:"false_hits"`      // miss pairs hit
	ScoreFalseHits int     `json:"score_false_hit"` // miss pairs at or above the threshold by score alone
	Precision      float64 `json:"precision"`       // hits / (hits + false hits); 1 when nothing hit
	Recall         float64 `json:"recall"`          // hits / semantic pairs
	FalseHitRate   float64 `json:"false_hit_rate"`  // false hits / miss pairs
}

// evalReport is the whole result of one file (or of all files).
type evalReport struct {
	Name        string   `json:"name"`
	Pairs       int      `json:"pairs"`
	Exact       int      `json:"exact"`
	ExactHits   int      `json:"exact_hits"` // exact pairs hit as exact
	Semantic    int      `json:"semantic"`
	Miss        int      `json:"miss"`
	EmbedErrors int      `json:"embed_errors"`
	RefusedBy   refusals `json:"refused_by"` // miss pairs by the stage that refused them
	// ParaphrasesRefusedBy counts the semantic pairs the facet guard or
	// the verification refuses whatever their score: the recall no
	// threshold can buy with these checks.
	ParaphrasesRefusedBy refusals  `json:"paraphrases_refused_by"`
	Rows                 []evalRow `json:"thresholds"`
}

type refusals struct {
	Facets int `json:"facets"`
	Verify int `json:"verify"`
}

// count adds the pair of o when the facet guard or the verification
// refused it.
func (r *refusals) count(o evalOutcome) {
	switch o.stage {
	case "facets":
		r.Facets++
	case "verify":
		if !o.hit {
			r.Verify++
		}
	}
}

type pairsFlag []string

func (p *pairsFlag) String() string     { return strings.Join(*p, ",") }
func (p *pairsFlag) Set(v string) error { *p = append(*p, v); return nil }

// cmdCacheEval is "sluice cache eval".
func cmdCacheEval(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sluice cache eval", cacheEvalUsage, stderr)
	var files pairsFlag
	fs.Var(&files, "pairs", "pair file (JSON Lines); repeat for several")
	emb := fs.String("embeddings", envOr(getenv, "SLUICE_EMBEDDINGS", "builtin"), "`builtin` or an OpenAI-compatible base URL serving /embeddings (env SLUICE_EMBEDDINGS)")
	model := fs.String("embeddings-model", envOr(getenv, "SLUICE_EMBEDDINGS_MODEL", "text-embedding-3-small"), "model named in /embeddings requests (env SLUICE_EMBEDDINGS_MODEL)")
	timeout := fs.Duration("embed-timeout", 10*time.Second, "bound of one embedding call")
	parallel := fs.Int("parallel", 4, "pairs evaluated at once (1-64)")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	plot := fs.String("plot", "", "write the threshold curve as an SVG `file`")
	threshold := fs.Float64("threshold", envFloat(getenv, "SLUICE_CACHE_THRESHOLD", cache.DefaultThreshold), "the threshold marked in the table and the plot (env SLUICE_CACHE_THRESHOLD)")
	if err := fs.Parse(args); err != nil {
		return usageExit(err)
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fail(stderr, "cache eval takes no arguments (unexpected %q); pass files with --pairs", fs.Arg(0))
	}
	if len(files) == 0 {
		fs.Usage()
		return fail(stderr, "cache eval needs at least one --pairs FILE.jsonl")
	}
	if *parallel < 1 || *parallel > 64 {
		return fail(stderr, "--parallel must be 1..64, got %d", *parallel)
	}
	if *timeout <= 0 {
		return fail(stderr, "--embed-timeout must be positive")
	}
	if !(*threshold > 0 && *threshold <= 1) { // NaN too
		return fail(stderr, "--threshold must be a number in (0, 1], got %g", *threshold)
	}
	var embedder cache.Embedder = cache.Builtin{}
	if *emb != "builtin" {
		if err := wordOrURL(new(string), "builtin", "SLUICE_EMBEDDINGS_API_KEY")(*emb); err != nil {
			return fail(stderr, "--embeddings: %v", err)
		}
		key := getenv("SLUICE_EMBEDDINGS_API_KEY")
		if key == "" {
			key = getenv("SLUICE_UPSTREAM_API_KEY")
		}
		embedder = &cache.OpenAIEmbedder{BaseURL: *emb, APIKey: key, Model: *model}
	}
	var pairs []evalPair
	for i, f := range files {
		ps, err := readEvalPairs(f, i)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		pairs = append(pairs, ps...)
	}
	ctx, stop := interruptible()
	defer stop()
	outs := runEval(ctx, embedder, *timeout, *parallel, pairs)
	if ctx.Err() != nil {
		return fail(stderr, "interrupted")
	}
	all := summarizeEval("all", pairs, outs, func(evalPair) bool { return true })
	if all.EmbedErrors == len(pairs)-all.Exact && all.EmbedErrors > 0 {
		return fail(stderr, "the embedder failed on every pair (%s): is %s serving /embeddings?", embedder.Name(), *emb)
	}
	reports := []evalReport{all}
	if len(files) > 1 {
		for i, f := range files {
			reports = append(reports, summarizeEval(filepath.Base(f), pairs, outs, func(p evalPair) bool { return p.file == i }))
		}
	}
	if *plot != "" {
		if err := os.WriteFile(*plot, []byte(plotSVG(all, embedder.Name(), *threshold)), 0o644); err != nil {
			return fail(stderr, "writing the plot: %v", err)
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(struct {
			Embedder  string       `json:"embedder"`
			Threshold float64      `json:"threshold"`
			Reports   []evalReport `json:"reports"`
		}{embedder.Name(), *threshold, reports})
		return exitOK
	}
	printEval(stdout, embedder.Name(), *threshold, reports)
	if *plot != "" {
		fmt.Fprintf(stdout, "plot: %s\n", *plot)
	}
	return exitOK
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func envFloat(getenv func(string) string, key string, def float64) float64 {
	if v, err := strconv.ParseFloat(getenv(key), 64); err == nil && v > 0 && v <= 1 {
		return v
	}
	return def
}

// readEvalPairs reads one pair file; file is its index among the files.
func readEvalPairs(path string, file int) ([]evalPair, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []evalPair
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var p evalPair
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		switch p.Expect {
		case "exact", "semantic", "miss":
		default:
			return nil, fmt.Errorf("%s:%d: expect is %q, want exact, semantic or miss", path, n, p.Expect)
		}
		if p.A == "" || p.B == "" {
			return nil, fmt.Errorf("%s:%d: a and b must not be empty", path, n)
		}
		p.file = file
		out = append(out, p)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no pairs", path)
	}
	return out, nil
}

// runEval runs every pair through one in-process cache, each in its own
// namespace, with parallel workers; it returns when all are done or ctx
// ends.
func runEval(ctx context.Context, emb cache.Embedder, timeout time.Duration, parallel int, pairs []evalPair) []evalOutcome {
	// A threshold near 0: every candidate with equal facets reaches the
	// verification, so one run gives the decision at every threshold.
	c := cache.New(cache.Config{Threshold: 1e-9, Embedder: emb, EmbedTimeout: timeout, MaxEntries: -1, MaxBytes: -1, TTL: -1})
	outs := make([]evalOutcome, len(pairs))
	work := make(chan int)
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				p := pairs[i]
				ns := cache.Namespace{Namespace: "eval-" + strconv.Itoa(i), Model: "eval"}
				c.Store(ctx, ns, p.A, c.Generation(ns), cache.Answer{Chunks: []string{p.ID}})
				x := c.Explain(ctx, ns, p.B)
				o := evalOutcome{hit: x.Decision == cache.DecisionHit, exact: x.Kind == cache.KindExact, score: x.Score, stage: x.Stage, embedErr: x.Stage == cache.StageEmbedder || x.Stage == cache.StageEmpty}
				if len(x.Candidates) > 0 {
					o.raw = x.Candidates[0].Score
				}
				outs[i] = o
			}
		}()
	}
	for i := range pairs {
		select {
		case work <- i:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	return outs
}

// summarizeEval computes the report of the pairs that keep selects.
func summarizeEval(name string, pairs []evalPair, outs []evalOutcome, keep func(evalPair) bool) evalReport {
	r := evalReport{Name: name}
	for i, p := range pairs {
		if !keep(p) {
			continue
		}
		o := outs[i]
		r.Pairs++
		if o.embedErr {
			r.EmbedErrors++
		}
		switch p.Expect {
		case "exact":
			r.Exact++
			if o.hit && o.exact {
				r.ExactHits++
			}
		case "semantic":
			r.Semantic++
			r.ParaphrasesRefusedBy.count(o)
		case "miss":
			r.Miss++
			r.RefusedBy.count(o)
		}
	}
	for _, t := range evalThresholds() {
		row := evalRow{Threshold: t}
		for i, p := range pairs {
			if !keep(p) {
				continue
			}
			o := outs[i]
			hit := o.hit && (o.exact || o.score >= t)
			switch p.Expect {
			case "semantic":
				if hit {
					row.Hits++
				}
			case "miss":
				if hit {
					row.FalseHits++
				}
				if o.exact || o.raw >= t {
					row.ScoreFalseHits++
				}
			}
		}
		row.Precision = 1
		if n := row.Hits + row.FalseHits; n > 0 {
			row.Precision = float64(row.Hits) / float64(n)
		}
		row.Recall = ratio(row.Hits, r.Semantic)
		row.FalseHitRate = ratio(row.FalseHits, r.Miss)
		r.Rows = append(r.Rows, row)
	}
	return r
}

func ratio(n, d int) float64 {
	if d == 0 {
		return 0
	}
	return float64(n) / float64(d)
}

// printEval prints the reports as tables for people.
func printEval(w io.Writer, embedder string, threshold float64, reports []evalReport) {
	for k, r := range reports {
		if k > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s: %d pairs (%d exact, %d semantic, %d miss), embedder %s\n", r.Name, r.Pairs, r.Exact, r.Semantic, r.Miss, embedder)
		fmt.Fprintf(w, "exact pairs hit as exact: %d/%d\n", r.ExactHits, r.Exact)
		if r.EmbedErrors > 0 {
			fmt.Fprintf(w, "embedding failed on %d pairs (counted as misses)\n", r.EmbedErrors)
		}
		fmt.Fprintf(w, "miss pairs refused by the facet guard: %d, by the verification: %d\n", r.RefusedBy.Facets, r.RefusedBy.Verify)
		fmt.Fprintf(w, "paraphrases refused at any score by the facet guard: %d, by the verification: %d\n", r.ParaphrasesRefusedBy.Facets, r.ParaphrasesRefusedBy.Verify)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "threshold\tprecision\trecall\t\tfalse hits\t\tscore alone\t\t\t")
		for _, row := range r.Rows {
			t := int(math.Round(row.Threshold * 100))
			if t < 80 && t%5 != 0 {
				continue // every 0.05 below 0.80, every 0.01 above
			}
			mark := ""
			if math.Abs(row.Threshold-threshold) < 0.005 {
				mark = "<- threshold"
			}
			fmt.Fprintf(tw, "%.2f\t%.3f\t%d/%d\t%.1f%%\t%d/%d\t%.1f%%\t%d/%d\t%.1f%%\t %s\t\n", row.Threshold, row.Precision,
				row.Hits, r.Semantic, 100*row.Recall, row.FalseHits, r.Miss, 100*row.FalseHitRate,
				row.ScoreFalseHits, r.Miss, 100*ratio(row.ScoreFalseHits, r.Miss), mark)
		}
		_ = tw.Flush()
	}
}

// plotSVG draws precision, recall and the false-hit rates of r against
// the threshold, with the chosen threshold marked.
func plotSVG(r evalReport, embedder string, threshold float64) string {
	const w, h, left, right, top, bottom = 640, 400, 56, 150, 36, 44
	pw, ph := float64(w-left-right), float64(h-top-bottom)
	x := func(t float64) float64 { return left + (t-0.5)/0.5*pw }
	y := func(v float64) float64 { return top + (1-v)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", w, h)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14">%s</text>`+"\n", left, xmlEscape(fmt.Sprintf("sluice cache eval: %d pairs, %s", r.Pairs, embedder)))
	for i := 0; i <= 5; i++ {
		v := float64(i) / 5
		fmt.Fprintf(&b, `<line x1="%d" x2="%.1f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%d" y="%.1f" text-anchor="end">%.1f</text>`+"\n",
			left, left+pw, y(v), y(v), left-6, y(v)+4, v)
		t := 0.5 + v/2
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%.1f</text>`+"\n", x(t), h-bottom+16, t)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">threshold</text>`+"\n", left+pw/2, h-8)
	fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%.1f" stroke="#888" stroke-dasharray="4 3"/><text x="%.1f" y="%d" text-anchor="middle">%.2f</text>`+"\n",
		x(threshold), x(threshold), top, top+ph, x(threshold), top-4, threshold)
	series := []struct {
		name, color string
		v           func(evalRow) float64
	}{
		{"precision", "#1f77b4", func(r evalRow) float64 { return r.Precision }},
		{"recall", "#2ca02c", func(r evalRow) float64 { return r.Recall }},
		{"false-hit rate", "#d62728", func(r evalRow) float64 { return r.FalseHitRate }},
		{"false hits, score alone", "#ff7f0e", func(row evalRow) float64 { return ratio(row.ScoreFalseHits, r.Miss) }},
	}
	for k, s := range series {
		var pts []string
		for _, row := range r.Rows {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(row.Threshold), y(s.v(row))))
		}
		dash := ""
		if k == 3 {
			dash = ` stroke-dasharray="5 3"`
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"><title>%s</title></polyline>`+"\n", s.color, dash, strings.Join(pts, " "), s.name)
		ly := top + 10 + 18*k
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" stroke-width="2"%s/><text x="%.1f" y="%d">%s</text>`+"\n",
			left+pw+10, left+pw+30, ly, ly, s.color, dash, left+pw+34, ly+4, s.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

var _ flag.Value = (*pairsFlag)(nil)
