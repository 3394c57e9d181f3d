package pipeline_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/pipeline"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestGateRefusesWhenFullAndReleasesOnce(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Name: "up", Limit: 2})
	p1, err := g.TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	p2, err := g.TryAcquire()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := g.TryAcquire(); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("third acquire: got %v, want ErrOverloaded", err)
	}
	if !p1.Release() || p1.Release() {
		t.Fatal("Release must count only its first call")
	}
	p3, err := g.TryAcquire()
	if err != nil {
		t.Fatalf("after a release a slot must be free: %v", err)
	}
	p2.Release()
	p3.Release()
	st := g.Stats()
	if st.InFlight != 0 || st.AcquiredTotal != 3 || st.ReleasedTotal != 3 || st.RejectedTotal != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestGateFIFO(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 1})
	hold, _ := g.TryAcquire()
	const n = 5
	claims := make([]*pipeline.Claim, n)
	for i := range claims {
		c, err := g.Enqueue()
		if err != nil {
			t.Fatal(err)
		}
		claims[i] = c
	}
	if g.Stats().Queued != n {
		t.Fatalf("queued = %d, want %d", g.Stats().Queued, n)
	}
	hold.Release()
	for i, c := range claims {
		select {
		case <-c.Ready():
		case <-time.After(5 * time.Second):
			t.Fatalf("claim %d not granted", i)
		}
		// Only this claim may be granted: the next must still wait.
		if i+1 < n {
			select {
			case <-claims[i+1].Ready():
				t.Fatalf("claim %d granted before claim %d released", i+1, i)
			default:
			}
		}
		p, err := c.Wait(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		p.Release()
	}
	if st := g.Stats(); st.InFlight != 0 || st.Queued != 0 {
		t.Fatalf("stats %+v", st)
	}
}

func TestGateQueueBound(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 1, QueueLimit: 2})
	p, _ := g.TryAcquire()
	c1, _ := g.Enqueue()
	c2, _ := g.Enqueue()
	if _, err := g.Enqueue(); !errors.Is(err, pipeline.ErrQueueFull) {
		t.Fatalf("got %v, want ErrQueueFull", err)
	}
	c1.Abandon()
	c3, err := g.Enqueue()
	if err != nil {
		t.Fatalf("a cancelled claim must free its queue place: %v", err)
	}
	p.Release()
	c2.Abandon() // granted and never taken: Abandon releases it, c3 gets it
	select {
	case <-c3.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("c3 not granted")
	}
	c3.Abandon()
	if st := g.Stats(); st.InFlight != 0 || st.Queued != 0 || st.AcquiredTotal != st.ReleasedTotal {
		t.Fatalf("stats %+v", st)
	}
}

func TestGateAcquireWaitsThenTimesOut(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 1})
	p, _ := g.TryAcquire()
	start := time.Now()
	if _, err := g.Acquire(context.Background(), 50*time.Millisecond); !errors.Is(err, pipeline.ErrOverloaded) {
		t.Fatalf("got %v, want ErrOverloaded", err)
	}
	if el := time.Since(start); el < 50*time.Millisecond {
		t.Fatalf("gave up after %v, before its wait", el)
	}
	// A waiter is granted when the holder releases.
	got := make(chan error, 1)
	go func() {
		q, err := g.Acquire(context.Background(), 10*time.Second)
		if err == nil {
			q.Release()
		}
		got <- err
	}()
	for g.Stats().Waiting == 0 {
		time.Sleep(time.Millisecond) // poll until the waiter is in line
	}
	p.Release()
	if err := <-got; err != nil {
		t.Fatal(err)
	}
}

// TestGateStorm races acquires, cancels and releases and checks the two
// invariants: never more than Limit in flight, and every permit returned.
func TestGateStorm(t *testing.T) {
	const limit = 4
	g := pipeline.NewGate(pipeline.GateConfig{Limit: limit, QueueLimit: 64})
	var cur, peak atomic.Int64
	var wg sync.WaitGroup
	for i := range 2000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var p *pipeline.Permit
			var err error
			switch i % 3 {
			case 0:
				p, err = g.TryAcquire()
			case 1:
				p, err = g.Acquire(context.Background(), time.Duration(i%5)*time.Millisecond)
			default:
				c, cerr := g.Enqueue()
				if cerr != nil {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%7)*time.Millisecond)
				p, err = c.Wait(ctx)
				cancel()
			}
			if err != nil {
				return
			}
			n := cur.Add(1)
			for {
				old := peak.Load()
				if n <= old || peak.CompareAndSwap(old, n) {
					break
				}
			}
			time.Sleep(time.Duration(i%3) * 100 * time.Microsecond)
			cur.Add(-1)
			p.Release()
			p.Release() // a second release must change nothing
		}()
	}
	wg.Wait()
	st := g.Stats()
	if peak.Load() > limit {
		t.Fatalf("peak in flight %d > limit %d", peak.Load(), limit)
	}
	if st.InFlight != 0 || st.Waiting != 0 || st.AcquiredTotal != st.ReleasedTotal {
		t.Fatalf("after the storm: %+v", st)
	}
}

// TestGateCloseWakesWaiters: Close refuses new claims and wakes the
// waiting ones at once with ErrGateClosed, while held permits stay valid.
func TestGateCloseWakesWaiters(t *testing.T) {
	g := pipeline.NewGate(pipeline.GateConfig{Limit: 1})
	held, _ := g.TryAcquire()
	queued, _ := g.Enqueue()
	waited := make(chan error, 2)
	go func() {
		_, err := g.Acquire(context.Background(), time.Hour)
		waited <- err
	}()
	go func() {
		_, err := queued.Wait(context.Background())
		waited <- err
	}()
	for g.Stats().Waiting != 2 {
		time.Sleep(time.Millisecond) // poll until both are in line
	}
	g.Close()
	for range 2 {
		select {
		case err := <-waited:
			if !errors.Is(err, pipeline.ErrGateClosed) {
				t.Fatalf("waiter got %v, want ErrGateClosed", err)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("a waiter was not woken by Close")
		}
	}
	if _, err := g.Enqueue(); !errors.Is(err, pipeline.ErrGateClosed) {
		t.Fatalf("claim after Close: %v", err)
	}
	if !held.Release() {
		t.Fatal("a held permit must stay releasable after Close")
	}
	if st := g.Stats(); st.InFlight != 0 || st.Waiting != 0 || st.RejectedTotal != 0 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := queued.Wait(context.Background()); !errors.Is(err, pipeline.ErrClaimSettled) {
		t.Fatalf("Wait on a settled claim: %v", err)
	}
}
