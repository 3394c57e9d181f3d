package sharedmem_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/sharedmem"
	"github.com/sluice-dev/sluice/orchestrator/sharedtest"
	"github.com/sluice-dev/sluice/stream"
)

// The contract suite (orchestrator/sharedtest) is redisstate's too: the
// two implementations of orchestrator.Shared agree on what the
// orchestrator relies on. The other tests are the Mem's own: the outage,
// the restart, expiry and bounded reads.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSharedContract runs the suite every orchestrator.Shared must pass
// against a Mem (one value serves both instances).
func TestSharedContract(t *testing.T) {
	sharedtest.Run(t, func(*testing.T) (orchestrator.Shared, orchestrator.Shared) {
		m := sharedmem.New()
		return m, m
	})
}

// TestOutageFailsEveryCall: while the Mem is down every call fails, a
// blocked read too; recovered, the state is as it was.
func TestOutageFailsEveryCall(t *testing.T) {
	m := sharedmem.New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const id = "task-outage"
	rec := orchestrator.Record{View: orchestrator.View{ID: id, Status: orchestrator.StatusRunning}}
	if err := m.Start(ctx, rec, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := m.Append(ctx, id, 1, []string{"a"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() {
		_, _, err := m.Read(ctx, id, 1, 5*time.Second)
		blocked <- err
	}()
	m.Fail(nil)
	if err := <-blocked; !errors.Is(err, sharedmem.ErrDown) {
		t.Fatalf("blocked read during the outage: %v, want ErrDown", err)
	}
	calls := map[string]func() error{
		"Start":  func() error { return m.Start(ctx, rec, time.Minute) },
		"Append": func() error { return m.Append(ctx, id, 2, []string{"b"}, time.Minute) },
		"Finish": func() error {
			return m.Finish(ctx, rec, stream.End{Event: orchestrator.EventDone, Chunks: 1}, time.Minute)
		},
		"Load":          func() error { _, err := m.Load(ctx, id); return err },
		"Read":          func() error { _, _, err := m.Read(ctx, id, 0, 0); return err },
		"RequestCancel": func() error { return m.RequestCancel(ctx, id) },
		"Beat":          func() error { _, err := m.Beat(ctx, "i", time.Minute); return err },
		"Alive":         func() error { _, err := m.Alive(ctx, "i"); return err },
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, sharedmem.ErrDown) {
			t.Errorf("%s during the outage: %v, want ErrDown", name, err)
		}
	}
	m.Recover()
	if d, end, err := m.Read(ctx, id, 0, 0); err != nil || !slices.Equal(d, []string{"a"}) || end != nil {
		t.Fatalf("log after the outage: %q %+v %v", d, end, err)
	}
}

// TestRestartEmpties: after a restart the tasks, heartbeats and marker
// are gone: writes at a gap are refused and the next beat reports the
// state lost.
func TestRestartEmpties(t *testing.T) {
	m := sharedmem.New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const id = "task-restart"
	if _, err := m.Beat(ctx, "i", time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := m.Start(ctx, orchestrator.Record{View: orchestrator.View{ID: id}}, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := m.Append(ctx, id, 1, []string{"a"}, time.Minute); err != nil {
		t.Fatal(err)
	}
	m.Restart()
	if _, err := m.Load(ctx, id); !errors.Is(err, orchestrator.ErrNotShared) {
		t.Fatalf("Load after the restart: %v, want ErrNotShared", err)
	}
	if err := m.Append(ctx, id, 2, []string{"b"}, time.Minute); !errors.Is(err, orchestrator.ErrSharedGap) {
		t.Fatalf("Append after the restart: %v, want ErrSharedGap", err)
	}
	if ok, err := m.Alive(ctx, "i"); err != nil || ok {
		t.Fatalf("Alive after the restart: %v %v", ok, err)
	}
	if lost, err := m.Beat(ctx, "i", time.Minute); err != nil || !lost {
		t.Fatalf("first beat after the restart: lost=%v %v, want lost", lost, err)
	}
}

// TestRecordsExpire: a record and its log are gone after their TTL.
func TestRecordsExpire(t *testing.T) {
	m := sharedmem.New()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const id = "task-ttl"
	if err := m.Start(ctx, orchestrator.Record{View: orchestrator.View{ID: id}}, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := m.Append(ctx, id, 1, []string{"a"}, 50*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := m.Load(ctx, id)
		d, _, rerr := m.Read(ctx, id, 0, 0)
		if errors.Is(err, orchestrator.ErrNotShared) && rerr == nil && d == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task never expired: %v %q %v", err, d, rerr)
		}
		time.Sleep(10 * time.Millisecond) // polling an expiry
	}
}

// TestReadBoundedByContext: a blocked read ends with its context.
func TestReadBoundedByContext(t *testing.T) {
	m := sharedmem.New()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err := m.Read(ctx, "none", 0, time.Minute); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Read past its context: %v", err)
	}
}
