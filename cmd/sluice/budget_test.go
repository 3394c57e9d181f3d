package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

// TestBudgetSettings: the cluster budget's settings are checked, and a
// cluster budget without Redis is refused at start with a message naming
// what to set.
func TestBudgetSettings(t *testing.T) {
	s, err := loadSettings(nil, env())
	if err != nil {
		t.Fatal(err)
	}
	if s.BudgetMode != "local" || s.BudgetFail != "closed" || s.BudgetInstances != 1 || s.BudgetLease.String() != "15s" || s.BudgetCallTimeout.String() != "500ms" {
		t.Fatalf("budget defaults: %+v", s)
	}
	for _, kv := range [][2]string{
		{"SLUICE_BUDGET_MODE", "fleet"}, {"SLUICE_BUDGET_FAIL", "maybe"}, {"SLUICE_BUDGET_INSTANCES", "0"},
		{"SLUICE_BUDGET_LEASE", "0s"}, {"SLUICE_BUDGET_CALL_TIMEOUT", "soon"},
	} {
		if _, err := loadSettings(nil, env(kv[0], kv[1])); err == nil || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("%s=%s: error %v does not name the setting", kv[0], kv[1], err)
		}
	}
	_, err = loadSettings(nil, env("SLUICE_BUDGET_MODE", "cluster"))
	if err == nil || !strings.Contains(err.Error(), "SLUICE_BUDGET_MODE") || !strings.Contains(err.Error(), "SLUICE_REDIS_URL") {
		t.Fatalf("a cluster budget without Redis: %v", err)
	}
}

// TestClusterBudgetServed: two sluice processes' servers with
// -budget-mode cluster on one Redis share one budget: both show it in
// /v1/budget (mode, the fleet limit, the fleet's in-flight count) and
// /readyz says the budget is ok.
func TestClusterBudgetServed(t *testing.T) {
	url, prefix := redistest.Redis(t)
	flags := []string{"-redis-url", url, "-redis-prefix", prefix, "-budget-mode", "cluster", "-budget", "5", "-budget-fail", "open", "-budget-instances", "2"}
	for _, srv := range []string{startSluice(t, flags...), startSluice(t, flags...)} {
		var b struct {
			Mode      string `json:"mode"`
			Limit     int    `json:"limit"`
			Upstreams []struct {
				FleetInFlight *int   `json:"fleet_in_flight"`
				FailMode      string `json:"fail_mode"`
				LocalShare    int    `json:"local_share"`
			} `json:"upstreams"`
		}
		getJSON(t, srv+"/v1/budget", &b)
		if b.Mode != "cluster" || b.Limit != 5 || len(b.Upstreams) != 1 || b.Upstreams[0].FleetInFlight == nil ||
			b.Upstreams[0].FailMode != "open" || b.Upstreams[0].LocalShare != 3 {
			t.Fatalf("GET /v1/budget: %+v", b)
		}
		var ready map[string]string
		getJSON(t, srv+"/readyz", &ready)
		if ready["budget"] != "ok" {
			t.Fatalf("/readyz: %v", ready)
		}
		if code, out, errOut := runCLI(t, srv, "ask", "which dock takes the 3pm wave in zone C?"); code != exitOK || out == "" {
			t.Fatalf("ask: exit %d: %s", code, errOut)
		}
	}
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url) //nolint:noctx // a test against a local server
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
