package main

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/simserver"
)

// startSimUpstream serves "sluice sim-upstream" in-process on a free port
// and returns its base URL (http://host:port/v1).
func startSimUpstream(t *testing.T, cfg simserver.Config) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serveSimUpstream(ctx, "127.0.0.1:0", cfg, io.Discard, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("sim-upstream: %v", err)
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr + "/v1"
	case err := <-done:
		t.Fatalf("sim-upstream: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("sim-upstream did not start")
	}
	return ""
}

// TestSluiceOverSimUpstream: sluice with SLUICE_UPSTREAM pointing at a
// sim-upstream answers, with the simulated model's words.
func TestSluiceOverSimUpstream(t *testing.T) {
	up := startSimUpstream(t, simserver.Config{Gap: time.Millisecond, Models: []string{"sim-http"}})
	srv := startSluice(t, "-upstream", up)
	code, out, errOut := runCLI(t, srv, "ask", "where is SKU-10234 stored in zone B?")
	if code != exitOK || !strings.Contains(out, "SKU-10234") {
		t.Fatalf("ask: exit %d, %q (%s)", code, out, errOut)
	}
}

func TestSimUpstreamFlags(t *testing.T) {
	for _, args := range [][]string{{"-capacity", "-1"}, {"-error-rate", "2"}, {"-ttft", "-1s"}, {"extra"}} {
		var out, errOut strings.Builder
		if code := run(append([]string{"sim-upstream"}, args...), func(string) string { return "" }, &out, &errOut); code != exitFailed {
			t.Errorf("sim-upstream %v: exit %d, want %d", args, code, exitFailed)
		}
	}
}
