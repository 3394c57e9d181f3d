package orchestrator_test

import (
	"context"
	"testing"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// statusUp answers every call with an HTTP error status.
type statusUp struct{ code int }

func (s statusUp) Name() string { return "status" }
func (s statusUp) Stream(context.Context, upstream.Request, chan<- upstream.Chunk) error {
	return &upstream.StatusError{Code: s.code}
}

// Issue 10, item 8: a client's cancellations and 4xx answers other than
// 429 say nothing of the upstream's health and never count towards the
// breaker's failure rate; 5xx and 429 do.
func TestBreakerCountsNeitherCancellationsNor4xx(t *testing.T) {
	cfg := orchestrator.Config{Budget: 64, BreakerMinCalls: 2, MaxRetries: -1}
	run := func(up upstream.Upstream, cancel bool) *pipeline.Breaker {
		t.Helper()
		o := newOrch(t, cfg, up, nil)
		for range 30 {
			task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
			if err != nil {
				t.Fatalf("submit refused: %v", err)
			}
			if cancel {
				o.Cancel("", task.ID)
			}
			wait(t, task)
		}
		return o.Breakers()[0]
	}
	for _, code := range []int{400, 401, 404, 413, 422} {
		if b := run(statusUp{code}, false); b.State() != pipeline.BreakerClosed {
			t.Fatalf("30 upstream %d answers opened the circuit", code)
		} else if calls, _ := b.Rate(); calls != 0 {
			t.Fatalf("upstream %d answers counted as %d calls", code, calls)
		}
	}
	if b := run(stall{}, true); b.State() != pipeline.BreakerClosed {
		t.Fatal("30 cancelled calls opened the circuit")
	} else if calls, _ := b.Rate(); calls != 0 {
		t.Fatalf("cancelled calls counted as %d calls", calls)
	}
	for _, code := range []int{429, 500, 503} {
		o := newOrch(t, cfg, statusUp{code}, nil)
		for range 2 {
			task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
			if err != nil {
				t.Fatalf("upstream %d: submit refused before the minimum: %v", code, err)
			}
			wait(t, task)
		}
		if st := o.Breakers()[0].State(); st != pipeline.BreakerOpen {
			t.Fatalf("two upstream %d answers of two calls left the circuit %v", code, st)
		}
	}
}
