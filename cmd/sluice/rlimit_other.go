//go:build !unix

package main

import (
	"io"
	"log/slog"
)

// fitConns returns SLUICE_MAX_CONNS: this system has no RLIMIT_NOFILE to
// fit it in.
func fitConns(s *settings, _ *slog.Logger) int { return s.MaxConns }

// raiseOpenFiles does nothing: this system has no RLIMIT_NOFILE.
func raiseOpenFiles(io.Writer, int) {}
