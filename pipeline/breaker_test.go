package pipeline_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/pipeline"
)

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

func TestBreakerOpensProbesAndCloses(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	var transitions []string
	b := pipeline.NewBreaker(pipeline.BreakerConfig{
		Failures: 3, CoolDown: time.Second, MaxCoolDown: 4 * time.Second, Now: clk.Now,
		OnTransition: func(from, to pipeline.BreakerState) { transitions = append(transitions, to.String()) },
	})
	fail := func() {
		t.Helper()
		done, _, err := b.Allow()
		if err != nil {
			t.Fatalf("Allow: %v", err)
		}
		done(pipeline.Failure)
	}
	fail()
	fail()
	if b.State() != pipeline.BreakerClosed {
		t.Fatal("opened before 3 failures")
	}
	fail()
	if _, after, err := b.Allow(); !errors.Is(err, pipeline.ErrBreakerOpen) || after != time.Second {
		t.Fatalf("open breaker: err %v after %v", err, after)
	}
	clk.Add(time.Second)
	probe, _, err := b.Allow()
	if err != nil {
		t.Fatalf("after the cool-down one probe must pass: %v", err)
	}
	if _, _, err := b.Allow(); !errors.Is(err, pipeline.ErrBreakerOpen) {
		t.Fatal("a second call passed while the probe is out")
	}
	probe(pipeline.Failure)
	// The cool-down doubled.
	clk.Add(time.Second)
	if _, _, err := b.Allow(); !errors.Is(err, pipeline.ErrBreakerOpen) {
		t.Fatal("cool-down did not grow after a failed probe")
	}
	clk.Add(time.Second)
	probe, _, err = b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	probe(pipeline.Success)
	probe(pipeline.Failure) // only the first outcome counts
	if b.State() != pipeline.BreakerClosed {
		t.Fatalf("state %v after a good probe", b.State())
	}
	want := []string{"open", "half_open", "open", "half_open", "closed"}
	if len(transitions) != len(want) {
		t.Fatalf("transitions %v, want %v", transitions, want)
	}
	for i := range want {
		if transitions[i] != want[i] {
			t.Fatalf("transitions %v, want %v", transitions, want)
		}
	}
}

func TestBreakerSuccessResetsCount(t *testing.T) {
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Failures: 2})
	for range 10 {
		d, _, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		d(pipeline.Failure)
		d, _, _ = b.Allow()
		d(pipeline.Success)
	}
	if b.State() != pipeline.BreakerClosed {
		t.Fatal("non-consecutive failures opened the breaker")
	}
}

func TestBreakerIgnoredProbeLetsNextProbe(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Failures: 1, CoolDown: time.Second, Now: clk.Now})
	d, _, _ := b.Allow()
	d(pipeline.Failure)
	clk.Add(time.Second)
	d, _, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	d(pipeline.Ignore)
	if _, _, err := b.Allow(); err != nil {
		t.Fatalf("after an ignored probe another probe must pass: %v", err)
	}
}

func TestBreakerBlocked(t *testing.T) {
	clk := &clock{now: time.Unix(0, 0)}
	b := pipeline.NewBreaker(pipeline.BreakerConfig{Failures: 1, CoolDown: time.Second, Now: clk.Now})
	if blocked, _ := b.Blocked(); blocked {
		t.Fatal("a closed breaker blocks")
	}
	d, _, _ := b.Allow()
	d(pipeline.Failure)
	if blocked, after := b.Blocked(); !blocked || after != time.Second {
		t.Fatalf("open: %v %v", blocked, after)
	}
	clk.Add(time.Second)
	if blocked, _ := b.Blocked(); blocked {
		t.Fatal("after the cool-down a probe may go: not blocked")
	}
	probe, _, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	if blocked, _ := b.Blocked(); !blocked {
		t.Fatal("half-open with the probe out must block")
	}
	probe(pipeline.Success)
	if blocked, _ := b.Blocked(); blocked {
		t.Fatal("closed again, still blocked")
	}
}
