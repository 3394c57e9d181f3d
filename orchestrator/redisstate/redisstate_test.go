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
// against each real Redis deployment (redistest.Targets: the server and
// the cluster), with two clients, as two instances.
func TestSharedContract(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			sharedtest.Run(t, func(t *testing.T) (orchestrator.Shared, orchestrator.Shared) {
				t.Helper()
				a, open := redistest.NewOn(t, target.URL)
				return a, open()
			})
		})
	}
}
