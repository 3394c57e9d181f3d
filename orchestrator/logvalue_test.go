package orchestrator_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
)

// TestLogValuesArePlainStrings: the contract's named strings log as
// their plain text (as fmt printed them), through LogValue.
func TestLogValuesArePlainStrings(t *testing.T) {
	var b bytes.Buffer
	log := slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}}))
	log.Info("task end", "status", orchestrator.StatusDone, "finish_reason", orchestrator.FinishLength,
		"cache", orchestrator.CacheHit, "cache_kind", cache.KindExact)
	if want := "level=INFO msg=\"task end\" status=done finish_reason=length cache=hit cache_kind=exact\n"; b.String() != want {
		t.Fatalf("got %q, want %q", b.String(), want)
	}
}
