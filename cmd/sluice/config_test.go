package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/pipeline"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

func TestSettingsDefaultsMatchTheContract(t *testing.T) {
	s, err := loadSettings(nil, env())
	if err != nil {
		t.Fatal(err)
	}
	if s.Addr != ":8080" || s.Upstream != "sim" || s.Model != "sim-1" || s.Budget != 64 || s.AcquireTimeout != 0 ||
		s.Queue != 1024 || s.ConnectTimeout != time.Second || s.TTFTTimeout != 10*time.Second ||
		s.IdleTimeout != 5*time.Second || s.TotalTimeout != 30*time.Second || s.Heartbeat != 15*time.Second ||
		s.ConnBuffer != 64<<10 || s.RedisURL != "" || s.CacheThreshold != 0.92 || s.CacheTTL != 24*time.Hour ||
		s.Embeddings != "builtin" || len(s.APIKeys) != 0 || s.MaxBody != 1<<20 {
		t.Fatalf("defaults %+v", s)
	}
}

func TestSettingsEnvAndFlags(t *testing.T) {
	s, err := loadSettings([]string{"-budget", "7"}, env("SLUICE_BUDGET", "3", "SLUICE_API_KEYS", "k1=a, k2=b",
		"SLUICE_CONN_BUFFER", "2MiB", "SLUICE_UPSTREAM", "http://127.0.0.1:11434/v1/"))
	if err != nil {
		t.Fatal(err)
	}
	if s.Budget != 7 || s.APIKeys["k1"] != "a" || s.APIKeys["k2"] != "b" || s.ConnBuffer != 2<<20 || s.Upstream != "http://127.0.0.1:11434/v1" {
		t.Fatalf("%+v", s)
	}
}

// TestRedisURLForms: SLUICE_REDIS_URL takes one server or a cluster's
// nodes.
func TestRedisURLForms(t *testing.T) {
	for _, u := range []string{"redis://127.0.0.1:6379/2", "rediss://h:6380", "redis+cluster://h1:7000,h2:7001,h3:7002",
		"rediss+cluster://user:pw@h1:7000?addr=h2:7001"} {
		s, err := loadSettings(nil, env("SLUICE_REDIS_URL", u, "SLUICE_SHARED_FLUSH", "250ms"))
		if err != nil || s.RedisURL != u || s.SharedFlush != 250*time.Millisecond {
			t.Errorf("%s: %v %q %s", u, err, s.RedisURL, s.SharedFlush)
		}
	}
}

