package web_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// TestResponsesNodeSDK runs web/e2e/responses-sdk.mjs, the official
// `openai` npm package used unchanged, against the Responses door of a
// sluice on a real listener in front of the scripted fake upstream. Like
// TestOpenAINodeSDK it needs node and web/e2e/node_modules (cd web/e2e &&
// npm ci); without them it is skipped, unless SLUICE_REQUIRE_E2E=1.
func TestResponsesNodeSDK(t *testing.T) {
	script, err := filepath.Abs(filepath.Join("e2e", "responses-sdk.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	node, err := exec.LookPath("node")
	missing := ""
	switch {
	case err != nil:
		missing = "node is not on PATH"
	default:
		if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "openai", "package.json")); err != nil {
			missing = "web/e2e/node_modules/openai is missing (cd web/e2e && npm ci)"
		}
	}
	if missing != "" {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatalf("SLUICE_REQUIRE_E2E=1 but %s", missing)
		}
		t.Skipf("skipping the Responses npm SDK e2e: %s (set SLUICE_REQUIRE_E2E=1 to make this a failure)", missing)
	}

	answer := []string{"Zone A", " holds", " 42 units", " of SKU-10234", " — \"quoted\"", " ünïcode."}
	e := newEnv(t, envOpts{Orch: orchestrator.Config{
		Budget: 1, AcquireTimeout: 100 * time.Millisecond, IdleTimeout: 200 * time.Millisecond,
		TTFTTimeout: 5 * time.Second, RetryAfter: 2 * time.Second,
	}})
	e.Up.SetHandler(func(req upstreamtest.ChatRequest, _ int) upstreamtest.Script {
		q := req.Prompt()
		switch {
		case strings.Contains(q, "hold"):
			return upstreamtest.Script{StallAfterHeaders: true}
		case strings.Contains(q, "partial"):
			return upstreamtest.Script{Chunks: []string{"Cut", " here", " and", " never"}, StallAfterChunks: 2}
		case strings.Contains(q, "slow"):
			return upstreamtest.Script{Chunks: answer, Gap: 30 * time.Millisecond}
		}
		return upstreamtest.Script{Chunks: answer, TTFT: 10 * time.Millisecond, Gap: 2 * time.Millisecond}
	})

	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, e.URL, strings.Join(answer, ""))
	cmd.Dir = filepath.Dir(script)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout // both into the pipe, in order
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	last := ""
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		t.Log(sc.Text())
		last = sc.Text()
	}
	_, _ = io.Copy(io.Discard, out)
	if err := cmd.Wait(); err != nil {
		t.Errorf("node %s: %v", filepath.Base(script), err)
	}
	var passed, failed int
	if _, serr := fmt.Sscanf(last, "responses-sdk e2e: %d passed, %d failed", &passed, &failed); serr != nil || failed != 0 || passed == 0 {
		t.Errorf("last line %q: want \"responses-sdk e2e: N passed, 0 failed\"", last)
	}
	e.waitIdle()
}
