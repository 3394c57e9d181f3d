//go:build unix

package web_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestBrowserE2E drives the browser page in a real Chromium (through
// web/e2e/browser.mjs and playwright-core) against four real sluice
// processes: A answers normally, B cuts answers (short total timeout,
// slow simulated upstream), C has one slot and no queue, so a second
// question while one is streaming is refused with a real 503 overloaded
// and Retry-After, D has one slot and a queue, so a second question waits
// queued. It skips when node, /usr/bin/chromium or
// web/e2e/node_modules/playwright-core is missing, unless
// SLUICE_REQUIRE_E2E=1. Screenshots go to $SLUICE_ARTIFACTS or a temp dir.
//
// Setup: apt-get install -y chromium && (cd web/e2e && npm ci).
func TestBrowserE2E(t *testing.T) {
	const chromium = "/usr/bin/chromium"
	required := os.Getenv("SLUICE_REQUIRE_E2E") == "1"
	unavailable := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if required {
			t.Fatalf("SLUICE_REQUIRE_E2E=1 but %s", msg)
		}
		t.Skipf("browser e2e skipped: %s (set SLUICE_REQUIRE_E2E=1 to make this a failure)", msg)
	}
	if testing.Short() {
		unavailable("-short")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		unavailable("node is not on PATH")
	}
	if _, err := os.Stat(chromium); err != nil {
		unavailable("%s is missing (apt-get install -y chromium)", chromium)
	}
	webDir, err := os.Getwd() // go test runs in the package directory
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(webDir, "e2e", "browser.mjs")
	if _, err := os.Stat(filepath.Join(webDir, "e2e", "node_modules", "playwright-core")); err != nil {
		unavailable("web/e2e/node_modules/playwright-core is missing (cd web/e2e && npm install)")
	}

	shots := os.Getenv("SLUICE_ARTIFACTS")
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots: %s", shots)

	bin := buildSluice(t, moduleRoot(t, webDir))
	a := startSluice(t, bin, "A", "-sim-ttft", "100ms", "-sim-gap", "30ms")
	b := startSluice(t, bin, "B", "-total-timeout", "1s", "-sim-gap", "150ms", "-sim-ttft", "50ms")
	c := startSluice(t, bin, "C", "-budget", "1", "-queue", "0", "-sim-ttft", "50ms", "-sim-gap", "100ms")
	d := startSluice(t, bin, "D", "-budget", "1", "-sim-ttft", "50ms", "-sim-gap", "100ms")

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, a.url, b.url, c.url, d.url, shots)
	cmd.Dir = filepath.Dir(script)
	cmd.Env = append(os.Environ(), "CHROMIUM="+chromium)
	// node and the Chromium it starts share a process group, so a timeout
	// ends them all (and with them the output pipe).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = w, w
	if err := cmd.Start(); err != nil {
		w.Close()
		r.Close()
		t.Fatalf("starting node: %v", err)
	}
	w.Close()
	var summary string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		if strings.HasPrefix(line, "browser e2e: ") {
			summary = line
		}
	}
	r.Close()
	err = cmd.Wait()
	if ctx.Err() != nil {
		t.Errorf("browser e2e timed out: %v", ctx.Err())
	}
	if err != nil {
		t.Errorf("browser e2e failed: %v", err)
	}
	if !regexp.MustCompile(`^browser e2e: [1-9]\d* passed, 0 failed$`).MatchString(summary) {
		t.Errorf("no passing summary line; got %q", summary)
	}
	if t.Failed() {
		a.dumpLog(t)
		b.dumpLog(t)
		c.dumpLog(t)
		d.dumpLog(t)
	}
}

// moduleRoot finds the module's root directory (where go.mod is).
func moduleRoot(t *testing.T, webDir string) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if gomod := strings.TrimSpace(string(out)); err == nil && gomod != "" && gomod != os.DevNull {
		return filepath.Dir(gomod)
	}
	root := filepath.Dir(webDir)
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("cannot find the module root: %v", err)
	}
	return root
}

func buildSluice(t *testing.T, root string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "sluice")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	return bin
}

// sluiceProc is one sluice process under test.
type sluiceProc struct {
	name, url, log string
}

func (p *sluiceProc) dumpLog(t *testing.T) {
	t.Helper()
	b, err := os.ReadFile(p.log)
	if err != nil {
		t.Logf("sluice %s log: %v", p.name, err)
		return
	}
	t.Logf("sluice %s log:\n%s", p.name, b)
}

// startSluice starts the binary on a free local port with the given flags,
// waits for /healthz, and stops it (SIGTERM, then wait) at cleanup.
func startSluice(t *testing.T, bin, name string, flags ...string) *sluiceProc {
	t.Helper()
	addr := freeAddr(t)
	dir := t.TempDir()
	p := &sluiceProc{name: name, url: "http://" + addr, log: filepath.Join(dir, "sluice-"+name+".log")}
	logf, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, append([]string{"-addr", addr}, flags...)...)
	// Only defaults and the flags above: no SLUICE_* from the caller's
	// environment (auth, Redis, ...) changes what the page meets.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SLUICE_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting sluice %s: %v", name, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }() // ends when the process does
	t.Cleanup(func() {
		defer logf.Close()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			t.Errorf("sluice %s did not stop within 15s of SIGTERM; killing it", name)
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := client.Get(p.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("sluice %s at %s %v", name, p.url, flags)
				return p
			}
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			p.dumpLog(t)
			t.Fatalf("sluice %s exited before serving: %v", name, err)
		case <-time.After(50 * time.Millisecond): // polling: the process signals nothing
		}
		if time.Now().After(deadline) {
			p.dumpLog(t)
			t.Fatalf("sluice %s: /healthz not OK within 30s (last error: %v)", name, err)
		}
	}
}

// freeAddr returns a local address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
