package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// TestResponsesNodeSDK runs web/e2e/responses-sdk.mjs, the official
// `openai` npm package used unchanged, against the Responses door of a
// sluice on a real listener in front of the scripted fake upstream (see
// runNodeSDKScript).
func TestResponsesNodeSDK(t *testing.T) {
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

	runNodeSDKScript(t, "responses-sdk", e.URL, strings.Join(answer, ""))
	e.waitIdle()
}
