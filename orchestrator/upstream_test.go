package orchestrator_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// The watchdogs and retries against a real HTTP upstream (the OpenAI
// client of stream/upstream and the scripted server of upstreamtest). web keeps a
// few of these cases end to end, with the SSE events a client reads.

// tol is how late a watchdog may fire on a busy machine.
const tol = 400 * time.Millisecond

// newHTTPOrch returns an orchestrator whose upstream is a scripted HTTP
// server, called the way p calls it (httpPaths).
func newHTTPOrch(t *testing.T, p path, cfg orchestrator.Config) (*orchestrator.Orchestrator, *upstreamtest.Server) {
	t.Helper()
	srv := upstreamtest.NewServer(t)
	up, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: srv.URL(), Name: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	return newOrch(t, cfg, p.wrap(up), nil), srv
}

// waitGateIdle waits until o's gate holds no slot and no waiter, and has
// released every slot it granted.
func waitGateIdle(t *testing.T, o *orchestrator.Orchestrator) {
	t.Helper()
	eventually(t, "the gate idle", func() bool {
		st := o.Gates()[0].Stats()
		return st.InFlight == 0 && st.Waiting == 0 && st.AcquiredTotal == st.ReleasedTotal
	})
}

func manyChunks(n int, prefix string) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = prefix
	}
	return out
}

// TestTimeouts checks each watchdog against each way an upstream can
// stall, including the ones well-known gateways miss (no headers at all;
// keep-alives that are not content).
func TestTimeouts(t *testing.T) {
	const ttft, idle, total = 300 * time.Millisecond, 300 * time.Millisecond, 900 * time.Millisecond
	cases := []struct {
		name       string
		script     upstreamtest.Script
		status     orchestrator.Status
		reason     orchestrator.FinishReason
		event      orchestrator.Event
		text       string
		firesAfter time.Duration // from acceptance
	}{
		{"no headers", upstreamtest.Script{StallBeforeHeaders: true}, orchestrator.StatusFailed, orchestrator.FinishTTFTTimeout, orchestrator.EventError, "", ttft},
		{"headers then nothing", upstreamtest.Script{StallAfterHeaders: true}, orchestrator.StatusFailed, orchestrator.FinishTTFTTimeout, orchestrator.EventError, "", ttft},
		{"keep-alives only", upstreamtest.Script{StallAfterHeaders: true, KeepAlives: true}, orchestrator.StatusFailed, orchestrator.FinishTTFTTimeout, orchestrator.EventError, "", ttft},
		{"stall mid-stream", upstreamtest.Script{Chunks: []string{"a", "b", "c", "d"}, StallAfterChunks: 2, KeepAlives: true}, orchestrator.StatusPartial, orchestrator.FinishIdleTimeout, orchestrator.EventPartial, "ab", idle},
		{"total cap", upstreamtest.Script{Chunks: manyChunks(100, "s"), Gap: 100 * time.Millisecond}, orchestrator.StatusPartial, orchestrator.FinishDeadline, orchestrator.EventPartial, "", total},
	}
	for _, p := range httpPaths {
		t.Run(p.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					o, up := newHTTPOrch(t, p, orchestrator.Config{TTFTTimeout: ttft, IdleTimeout: idle, TotalTimeout: total})
					up.SetScript(tc.script)
					start := time.Now()
					task, err := o.Submit(context.Background(), orchestrator.Request{Question: "t", Messages: []upstream.Message{{Role: "user", Content: "t"}}})
					if err != nil {
						t.Fatal(err)
					}
					deltas, end := readAll(t, task)
					took := time.Since(start)
					if orchestrator.Event(end.Event) != tc.event {
						t.Fatalf("terminal %+v", end)
					}
					v := wait(t, task)
					if v.Status != tc.status || v.FinishReason != string(tc.reason) {
						t.Fatalf("task %+v", v)
					}
					if tc.text != "" && v.Text != tc.text {
						t.Fatalf("text %q, want %q", v.Text, tc.text)
					}
					if tc.status == orchestrator.StatusPartial {
						// The code of a cut is its finish reason.
						if !strings.HasPrefix(end.Notice, "The answer was cut short") || end.Code != string(tc.reason) || v.Text == "" || v.Text != strings.Join(deltas, "") {
							t.Fatalf("partial without notice or text: %+v / %q", end, v.Text)
						}
					} else if v.Error == nil || v.Error.Code != orchestrator.CodeTTFTTimeout || end.Code != orchestrator.CodeTTFTTimeout {
						t.Fatalf("error %+v, end %+v", v.Error, end)
					}
					// On time: not before its bound, not much after.
					lo := tc.firesAfter
					if tc.reason == orchestrator.FinishIdleTimeout {
						lo = idle // measured from the last chunk, which came at once
					}
					if took < lo || took > lo+tol {
						t.Fatalf("ended after %v, want %v (+%v)", took, lo, tol)
					}
					waitGateIdle(t, o)
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					if err := up.WaitIdle(ctx); err != nil {
						t.Fatalf("upstream call not cancelled: %v", err)
					}
				})
			}
		})
	}

}

