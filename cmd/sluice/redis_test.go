package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"testing"
	"time"
)

// startServe runs serve with args and returns its base URL; it stops
// when the test ends.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	s, err := loadSettings(append([]string{"-addr", "127.0.0.1:0"}, args...), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, s, io.Discard, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("serve did not start")
	}
	return ""
}

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
	up := startServe(t, "-redis-url", url)
	if st := status(t, up+"/readyz"); st != 200 {
		t.Fatalf("/readyz with Redis up: %d", st)
	}
	down := startServe(t, "-redis-url", "redis://127.0.0.1:1/0")
	if st := status(t, down+"/readyz"); st != 503 {
		t.Fatalf("/readyz with Redis down: %d", st)
	}
	if st := status(t, down+"/healthz"); st != 200 {
		t.Fatalf("/healthz with Redis down: %d", st)
	}
}
