package orchestrator_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
)

// TestPriorityClassOfARequest: a request's class is its own, else its
// tenant's default, else interactive for Submit and batch for
// SubmitAsync; the task shows it and the gate counts the slot in it.
func TestPriorityClassOfARequest(t *testing.T) {
	up := &paced{chunks: []string{"a"}, gap: time.Millisecond}
	o := newOrch(t, orchestrator.Config{Budget: 4, TenantClass: map[string]pipeline.Class{"bulk": pipeline.ClassBatch}}, up, nil)
	ctx := context.Background()
	cases := []struct {
		async        bool
		tenant, prio string
		want         string
	}{
		{false, "", "", "interactive"},
		{true, "", "", "batch"},
		{false, "bulk", "", "batch"},
		{true, "bulk", "interactive", "interactive"},
		{false, "other", "batch", "batch"},
		{true, "other", "", "batch"},
	}
	for i, c := range cases {
		req := orchestrator.Request{Tenant: c.tenant, Question: "q", NoCache: true, Class: c.prio}
		submit := o.Submit
		if c.async {
			submit = o.SubmitAsync
		}
		task, err := submit(ctx, req)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if v := wait(t, task); v.Priority != c.want || v.Status != orchestrator.StatusDone {
			t.Errorf("case %d %+v: priority %q status %s, want %q", i, c, v.Priority, v.Status, c.want)
		}
	}
	st := o.Gates()[0].Stats()
	if st.Classes["interactive"].AcquiredTotal != 2 || st.Classes["batch"].AcquiredTotal != 4 {
		t.Fatalf("acquired per class %+v", st.Classes)
	}
	if _, err := o.Submit(ctx, orchestrator.Request{Question: "q", NoCache: true, Class: "urgent"}); err == nil {
		t.Fatal("an unknown class was accepted")
	}
}
