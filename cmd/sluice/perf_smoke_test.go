package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cmd/sluice/internal/load"
	"github.com/sluice-dev/sluice/stream/upstream/simserver"
)

// TestPerformanceScenariosSmoke runs every scenario command of
// docs/performance.md, scaled down to a fraction of a second each, against
// an in-process sim-upstream and sluice: each must exit 0 and write
// well-formed results (JSON and SVG) whose counts add up. It asserts no
// timing: the figures are the report's business, not the test's.
func TestPerformanceScenariosSmoke(t *testing.T) {
	dir := t.TempDir()
	// loadRun runs "sluice load args... -out FILE" and returns the runs.
	loadRun := func(name string, args ...string) []load.Report {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		res, stdout := runLoadFile[struct{ Runs []load.Report }](t, out,
			append([]string{"-duration", "300ms", "-timeout", "10s", "-drain-wait", "10s", "-json"}, args...)...)
		if len(res.Runs) == 0 {
			t.Fatalf("%s: no runs", out)
		}
		// stdout has the same reports, one JSON object per line.
		lines := strings.Split(strings.TrimSpace(stdout), "\n")
		if len(lines) != len(res.Runs) {
			t.Errorf("%s: %d lines on stdout, %d runs in the file", name, len(lines), len(res.Runs))
		}
		for _, r := range res.Runs {
			if r.Sent == 0 || r.Completed+r.Refused+r.Failed+r.Dropped != r.Sent || r.Total.Count != r.Completed {
				t.Errorf("%s at %g/s: counts do not add up: %+v", name, r.Rate, r)
			}
		}
		return res.Runs
	}
	checkSVG := func(name string) {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		d := xml.NewDecoder(bytes.NewReader(b))
		for {
			if _, err := d.Token(); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s is not XML: %v", name, err)
			}
		}
	}
	fast := simserver.Config{Chunks: 20}
	slow := simserver.Config{TTFT: 20 * time.Millisecond, TTFTP99: 80 * time.Millisecond, Chunks: 5}

	// 1. Overhead: the same load straight to the upstream and through
	// sluice, at two rates, with a latency plot each.
	up := startSimUpstream(t, fast)
	srv := startSluice(t, "-upstream", up, "-budget", "10000")
	direct := loadRun("s1-direct", "-target", "upstream", "-server", up, "-rate", "20,40", "-plot", filepath.Join(dir, "s1-direct.svg"))
	via := loadRun("s1-sluice", "-server", srv, "-endpoint", "chat", "-nocache", "-rate", "20,40", "-plot", filepath.Join(dir, "s1-sluice.svg"))
	// The other doors take the same load.
	for _, ep := range []string{"stream", "tasks", "responses"} {
		if r := loadRun("s1-"+ep, "-server", srv, "-endpoint", ep, "-nocache", "-rate", "20"); r[0].Terminal["done"] != r[0].Completed || r[0].TTFT.Count != r[0].Completed {
			t.Errorf("%s: terminal %v, %d TTFTs for %d answers", ep, r[0].Terminal, r[0].TTFT.Count, r[0].Completed)
		}
	}
	checkSVG("s1-direct.svg")
	checkSVG("s1-sluice.svg")
	if len(direct) != 2 || len(via) != 2 || direct[0].Target != "upstream" || direct[0].Budget != nil || via[1].Budget == nil {
		t.Errorf("overhead runs: direct %d (target %q), via sluice %d", len(direct), direct[0].Target, len(via))
	}
	// The tail's attribution (issue 16) reads the server's runtime from
	// its /metrics: scheduling latency, GC, allocation.
	if rt := via[1].ServerRuntime; rt == nil || rt.SchedLatency.Count == 0 || rt.SchedLatency.P99 <= 0 || rt.AllocsPerRequest <= 0 || rt.BytesPerRequest <= 0 {
		t.Errorf("via sluice: no server runtime figures: %+v", rt)
	} else if direct[1].ServerRuntime != nil {
		t.Errorf("direct: runtime figures from an upstream: %+v", direct[1].ServerRuntime)
	}

	// 2. Capacity knee: a small budget against a slow upstream, one rate,
	// with the in-flight plot.
	up = startSimUpstream(t, slow)
	srv = startSluice(t, "-upstream", up, "-budget", "3")
	loadRun("s2", "-server", srv, "-endpoint", "chat", "-nocache", "-repeat", "0", "-rate", "40", "-plot", filepath.Join(dir, "s2.svg"))
	checkSVG("s2.svg")

	// 3. Overload: an upstream of capacity 2, without a budget, with one
	// refusing at once, and with a bounded wait.
	over := slow
	over.Capacity = 2
	for name, flags := range map[string][]string{
		"s3-nobudget": {"-budget", "10000"},
		"s3-refuse":   {"-budget", "2"},
		"s3-wait":     {"-budget", "2", "-acquire-timeout", "50ms"},
	} {
		up = startSimUpstream(t, over)
		srv = startSluice(t, append([]string{"-upstream", up}, flags...)...)
		loadRun(name, "-server", srv, "-endpoint", "chat", "-nocache", "-repeat", "0", "-rate", "40")
	}

	// 4. Cache A/B: mostly repeated questions, cache off then on.
	up = startSimUpstream(t, slow)
	srv = startSluice(t, "-upstream", up)
	off := loadRun("s4-off", "-server", srv, "-endpoint", "chat", "-nocache", "-repeat", "0.97", "-rate", "40")
	on := loadRun("s4-on", "-server", srv, "-endpoint", "chat", "-repeat", "0.97", "-rate", "40")
	if off[0].Cache["HIT"] != 0 || on[0].Cache["HIT"] == 0 {
		t.Errorf("cache off: %v hits; cache on: %v", off[0].Cache, on[0].Cache)
	}

	// holdRun runs "sluice load -streams ... -out FILE" (hold mode) and
	// returns its report.
	holdRun := func(name string, args ...string) load.HoldReport {
		t.Helper()
		rep, _ := runLoadFile[load.HoldReport](t, filepath.Join(dir, name+".json"),
			append([]string{"-timeout", "20s", "-settle", "100ms", "-json"}, args...)...)
		if rep.Opened+rep.Refused != rep.Streams || rep.Refused != 0 {
			t.Errorf("%s: %d streams, %d opened, %d refused", name, rep.Streams, rep.Opened, rep.Refused)
		}
		return rep
	}

	// 5. Many streams: streams held open on a model slower than the TTFT
	// timeout, each ended by the server's timer; /healthz and a cache hit
	// (on a model answering at once) probed meanwhile.
	held := slow
	held.TTFT, held.TTFTP99, held.FastModels = time.Minute, time.Minute, []string{"fast-1"}
	up = startSimUpstream(t, held)
	// The timer (1.5 s) leaves the "held" sample, taken 100 ms after the
	// last stream opened, a wide margin on a loaded machine.
	srv = startSluice(t, "-upstream", up, "-model", "sim-1", "-ttft-timeout", "1500ms", "-heartbeat", "50ms")
	h5 := holdRun("s5", "-server", srv, "-streams", "20", "-rate", "200", "-deadline", "1500ms",
		"-probe-every", "50ms", "-probe-model", "fast-1")
	if h5.Terminal["error"] != 20 || h5.TimerError.Count != 20 || h5.Heartbeat.Count == 0 || h5.Open.Count != 20 {
		t.Errorf("s5: terminal %v, %d timer figures, %d heartbeat gaps, %d opens", h5.Terminal, h5.TimerError.Count, h5.Heartbeat.Count, h5.Open.Count)
	}
	if h5.Idle == nil || h5.Held == nil || h5.Held.Open == 0 || h5.Held.Goroutines <= h5.Idle.Goroutines {
		t.Errorf("s5: server samples idle %+v, held %+v", h5.Idle, h5.Held)
	}
	if h5.Healthz.Count == 0 || h5.CacheHit.Count == 0 || h5.ProbeFails != 0 {
		t.Errorf("s5: %d healthz probes, %d cache hits, %d failed (%s)", h5.Healthz.Count, h5.CacheHit.Count, h5.ProbeFails, h5.ProbeError)
	}

	// 6. Slow readers: long answers, half the clients reading at a
	// trickle (until the client's 5 s bound), the fast ones to done.
	long := simserver.Config{Chunks: 500}
	up = startSimUpstream(t, long)
	srv = startSluice(t, "-upstream", up)
	h6 := holdRun("s6", "-server", srv, "-streams", "10", "-rate", "200", "-slow-readers", "0.5", "-slow-rate", "64",
		"-probe-every", "0", "-timeout", "5s")
	if h6.Fast.Count != 5 || h6.Terminal["done"] < 5 || h6.Slow.Count+h6.Failed != 5 {
		t.Errorf("s6: %d fast readers ended, terminal %v; slow: %d ended, %d failed (%v)", h6.Fast.Count, h6.Terminal, h6.Slow.Count, h6.Failed, h6.Failures)
	}
}
