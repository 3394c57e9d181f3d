package orchestrator_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// The orchestrator calls an upstream in one of two ways: an Emitter (the
// OpenAI client, the simulated model) on the task's goroutine under timer
// watchdogs, any other Upstream on a goroutine of its own through a
// channel and pipeline.Watch. Both must end a task the same way; the tests
// here and TestTimeouts / TestUpstreamFailures run each case both ways.

// path is one way of calling an upstream.
type path struct {
	name string
	wrap func(upstream.Upstream) upstream.Upstream
}

// asIs leaves an upstream as it is: an Emitter goes the Emitter way.
func asIs(up upstream.Upstream) upstream.Upstream { return up }

// channelOnly hides an upstream's StreamTo: it goes the channel way.
type channelOnly struct{ upstream.Upstream }

// emitterOver makes a channel-only upstream (a test fake) an Emitter whose
// StreamTo relays the fake's chunks to emit on the caller's goroutine
// and panics there when the fake panics: the orchestrator sees an
// Emitter with the fake's behaviour.
type emitterOver struct{ upstream.Upstream }

var _ upstream.Emitter = emitterOver{}

type fakePanic struct{ v any }

func (e emitterOver) StreamTo(ctx context.Context, req upstream.Request, emit func(upstream.Chunk) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make(chan upstream.Chunk)
	done := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				done <- fakePanic{p}
			}
		}()
		done <- e.Stream(ctx, req, out)
	}()
	for {
		select {
		case c := <-out:
			if err := emit(c); err != nil {
				cancel()
				<-done
				return err
			}
		case err := <-done:
			var p fakePanic
			if errors.As(err, &p) {
				panic(p.v)
			}
			return err
		}
	}
}

func (p fakePanic) Error() string { return fmt.Sprint(p.v) }

// httpPaths are the two ways for the OpenAI client.
var httpPaths = []path{
	{"emitter", asIs},
	{"channel", func(up upstream.Upstream) upstream.Upstream { return channelOnly{up} }},
}

// fakePaths are the two ways for a channel-only fake.
var fakePaths = []path{
	{"emitter", func(up upstream.Upstream) upstream.Upstream { return emitterOver{up} }},
	{"channel", asIs},
}

func TestUpstreamPathsSeeTheirWay(t *testing.T) {
	up, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: "http://127.0.0.1:1/v1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := httpPaths[0].wrap(up).(upstream.Emitter); !ok {
		t.Fatal("the OpenAI client is not an Emitter")
	}
	if _, ok := httpPaths[1].wrap(up).(upstream.Emitter); ok {
		t.Fatal("channelOnly is an Emitter")
	}
	if _, ok := fakePaths[0].wrap(burst{}).(upstream.Emitter); !ok {
		t.Fatal("emitterOver is not an Emitter")
	}
}

// panicky is an upstream client that panics before any chunk.
type panicky struct{}

func (panicky) Name() string { return "panicky" }
func (panicky) Stream(context.Context, upstream.Request, chan<- upstream.Chunk) error {
	panic("upstream client bug")
}

// A panicking upstream client fails its task (upstream_error), is an
// error for the breaker, and gives the slot back, both ways.
func TestUpstreamPanicFailsTheTaskBothWays(t *testing.T) {
	for _, p := range fakePaths {
		t.Run(p.name, func(t *testing.T) {
			obs := &attempts{}
			o := newOrchDeps(t, orchestrator.Config{Budget: 1, MaxRetries: -1, CutSettle: -1},
				orchestrator.Deps{Upstream: p.wrap(panicky{}), Logger: quiet, Observer: obs})
			for range 3 {
				task, err := o.Submit(context.Background(), orchestrator.Request{Question: "p", NoCache: true})
				if err != nil {
					t.Fatal(err)
				}
				v := wait(t, task)
				if v.Status != orchestrator.StatusFailed || v.FinishReason != string(orchestrator.FinishUpstreamError) ||
					v.Error == nil || v.Error.Code != orchestrator.CodeUpstreamError || !strings.Contains(v.Error.Message, "upstream panic: upstream client bug") {
					t.Fatalf("task %+v (%+v)", v, v.Error)
				}
			}
			waitGateIdle(t, o)
			if got := obs.outcomes(); got != "error,error,error" {
				t.Fatalf("attempt outcomes %s", got)
			}
		})
	}
}

