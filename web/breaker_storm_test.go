package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// Issue 10, item 8, end to end: a storm of concurrent streams in which a
// third of the prompts fail (half with a 500 at once, half stalling into
// the TTFT timeout), with the breaker's defaults. Failures end faster
// than successes and bunch together; the breaker must stay closed (no
// request refused with upstream_unavailable). On the old breaker (5
// consecutive failures) it opened and refused every request for 5 s.
func TestBreakerStaysClosedWhenAThirdFail(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{
		Budget: 64, AcquireTimeout: 5 * time.Second, MaxRetries: -1,
		TTFTTimeout: time.Second, IdleTimeout: 5 * time.Second, // generous: a loaded machine must not fail the healthy ones
	}})
	e.Up.SetHandler(func(req upstreamtest.ChatRequest, _ int) upstreamtest.Script {
		switch {
		case strings.HasSuffix(req.Prompt(), "#500"):
			return upstreamtest.Script{Status: 500}
		case strings.HasSuffix(req.Prompt(), "#stall"):
			return upstreamtest.Script{StallBeforeHeaders: true}
		}
		return upstreamtest.Script{Chunks: chunks(5, "ok"), TTFT: 20 * time.Millisecond, Gap: 20 * time.Millisecond}
	})
	const n = 300
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		statuses  = map[int]int{}
		terminals = map[string]int{}
		unhealthy []string // healthy prompts that did not end done
	)
	sem := make(chan struct{}, 24)
	for i := range n {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			prompt := fmt.Sprint("storm ", i)
			switch i % 6 {
			case 0:
				prompt += " #500"
			case 3:
				prompt += " #stall"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": prompt, "nocache": true})
			defer resp.Body.Close()
			term := "refused"
			if resp.StatusCode == http.StatusOK {
				evs := readEvents(t, resp.Body)
				last := evs[len(evs)-1]
				term = last.Type
				if i%3 != 0 && term != "done" {
					mu.Lock()
					unhealthy = append(unhealthy, prompt+": "+last.Type+" "+last.Data)
					mu.Unlock()
				}
			} else {
				io.Copy(io.Discard, resp.Body)
			}
			mu.Lock()
			statuses[resp.StatusCode]++
			terminals[term]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	t.Logf("%d streams: HTTP %v, terminal events %v, breaker %s", n, statuses, terminals, e.Orch.Breakers()[0].State())
	if statuses[http.StatusOK] != n {
		t.Fatalf("%d of %d streams refused (HTTP %v): the breaker opened on healthy traffic", n-statuses[http.StatusOK], n, statuses)
	}
	if terminals["done"] != n*2/3 || terminals["error"] != n/3 {
		t.Fatalf("terminal events %v, want %d done and %d error; healthy prompts that failed: %q", terminals, n*2/3, n/3, unhealthy)
	}
	e.waitIdle()
}