// TestUpstreamFailures: what is retried (before any output, at most once:
// connection failures, 429 and 502/503/504) and what is not, and how the
// task ends.
func TestUpstreamFailures(t *testing.T) {
	cases := []struct {
		name     string
		script   func(n int) upstreamtest.Script
		status   orchestrator.Status
		reason   orchestrator.FinishReason
		text     string
		requests int // upstream requests made: 2 means one retry
		retries  int
	}{
		{"dropped mid-stream: partial, not retried", func(int) upstreamtest.Script {
			return upstreamtest.Script{Chunks: []string{"a", "b", "c"}, DropAfterChunks: 2}
		}, orchestrator.StatusPartial, orchestrator.FinishUpstreamError, "ab", 1, 0},
		{"no [DONE] and no finish: partial", func(int) upstreamtest.Script {
			return upstreamtest.Script{Chunks: []string{"a", "b", "c"}, StreamError: "model crashed"}
		}, orchestrator.StatusPartial, orchestrator.FinishUpstreamError, "abc", 1, 0},
		{"503 once, then ok: one retry", func(n int) upstreamtest.Script {
			if n == 1 {
				return upstreamtest.Script{Status: 503}
			}
			return upstreamtest.Script{Chunks: []string{"ok"}}
		}, orchestrator.StatusDone, orchestrator.FinishStop, "ok", 2, 1},
		{"429 with Retry-After: honoured", func(n int) upstreamtest.Script {
			if n == 1 {
				return upstreamtest.Script{Status: 429, RetryAfter: "1"}
			}
			return upstreamtest.Script{Chunks: []string{"ok"}}
		}, orchestrator.StatusDone, orchestrator.FinishStop, "ok", 2, 1},
		{"502 twice: at most one retry", func(int) upstreamtest.Script {
			return upstreamtest.Script{Status: 502}
		}, orchestrator.StatusFailed, orchestrator.FinishUpstreamError, "", 2, 1},
		{"dropped before headers: retried", func(n int) upstreamtest.Script {
			if n == 1 {
				return upstreamtest.Script{DropBeforeHeaders: true}
			}
			return upstreamtest.Script{Chunks: []string{"ok"}}
		}, orchestrator.StatusDone, orchestrator.FinishStop, "ok", 2, 1},
		{"400 is never retried", func(int) upstreamtest.Script {
			return upstreamtest.Script{Status: 400}
		}, orchestrator.StatusFailed, orchestrator.FinishUpstreamError, "", 1, 0},
		{"500 is not retried", func(int) upstreamtest.Script {
			return upstreamtest.Script{Status: 500}
		}, orchestrator.StatusFailed, orchestrator.FinishUpstreamError, "", 1, 0},
	}
	for _, p := range httpPaths {
		t.Run(p.name, func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					o, up := newHTTPOrch(t, p, orchestrator.Config{RetryBackoff: 20 * time.Millisecond, TotalTimeout: 10 * time.Second})
					up.SetHandler(func(_ upstreamtest.ChatRequest, n int) upstreamtest.Script { return tc.script(n) })
					start := time.Now()
					task, err := o.Submit(context.Background(), orchestrator.Request{Question: "f", Messages: []upstream.Message{{Role: "user", Content: "f"}}})
					if err != nil {
						t.Fatal(err)
					}
					deltas, end := readAll(t, task)
					v := wait(t, task)
					if v.Status != tc.status || v.FinishReason != string(tc.reason) || v.Text != tc.text || v.Retries != tc.retries {
						t.Fatalf("task %+v", v)
					}
					if up.Requests() != tc.requests {
						t.Fatalf("upstream requests %d, want %d", up.Requests(), tc.requests)
					}
					if got := strings.Join(deltas, ""); got != v.Text {
						t.Fatalf("stream text %q != task text %q", got, v.Text)
					}
					if tc.status == orchestrator.StatusFailed && (orchestrator.Event(end.Event) != orchestrator.EventError || v.Error == nil || v.Error.Code != orchestrator.CodeUpstreamError) {
						t.Fatalf("failure shape: %+v %+v", end, v.Error)
					}
					if strings.Contains(tc.name, "Retry-After") && time.Since(start) < time.Second {
						t.Fatalf("Retry-After: 1 not honoured: retried after %v", time.Since(start))
					}
					waitGateIdle(t, o)
				})
			}
		})
	}

}

// TestUnreachableUpstreamIsNotNamedToClients: a connection error names
// the upstream's address; the task's error says the upstream could not be
// reached, without the address (the log keeps it).
func TestUnreachableUpstreamIsNotNamedToClients(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	up, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: "http://" + addr + "/v1", Name: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	o := newOrch(t, orchestrator.Config{}, up, nil)
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", Messages: []upstream.Message{{Role: "user", Content: "q"}}})
	if err != nil {
		t.Fatal(err)
	}
	v := wait(t, task)
	if v.Status != orchestrator.StatusFailed || v.Error == nil || v.Error.Code != orchestrator.CodeUpstreamError ||
		v.Error.Message != "the upstream could not be reached" || strings.Contains(v.Error.Message, addr) {
		t.Fatalf("unreachable upstream: %+v %+v", v, v.Error)
	}
}
