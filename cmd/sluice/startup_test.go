package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// lockedBuffer is a log sink that a test can read while sluice writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startWithLog serves sluice with the settings of flags and env until the
// test ends, and returns its base URL and its log. A start that fails
// returns the error instead.
func startWithLog(t *testing.T, flags []string, environ ...string) (string, *lockedBuffer, error) {
	t.Helper()
	s, err := loadSettings(append([]string{"-addr", "127.0.0.1:0", "-sim-ttft", "5ms", "-sim-gap", "1ms"}, flags...), env(environ...))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for i := 0; i+1 < len(environ); i += 2 {
		names = append(names, environ[i]+"="+environ[i+1])
	}
	s.unknown = unknownSettings(names)
	log := &lockedBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, s, log, ready) }()
	select {
	case addr := <-ready:
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("serve: %v", err)
			}
		})
		return "http://" + addr, log, nil
	case err := <-done:
		cancel()
		return "", log, err
	case <-time.After(15 * time.Second):
		cancel()
		t.Fatal("sluice did not start")
	}
	return "", nil, nil
}

// closedPort is an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func listModels(t *testing.T, base string) []string {
	t.Helper()
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Get(base + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct{ Data []struct{ ID string } }
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET /v1/models: %d %v", resp.StatusCode, err)
	}
	var ids []string
	for _, m := range l.Data {
		ids = append(ids, m.ID)
	}
	return ids
}

// TestModelFromTheUpstream: a real upstream and no SLUICE_MODEL: sluice
// asks the upstream's /models at start, uses (and logs) the first model,
// sends it upstream, and GET /v1/models lists the upstream's models.
func TestModelFromTheUpstream(t *testing.T) {
	up := upstreamtest.NewServer(t)
	up.SetScript(upstreamtest.Script{Chunks: []string{"hello"}})
	base, log, err := startWithLog(t, nil, "SLUICE_UPSTREAM", up.URL())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "model=streamtest") || !strings.Contains(log.String(), "SLUICE_MODEL") {
		t.Errorf("the start-up log does not name the model found and SLUICE_MODEL:\n%s", log)
	}
	if ids := listModels(t, base); len(ids) != 1 || ids[0] != "streamtest" {
		t.Errorf("GET /v1/models lists %v, want the upstream's [streamtest]", ids)
	}
	code, out, _ := runCLI(t, base, "ask", "which model answers?", "--nocache")
	if code != exitOK || out != "hello" {
		t.Fatalf("ask: exit %d %q", code, out)
	}
	if got := up.LastRequest().Model; got != "streamtest" {
		t.Errorf("model sent upstream %q, want streamtest", got)
	}
}

// TestNoModelAndNoUpstreamRefusesToStart: without SLUICE_MODEL an
// unreachable upstream is an error at start that names SLUICE_MODEL; with
// it, a warning and sluice serves.
func TestNoModelAndNoUpstreamRefusesToStart(t *testing.T) {
	dead := "http://" + closedPort(t) + "/v1"
	_, _, err := startWithLog(t, nil, "SLUICE_UPSTREAM", dead)
	if err == nil || !strings.Contains(err.Error(), "SLUICE_MODEL") {
		t.Fatalf("start without a model: %v, want an error naming SLUICE_MODEL", err)
	}
	base, log, err := startWithLog(t, []string{"-model", "m1"}, "SLUICE_UPSTREAM", dead)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "level=WARN msg=\"upstream not reachable at start") {
		t.Errorf("no warning of the unreachable upstream:\n%s", log)
	}
	if ids := listModels(t, base); len(ids) != 1 || ids[0] != "m1" {
		t.Errorf("GET /v1/models with the upstream down lists %v, want the default [m1]", ids)
	}
}

