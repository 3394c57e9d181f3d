//go:build unix

package main

import (
	"fmt"
	"io"
	"log/slog"
	"syscall"
)

// fdMargin are the open files kept beyond the connection cap: the
// listener, upstream and Redis connections, log files, and the over-cap
// connections being answered 503.
const fdMargin = 256

// fitConns raises the process's open-file soft limit to its hard limit,
// logs both, and returns SLUICE_MAX_CONNS lowered (with a warning) so that
// the served connections, the reserved ones and fdMargin fit in the
// limit: past it accept fails and nobody, not even /healthz, gets an
// answer.
func fitConns(s *settings, log *slog.Logger) int {
	soft, hard, err := raiseFileLimit()
	if err != nil {
		log.Warn("open-file limit unknown; connection cap not checked against it", "err", err.Error(), "max_conns", s.MaxConns)
		return s.MaxConns
	}
	log.Info("open-file limit", "soft", soft, "hard", hard)
	room := int64(min(soft, 1<<40)) - int64(s.OpsConns) - 4*int64(s.OpsConns) - fdMargin
	if int64(s.MaxConns) <= room {
		return s.MaxConns
	}
	n := int(max(room, 1))
	log.Warn("SLUICE_MAX_CONNS lowered to fit the open-file limit (raise it with ulimit -n or LimitNOFILE)",
		"max_conns", s.MaxConns, "lowered_to", n, "open_file_limit", soft)
	return n
}

// raiseFileLimit sets RLIMIT_NOFILE's soft limit to its hard limit and
// returns the limits in force.
//
// NOTE: since Go 1.19 the runtime already raises the soft limit at start
// on Linux and macOS; doing it here as well keeps the figure we log
// independent of that, and covers the other Unix systems.
func raiseFileLimit() (soft, hard uint64, err error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, 0, err
	}
	if rl.Cur < rl.Max {
		want := rl
		want.Cur = rl.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &want); err == nil {
			rl = want
		}
	}
	return uint64(rl.Cur), uint64(rl.Max), nil
}

// raiseOpenFiles raises the open-file soft limit for the load generator
// and warns when n connections do not fit in it.
func raiseOpenFiles(stderr io.Writer, n int) {
	soft, _, err := raiseFileLimit()
	if err == nil && soft < uint64(n)+fdMargin {
		fmt.Fprintf(stderr, "sluice: load: %d streams need more open files than the limit (%d): raise it with ulimit -n\n", n, soft)
	}
}
