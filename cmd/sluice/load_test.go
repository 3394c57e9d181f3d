package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cmd/sluice/internal/load"
)

// runLoadCLI runs "sluice load args..." and decodes its -json report
// (nil if stdout holds none).
func runLoadCLI(t *testing.T, args ...string) (int, *load.Report, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	start := time.Now()
	code := run(append([]string{"load"}, args...), func(string) string { return "" }, &out, &errOut)
	t.Logf("sluice load %s -> %d in %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), code,
		time.Since(start).Round(time.Millisecond), out.String(), errOut.String())
	var rep *load.Report
	if out.Len() > 0 {
		rep = new(load.Report)
		if err := json.Unmarshal(out.Bytes(), rep); err != nil {
			t.Fatalf("report is not JSON: %v\n%s", err, out.String())
		}
	}
	return code, rep, errOut.String()
}

// runLoadFile runs "sluice load args... -out out", fails t unless it exits
// 0, and returns the report it wrote to out, decoded as a T, and what it
// printed on stdout.
func runLoadFile[T any](t *testing.T, out string, args ...string) (T, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	args = append(append([]string{"load"}, args...), "-out", out)
	var rep T
	if code := run(args, func(string) string { return "" }, &stdout, &stderr); code != exitOK {
		t.Fatalf("sluice %s: exit %d\n%s", strings.Join(args, " "), code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%s: %v: %s", out, err, b)
	}
	return rep, stdout.String()
}

// checkBalanced checks that every sent request is counted exactly once
// and that the budget drained.
func checkBalanced(t *testing.T, rep *load.Report) {
	t.Helper()
	if rep.Completed+rep.Refused+rep.Failed+rep.Dropped != rep.Sent {
		t.Errorf("completed %d + refused %d + failed %d + dropped %d != sent %d",
			rep.Completed, rep.Refused, rep.Failed, rep.Dropped, rep.Sent)
	}
	if rep.Failed != 0 {
		t.Errorf("failed %d: %v %v", rep.Failed, rep.Failures, rep.FailureExamples)
	}
	terminals := 0
	for _, n := range rep.Terminal {
		terminals += n
	}
	if terminals != rep.Completed || rep.Total.Count != rep.Completed || rep.TTFT.Count > rep.Completed {
		t.Errorf("terminal %v, total count %d, ttft count %d, completed %d", rep.Terminal, rep.Total.Count, rep.TTFT.Count, rep.Completed)
	}
	if b := rep.Budget; b == nil || b.InFlight != 0 || b.Queued != 0 || !b.Drained || b.Leak || b.AcquiredTotal != b.ReleasedTotal {
		t.Errorf("budget after the run: %+v", b)
	}
}

func TestLoadStreamOpenLoop(t *testing.T) {
	srv := startSluice(t, "-budget", "2", "-sim-ttft", "20ms", "-sim-gap", "5ms")
	code, rep, errOut := runLoadCLI(t, "-server", srv, "-rate", "50", "-duration", "1s", "-repeat", "0.5", "-json")
	if code != exitOK || rep == nil {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	// The schedule is by count (rate × duration), so the count is exact.
	if rep.Sent != 50 || rep.Dropped != 0 || rep.Endpoint != "stream" {
		t.Errorf("sent %d, dropped %d, endpoint %q", rep.Sent, rep.Dropped, rep.Endpoint)
	}
	checkBalanced(t, rep)
	// Two slots against 50/s of 0.1-0.5s answers: the gate refuses some
	// at once, the cache answers some repeats without a slot.
	if rep.Refused == 0 || rep.Refusals["overloaded"] != rep.Refused || rep.Status["503"] != rep.Refused {
		t.Errorf("refused %d, refusals %v, status %v", rep.Refused, rep.Refusals, rep.Status)
	}
	if rep.Completed == 0 || rep.Status["200"] != rep.Completed || rep.Terminal["done"] != rep.Completed {
		t.Errorf("completed %d, status %v, terminal %v", rep.Completed, rep.Status, rep.Terminal)
	}
	if rep.Cache["HIT"] == 0 || rep.CacheHitRatio <= 0 || rep.TTFTByCache["HIT"].Count != rep.Cache["HIT"] ||
		rep.TotalByCache["HIT"].Count != rep.Cache["HIT"] {
		t.Errorf("cache %v ratio %v ttft by cache %v", rep.Cache, rep.CacheHitRatio, rep.TTFTByCache)
	}
	if rep.Repeats < 10 || rep.Repeats > 40 {
		t.Errorf("repeats %d of 50 at -repeat 0.5", rep.Repeats)
	}
	// Open loop: the arrivals did not wait for the answers.
	if rep.AchievedRate < 40 || rep.AchievedRate > 60 || rep.ScheduleLagMax > 200 {
		t.Errorf("achieved rate %.1f, schedule lag max %.1fms", rep.AchievedRate, rep.ScheduleLagMax)
	}
	if rep.Budget.Rejected < int64(rep.Refused) || rep.Budget.Acquired != rep.Budget.Released || rep.Budget.Acquired == 0 {
		t.Errorf("budget %+v, refused %d", rep.Budget, rep.Refused)
	}
	ttft, total := rep.TTFT, rep.Total
	if ttft.Count == 0 || ttft.P50 > ttft.P90 || ttft.P90 > ttft.P99 || ttft.P99 > ttft.Max || total.P50 > total.Max || ttft.Max > total.Max {
		t.Errorf("ttft %+v total %+v", ttft, total)
	}
	if rep.Bytes == 0 {
		t.Error("no bytes counted")
	}
	// Where the time went: every request sent has its send lag, every
	// refusal and every answer its wait for the first byte, a part of
	// its latency.
	if rep.SendLag.Count != rep.Sent-rep.Dropped || rep.RefusedWait.Count != rep.Refused ||
		rep.RefusedWait.Max > rep.RefusedLatency.Max || rep.WaitByCache["HIT"].Count != rep.Cache["HIT"] ||
		rep.WaitByCache["HIT"].Max > rep.TotalByCache["HIT"].Max || rep.WaitByCache["MISS"].Count != rep.Cache["MISS"] {
		t.Errorf("send lag %+v; refused %+v, wait %+v; wait by cache %+v, total by cache %+v",
			rep.SendLag, rep.RefusedLatency, rep.RefusedWait, rep.WaitByCache, rep.TotalByCache)
	}
	// A refusal leaves its connection open for the next request: the
	// generator opens about one connection per request in flight, not
	// one per refusal.
	if rep.Dials < 1 || rep.Dials > rep.PeakInflight+2 || rep.Dials >= int64(rep.Refused) {
		t.Errorf("%d connections opened for %d requests (%d refused), peak in flight %d", rep.Dials, rep.Sent, rep.Refused, rep.PeakInflight)
	}
}

func TestLoadChatAndTasks(t *testing.T) {
	srv := startSluice(t, "-budget", "4", "-sim-ttft", "20ms", "-sim-gap", "5ms")
	for _, ep := range []string{"chat", "tasks"} {
		t.Run(ep, func(t *testing.T) {
			code, rep, errOut := runLoadCLI(t, "-server", srv, "-endpoint", ep, "-rate", "20", "-duration", "500ms",
				"-repeat", "0.5", "-namespace", "load-"+ep, "-json")
			if code != exitOK || rep == nil {
				t.Fatalf("exit %d, stderr %q", code, errOut)
			}
			if rep.Sent != 10 || rep.Endpoint != ep {
				t.Errorf("sent %d endpoint %q", rep.Sent, rep.Endpoint)
			}
			checkBalanced(t, rep)
			if rep.Completed == 0 || rep.Terminal["done"] != rep.Completed || rep.TTFT.Count != rep.Completed {
				t.Errorf("completed %d terminal %v ttft %+v", rep.Completed, rep.Terminal, rep.TTFT)
			}
			if ep == "tasks" {
				// Tasks wait in the server's queue instead of being refused.
				if rep.Completed != 10 || rep.Status["202"] != 10 {
					t.Errorf("tasks: completed %d status %v", rep.Completed, rep.Status)
				}
			}
			if rep.Cache["HIT"]+rep.Cache["MISS"] != rep.Completed {
				t.Errorf("cache %v, completed %d", rep.Cache, rep.Completed)
			}
		})
	}
	// The table for people, with -nocache: every answer bypasses the cache.
	var out, errOut bytes.Buffer
	code := run([]string{"load", "-server", srv, "-rate", "20", "-duration", "200ms", "-nocache", "-namespace", "load-table"},
		func(string) string { return "" }, &out, &errOut)
	t.Logf("table:\n%s", out.String())
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	for _, want := range []string{"sluice load · stream", "sent 4 = completed", "hit ratio 0.0%", "BYPASS",
		"latency (ms)", "p99", "ttft", "total", "send lag", "wait BYPASS", "connections opened", "in_flight 0", "drained in"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func TestLoadDropsBeyondMaxInflight(t *testing.T) {
	// Every answer takes at least 300ms; the ten arrivals come within
	// 180ms; one request may be outstanding: the first is sent, the nine
	// others are dropped by the client, never delayed.
	srv := startSluice(t, "-sim-ttft", "300ms", "-sim-ttft-sigma", "0")
	code, rep, errOut := runLoadCLI(t, "-server", srv, "-rate", "50", "-duration", "200ms", "-max-inflight", "1", "-json")
	if code != exitOK || rep == nil {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if rep.Sent != 10 || rep.Dropped != 9 || rep.Completed != 1 || rep.PeakInflight != 1 {
		t.Errorf("sent %d dropped %d completed %d peak %d", rep.Sent, rep.Dropped, rep.Completed, rep.PeakInflight)
	}
	// The offered rate is measured to the last arrival as it happened, so
	// a busy machine's schedule lag (which the report gives) lowers it. A
	// generator that waited for the outstanding answer (a closed loop)
	// would lag by an answer's 300ms per request; this one may lag only by
	// scheduling noise, and offer the 10 arrivals over 200ms plus that lag.
	if lag := rep.ScheduleLagMax; lag > 150 {
		t.Errorf("schedule lag %.1fms: the generator waited for answers", lag)
	}
	if want := 10 / (0.2 + rep.ScheduleLagMax/1000); rep.OfferedRate < want-0.1 || rep.OfferedRate < 25 || rep.AchievedRate > 6 {
		t.Errorf("offered %.1f/s (want >= %.1f/s for a lag of %.1fms), achieved %.1f/s", rep.OfferedRate, want, rep.ScheduleLagMax, rep.AchievedRate)
	}
	if rep.TTFT.Max < 300 {
		t.Errorf("ttft %+v, want >= 300ms", rep.TTFT)
	}
	checkBalanced(t, rep)
}

// fakeSluice answers /v1/budget with inFlight and /v1/stream with a short
// event stream, or with a stream that stays open while hold is set.
type fakeSluice struct {
	inFlight int
	hold     bool
	onStream func(n int64) // called with the number of the stream request
	streams  atomic.Int64
}

func (f *fakeSluice) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/v1/budget":
		fmt.Fprintf(w, `{"limit":4,"in_flight":%d,"queued":0,"upstreams":[{"acquired_total":%d,"released_total":0}]}`, f.inFlight, f.inFlight)
	case "/v1/stream":
		n := f.streams.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("X-Cache", "MISS")
		fmt.Fprint(w, "event: meta\ndata: {}\n\n: ping\n\nevent: delta\nid: 1\ndata: {\"text\":\"hi\"}\n\n")
		w.(http.Flusher).Flush()
		if f.onStream != nil {
			f.onStream(n)
		}
		if f.hold {
			<-r.Context().Done()
			return
		}
		fmt.Fprint(w, "event: done\ndata: {\"finish_reason\":\"stop\"}\n\n")
	default:
		http.NotFound(w, r)
	}
}

func TestLoadDetectsLeak(t *testing.T) {
	ts := httptest.NewServer(&fakeSluice{inFlight: 1})
	defer ts.Close()
	code, rep, errOut := runLoadCLI(t, "-server", ts.URL, "-rate", "20", "-duration", "100ms", "-drain-wait", "300ms", "-json")
	if code != exitFailed || rep == nil || !strings.Contains(errOut, "LEAK") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if b := rep.Budget; b == nil || !b.Leak || b.Drained || b.InFlight != 1 || b.WaitedMs < 300 {
		t.Errorf("budget %+v", rep.Budget)
	}
	if rep.Sent != 2 || rep.Completed != 2 || rep.Terminal["done"] != 2 {
		t.Errorf("sent %d completed %d terminal %v", rep.Sent, rep.Completed, rep.Terminal)
	}
}

func TestLoadInterruptStillReports(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Streams stay open; the third one "presses Ctrl-C".
	f := &fakeSluice{hold: true, onStream: func(n int64) {
		if n == 3 {
			cancel()
		}
	}}
	ts := httptest.NewServer(f)
	defer ts.Close()
	cfg, _, code, ok := parseLoad([]string{"-server", ts.URL, "-rate", "100", "-duration", "60s", "-json"},
		func(string) string { return "" }, &bytes.Buffer{})
	if !ok {
		t.Fatalf("parse: exit %d", code)
	}
	var out, errOut bytes.Buffer
	start := time.Now()
	code = load.Run(ctx, func() {}, cfg, &out, &errOut)
	t.Logf("exit %d in %s\n%s\n%s", code, time.Since(start), out.String(), errOut.String())
	if code != exitFailed || !strings.Contains(errOut.String(), "interrupted") {
		t.Fatalf("exit %d stderr %q", code, errOut.String())
	}
	var rep load.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if !rep.Interrupted || rep.Sent < 3 || rep.Sent >= 6000 || rep.Failures["interrupted"] != rep.Sent || rep.Failed != rep.Sent {
		t.Errorf("report %+v", rep)
	}
	if rep.TTFT.Count > rep.Sent || rep.Total.Count != 0 || rep.Budget == nil || !rep.Budget.Drained {
		t.Errorf("ttft %+v total %+v budget %+v", rep.TTFT, rep.Total, rep.Budget)
	}
}

func TestLoadUsage(t *testing.T) {
	code, _, errOut := runLoadCLI(t, "-h")
	if code != exitOK || !strings.Contains(errOut, "usage: sluice load") || !strings.Contains(errOut, "-max-inflight") {
		t.Errorf("-h: exit %d %q", code, errOut)
	}
	for _, args := range [][]string{
		{"-endpoint", "grpc"}, {"-rate", "0"}, {"-rate", "-5"}, {"-duration", "0s"}, {"-timeout", "0s"},
		{"-repeat", "1.5"}, {"-max-inflight", "0"}, {"-namespace", "a b"}, {"-server", "ftp://x"},
		{"-rate", "0.1", "-duration", "1s"}, {"extra"}, {"-nope"},
	} {
		if code, rep, errOut := runLoadCLI(t, append([]string{"-server", "http://127.0.0.1:1"}, args...)...); code != exitFailed || rep != nil || errOut == "" {
			t.Errorf("%v: exit %d, want 1 with a message", args, code)
		}
	}
	code, rep, errOut := runLoadCLI(t, "-server", "http://127.0.0.1:1", "-json")
	if code != exitFailed || rep != nil || !strings.Contains(errOut, "unreachable") {
		t.Errorf("unreachable server: exit %d %q", code, errOut)
	}
}
