package main

import (
	"encoding/json"
	"encoding/xml"
	"hash/fnv"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"unicode"
)

// bagOfWords serves /embeddings with an order-blind bag of words, the kind
// of embedder for which a permutation of the same words scores 1.0.
func bagOfWords(t *testing.T, calls *atomic.Int64) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in struct{ Model, Input string }
		if r.URL.Path != "/v1/embeddings" || json.NewDecoder(r.Body).Decode(&in) != nil || in.Model != "bow-1" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		v := make([]float32, 64)
		var spaced strings.Builder // every Han character a word of its own
		for _, r := range strings.ToLower(in.Input) {
			if unicode.Is(unicode.Han, r) {
				spaced.WriteString(" " + string(r) + " ")
			} else {
				spaced.WriteRune(r)
			}
		}
		for _, word := range strings.FieldsFunc(spaced.String(), func(r rune) bool {
			return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-'
		}) {
			h := fnv.New32a()
			h.Write([]byte(word))
			v[h.Sum32()%64]++
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"data": []map[string]any{{"embedding": v}}})
	}))
	t.Cleanup(srv.Close)
	return srv
}

func writePairs(t *testing.T, lines ...string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pairs.jsonl")
	if err := os.WriteFile(p, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestCacheEvalRemoteEmbedder runs "sluice cache eval" against a real
// embeddings endpoint that cannot tell a role swap from the original: the
// score alone hits it, the cache (facets and verification) does not, and
// the table, the JSON and the plot say so.
func TestCacheEvalRemoteEmbedder(t *testing.T) {
	var calls atomic.Int64
	srv := bagOfWords(t, &calls)
	pairs := writePairs(t,
		`{"id":"e1","a":"How many SKU-1 are left?","b":"how many sku-1 are left","expect":"exact"}`,
		`{"id":"s1","a":"How many units of SKU-7 are left in zone A?","b":"In zone A, how many units of SKU-7 are left?","expect":"semantic"}`,
		`{"id":"m1","a":"Does Marta Quill report to Ivo Brandt?","b":"Does Ivo Brandt report to Marta Quill?","expect":"miss"}`,
		`{"id":"m2","a":"王磊把任务转给了李娜","b":"李娜把任务转给了王磊","expect":"miss"}`,
		`{"id":"m3","a":"Is SKU-1 stored in zone A?","b":"Is SKU-2 stored in zone A?","expect":"miss"}`,
	)
	plot := filepath.Join(t.TempDir(), "curve.svg")
	env := map[string]string{"SLUICE_EMBEDDINGS_MODEL": "bow-1"}
	var stdout, stderr strings.Builder
	code := run([]string{"cache", "eval", "--pairs", pairs, "--embeddings", srv.URL + "/v1", "--json", "--plot", plot},
		func(k string) string { return env[k] }, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if calls.Load() < 8 {
		t.Fatalf("the embeddings endpoint was called %d times, want every question", calls.Load())
	}
	var out struct {
		Embedder string
		Reports  []evalReport
	}
	if err := json.Unmarshal([]byte(stdout.String()), &out); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout.String())
	}
	if out.Embedder != "openai:bow-1" || len(out.Reports) != 1 {
		t.Fatalf("report %+v", out)
	}
	r := out.Reports[0]
	if r.Exact != 1 || r.ExactHits != 1 || r.Semantic != 1 || r.Miss != 3 || r.EmbedErrors != 0 {
		t.Fatalf("counts %+v", r)
	}
	if r.RefusedBy.Verify != 2 || r.RefusedBy.Facets != 1 {
		t.Errorf("refused by %+v, want 2 by the verification and 1 by the facets", r.RefusedBy)
	}
	var at92 *evalRow
	for i := range r.Rows {
		if r.Rows[i].Threshold == 0.92 {
			at92 = &r.Rows[i]
		}
	}
	if at92 == nil {
		t.Fatal("no row for 0.92")
	}
	if at92.FalseHits != 0 || at92.Hits != 1 || at92.Precision != 1 || at92.Recall != 1 {
		t.Errorf("at 0.92: %+v, want the paraphrase hit and no false hit", *at92)
	}
	if at92.ScoreFalseHits != 2 {
		t.Errorf("at 0.92 the score alone hits %d miss pairs, want the 2 swaps (score 1.0)", at92.ScoreFalseHits)
	}
	svg, err := os.ReadFile(plot)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		XMLName   xml.Name
		Polylines []struct {
			Points string `xml:"points,attr"`
		} `xml:"polyline"`
	}
	if err := xml.Unmarshal(svg, &doc); err != nil || doc.XMLName.Local != "svg" || len(doc.Polylines) != 4 {
		t.Fatalf("plot: %v, %+v", err, doc)
	}
	for _, p := range doc.Polylines {
		if n := len(strings.Fields(p.Points)); n != len(evalThresholds()) {
			t.Errorf("a curve has %d points, want %d", n, len(evalThresholds()))
		}
	}
}