func TestInvalidSettingsNameTheSetting(t *testing.T) {
	for _, kv := range [][2]string{
		{"SLUICE_BUDGET", "0"}, {"SLUICE_BUDGET", "many"}, {"SLUICE_TTFT_TIMEOUT", "10"}, {"SLUICE_TOTAL_TIMEOUT", "-1s"},
		{"SLUICE_UPSTREAM", "ftp://x"}, {"SLUICE_CACHE_THRESHOLD", "1.5"}, {"SLUICE_CONN_BUFFER", "lots"},
		{"SLUICE_API_KEYS", "novalue"}, {"SLUICE_REDIS_URL", "http://x"}, {"SLUICE_LOG_FORMAT", "xml"},
		{"SLUICE_EMBEDDINGS", "sim"}, {"SLUICE_UPSTREAM", "builtin"}, {"SLUICE_API_KEYS", "k=a,k=b"},
		{"SLUICE_REDIS_URL", "redis+cluster://"}, {"SLUICE_REDIS_URL", "redis+cluster://h1:7000/2"},
		{"SLUICE_REDIS_PREFIX", "sluice:{prod}:"}, {"SLUICE_SHARED_FLUSH", "0s"}, {"SLUICE_SHARED_FLUSH", "fast"},
		{"SLUICE_BUDGET_LEASE", "0s"}, {"SLUICE_BUDGET_LEASE", "500us"}, {"SLUICE_BUDGET_LEASE", "999ms"},
		{"SLUICE_BUDGET_CALL_TIMEOUT", "0s"},
	} {
		_, err := loadSettings(nil, env(kv[0], kv[1]))
		if err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: error %v does not name the setting", kv[0], kv[1], err)
		}
	}
	// The lease must outlast a renewal that takes its whole call
	// timeout: the error names the setting and the one it depends on.
	for _, e := range []func(string) string{
		env("SLUICE_BUDGET_LEASE", "1s", "SLUICE_BUDGET_CALL_TIMEOUT", "500ms"),
		env("SLUICE_BUDGET_CALL_TIMEOUT", "6s"), // lease 15s by default
	} {
		_, err := loadSettings(nil, e)
		if err == nil || !strings.Contains(err.Error(), "SLUICE_BUDGET_LEASE") || !strings.Contains(err.Error(), "SLUICE_BUDGET_CALL_TIMEOUT") {
			t.Errorf("lease shorter than 3 call timeouts: error %v does not name both settings", err)
		}
	}
	if _, err := loadSettings(nil, env("SLUICE_BUDGET_LEASE", "1500ms", "SLUICE_BUDGET_CALL_TIMEOUT", "500ms")); err != nil {
		t.Errorf("lease of exactly 3 call timeouts: %v", err)
	}
	var stderr strings.Builder
	if code := run([]string{"-budget-lease", "2s", "-budget-call-timeout", "1s"}, env(), &strings.Builder{}, &stderr); code != 2 || !strings.Contains(stderr.String(), "SLUICE_BUDGET_LEASE") {
		t.Errorf("lease of 2 call timeouts by flag: exit %d, stderr %q", code, stderr.String())
	}
	if code := run([]string{"-budget", "0"}, env(), &strings.Builder{}, &strings.Builder{}); code != 2 {
		t.Fatalf("invalid flag: exit %d", code)
	}
}

// settingsDoc renders the settings table of docs/settings.md.
func settingsDoc() string {
	var b strings.Builder
	b.WriteString("| variable | flag | default | meaning |\n|---|---|---|---|\n")
	for _, st := range (&settings{}).table() {
		def := "`" + st.def + "`"
		if st.def == "" {
			def = "empty"
		}
		fmt.Fprintf(&b, "| `%s` | `-%s` | %s | %s |\n", st.env, st.flag, def, strings.ReplaceAll(st.help, "|", "\\|"))
	}
	return b.String()
}

