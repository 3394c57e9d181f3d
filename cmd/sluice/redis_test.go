package main

import (
	"net/http"
	"os"
	"testing"
	"time"
)

func status(t *testing.T, url string) int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c.CloseIdleConnections()
	return resp.StatusCode
}

// TestReadyzFollowsRedis: with SLUICE_REDIS_URL set, /readyz is 200 while
// Redis answers and 503 when it does not; /healthz stays 200.
func TestReadyzFollowsRedis(t *testing.T) {
	url := os.Getenv("SLUICE_TEST_REDIS_URL")
	if url == "" {
		t.Skip("SLUICE_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/9): skipping the Redis readiness test")
	}
	up := startSluice(t, "-redis-url", url)
	if st := status(t, up+"/readyz"); st != 200 {
		t.Fatalf("/readyz with Redis up: %d", st)
	}
	down := startSluice(t, "-redis-url", "redis://127.0.0.1:1/0")
	if st := status(t, down+"/readyz"); st != 503 {
		t.Fatalf("/readyz with Redis down: %d", st)
	}
	if st := status(t, down+"/healthz"); st != 200 {
		t.Fatalf("/healthz with Redis down: %d", st)
	}
}
