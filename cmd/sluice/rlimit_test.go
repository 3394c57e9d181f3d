//go:build unix

package main

import (
	"io"
	"log/slog"
	"syscall"
	"testing"
)

// TestConnCapFitsTheFileLimit: the open-file soft limit is raised to the
// hard limit, and a connection cap beyond it is lowered so that accept
// never fails at the file limit (where nobody gets an answer).
func TestConnCapFitsTheFileLimit(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	n := fitConns(&settings{MaxConns: 1 << 30, OpsConns: 16}, log)
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur != rl.Max {
		t.Errorf("soft limit %d not raised to the hard limit %d", rl.Cur, rl.Max)
	}
	if uint64(n)+16*5+fdMargin > rl.Cur || n < 1 {
		t.Fatalf("cap %d does not fit the open-file limit %d", n, rl.Cur)
	}
	if got := fitConns(&settings{MaxConns: 100, OpsConns: 16}, log); got != 100 {
		t.Fatalf("a cap that fits was changed to %d", got)
	}
}
