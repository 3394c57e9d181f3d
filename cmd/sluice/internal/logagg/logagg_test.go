package logagg_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/cmd/sluice/internal/logagg"
)

// syncBuffer is a log sink that the aggregator's goroutine and the test
// can share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// records returns the JSON records written so far.
func (s *syncBuffer) records(t testing.TB) []map[string]any {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("bad log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func newAgg(t testing.TB, cfg logagg.Config) (*logagg.Handler, *slog.Logger, *syncBuffer) {
	t.Helper()
	buf := &syncBuffer{}
	a := logagg.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}), cfg)
	t.Cleanup(func() { _ = a.Close() })
	return a, slog.New(a), buf
}

func msgs(recs []map[string]any) []string {
	var out []string
	for _, r := range recs {
		out = append(out, fmt.Sprint(r["msg"]))
	}
	return out
}

func TestLogAggregatorSummarisesRepeats(t *testing.T) {
	t.Parallel()
	var suppressed atomic.Int64
	a, log, buf := newAgg(t, logagg.Config{
		OnSuppressed: func(slog.Level) { suppressed.Add(1) },
	})
	for i := range 5 {
		// Same level, message and code; a different task each time.
		log.With("task_id", fmt.Sprintf("t%d", i)).Error("upstream failed", "code", "upstream_error", "ttft_ms", i)
		log.Info("task end", "task_id", fmt.Sprintf("t%d", i)) // below Warn: never aggregated
	}
	log.Error("upstream failed", "code", "ttft_timeout") // another code: another record
	log.With("upstream", "b").Error("upstream failed", "code", "upstream_error")

	got := msgs(buf.records(t))
	want := []string{"upstream failed", "task end", "task end", "task end", "task end", "task end", "upstream failed", "upstream failed"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("before the window ends: got %q, want %q", got, want)
	}
	if recs := buf.records(t); recs[0]["task_id"] != "t0" {
		t.Errorf("the first record is logged whole: %v", recs[0])
	}
	if n := suppressed.Load(); n != 4 {
		t.Errorf("suppressed %d, want 4", n)
	}

	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	recs := buf.records(t)
	if len(recs) != len(want)+1 {
		t.Fatalf("after Close: %q, want one summary more", msgs(recs))
	}
	s := recs[len(recs)-1]
	if s["msg"] != "upstream failed (repeated 4 times in 10s)" || s["level"] != "ERROR" ||
		s["code"] != "upstream_error" || s["repeated"] != float64(4) || s["window"] != "10s" {
		t.Errorf("summary = %v", s)
	}
	if _, ok := s["task_id"]; ok {
		t.Errorf("the summary names one task: %v", s)
	}

	// After Close everything passes through.
	log.Error("upstream failed", "code", "upstream_error")
	log.Error("upstream failed", "code", "upstream_error")
	if n := len(buf.records(t)); n != len(recs)+2 {
		t.Errorf("after Close: %d records, want %d", n, len(recs)+2)
	}
}

func TestLogAggregatorWindowEnds(t *testing.T) {
	t.Parallel()
	_, log, buf := newAgg(t, logagg.Config{Window: 200 * time.Millisecond})
	for range 3 {
		log.Warn("slow reader disconnected", "cursor", 7)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(buf.records(t)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no summary at the window's end: %q", msgs(buf.records(t)))
		}
		time.Sleep(5 * time.Millisecond) // polling the sink: the goroutine signals nothing
	}
	recs := buf.records(t)
	if recs[1]["msg"] != "slow reader disconnected (repeated 2 times in 200ms)" || recs[1]["level"] != "WARN" {
		t.Fatalf("summary = %v", recs[1])
	}
	// A new window: the next one is logged again.
	log.Warn("slow reader disconnected", "cursor", 9)
	if got := msgs(buf.records(t)); len(got) != 3 || got[2] != "slow reader disconnected" {
		t.Fatalf("after the window: %q", got)
	}
}

func TestLogAggregatorBoundedKeys(t *testing.T) {
	t.Parallel()
	var untracked atomic.Int64
	a, log, buf := newAgg(t, logagg.Config{
		MaxKeys: 2, OnUntracked: func() { untracked.Add(1) },
	})
	for range 2 {
		for _, code := range []string{"a", "b", "c"} {
			log.Error("failed", "code", code)
		}
	}
	// a and b are tracked (their repeats held back); c is not.
	if n := len(buf.records(t)); n != 4 {
		t.Fatalf("%d records, want 4: %q", n, msgs(buf.records(t)))
	}
	if n := untracked.Load(); n != 2 {
		t.Errorf("untracked %d, want 2", n)
	}
	a.Flush()
	if n := len(buf.records(t)); n != 6 {
		t.Fatalf("after Flush: %d records, want 6 (two summaries): %q", n, msgs(buf.records(t)))
	}
}

func TestLogAggregatorGroups(t *testing.T) {
	t.Parallel()
	a, log, buf := newAgg(t, logagg.Config{Keys: []string{"req.code"}})
	g := log.WithGroup("req")
	g.Error("failed", "code", 1, "id", "x")
	g.Error("failed", "code", 1, "id", "y") // held back: id is no key
	g.Error("failed", "code", 2)
	log.Error("failed", slog.Group("req", "code", 1)) // the same qualified key: held back too
	if n := len(buf.records(t)); n != 2 {
		t.Fatalf("%d records, want 2: %q", n, msgs(buf.records(t)))
	}
	a.Flush()
	recs := buf.records(t)
	if len(recs) != 3 || recs[2]["req.code"] != float64(1) || recs[2]["repeated"] != float64(2) {
		t.Fatalf("summary: %v", recs)
	}
}