// TestModelNotServedWarns: SLUICE_MODEL that the upstream does not list
// is a warning at start.
func TestModelNotServedWarns(t *testing.T) {
	up := upstreamtest.NewServer(t)
	_, log, err := startWithLog(t, nil, "SLUICE_UPSTREAM", up.URL(), "SLUICE_MODEL", "llama9")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "SLUICE_MODEL is not among the upstream's models") {
		t.Errorf("no warning:\n%s", log)
	}
}

// TestStartupWarnings: a misspelt SLUICE_* variable is named with the
// closest setting; Redis sharing is logged with its prefix.
func TestStartupWarnings(t *testing.T) {
	_, log, err := startWithLog(t, nil, "SLUICE_BUDGT", "3", "SLUICE_SERVER", "http://x", "SLUICE_TEST_ANYTHING", "1")
	if err != nil {
		t.Fatal(err)
	}
	out := log.String()
	if !strings.Contains(out, "did you mean SLUICE_BUDGET?") || !strings.Contains(out, "var=SLUICE_BUDGT") {
		t.Errorf("no warning naming SLUICE_BUDGET for SLUICE_BUDGT:\n%s", out)
	}
	if strings.Contains(out, "SLUICE_SERVER") || strings.Contains(out, "SLUICE_TEST_ANYTHING") {
		t.Errorf("a known client or test variable was warned of:\n%s", out)
	}
	if strings.Contains(out, "redis") {
		t.Errorf("redis mentioned without SLUICE_REDIS_URL:\n%s", out)
	}
}

func TestUnknownSettingsComeFromTheTable(t *testing.T) {
	got := unknownSettings([]string{"SLUICE_TOTAL_TIMEOUT=1s", "SLUICE_TOTL_TIMEOUT=1s", "SLUICE_CACHE_TRESHOLD=0.9", "PATH=/bin", "SLUICE_API_KEY=k"})
	want := []unknownVar{{"SLUICE_CACHE_TRESHOLD", "SLUICE_CACHE_THRESHOLD"}, {"SLUICE_TOTL_TIMEOUT", "SLUICE_TOTAL_TIMEOUT"}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Fatalf("unknown %v, want %v", got, want)
	}
	for _, st := range (&settings{}).table() {
		if u := unknownSettings([]string{st.env + "=x"}); len(u) != 0 {
			t.Errorf("%s is a setting but was called unknown", st.env)
		}
	}
}

// TestRedisSharingIsLogged: with SLUICE_REDIS_URL the start-up log says
// that tasks are shared, with the key prefix and no password.
func TestRedisSharingIsLogged(t *testing.T) {
	url := os.Getenv("SLUICE_TEST_REDIS_URL")
	if url == "" {
		t.Skip("SLUICE_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/9): skipping the Redis start-up log test")
	}
	_, log, err := startWithLog(t, []string{"-redis-url", url, "-redis-prefix", "sluice-test-startup:"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "redis sharing on") || !strings.Contains(log.String(), "prefix=sluice-test-startup:") {
		t.Errorf("the start-up log does not say Redis sharing is on, with its prefix:\n%s", log)
	}
}

type countingLister struct {
	mu    sync.Mutex
	calls int
}

func (c *countingLister) Models(context.Context) ([]string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	return []string{fmt.Sprint("m", c.calls)}, nil
}

// TestModelListIsReusedForItsTTL: GET /v1/models reaches the upstream
// once per SLUICE_MODELS_TTL, however many ask at once.
func TestModelListIsReusedForItsTTL(t *testing.T) {
	up := &countingLister{}
	m := newModelList(up, time.Hour, time.Second)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if ms, err := m.Models(context.Background()); err != nil || ms[0] != "m1" {
				t.Errorf("models %v %v", ms, err)
			}
		}()
	}
	wg.Wait()
	if up.calls != 1 {
		t.Fatalf("%d upstream calls within the TTL, want 1", up.calls)
	}
	m.ttl = 0 // expired from now on
	if ms, _ := m.Models(context.Background()); ms[0] != "m2" {
		t.Fatalf("after the TTL: %v, want a new list", ms)
	}
}
