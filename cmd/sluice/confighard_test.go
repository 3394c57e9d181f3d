package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestFloatSettingsRefuseNaNAndInf: every float setting refuses NaN and
// ±Inf (strconv.ParseFloat accepts them, and NaN passes a range check
// written as "f < lo || f > hi"), with an error naming the setting; the
// ordinary values still pass.
func TestFloatSettingsRefuseNaNAndInf(t *testing.T) {
	for _, name := range []string{"SLUICE_PRIORITY_INTERACTIVE_SHARE", "SLUICE_TENANT_MAX_SHARE", "SLUICE_BREAKER_FAILURE_RATE",
		"SLUICE_CACHE_THRESHOLD", "SLUICE_SIM_TTFT_SIGMA", "SLUICE_SIM_GAP_SIGMA"} {
		for _, v := range []string{"NaN", "nan", "Inf", "+Inf", "-Inf", "infinity", "1e400"} {
			if _, err := loadSettings(nil, env(name, v)); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("%s=%s: err %v, want an error naming the setting", name, v, err)
			}
		}
		if _, err := loadSettings(nil, env(name, "0.5")); err != nil {
			t.Errorf("%s=0.5: %v", name, err)
		}
	}
	for _, v := range []string{"t1=NaN", "t1=0.5,t2=nan", "t1=Inf", "t1=-Inf"} {
		_, err := loadSettings(nil, env("SLUICE_TENANT_SHARES", v))
		if err == nil || !strings.Contains(err.Error(), "SLUICE_TENANT_SHARES") || !strings.Contains(err.Error(), "(0, 1]") {
			t.Errorf("SLUICE_TENANT_SHARES=%s: err %v, want a refusal", v, err)
		}
	}
	s, err := loadSettings(nil, env("SLUICE_TENANT_SHARES", "t1=0.25,t2=1", "SLUICE_PRIORITY_INTERACTIVE_SHARE", "0"))
	if err != nil || s.TenantShares["t1"] != 0.25 || s.TenantShares["t2"] != 1 || s.InteractiveShare != 0 {
		t.Fatalf("valid shares: %+v %v", s, err)
	}
	// cache eval's -threshold (its flag, not a setting).
	code, _, errOut := runCmd(t, env(), "cache", "eval", "--pairs", filepath.Join(t.TempDir(), "none.jsonl"), "--threshold", "NaN")
	if code != exitFailed || !strings.Contains(errOut, "--threshold must be a number in (0, 1]") {
		t.Fatalf("cache eval --threshold NaN: exit %d %q", code, errOut)
	}
}

// The serve checks below call loadSettings, whose error stops serve
// before it listens (exit 2): a file wrongly accepted fails the test
// instead of serving for ever.

// TestConfigRefusesNaNFailureRate: failure_rate .nan (or .inf) in the
// file is refused with its line and field, by config check and at start
// (a NaN rate never opens the breaker, so fallback never happens).
func TestConfigRefusesNaNFailureRate(t *testing.T) {
	for _, v := range []string{".nan", ".NaN", ".inf", "-.inf"} {
		p := writeConfig(t, "upstreams:\n  - name: a\n    kind: sim\n    breaker:\n      failure_rate: "+v+"\nmodels:\n  m: [a]\n")
		want := p + ":5: upstreams[0].breaker.failure_rate: must be in (0, 1]"
		code, out, errOut := runCmd(t, env(), "config", "check", p)
		if code != exitFailed || out != "" || !strings.Contains(errOut, want) {
			t.Errorf("failure_rate %s: exit %d %q %q; want 1 and %q", v, code, out, errOut, want)
		}
		if _, err := loadSettings(nil, env("SLUICE_CONFIG", p)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve with failure_rate %s: %v", v, err)
		}
	}
}

// TestConfigRefusesCredentialsInURLs: a base_url with user:password@ is
// refused without echoing it (config check prints the URL, serve logs
// it), pointing to api_key_env; SLUICE_UPSTREAM and SLUICE_EMBEDDINGS
// likewise, pointing to their key settings.
func TestConfigRefusesCredentialsInURLs(t *testing.T) {
	for _, u := range []string{"http://user:s3cr3t@127.0.0.1:9/v1", "https://s3cr3t@h/v1", "http://user:s3cr3t@[::1/v1"} {
		p := writeConfig(t, "upstreams:\n  - name: a\n    kind: openai\n    base_url: "+u+"\nmodels:\n  m: [a]\n")
		code, out, errOut := runCmd(t, env(), "config", "check", p)
		if code != exitFailed || out != "" || !strings.Contains(errOut, p+":4: upstreams[0].base_url: ") {
			t.Fatalf("%s: exit %d %q %q", u, code, out, errOut)
		}
		if strings.Contains(errOut, "s3cr3t") {
			t.Fatalf("%s: the error echoes the credentials: %s", u, errOut)
		}
		if u == "http://user:s3cr3t@127.0.0.1:9/v1" && !strings.Contains(errOut, "api_key_env") {
			t.Fatalf("%s: the error does not say where the key goes: %s", u, errOut)
		}
		if _, err := loadSettings(nil, env("SLUICE_CONFIG", p)); err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), "base_url") {
			t.Fatalf("serve: %v", err)
		}
	}
	for name, key := range map[string]string{"SLUICE_UPSTREAM": "SLUICE_UPSTREAM_API_KEY", "SLUICE_EMBEDDINGS": "SLUICE_EMBEDDINGS_API_KEY"} {
		_, err := loadSettings(nil, env(name, "http://user:s3cr3t@127.0.0.1:9/v1"))
		if err == nil || strings.Contains(err.Error(), "s3cr3t") || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), key) {
			t.Errorf("%s with credentials: %v", name, err)
		}
		if _, err := loadSettings(nil, env(name, "http://127.0.0.1:9/v1")); err != nil {
			t.Errorf("%s without credentials: %v", name, err)
		}
	}
}

