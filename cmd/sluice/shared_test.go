package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

// TestTaskFromAnyInstance: two sluice servers sharing a real Redis. A task
// asked of one is attached to with `sluice task` on the other, which never
// saw the request: the text is the one the first instance produced. On
// each Redis deployment: a redis:// URL and a redis+cluster:// one.
func TestTaskFromAnyInstance(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) { taskFromAnyInstance(t, target.URL) })
	}
}

func taskFromAnyInstance(t *testing.T, url string) {
	t.Helper()
	_, prefix := redistest.Redis(t)
	a := startSluice(t, "-redis-url", url, "-redis-prefix", prefix)
	b := startSluice(t, "-redis-url", url, "-redis-prefix", prefix)

	code, out, errOut := runCLI(t, a, "ask", "which dock takes the 3pm wave in zone C?")
	if code != exitOK {
		t.Fatalf("ask on A: exit %d: %s", code, errOut)
	}
	id := taskID(t, errOut)
	code, fromB, errOut := runCLI(t, b, "task", id)
	if code != exitOK || fromB != out || out == "" {
		t.Fatalf("task on B: exit %d, %q, want %q (%s)", code, fromB, out, errOut)
	}
	if v := getTask(t, b, id); v.Status != "done" || v.Text != out || v.FinishReason != "stop" {
		t.Fatalf("B's view: %+v", v)
	}

	// Without the shared prefix, the task is not found.
	c := startSluice(t, "-redis-url", url, "-redis-prefix", prefix+"elsewhere:")
	if code, _, _ := runCLI(t, c, "task", id); code != exitFailed {
		t.Fatalf("task on an instance of another deployment: exit %d", code)
	}
}

// TestCacheSharedByDefault: with SLUICE_REDIS_URL the cache is shared: an
// answer asked of A is a hit on B (its lookup explains it), B's /readyz
// and /metrics show the change log; with -cache-shared=false C keeps its
// own cache.
func TestCacheSharedByDefault(t *testing.T) {
	url, prefix := redistest.Redis(t)
	a := startSluice(t, "-redis-url", url, "-redis-prefix", prefix)
	b := startSluice(t, "-redis-url", url, "-redis-prefix", prefix)
	c := startSluice(t, "-redis-url", url, "-redis-prefix", prefix, "-cache-shared=false")
	q := "which dock takes the 3pm wave in zone C?"
	if code, _, errOut := runCLI(t, a, "ask", q); code != exitOK {
		t.Fatalf("ask on A: exit %d: %s", code, errOut)
	}
	lookup := "/v1/cache/lookup?q=" + strings.ReplaceAll(q, " ", "+")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, body := get(t, b+lookup, "")
		if strings.Contains(body, `"decision":"hit"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("B never explained a hit: %s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, body := get(t, c+lookup, ""); !strings.Contains(body, `"decision":"miss"`) {
		t.Fatalf("C shares its cache though -cache-shared=false: %s", body)
	}
	if st, body := get(t, b+"/readyz", ""); st != 200 || !strings.Contains(body, `"cache_log":"ok"`) {
		t.Fatalf("B's /readyz: %d %s", st, body)
	}
	if _, body := get(t, c+"/readyz", ""); strings.Contains(body, "cache_log") {
		t.Fatalf("C's /readyz mentions a cache log: %s", body)
	}
	_, metrics := get(t, b+"/metrics", "")
	for _, want := range []string{"sluice_cache_log_up 1", `sluice_cache_log_changes_total{result="applied"} 1`, "sluice_cache_log_pending 0",
		`sluice_redis_operations_total{op="cache_log_read",result="ok"}`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("B's /metrics lacks %q", want)
		}
	}
}
