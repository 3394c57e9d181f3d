package redisstate_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/orchestrator/sharedtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSharedContract runs the suite every orchestrator.Shared must pass
// against a real Redis (two clients, as two instances).
func TestSharedContract(t *testing.T) {
	sharedtest.Run(t, func(t *testing.T) (orchestrator.Shared, orchestrator.Shared) {
		t.Helper()
		a, open := redistest.New(t)
		return a, open()
	})
}
