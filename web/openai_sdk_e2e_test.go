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

// TestOpenAINodeSDK runs web/e2e/openai-sdk.mjs, the official `openai` npm
// package used unchanged, against a sluice on a real listener in front of
// the scripted fake upstream (see runNodeSDKScript).
func TestOpenAINodeSDK(t *testing.T) {
	answer := []string{"Zone A", " holds", " 42 units", " of SKU-10234", " — \"quoted\"", " ünïcode."}
	e := newEnv(t, envOpts{Orch: orchestrator.Config{
		Budget: 1, IdleTimeout: 200 * time.Millisecond, TTFTTimeout: 5 * time.Second, RetryAfter: 2 * time.Second,
	}})
	e.Up.SetHandler(func(req upstreamtest.ChatRequest, _ int) upstreamtest.Script {
		q := req.Prompt()
		switch {
		case strings.Contains(q, "hold"):
			return upstreamtest.Script{StallAfterHeaders: true}
		case strings.Contains(q, "partial"):
			return upstreamtest.Script{Chunks: []string{"Cut", " here", " and", " never"}, StallAfterChunks: 2}
		}
		return upstreamtest.Script{Chunks: answer, TTFT: 10 * time.Millisecond, Gap: 2 * time.Millisecond}
	})

	runNodeSDKScript(t, "openai-sdk", e.URL, strings.Join(answer, ""))
}

// runNodeSDKScript runs web/e2e/NAME.mjs, a script of the official
// `openai` npm package used unchanged, against the sluice at url with the
// expected answer, and checks its last line ("NAME e2e: N passed, 0
// failed"). It needs node and web/e2e/node_modules (cd web/e2e && npm
// ci); without them the test is skipped, unless SLUICE_REQUIRE_E2E=1
// makes that a failure.
func runNodeSDKScript(t *testing.T, name, url, answer string) {
	t.Helper()
	script, err := filepath.Abs(filepath.Join("e2e", name+".mjs"))
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
		t.Skipf("skipping the npm SDK e2e %s: %s (set SLUICE_REQUIRE_E2E=1 to make this a failure)", name, missing)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, url, answer)
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
	if _, serr := fmt.Sscanf(last, name+" e2e: %d passed, %d failed", &passed, &failed); serr != nil || failed != 0 || passed == 0 {
		t.Errorf("last line %q: want \"%s e2e: N passed, 0 failed\"", last, name)
	}
}
