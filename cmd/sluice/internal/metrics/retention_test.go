package metrics_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/sluice-dev/sluice/orchestrator"
)

// The retained finished tasks, their bytes and the tasks dropped to keep
// the retention limits are read from the task store at scrape time.
func TestRetentionMetrics(t *testing.T) {
	e := newEnv(t, orchestrator.Config{MaxRetainedTasks: 3})
	for i := range 5 {
		if st, ev := e.streamAll("retained " + strconv.Itoa(i)); st != http.StatusOK || ev != "done" {
			t.Fatalf("stream %d: %d %q", i, st, ev)
		}
	}
	f := e.scrape()
	if got := f.get("sluice_tasks_retained"); got != 3 {
		t.Fatalf("sluice_tasks_retained = %v, want 3", got)
	}
	if got := f.get("sluice_tasks_evicted_total"); got != 2 {
		t.Fatalf("sluice_tasks_evicted_total = %v, want 2", got)
	}
	st, _ := e.Orch.Retention()
	if got := f.get("sluice_tasks_retained_bytes"); got != float64(st.FinishedBytes) || got < 3*2048 {
		t.Fatalf("sluice_tasks_retained_bytes = %v, store says %d", got, st.FinishedBytes)
	}
}
