package metrics_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/cmd/sluice/internal/metrics"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/web"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	_ orchestrator.Observer = (*metrics.Metrics)(nil)
	_ web.ConnObserver      = (*metrics.Metrics)(nil)
)
