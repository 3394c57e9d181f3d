package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// TestLeakStorm runs thousands of requests through every way a task can
// end (completion, upstream errors, retries, each timeout, drops, client
// disconnects, DELETE, refusals) and then checks the invariants: the
// upstream never saw more streams than the budget, every slot acquired was
// released, nothing waits, every task is final with exactly one terminal
// state, and (in TestMain) no goroutine is left behind.
func TestLeakStorm(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 500
	}
	const budget = 8
	counter := &countingUpstream{}
	e := newEnv(t, envOpts{Wrap: func(u upstream.Upstream) upstream.Upstream { counter.Upstream = u; return counter }, Orch: orchestrator.Config{
		Budget: budget, AcquireTimeout: 60 * time.Millisecond, QueueLimit: 48,
		TTFTTimeout: 80 * time.Millisecond, IdleTimeout: 80 * time.Millisecond, TotalTimeout: 400 * time.Millisecond,
		RetryBackoff: 5 * time.Millisecond, BreakerMinCalls: -1,
	}})
	e.Up.SetHandler(func(req upstreamtest.ChatRequest, n int) upstreamtest.Script {
		switch n % 9 {
		case 0:
			return upstreamtest.Script{StallBeforeHeaders: true} // ttft timeout
		case 1:
			return upstreamtest.Script{Chunks: []string{"a", "b", "c"}, StallAfterChunks: 1} // idle timeout
		case 2:
			return upstreamtest.Script{Chunks: []string{"a", "b", "c"}, DropAfterChunks: 2} // dropped
		case 3:
			return upstreamtest.Script{Status: 503} // retried once
		case 4:
			return upstreamtest.Script{Status: 400}
		case 5:
			return upstreamtest.Script{Chunks: chunks(50, "g"), Gap: 10 * time.Millisecond} // total cap
		default:
			return upstreamtest.Script{Chunks: chunks(5, "k"), Gap: time.Millisecond}
		}
	})
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	var mu sync.Mutex
	ids := []string{}
	statuses := map[int]int{}
	deadline := time.Now().Add(3 * time.Minute)
	for i := range n {
		if time.Now().After(deadline) {
			t.Fatalf("storm took too long: %d of %d sent", i, n)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			body := map[string]any{"prompt": fmt.Sprint("storm ", i), "nocache": true}
			var resp *http.Response
			switch i % 5 {
			case 0: // async, then DELETE half of them
				resp = e.do(ctx, http.MethodPost, "/v1/tasks", body)
				id := resp.Header.Get("X-Task-Id")
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if id != "" && i%10 == 0 {
					r := e.do(ctx, http.MethodDelete, "/v1/tasks/"+id, nil)
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
				}
				mu.Lock()
				statuses[resp.StatusCode]++
				if id != "" {
					ids = append(ids, id)
				}
				mu.Unlock()
				return
			case 1: // interactive, client leaves early and asked to cancel
				body["detach"] = false
				cctx, ccancel := context.WithTimeout(ctx, time.Duration(i%30)*time.Millisecond)
				defer ccancel()
				req, _ := http.NewRequestWithContext(cctx, http.MethodPost, e.URL+"/v1/stream", jsonBody(body))
				req.Header.Set("Content-Type", "application/json")
				r, err := e.HTTP.Do(req)
				if err != nil {
					return // left before the answer
				}
				resp = r
			default:
				resp = e.do(ctx, http.MethodPost, "/v1/stream", body)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			if id := resp.Header.Get("X-Task-Id"); id != "" {
				ids = append(ids, id)
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	for code := range statuses {
		if code != 200 && code != 202 && code != 503 {
			t.Errorf("unexpected status %d (%d times)", code, statuses[code])
		}
	}
	e.waitIdle()
	if m := counter.Max(); m > budget || counter.Current() != 0 {
		t.Fatalf("%d concurrent upstream calls at most (budget %d); %d still open", m, budget, counter.Current())
	}
	final := map[orchestrator.Status]int{}
	for _, id := range ids {
		task := e.Orch.GetAny(id)
		select {
		case <-task.Done():
		case <-time.After(10 * time.Second):
			t.Fatalf("task %s never ended: %+v", id, task.View())
		}
		v := task.View()
		final[v.Status]++
		if end := task.Transcript().Ended(); end == nil {
			t.Fatalf("task %s final without a terminal event", id)
		}
	}
	if err := e.Up.WaitIdle(ctxT(t, 10*time.Second)); err != nil {
		t.Fatalf("upstream calls still open: %d", e.Up.InFlight())
	}
	st := e.Orch.Gates()[0].Stats()
	t.Logf("%d requests: HTTP %v; tasks %v; gate %+v; upstream requests %d, max concurrent %d (as the fake saw it: %d)",
		n, statuses, final, st, e.Up.Requests(), counter.Max(), e.Up.MaxInFlight())
	for _, s := range []orchestrator.Status{orchestrator.StatusDone, orchestrator.StatusPartial, orchestrator.StatusFailed, orchestrator.StatusCancelled} {
		if final[s] == 0 {
			t.Errorf("the storm produced no %s task: it does not cover that path", s)
		}
	}
}
