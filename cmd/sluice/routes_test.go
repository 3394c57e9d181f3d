package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// writeConfig writes a configuration file in the test's directory.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func runCmd(t *testing.T, getenv func(string) string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, getenv, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestExampleConfigChecks: docs/sluice.example.yaml is valid, and "sluice
// config check" prints its upstreams and models.
func TestExampleConfigChecks(t *testing.T) {
	code, out, errOut := runCmd(t, env(), "config", "check", "../../docs/sluice.example.yaml")
	if code != exitOK {
		t.Fatalf("config check of the example: exit %d\n%s", code, errOut)
	}
	for _, want := range []string{"ok: 2 upstreams, 2 models, default model chat", "primary", "http://127.0.0.1:11434/v1",
		"chat             -> primary (as llama3.1:8b) -> backup", "sim-1            -> backup", "budget 8, acquire_timeout 500ms, queue 64",
		"adaptive budget between 4 and 64, window 1s"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	// SLUICE_CONFIG is the default file.
	if code, _, errOut := runCmd(t, env("SLUICE_CONFIG", "../../docs/sluice.example.yaml"), "config", "check"); code != exitOK {
		t.Fatalf("config check with SLUICE_CONFIG: %d %s", code, errOut)
	}
	if code, _, _ := runCmd(t, env(), "config", "check"); code != exitFailed {
		t.Fatalf("config check without a file: exit %d, want 1", code)
	}
	if code, _, errOut := runCmd(t, env(), "config", "chek", "x"); code != exitFailed || !strings.Contains(errOut, "usage") {
		t.Fatalf("config chek: exit %d %q", code, errOut)
	}
}

const twoUpstreams = `upstreams:
  - name: a
    kind: sim
  - name: b
    kind: sim
`

// TestConfigErrorsNameFileLineAndField: every kind of mistake is reported
// with the file, its line and the field, all of them at once, and exit 1.
func TestConfigErrorsNameFileLineAndField(t *testing.T) {
	cases := []struct {
		name, body string
		want       []string // each "LINE: field: words"
	}{
		{"unknown field", "upstreams:\n  - name: a\n    kind: sim\n    budgte: 3\nmodels:\n  m: [a]\n",
			[]string{":4: field budgte not found in an upstream"}},
		{"unknown top-level field", "upstream:\n  - name: a\nmodels: {}\n", []string{":1: field upstream not found at the top level"}},
		{"unknown target field", twoUpstreams + "models:\n  m: [{upstream: a, modle: x}]\n", []string{":7: field modle not found in a model's upstream"}},
		{"wrong type", "upstreams:\n  - name: a\n    kind: sim\n    ttft_timeout: 3\nmodels:\n  m: [a]\n",
			[]string{":4: upstreams[0].ttft_timeout: cannot unmarshal !!int `3` into a duration"}},
		{"unknown upstream", twoUpstreams + "models:\n  m: [a, c]\n", []string{`:7: models.m[1]: unknown upstream "c" (upstreams: a, b)`}},
		{"duplicate name", "upstreams:\n  - name: a\n    kind: sim\n  - name: a\n    kind: sim\nmodels:\n  m: [a]\n",
			[]string{`:4: upstreams[1].name: duplicate upstream name "a" (first at line 2)`}},
		{"budget", "upstreams:\n  - name: a\n    kind: sim\n    budget: 0\nmodels:\n  m: [a]\n", []string{":4: upstreams[0].budget: must be > 0 (got 0)"}},
		{"key env", "upstreams:\n  - name: a\n    kind: openai\n    base_url: http://h/v1\n    api_key_env: NOT_SET_KEY\nmodels:\n  m: [a]\n",
			[]string{":5: upstreams[0].api_key_env: the environment variable NOT_SET_KEY is not set"}},
		{"key instead of its variable", "upstreams:\n  - name: a\n    kind: openai\n    base_url: http://h/v1\n    api_key_env: sk-live-123\nmodels:\n  m: [a]\n",
			[]string{":5: upstreams[0].api_key_env: must be the NAME of an environment variable"}},
		{"bad url", "upstreams:\n  - name: a\n    kind: openai\n    base_url: ftp://h\nmodels:\n  m: [a]\n", []string{`:4: upstreams[0].base_url: "ftp://h": must be an http:// or https:// URL`}},
		{"no url", "upstreams:\n  - name: a\n    kind: openai\nmodels:\n  m: [a]\n", []string{":2: upstreams[0].base_url: required for kind openai"}},
		{"kind", "upstreams:\n  - name: a\n    kind: llama\nmodels:\n  m: [a]\n", []string{`:3: upstreams[0].kind: "llama": must be openai or sim`}},
		{"breaker", "upstreams:\n  - name: a\n    kind: sim\n    breaker:\n      failure_rate: 2\n      cooldown: 0s\nmodels:\n  m: [a]\n",
			[]string{":5: upstreams[0].breaker.failure_rate: must be in (0, 1]", ":6: upstreams[0].breaker.cooldown: must be > 0"}},
		{"adaptive", "upstreams:\n  - name: a\n    kind: sim\n    budget: 8\n    adaptive:\n      min: 0\n      interval: 0s\n      maxx: 3\nmodels:\n  m: [a]\n",
			[]string{":8: field maxx not found in adaptive (min, max, interval)"}},
		{"adaptive bounds", "upstreams:\n  - name: a\n    kind: sim\n    adaptive:\n      min: 0\n      max: -1\n      interval: 0s\nmodels:\n  m: [a]\n",
			[]string{":5: upstreams[0].adaptive.min: must be >= 1", ":6: upstreams[0].adaptive.max: must be >= adaptive.min", ":7: upstreams[0].adaptive.interval: must be > 0"}},
		{"default model", twoUpstreams + "default_model: x\nmodels:\n  m: [a]\n", []string{`:6: default_model: "x" is not among the models (m)`}},
		{"several models, no default", twoUpstreams + "models:\n  m: [a]\n  n: [b]\n", []string{":1: default_model: required with several models (m, n)"}},
		{"empty model list", twoUpstreams + "models:\n  m: []\n", []string{":7: models.m: lists no upstream"}},
		{"listed twice", twoUpstreams + "models:\n  m: [a, a]\n", []string{`:7: models.m[1]: upstream "a" is listed twice`}},
		{"no upstreams", "models:\n  m: [a]\n", []string{":1: upstreams: at least one upstream is required", `:2: models.m[0]: unknown upstream "a"`}},
		{"syntax", "upstreams: [\n", []string{":1: did not find expected node content"}},
		{"two documents", twoUpstreams + "models:\n  m: [a]\n---\nmodels:\n  n: [b]\n", []string{":8: a second YAML document"}},
		{"several at once", "upstreams:\n  - name: a\n    kind: sim\n    budget: -1\n    queue: -2\nmodels:\n  m: [z]\n",
			[]string{":4: upstreams[0].budget", ":5: upstreams[0].queue", ":7: models.m[0]: unknown upstream"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConfig(t, tc.body)
			code, out, errOut := runCmd(t, env(), "config", "check", p)
			if code != exitFailed || out != "" {
				t.Fatalf("exit %d, stdout %q; want 1 and nothing", code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, p+w) {
					t.Errorf("errors lack %q:\n%s", p+w, errOut)
				}
			}
			if strings.Contains(errOut, "sk-live-123") {
				t.Errorf("the errors repeat a key: %s", errOut)
			}
			// Serving with the file stops at start with the same errors.
			code, _, serveErr := runCmd(t, env("SLUICE_CONFIG", p))
			if code != 2 || !strings.Contains(serveErr, p+tc.want[0]) {
				t.Fatalf("serve with the file: exit %d %q; want 2 naming %q", code, serveErr, p+tc.want[0])
			}
		})
	}
}

// TestServeFromConfigFile: sluice started with a file (-config) serves two
// models from two upstreams: each request reaches its model's upstream,
// under the name that upstream knows it by and with the key named by
// api_key_env; /v1/models, /v1/budget and /metrics show both.
func TestServeFromConfigFile(t *testing.T) {
	one, two := upstreamtest.NewServer(t), upstreamtest.NewServer(t)
	one.SetScript(upstreamtest.Script{Chunks: []string{"from ", "one"}})
	two.SetScript(upstreamtest.Script{Chunks: []string{"from ", "two"}})
	p := writeConfig(t, fmt.Sprintf(`default_model: alpha
upstreams:
  - name: one
    kind: openai
    base_url: %s
    api_key_env: ONE_KEY
    budget: 3
  - name: two
    kind: openai
    base_url: %s
    budget: 5
models:
  alpha:
    - upstream: one
      model: real-alpha
  beta: [two]
`, one.URL(), two.URL()))
	base, logs, err := startWithLog(t, []string{"-config", p}, "ONE_KEY", "secret-1")
	if err != nil {
		t.Fatal(err)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	ask := func(model string) (text, upstream string) {
		t.Helper()
		body := `{"prompt":"q","nocache":true}`
		if model != "" {
			body = fmt.Sprintf(`{"prompt":"q","nocache":true,"model":%q}`, model)
		}
		resp, err := c.Post(base+"/v1/stream", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", model, resp.StatusCode, raw)
		}
		for _, line := range strings.Split(string(raw), "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				var ev struct{ Text, Upstream string }
				_ = json.Unmarshal([]byte(d), &ev)
				text += ev.Text
				if ev.Upstream != "" {
					upstream = ev.Upstream
				}
			}
		}
		return text, upstream
	}
	for _, tc := range []struct{ model, text, up string }{{"alpha", "from one", "one"}, {"", "from one", "one"}, {"beta", "from two", "two"}} {
		if text, up := ask(tc.model); text != tc.text || up != tc.up {
			t.Fatalf("model %q: %q from %q, want %q from %q", tc.model, text, up, tc.text, tc.up)
		}
	}
	if r := one.LastRequest(); r.Model != "real-alpha" || r.Header.Get("Authorization") != "Bearer secret-1" {
		t.Fatalf("upstream one got model %q, Authorization %q", r.Model, r.Header.Get("Authorization"))
	}
	if r := two.LastRequest(); r.Model != "beta" || r.Header.Get("Authorization") != "" {
		t.Fatalf("upstream two got model %q, Authorization %q", r.Model, r.Header.Get("Authorization"))
	}
	if got := listModels(t, base); strings.Join(got, ",") != "alpha,beta" {
		t.Fatalf("/v1/models %v", got)
	}
	resp, err := c.Get(base + "/v1/budget")
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Limit     int
		Upstreams []struct {
			Upstream string
			Limit    int
		}
	}
	err = json.NewDecoder(resp.Body).Decode(&b)
	resp.Body.Close()
	if err != nil || b.Limit != 8 || len(b.Upstreams) != 2 || b.Upstreams[0].Upstream != "one" || b.Upstreams[0].Limit != 3 ||
		b.Upstreams[1].Upstream != "two" || b.Upstreams[1].Limit != 5 {
		t.Fatalf("/v1/budget %+v %v", b, err)
	}
	resp, err = c.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, up := range []string{"one", "two"} {
		if !strings.Contains(string(raw), `sluice_breaker_state{state="closed",upstream="`+up+`"} 1`) {
			t.Errorf("/metrics has no breaker state of upstream %s", up)
		}
	}
	// An unknown model: 400 before any upstream.
	r, err := c.Post(base+"/v1/stream", "application/json", strings.NewReader(`{"prompt":"q","model":"gamma"}`))
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	if r.StatusCode != 400 {
		t.Fatalf("unknown model: %d", r.StatusCode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := one.WaitIdle(ctx); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(logs.String(), "secret-1") {
		t.Fatal("the upstream key is in the log")
	}
	code, out, _ := runCmd(t, env("ONE_KEY", "secret-1"), "config", "check", p)
	if code != exitOK || strings.Contains(out, "secret-1") || !strings.Contains(out, "(key from $ONE_KEY)") {
		t.Fatalf("config check: exit %d\n%s", code, out)
	}
}

// TestClusterBudgetPerUpstreamFromFile: with a file and -budget-mode
// cluster, every upstream's budget is a fleet budget of its own in Redis.
func TestClusterBudgetPerUpstreamFromFile(t *testing.T) {
	url, prefix := redistest.Redis(t)
	p := writeConfig(t, "upstreams:\n  - {name: a, kind: sim, budget: 2}\n  - {name: b, kind: sim, budget: 3}\nmodels:\n  m: [a, b]\n")
	srv, _, err := startWithLog(t, []string{"-config", p, "-redis-url", url, "-redis-prefix", prefix, "-budget-mode", "cluster"})
	if err != nil {
		t.Fatal(err)
	}
	var b struct {
		Mode      string `json:"mode"`
		Limit     int    `json:"limit"`
		Upstreams []struct {
			Upstream      string `json:"upstream"`
			Mode          string `json:"mode"`
			Limit         int    `json:"limit"`
			FleetInFlight *int   `json:"fleet_in_flight"`
		} `json:"upstreams"`
	}
	getJSON(t, srv+"/v1/budget", &b)
	if b.Mode != "cluster" || b.Limit != 5 || len(b.Upstreams) != 2 || b.Upstreams[0].Upstream != "a" || b.Upstreams[0].Mode != "cluster" ||
		b.Upstreams[0].FleetInFlight == nil || b.Upstreams[1].Limit != 3 || b.Upstreams[1].Mode != "cluster" {
		t.Fatalf("GET /v1/budget: %+v", b)
	}
	if code, out, errOut := runCLI(t, srv, "ask", "which dock takes the 3pm wave?"); code != exitOK || out == "" {
		t.Fatalf("ask: exit %d: %s", code, errOut)
	}
}

// TestAdaptiveBudgetFromFile: an upstream's adaptive block reaches its
// route (and the orchestrator moves that route's limit), the others
// keep a fixed one.
func TestAdaptiveBudgetFromFile(t *testing.T) {
	s, err := loadSettings(nil, env())
	if err != nil {
		t.Fatal(err)
	}
	rc, err := loadRoutes("../../docs/sluice.example.yaml", s, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	specs, err := rc.specs(s)
	if err != nil {
		t.Fatal(err)
	}
	want := pipeline.AdaptiveConfig{Enabled: true, Min: 4, Max: 64, Interval: time.Second}
	if len(specs) != 2 || specs[0].Adaptive.Enabled || specs[1].Adaptive != want {
		t.Fatalf("adaptive of the routes: %+v, %+v; want off, then %+v", specs[0].Adaptive, specs[1].Adaptive, want)
	}
	o, err := orchestrator.New(orchestrator.Config{Models: rc.models(), DefaultModel: rc.DefaultModel},
		orchestrator.Deps{Routes: specs, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Shutdown(context.Background())
	if a := o.Adaptives(); len(a) != 2 || a[0] != nil || a[1] == nil {
		t.Fatalf("Adaptives() = %v; want nil for primary, one for backup", a)
	}
}