// TestCacheEvalTable checks the table for people with the builtin
// embedder and two files: a total and one section per file, the
// configured threshold marked.
func TestCacheEvalTable(t *testing.T) {
	a := writePairs(t, `{"id":"m1","a":"Alice reports to Bob","b":"Bob reports to Alice","expect":"miss"}`)
	b := writePairs(t, `{"id":"x1","a":"Where is SKU-9?","b":"where is sku-9","expect":"exact"}`)
	env := map[string]string{"SLUICE_CACHE_THRESHOLD": "0.9"}
	var stdout, stderr strings.Builder
	if code := run([]string{"cache", "eval", "--pairs", a, "--pairs", b}, func(k string) string { return env[k] }, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"all: 2 pairs (1 exact, 0 semantic, 1 miss), embedder builtin-v1", "exact pairs hit as exact: 1/1",
		"miss pairs refused by the facet guard: 0, by the verification: 1", "0.90", "<- threshold", "pairs.jsonl: 1 pairs"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "<- threshold") && !strings.HasPrefix(strings.TrimSpace(line), "0.90") {
			t.Errorf("threshold mark on %q", line)
		}
	}
}

// TestCacheEvalBadInput checks the errors: no file, a missing file, a bad
// line, a bad flag value, an endpoint that fails every call.
func TestCacheEvalBadInput(t *testing.T) {
	bad := writePairs(t, `{"id":"x","a":"q","b":"r","expect":"maybe"}`)
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	ok := writePairs(t, `{"id":"m","a":"Alice reports to Bob","b":"Bob reports to Alice","expect":"miss"}`)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"cache", "eval"}, "needs at least one --pairs"},
		{[]string{"cache", "eval", "--pairs", filepath.Join(t.TempDir(), "none.jsonl")}, "no such file"},
		{[]string{"cache", "eval", "--pairs", bad}, `pairs.jsonl:1: expect is "maybe"`},
		{[]string{"cache", "eval", "--pairs", ok, "--parallel", "0"}, "--parallel must be 1..64"},
		{[]string{"cache", "eval", "--pairs", ok, "--embeddings", "ftp://x"}, "--embeddings"},
		{[]string{"cache", "eval", "--pairs", ok, "--embeddings", down.URL}, "the embedder failed on every pair"},
		{[]string{"cache", "eval", "--pairs", ok, "extra"}, "takes no arguments"},
	} {
		var stdout, stderr strings.Builder
		code := run(tc.args, func(string) string { return "" }, &stdout, &stderr)
		if code != 1 || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 1 and %q", tc.args, code, stderr.String(), tc.want)
		}
	}
}

// TestCacheEvalParaphrasesRefused checks the count of paraphrases the
// checks refuse at any score, the recall no threshold buys: one by the
// facet guard (a person on one side only), one by the verification (being
// read as now), one served.
func TestCacheEvalParaphrasesRefused(t *testing.T) {
	p := writePairs(t, `{"id":"s1","a":"How many credits do I need to graduate?","b":"How many credits are needed to graduate?","expect":"semantic"}
{"id":"s2","a":"Is my flight delayed?","b":"Is my flight being delayed?","expect":"semantic"}
{"id":"s3","a":"Where is SKU-9?","b":"where is SKU-9 please","expect":"semantic"}`)
	var stdout, stderr strings.Builder
	if code := run([]string{"cache", "eval", "--pairs", p, "--json"}, func(string) string { return "" }, &stdout, &stderr); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	var got struct {
		Reports []evalReport `json:"reports"`
	}
	if err := json.Unmarshal([]byte(stdout.String()), &got); err != nil || len(got.Reports) == 0 {
		t.Fatalf("report: %v\n%s", err, stdout.String())
	}
	if r := got.Reports[0].ParaphrasesRefusedBy; r != (refusals{Facets: 1, Verify: 1}) {
		t.Errorf("paraphrases refused by %+v, want 1 by the facets and 1 by the verification", r)
	}
}
