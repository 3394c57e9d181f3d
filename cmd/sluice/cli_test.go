package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// TestTaskWithNoServerFailsAtOnce: "sluice task ID" against a closed port
// fails on the first connection refused, without resuming attempts.
func TestTaskWithNoServerFailsAtOnce(t *testing.T) {
	start := time.Now()
	code, _, errOut := runCLI(t, "http://"+closedPort(t), "task", "0b9a3c1e-1d0a-4c55-9e43-5a1f0b6a8c11")
	if code != exitFailed || !strings.Contains(errOut, "connection refused") || strings.Contains(errOut, "resuming") {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s to fail", d)
	}
	srv := startSluice(t)
	code, _, errOut = runCLI(t, srv, "task", "0b9a3c1e-1d0a-4c55-9e43-5a1f0b6a8c11")
	if code != exitFailed || !strings.Contains(errOut, "not_found") || strings.Contains(errOut, "resuming") {
		t.Fatalf("unknown task: exit %d, stderr %q", code, errOut)
	}
}

// TestAnswerEndsWithNewlineBeforeTheSummary: with stdout and stderr the
// same file (2>&1), the answer ends with a newline and the summary line
// follows on its own line, with one unit for both TTFTs.
func TestAnswerEndsWithNewlineBeforeTheSummary(t *testing.T) {
	srv := startSluice(t)
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	code := run([]string{"ask", "how many SKU-10234 are left in zone A?"}, env("SLUICE_SERVER", srv), f, f)
	raw, _ := os.ReadFile(f.Name())
	out := string(raw)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, out)
	}
	id := taskID(t, out)
	text := getTask(t, srv, id).Text
	if text == "" || strings.HasSuffix(text, "\n") || !strings.Contains(out, text+"\nsluice: done") {
		t.Errorf("the summary is not on a line of its own after the answer:\n%s", out)
	}
	if !regexp.MustCompile(`ttft \d+ms \(server \d+ms\)`).MatchString(out) {
		t.Errorf("ttft not in one unit: %s", out)
	}
}

// TestCacheCommandsPrintTextOrJSON: cache lookup and cache stats both
// print text by default and the server's JSON with --json.
func TestCacheCommandsPrintTextOrJSON(t *testing.T) {
	srv := startSluice(t)
	if code, _, errOut := runCLI(t, srv, "ask", "where is SKU-77 stored?"); code != exitOK {
		t.Fatalf("ask: %d %s", code, errOut)
	}
	code, out, _ := runCLI(t, srv, "cache", "stats")
	if code != exitOK || !strings.Contains(out, "namespace") || !strings.Contains(out, "default") || strings.HasPrefix(out, "{") {
		t.Errorf("cache stats: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, srv, "cache", "stats", "--json")
	var st struct{ Namespaces []struct{ Name string } }
	if err := json.Unmarshal([]byte(out), &st); code != exitOK || err != nil || len(st.Namespaces) != 1 || st.Namespaces[0].Name != "default" {
		t.Errorf("cache stats --json: exit %d %v\n%s", code, err, out)
	}
	code, out, _ = runCLI(t, srv, "cache", "lookup", "where is SKU-77 stored?")
	if code != exitOK || !strings.Contains(out, "decision:   HIT") {
		t.Errorf("cache lookup: exit %d\n%s", code, out)
	}
	code, out, _ = runCLI(t, srv, "cache", "lookup", "--json", "where is SKU-77 stored?")
	var x struct{ Decision string }
	if err := json.Unmarshal([]byte(out), &x); code != exitOK || err != nil || x.Decision != "hit" {
		t.Errorf("cache lookup --json: exit %d %v\n%s", code, err, out)
	}
}

// TestCutNoticeSaysHowToGetTheRest: the notice of an answer cut at the
// total cap names the cap's setting and offers to continue; it does not
// promise that asking again gets the rest.
func TestCutNoticeSaysHowToGetTheRest(t *testing.T) {
	srv := startSluice(t, "-total-timeout", "300ms", "-sim-gap", "100ms", "-sim-gap-sigma", "0")
	code, _, errOut := runCLI(t, srv, "ask", "--nocache", "tell me a long story")
	if code != exitPartial {
		t.Fatalf("exit %d, want %d", code, exitPartial)
	}
	for _, want := range []string{"total time cap (300ms)", "SLUICE_TOTAL_TIMEOUT", "continue from this text", "assistant's turn"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("notice lacks %q: %s", want, errOut)
		}
	}
	if strings.Contains(errOut, "Retry the question to get the rest") {
		t.Errorf("the notice still promises a retry gets the rest: %s", errOut)
	}
}

// TestAskContinuesACutAnswer: with --continue, a cut answer is continued
// by a new task whose messages are the question, the text so far as the
// assistant's turn and a request to continue; the rest streams right
// after the text so far.
func TestAskContinuesACutAnswer(t *testing.T) {
	up := upstreamtest.NewServer(t)
	up.SetHandler(func(req upstreamtest.ChatRequest, _ int) upstreamtest.Script {
		if len(req.Messages) == 1 { // a question: cut after two chunks (the upstream drops)
			return upstreamtest.Script{Chunks: []string{"one ", "two ", "lost"}, DropAfterChunks: 2}
		}
		return upstreamtest.Script{Chunks: []string{"three."}}
	})
	base, _, err := startWithLog(t, []string{"-model", "m"}, "SLUICE_UPSTREAM", up.URL())
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, base, "ask", "--nocache", "--continue", "2", "count to three")
	if code != exitOK || out != "one two three." {
		t.Fatalf("exit %d, stdout %q", code, out)
	}
	if !strings.Contains(errOut, "1 continuation of the cut answer") {
		t.Errorf("stderr %q", errOut)
	}
	got := up.Received()
	if len(got) != 2 {
		t.Fatalf("%d upstream requests, want 2", len(got))
	}
	m := got[1].Messages
	if len(m) != 3 || m[0].Role != "user" || m[0].Content != "count to three" || m[1].Role != "assistant" ||
		m[1].Content != "one two " || m[2].Role != "user" || !strings.Contains(m[2].Content, "Continue") {
		t.Errorf("continuation messages %+v", m)
	}

	// Without --continue the cut answer ends there, and stderr says how
	// to continue.
	code, out, errOut = runCLI(t, base, "ask", "--nocache", "count to three again")
	if code != exitPartial || out != "one two " || !strings.Contains(errOut, "--continue") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}
