package redistest

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Server is a redis-server of a test's own, without persistence, that the
// test can kill and start again (empty, as a restart without persistence
// leaves it), on the same port.
type Server struct {
	t    testing.TB
	bin  string
	port int

	mu  sync.Mutex // protects cmd
	cmd *exec.Cmd  // nil while killed
}

// NewServer starts a redis-server on a free port and returns it with its
// URL (database 0). It skips t when redis-server is not installed. The
// server is killed when t ends.
func NewServer(t testing.TB) (*Server, string) {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not installed: skipping the test that kills and restarts Redis")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{t: t, bin: bin, port: port}
	s.Start()
	t.Cleanup(s.Kill)
	return s, "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
}

// Start starts the server (empty) and waits until it answers.
func (s *Server) Start() {
	s.t.Helper()
	cmd := exec.Command(s.bin, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--daemonize", "no", "--loglevel", "warning")
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("start redis-server: %v", err)
	}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	c := Client(s.t, fmt.Sprintf("redis://127.0.0.1:%d/0", s.port))
	deadline := time.Now().Add(10 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("redis-server on port %d does not answer: %v", s.port, err)
		}
		time.Sleep(20 * time.Millisecond) // polling a process that starts
	}
}

// Kill kills the server at once (SIGKILL: no goodbye to its clients) and
// waits for it to exit.
func (s *Server) Kill() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
}