// TestSettingsDoc keeps docs/settings.md in step with the code. Run with
// SLUICE_UPDATE_DOCS=1 to rewrite the table.
func TestSettingsDoc(t *testing.T) {
	path := filepath.Join("..", "..", "docs", "settings.md")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- settings:begin -->\n", "<!-- settings:end -->"
	doc := string(raw)
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the %q ... %q markers", path, begin, end)
	}
	want := settingsDoc()
	if got := doc[i+len(begin) : j]; got != want {
		if os.Getenv("SLUICE_UPDATE_DOCS") == "1" {
			if err := os.WriteFile(path, []byte(doc[:i+len(begin)]+want+doc[j:]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Fatalf("docs/settings.md is out of date with cmd/sluice/config.go; run SLUICE_UPDATE_DOCS=1 go test ./cmd/sluice -run SettingsDoc")
	}
}

// TestPrioritySettings: the priority class and tenant cap settings parse
// their forms and refuse bad values naming the setting.
func TestPrioritySettings(t *testing.T) {
	s, err := loadSettings(nil, env())
	if err != nil {
		t.Fatal(err)
	}
	if s.InteractiveShare != 0.5 || s.TenantMaxShare != 1 || len(s.TenantPriority) != 0 || len(s.TenantShares) != 0 {
		t.Fatalf("defaults: share %v max %v prio %v shares %v", s.InteractiveShare, s.TenantMaxShare, s.TenantPriority, s.TenantShares)
	}
	s, err = loadSettings(nil, env("SLUICE_PRIORITY_INTERACTIVE_SHARE", "0.75", "SLUICE_TENANT_PRIORITY", "a=batch, b = interactive",
		"SLUICE_TENANT_MAX_SHARE", "0.5", "SLUICE_TENANT_SHARES", "a=0.25,b=1"))
	if err != nil {
		t.Fatal(err)
	}
	if s.InteractiveShare != 0.75 || s.TenantMaxShare != 0.5 || s.TenantPriority["a"].String() != "batch" ||
		s.TenantPriority["b"].String() != "interactive" || s.TenantShares["a"] != 0.25 || s.TenantShares["b"] != 1 {
		t.Fatalf("%v %v %v %v", s.InteractiveShare, s.TenantMaxShare, s.TenantPriority, s.TenantShares)
	}
	for _, kv := range [][2]string{
		{"SLUICE_PRIORITY_INTERACTIVE_SHARE", "1.5"}, {"SLUICE_PRIORITY_INTERACTIVE_SHARE", "-0.1"},
		{"SLUICE_TENANT_PRIORITY", "a=high"}, {"SLUICE_TENANT_PRIORITY", "a"}, {"SLUICE_TENANT_PRIORITY", "a=batch,a=interactive"},
		{"SLUICE_TENANT_MAX_SHARE", "0"}, {"SLUICE_TENANT_MAX_SHARE", "2"}, {"SLUICE_TENANT_SHARES", "a=0"}, {"SLUICE_TENANT_SHARES", "=0.5"},
	} {
		_, err := loadSettings(nil, env(kv[0], kv[1]))
		if err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%q: %v", kv[0], kv[1], err)
		}
	}
}

// The adaptive budget's settings: bad values name their setting, a
// minimum above the maximum and an adaptive cluster budget are refused,
// and the settings reach pipeline.AdaptiveConfig.
func TestAdaptiveBudgetSettings(t *testing.T) {
	for _, kv := range [][2]string{
		{"SLUICE_BUDGET_ADAPTIVE", "yes"}, {"SLUICE_BUDGET_MIN", "0"}, {"SLUICE_BUDGET_MAX", "-1"},
		{"SLUICE_BUDGET_ADAPTIVE_INTERVAL", "0s"}, {"SLUICE_SIM_CAPACITY", "-3"},
	} {
		if _, err := loadSettings(nil, env(kv[0], kv[1])); err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: error %v does not name the setting", kv[0], kv[1], err)
		}
	}
	if _, err := loadSettings(nil, env("SLUICE_BUDGET_MIN", "10", "SLUICE_BUDGET_MAX", "5")); err == nil ||
		!strings.Contains(err.Error(), "SLUICE_BUDGET_MIN") || !strings.Contains(err.Error(), "SLUICE_BUDGET_MAX") {
		t.Errorf("min above max: %v", err)
	}
	if _, err := loadSettings(nil, env("SLUICE_BUDGET_ADAPTIVE", "on", "SLUICE_BUDGET_MODE", "cluster", "SLUICE_REDIS_URL", "redis://127.0.0.1:6379/5")); err == nil ||
		!strings.Contains(err.Error(), "SLUICE_BUDGET_ADAPTIVE") {
		t.Errorf("adaptive cluster budget: %v", err)
	}
	s, err := loadSettings([]string{"-budget-adaptive", "on", "-budget-min", "3", "-budget-max", "90", "-budget-adaptive-interval", "2s"}, env())
	if err != nil {
		t.Fatal(err)
	}
	if got := adaptiveConfig(s); got != (pipeline.AdaptiveConfig{Enabled: true, Min: 3, Max: 90, Interval: 2 * time.Second}) {
		t.Errorf("adaptive config %+v", got)
	}
	s, _ = loadSettings(nil, env())
	if adaptiveConfig(s).Enabled {
		t.Error("the adaptive budget must be off by default")
	}
}
