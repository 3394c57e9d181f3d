package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/web/client/clienttest"
)

// startSluice serves a sluice with the simulated upstream on a free port
// until the test ends, and returns its base URL.
func startSluice(t *testing.T, flags ...string) string {
	t.Helper()
	s, err := loadSettings(append([]string{"-addr", "127.0.0.1:0", "-sim-ttft", "10ms", "-sim-gap", "2ms", "-log-level", "warn"}, flags...),
		func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, s, io.Discard, ready) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	select {
	case addr := <-ready:
		return "http://" + addr
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("sluice did not start")
	}
	return ""
}

// runCLI runs "sluice args..." and returns the exit code, stdout and
// stderr.
func runCLI(t *testing.T, server string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	env := map[string]string{"SLUICE_SERVER": server}
	code := run(args, func(k string) string { return env[k] }, &stdout, &stderr)
	t.Logf("sluice %s -> %d\nstderr: %s", strings.Join(args, " "), code, stderr.String())
	return code, stdout.String(), stderr.String()
}

var taskIDRE = regexp.MustCompile(`task ([0-9a-f-]{36})`)

func taskID(t *testing.T, stderr string) string {
	t.Helper()
	m := taskIDRE.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no task id on stderr: %q", stderr)
	}
	return m[1]
}

type taskView struct {
	Status, Text, FinishReason string
}

func getTask(t *testing.T, server, id string) taskView {
	t.Helper()
	resp, err := http.Get(server + "/v1/tasks/" + id)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Status       string `json:"status"`
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return taskView{v.Status, v.Text, v.FinishReason}
}

func TestAskStreamsTheTaskText(t *testing.T) {
	srv := startSluice(t)
	code, out, errOut := runCLI(t, srv, "ask", "how many SKU-10234 are left in zone A?")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	id := taskID(t, errOut)
	v := getTask(t, srv, id)
	if v.Status != "done" || out != v.Text || out == "" {
		t.Errorf("stdout %q, task %+v", out, v)
	}
	for _, want := range []string{"cache MISS", "ttft ", "done · stop"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q: %q", want, errOut)
		}
	}

	// Attaching to the finished task replays the same text.
	code, out2, errOut := runCLI(t, srv, "task", id)
	if code != exitOK || out2 != v.Text {
		t.Errorf("task: exit %d stdout %q", code, out2)
	}
	if !strings.Contains(errOut, "task "+id) {
		t.Errorf("task stderr %q", errOut)
	}
	// --poll prints the task's JSON.
	code, poll, _ := runCLI(t, srv, "task", "--poll", id)
	var pv struct{ ID, Status, Text string }
	if err := json.Unmarshal([]byte(poll), &pv); code != exitOK || err != nil || pv.ID != id || pv.Text != v.Text || pv.Status != "done" {
		t.Errorf("poll: exit %d %q %v", code, poll, err)
	}

	// The same question again is a cache hit; --json prints the events.
	code, js, errOut := runCLI(t, srv, "ask", "how many SKU-10234 are left in zone A?", "--json")
	if code != exitOK || !strings.Contains(errOut, "cache HIT") {
		t.Errorf("second ask: exit %d stderr %q", code, errOut)
	}
	var text strings.Builder
	var types []string
	sc := bufio.NewScanner(strings.NewReader(js))
	for sc.Scan() {
		var ev struct {
			Event string
			ID    string
			Data  struct{ Text string }
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		types = append(types, ev.Event)
		if ev.Event == "delta" {
			if ev.ID == "" {
				t.Errorf("delta without id: %q", sc.Text())
			}
			text.WriteString(ev.Data.Text)
		}
	}
	if text.String() != v.Text || len(types) < 3 || types[0] != "meta" || types[len(types)-1] != "done" {
		t.Errorf("json events %v text %q", types, text.String())
	}

	// The cache explains its decision.
	code, expl, _ := runCLI(t, srv, "cache", "lookup", "how many SKU-10234 are left in zone A?")
	if code != exitOK || !strings.Contains(expl, "decision:   HIT (exact)") || !strings.Contains(expl, "threshold") ||
		!strings.Contains(expl, "candidates:") || !strings.Contains(expl, "sku-10234") || !strings.Contains(expl, "stage:      exact") {
		t.Errorf("cache lookup: exit %d\n%s", code, expl)
	}
	code, expl, _ = runCLI(t, srv, "cache", "lookup", "--namespace", "other", "how many SKU-10234 are left in zone A?")
	if code != exitOK || !strings.Contains(expl, "decision:   MISS") {
		t.Errorf("cache lookup other namespace: exit %d\n%s", code, expl)
	}
}

