package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

func status(t *testing.T, url string) int {
	t.Helper()
	st, _ := get(t, url, "")
	return st
}

// TestReadyzReportsRedis: with SLUICE_REDIS_URL set, /readyz is 200 with
// "redis":"ok" while Redis answers, and still 200 when it does not (the
// instance serves its own work) with "redis":"degraded: ..." in its body
// and sluice_redis_up 0 in the metrics; /healthz stays 200.
func TestReadyzReportsRedis(t *testing.T) {
	url := os.Getenv("SLUICE_TEST_REDIS_URL")
	if url == "" {
		t.Skip("SLUICE_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/9): skipping the Redis readiness test")
	}
	ready := func(base string) (int, map[string]string) {
		st, body := get(t, base+"/readyz", "")
		var m map[string]string
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("/readyz body %q: %v", body, err)
		}
		return st, m
	}
	up := startSluice(t, "-redis-url", url)
	if st, m := ready(up); st != 200 || m["status"] != "ready" || m["redis"] != "ok" {
		t.Fatalf("/readyz with Redis up: %d %v", st, m)
	}
	if _, metrics := get(t, up+"/metrics", ""); !strings.Contains(metrics, "\nsluice_redis_up 1\n") {
		t.Fatalf("metrics with Redis up lack sluice_redis_up 1")
	}
	down := startSluice(t, "-redis-url", "redis://127.0.0.1:1/0")
	if st, m := ready(down); st != 200 || m["status"] != "ready" || !strings.HasPrefix(m["redis"], "degraded: ") {
		t.Fatalf("/readyz with Redis down: %d %v", st, m)
	}
	if _, metrics := get(t, down+"/metrics", ""); !strings.Contains(metrics, "\nsluice_redis_up 0\n") {
		t.Fatalf("metrics with Redis down lack sluice_redis_up 0")
	}
	if st := status(t, down+"/healthz"); st != 200 {
		t.Fatalf("/healthz with Redis down: %d", st)
	}
}