// TestConfigModelNames: a model name of the file (a key of models: or
// the name an upstream knows it by) is printable, without spaces or
// control characters, at most 128 bytes; real model ids pass.
func TestConfigModelNames(t *testing.T) {
	file := func(name, target string) string {
		tg := "[a]"
		if target != "" {
			tg = fmt.Sprintf("[{upstream: a, model: %q}]", target)
		}
		return fmt.Sprintf("upstreams:\n  - name: a\n    kind: sim\nmodels:\n  %q: %s\n", name, tg)
	}
	for _, name := range []string{"llama3.1:8b", "org/model", "meta-llama/Llama-3.1-8B-Instruct", "name@2024-06", "a_b.c-d", strings.Repeat("m", 128), "modèle"} {
		p := writeConfig(t, file(name, name))
		if code, out, errOut := runCmd(t, env(), "config", "check", p); code != exitOK || !strings.Contains(out, name) {
			t.Errorf("%q: exit %d %q %q", name, code, out, errOut)
		}
	}
	// Two bad names: the error that there is no default_model lists
	// them, quoted.
	p := writeConfig(t, "upstreams:\n  - name: a\n    kind: sim\nmodels:\n  \"we\\r\\nX-Evil: 1\": [a]\n  \"a b\": [a]\n")
	if code, _, errOut := runCmd(t, env(), "config", "check", p); code != exitFailed || strings.Contains(errOut, "\r") || strings.Contains(errOut, "\nX-Evil") ||
		!strings.Contains(errOut, `default_model: required with several models ("a b", "we\r\nX-Evil: 1")`) {
		t.Errorf("two bad names: exit %d %q", code, errOut)
	}
	for _, name := range []string{"we\r\nX-Evil: 1", "a b", "tab\there", "", " ", strings.Repeat("m", 129), "zero\u200bwidth", "nul\x00"} {
		p := writeConfig(t, file(name, ""))
		code, out, errOut := runCmd(t, env(), "config", "check", p)
		if code != exitFailed || out != "" || !strings.Contains(errOut, p+":5: models: model name ") {
			t.Errorf("model %q: exit %d %q %q", name, code, out, errOut)
		}
		if strings.Contains(errOut, "\r") || strings.Contains(errOut, "\nX-Evil") {
			t.Errorf("model %q: the error holds the raw name: %q", name, errOut)
		}
		if _, err := loadSettings(nil, env("SLUICE_CONFIG", p)); err == nil || !strings.Contains(err.Error(), "model name") {
			t.Errorf("serve with model %q: %v", name, err)
		}
		// The name an upstream knows a model by is checked the same way
		// ("" there means the same name).
		if name == "" {
			continue
		}
		p = writeConfig(t, file("m", name))
		if code, _, errOut := runCmd(t, env(), "config", "check", p); code != exitFailed || !strings.Contains(errOut, p+":5: models.m[0].model: ") {
			t.Errorf("target model %q: exit %d %q", name, code, errOut)
		}
	}
}

// TestConfigCapsUpstreamsAndModels: a file holds at most 256 upstreams
// and 1024 models; beyond, one clear error (not one per entry).
func TestConfigCapsUpstreamsAndModels(t *testing.T) {
	upstreams := func(n int) string {
		var b strings.Builder
		b.WriteString("upstreams:\n")
		for i := range n {
			fmt.Fprintf(&b, "  - {name: u%d, kind: sim}\n", i)
		}
		return b.String()
	}
	models := func(n int) string {
		var b strings.Builder
		b.WriteString("default_model: m0\nmodels:\n")
		for i := range n {
			fmt.Fprintf(&b, "  m%d: [u0]\n", i)
		}
		return b.String()
	}
	p := writeConfig(t, upstreams(maxUpstreams)+models(maxModels))
	if code, out, errOut := runCmd(t, env(), "config", "check", p); code != exitOK || !strings.Contains(out, "ok: 256 upstreams, 1024 models") {
		t.Fatalf("at the caps: exit %d %q %q", code, out[:min(len(out), 200)], errOut)
	}
	for _, tc := range []struct{ body, want string }{
		{upstreams(maxUpstreams+1) + models(1), ":1: upstreams: 257 upstreams; at most 256"},
		{upstreams(1) + models(maxModels+1), ":4: models: 1025 models; at most 1024"},
	} {
		p := writeConfig(t, tc.body)
		code, _, errOut := runCmd(t, env(), "config", "check", p)
		if code != exitFailed || strings.TrimSpace(errOut) != p+tc.want {
			t.Errorf("exit %d %q; want 1 and only %q", code, errOut, p+tc.want)
		}
		if _, err := loadSettings(nil, env("SLUICE_CONFIG", p)); err == nil || !strings.Contains(err.Error(), p+tc.want) {
			t.Errorf("serve: %v", err)
		}
	}
}

// TestServingLogTellsTheFilesBudgets: with a file, "sluice serving" logs
// each upstream's budget, not SLUICE_BUDGET.
func TestServingLogTellsTheFilesBudgets(t *testing.T) {
	p := writeConfig(t, "upstreams:\n  - {name: a, kind: sim, budget: 3}\n  - {name: b, kind: sim}\nmodels:\n  m: [a, b]\n")
	_, logs, err := startWithLog(t, []string{"-config", p, "-budget", "7"})
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, `msg="sluice serving"`) {
			line = l
		}
	}
	if !strings.Contains(line, `budget="a=3,b=7"`) {
		t.Fatalf("serving log %q; want budget=\"a=3,b=7\"", line)
	}
}