func TestAskPartialExits2(t *testing.T) {
	srv := startSluice(t, "-total-timeout", "300ms", "-sim-gap", "100ms", "-sim-gap-sigma", "0")
	code, out, errOut := runCLI(t, srv, "ask", "--nocache", "tell me a long story")
	if code != exitPartial {
		t.Fatalf("exit %d, want %d", code, exitPartial)
	}
	v := getTask(t, srv, taskID(t, errOut))
	if v.Status != "partial" || out != v.Text || out == "" {
		t.Errorf("stdout %q task %+v", out, v)
	}
	if !strings.Contains(errOut, "partial answer: The answer was cut short") || !strings.Contains(errOut, "cache BYPASS") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestAskOverloadedExits1(t *testing.T) {
	// One slot, no queue, and a first token that takes long.
	srv := startSluice(t, "-budget", "1", "-queue", "0", "-sim-ttft", "20s", "-sim-ttft-sigma", "0", "-ttft-timeout", "30s")
	resp, err := http.Post(srv+"/v1/tasks", "application/json", strings.NewReader(`{"prompt":"hold the slot"}`))
	if err != nil {
		t.Fatal(err)
	}
	var held struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&held)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("holding task: %d", resp.StatusCode)
	}
	code, out, errOut := runCLI(t, srv, "ask", "one more question")
	if code != exitFailed || out != "" || !strings.Contains(errOut, "overloaded") || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
		t.Errorf("exit %d stdout %q stderr %q", code, out, errOut)
	}
	// An unknown task is a one-line not_found, exit 1.
	code, _, errOut = runCLI(t, srv, "task", "00000000-0000-0000-0000-000000000000")
	if code != exitFailed || !strings.Contains(errOut, "not_found") {
		t.Errorf("unknown task: exit %d stderr %q", code, errOut)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv+"/v1/tasks/"+held.ID, nil)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	http.DefaultClient.CloseIdleConnections()
}

func TestTaskResumesAfterDroppedConnection(t *testing.T) {
	srv := startSluice(t, "-sim-gap", "5ms")
	// A live task, to follow while it streams.
	resp, err := http.Post(srv+"/v1/tasks", "application/json", strings.NewReader(`{"prompt":"resume me please","nocache":true}`))
	if err != nil {
		t.Fatal(err)
	}
	var created struct{ ID string }
	_ = json.NewDecoder(resp.Body).Decode(&created)
	resp.Body.Close()

	p := &clienttest.CutProxy{Target: srv, After: 3}
	ps := httptest.NewServer(p)
	defer ps.Close()
	code, out, errOut := runCLI(t, ps.URL, "task", created.ID)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	v := getTask(t, srv, created.ID)
	if out != v.Text || v.Status != "done" {
		t.Errorf("stdout %q\ntask   %q (%s)", out, v.Text, v.Status)
	}
	if ids := p.LastEventIDs(); len(ids) != 2 || ids[0] != "" || ids[1] != "3" {
		t.Errorf("Last-Event-ID per connection %q, want [\"\" \"3\"]", ids)
	}
	if !strings.Contains(errOut, "resuming after event 3") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestClientUsage(t *testing.T) {
	for _, args := range [][]string{{"ask", "-h"}, {"task", "-h"}, {"cache", "-h"}} {
		code, _, errOut := runCLI(t, "http://127.0.0.1:1", args...)
		if code != exitOK || !strings.Contains(errOut, "usage: sluice "+args[0]) {
			t.Errorf("%v: exit %d %q", args, code, errOut)
		}
	}
	for _, args := range [][]string{{"ask"}, {"task"}, {"cache", "nope"}, {"ask", "q", "--server", "ftp://x"}} {
		if code, _, _ := runCLI(t, "http://127.0.0.1:1", args...); code != exitFailed {
			t.Errorf("%v: exit %d, want 1", args, code)
		}
	}
	code, _, errOut := runCLI(t, "http://127.0.0.1:1", "ask", "anyone there?")
	if code != exitFailed || !strings.Contains(errOut, "connection refused") {
		t.Errorf("unreachable: exit %d %q", code, errOut)
	}
}
