// Package logagg folds repeated log records: its Handler is an
// slog.Handler that logs the first of identical warnings and errors within
// a window and replaces the rest with one summary line, so that a failing
// dependency produces one log line per window instead of one per request.
// cmd/sluice puts it in front of the process logger and counts what it
// holds back with the metrics package's LogSuppressed and LogUntracked.
package logagg