// A panic in the task's own code while it relays a chunk (here an
// observer of the first token) is the task's, not the upstream's: the
// task ends the same way on both ways (today as cancelled, since the
// task's context is already stopped when its recover ends it) and gives
// its slot back.
func TestPanicWhileRelayingIsTheTasksBothWays(t *testing.T) {
	var ends []string
	for _, p := range fakePaths {
		t.Run(p.name, func(t *testing.T) {
			obs := &attempts{panicOnFirstToken: true}
			o := newOrchDeps(t, orchestrator.Config{Budget: 1, MaxRetries: -1, CutSettle: -1},
				orchestrator.Deps{Upstream: p.wrap(burst{chunks: []string{"a", "b"}}), Logger: quiet, Observer: obs})
			task, err := o.Submit(context.Background(), orchestrator.Request{Question: "p", NoCache: true})
			if err != nil {
				t.Fatal(err)
			}
			v := wait(t, task)
			if v.Error == nil || strings.Contains(v.Error.Message, "upstream") || v.Text != "" {
				t.Fatalf("task %+v (%+v)", v, v.Error)
			}
			ends = append(ends, fmt.Sprintf("%s/%s/%s", v.Status, v.FinishReason, v.Error.Code))
			waitGateIdle(t, o)
		})
	}
	if len(ends) != 2 || ends[0] != ends[1] {
		t.Fatalf("the two ways end differently: %v", ends)
	}
}

// TestMaxAnswerBytesCutsPartialBothWays is TestMaxAnswerBytesCutsPartial
// on both ways: the text is cut at the limit, nothing read after the cut
// is kept, the upstream call is stopped and the slot given back.
func TestMaxAnswerBytesCutsPartialBothWays(t *testing.T) {
	for _, p := range fakePaths {
		t.Run(p.name, func(t *testing.T) {
			up := &endless{chunk: "héllo ", stopped: make(chan struct{}, 1)}
			o := newOrch(t, orchestrator.Config{Budget: 1, MaxAnswerBytes: 37}, p.wrap(up), nil)
			task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q"})
			if err != nil {
				t.Fatal(err)
			}
			v := wait(t, task)
			end := task.Transcript().Ended()
			if v.Status != orchestrator.StatusPartial || v.FinishReason != string(orchestrator.FinishLength) || end.Code != orchestrator.CodeAnswerTooLarge {
				t.Fatalf("cut task %+v, end %+v", v, end)
			}
			if want := strings.Repeat("héllo ", 5) + "h"; v.Text != want {
				t.Fatalf("text %q, want %q", v.Text, want)
			}
			waitGateIdle(t, o)
			select {
			case <-up.stopped:
			case <-time.After(5 * time.Second):
				t.Fatal("the upstream call went on after the cut")
			}
		})
	}
}

// attempts records the outcome of every upstream attempt.
type attempts struct {
	panicOnFirstToken bool
	mu                sync.Mutex
	seen              []string
}

func (a *attempts) UpstreamAttempt(_, outcome string, _ int) {
	a.mu.Lock()
	a.seen = append(a.seen, outcome)
	a.mu.Unlock()
}

func (a *attempts) outcomes() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.seen, ",")
}

func (*attempts) Refused(string, string)                                                 {}
func (*attempts) BudgetWait(string, time.Duration)                                       {}
func (*attempts) BreakerTransition(string, pipeline.BreakerState, pipeline.BreakerState) {}
func (*attempts) Retry(string)                                                           {}
func (*attempts) ChunkGap(string, time.Duration)                                         {}
func (*attempts) TaskEnded(orchestrator.View)                                            {}
func (a *attempts) FirstToken(string, time.Duration) {
	if a.panicOnFirstToken {
		panic("observer bug")
	}
}

// cutThenClose is an Emitter whose answer ends at its token limit and
// whose stream then stays open until the call is cancelled, as the OpenAI
// client's read of the stream's close after [DONE] can.
type cutThenClose struct{}

func (cutThenClose) Name() string { return "cut" }
func (cutThenClose) Stream(context.Context, upstream.Request, chan<- upstream.Chunk) error {
	panic("cutThenClose is called as an Emitter")
}

func (cutThenClose) StreamTo(ctx context.Context, _ upstream.Request, emit func(upstream.Chunk) error) error {
	if err := emit(upstream.Chunk{Text: "whole up to the limit"}); err != nil {
		return err
	}
	<-ctx.Done()
	return upstream.ErrLength
}

// An answer cut at the upstream's token limit is done (finish reason
// length), not cut short by the idle watchdog when that fires while the
// client still reads the stream's close (found in review: the OpenAI
// client drains the body after [DONE] for up to 20ms).
func TestLengthCutAnswerIsWholeWhenTheWatchdogFiresAfterIt(t *testing.T) {
	o := newOrchDeps(t, orchestrator.Config{Budget: 1, IdleTimeout: 30 * time.Millisecond, MaxRetries: -1, CutSettle: -1},
		orchestrator.Deps{Upstream: cutThenClose{}, Logger: quiet})
	task, err := o.Submit(context.Background(), orchestrator.Request{Question: "q", NoCache: true})
	if err != nil {
		t.Fatal(err)
	}
	v := wait(t, task)
	if v.Status != orchestrator.StatusDone || v.FinishReason != string(orchestrator.FinishLength) || v.Text != "whole up to the limit" {
		t.Fatalf("task %+v (%+v), want done with finish reason length", v, v.Error)
	}
	waitGateIdle(t, o)
}
