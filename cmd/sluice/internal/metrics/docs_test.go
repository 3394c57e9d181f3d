package metrics_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/cmd/sluice/internal/metrics"
)

var update = flag.Bool("update", false, "rewrite the generated table in docs/metrics.md")

const (
	docsDir      = "../../../../docs/"
	beginMarker  = "<!-- BEGIN GENERATED: go test ./cmd/sluice/internal/metrics -run TestMetricsMarkdown -update -->\n"
	endMarker    = "<!-- END GENERATED -->"
	metricNameRE = `sluice_[a-z_]+`
)

// TestDescribeMatchesCollector checks that Describe lists exactly the
// metrics the collector describes, with the same labels.
func TestDescribeMatchesCollector(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Config{NoRuntime: true})
	ch := make(chan *prometheus.Desc)
	go func() { m.Describe(ch); close(ch) }()
	re := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	got := map[string]string{}
	for d := range ch {
		sm := re.FindStringSubmatch(d.String())
		if sm == nil {
			t.Fatalf("cannot read %s", d)
		}
		got[sm[1]] = sm[2]
	}
	for _, d := range metrics.Describe() {
		labels, ok := got[d.Name]
		if !ok {
			t.Errorf("%s is documented but not collected", d.Name)
			continue
		}
		if want := strings.Join(d.Labels, ","); labels != want {
			t.Errorf("%s: labels {%s}, documented {%s}", d.Name, labels, want)
		}
		delete(got, d.Name)
	}
	for name := range got {
		t.Errorf("%s is collected but not documented", name)
	}
}

// TestNamingConventions checks the Prometheus conventions and that no
// label is unbounded by nature.
func TestNamingConventions(t *testing.T) {
	t.Parallel()
	forbidden := []string{"task_id", "id", "prompt", "question", "tenant", "model", "text"}
	for _, d := range metrics.Describe() {
		if !regexp.MustCompile(`^` + metricNameRE + `$`).MatchString(d.Name) {
			t.Errorf("%s: not a sluice_ snake_case name", d.Name)
		}
		switch d.Type {
		case "counter":
			if !strings.HasSuffix(d.Name, "_total") {
				t.Errorf("counter %s does not end in _total", d.Name)
			}
		case "histogram":
			if !strings.HasSuffix(d.Name, "_seconds") || len(d.Buckets) == 0 {
				t.Errorf("histogram %s is not in seconds with buckets", d.Name)
			}
		case "gauge":
			if strings.HasSuffix(d.Name, "_total") {
				t.Errorf("gauge %s ends in _total", d.Name)
			}
		default:
			t.Errorf("%s: type %q", d.Name, d.Type)
		}
		if !strings.HasSuffix(d.Help, ".") {
			t.Errorf("%s: help is not a sentence: %q", d.Name, d.Help)
		}
		for _, l := range d.Labels {
			if slices.Contains(forbidden, l) {
				t.Errorf("%s: label %q is unbounded", d.Name, l)
			}
		}
	}
}

// known maps every series name a query may use to whether it exists:
// metric names, and a histogram's _bucket, _sum and _count.
func known() map[string]bool {
	k := map[string]bool{}
	for _, d := range metrics.Describe() {
		k[d.Name] = true
		if d.Type == "histogram" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				k[d.Name+s] = true
			}
		}
	}
	return k
}

// TestDashboardAndAlertsUseExistingMetrics extracts every sluice_ name
// from the dashboard and the alert rules and checks that it exists.
func TestDashboardAndAlertsUseExistingMetrics(t *testing.T) {
	t.Parallel()
	k := known()
	re := regexp.MustCompile(metricNameRE)
	for _, file := range []string{"grafana-dashboard.json", "alerts.yml"} {
		raw, err := os.ReadFile(docsDir + file)
		if err != nil {
			t.Fatal(err)
		}
		names := re.FindAllString(string(raw), -1)
		if len(names) < 10 {
			t.Errorf("%s references only %d sluice_ metrics", file, len(names))
		}
		for _, n := range names {
			if !k[n] {
				t.Errorf("%s references %s, which sluice does not export", file, n)
			}
		}
	}

	raw, _ := os.ReadFile(docsDir + "grafana-dashboard.json")
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	if dash.Title == "" || len(dash.Panels) == 0 {
		t.Errorf("dashboard has no title or no panels")
	}

	// Without a YAML parser in the module, check the rules' shape: every
	// alert has an expr, a for and a summary.
	rules, _ := os.ReadFile(docsDir + "alerts.yml")
	alerts := strings.Split(string(rules), "- alert: ")[1:]
	if len(alerts) < 5 {
		t.Fatalf("alerts.yml has %d alerts", len(alerts))
	}
	for _, a := range alerts {
		name, _, _ := strings.Cut(a, "\n")
		for _, field := range []string{"expr:", "for:", "summary:", "severity:"} {
			if !strings.Contains(a, field) {
				t.Errorf("alert %s has no %s", name, field)
			}
		}
	}
	for _, want := range []string{"sluice_gate_in_flight", "sluice_gate_waiting", "sluice_gate_acquired_total", "sluice_breaker_state", `status="429"`} {
		if !strings.Contains(string(rules), want) {
			t.Errorf("alerts.yml does not use %s", want)
		}
	}
}

// TestMetricsMarkdown checks that docs/metrics.md mentions every metric
// and that its generated table is current (-update rewrites it).
func TestMetricsMarkdown(t *testing.T) {
	path := docsDir + "metrics.md"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	before, rest, ok1 := strings.Cut(doc, beginMarker)
	_, after, ok2 := strings.Cut(rest, endMarker)
	if !ok1 || !ok2 {
		t.Fatalf("%s lacks the generated-table markers", path)
	}
	var table bytes.Buffer
	if err := metrics.WriteMarkdown(&table); err != nil {
		t.Fatal(err)
	}
	current := before + beginMarker + table.String() + endMarker + after
	if *update {
		if err := os.WriteFile(path, []byte(current), 0o644); err != nil {
			t.Fatal(err)
		}
		doc = current
	} else if current != doc {
		t.Errorf("%s is out of date: run go test ./cmd/sluice/internal/metrics -run TestMetricsMarkdown -update", path)
	}
	for _, d := range metrics.Describe() {
		if !strings.Contains(doc, "`"+d.Name+"`") {
			t.Errorf("%s does not mention %s", path, d.Name)
		}
	}
	k := known()
	for _, n := range regexp.MustCompile(metricNameRE).FindAllString(doc, -1) {
		if !k[n] {
			t.Errorf("%s mentions %s, which sluice does not export", path, n)
		}
	}
}
