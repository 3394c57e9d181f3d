package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

func status(t *testing.T, url string) int {
	t.Helper()
	st, _ := get(t, url, "")
	return st
}

// TestReadyzReportsRedis: with SLUICE_REDIS_URL set, /readyz is 200 with
// "redis":"ok" while Redis answers, and still 200 when it does not (the
// instance serves its own work) with "redis":"degraded: ..." in its body
// and sluice_redis_up 0 in the metrics; /healthz stays 200. On one server
// and on a Redis Cluster (redistest.Targets).
func TestReadyzReportsRedis(t *testing.T) {
	ready := func(base string) (int, map[string]string) {
		st, body := get(t, base+"/readyz", "")
		var m map[string]string
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			t.Fatalf("/readyz body %q: %v", body, err)
		}
		return st, m
	}
	for _, target := range redistest.Targets(t) {
		_, prefix := redistest.Redis(t)
		up := startSluice(t, "-redis-url", target.URL, "-redis-prefix", prefix)
		if st, m := ready(up); st != 200 || m["status"] != "ready" || m["redis"] != "ok" {
			t.Fatalf("/readyz with Redis up (%s): %d %v", target.Name, st, m)
		}
		if _, metrics := get(t, up+"/metrics", ""); !strings.Contains(metrics, "\nsluice_redis_up 1\n") {
			t.Fatalf("metrics with Redis up (%s) lack sluice_redis_up 1", target.Name)
		}
	}
	for _, gone := range []string{"redis://127.0.0.1:1/0", "redis+cluster://127.0.0.1:1,127.0.0.1:2"} {
		down := startSluice(t, "-redis-url", gone)
		if st, m := ready(down); st != 200 || m["status"] != "ready" || !strings.HasPrefix(m["redis"], "degraded: ") {
			t.Fatalf("/readyz with Redis down (%s): %d %v", gone, st, m)
		}
		if _, metrics := get(t, down+"/metrics", ""); !strings.Contains(metrics, "\nsluice_redis_up 0\n") {
			t.Fatalf("metrics with Redis down (%s) lack sluice_redis_up 0", gone)
		}
		if st := status(t, down+"/healthz"); st != 200 {
			t.Fatalf("/healthz with Redis down (%s): %d", gone, st)
		}
	}
}
