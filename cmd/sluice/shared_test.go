package main

import (
	"testing"

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
