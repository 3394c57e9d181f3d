package orchestrator

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/sluice-dev/sluice/stream"
)

// Shared is the state that several sluice instances share (Redis when
// SLUICE_REDIS_URL is set). Every task an instance runs is published
// there as a record and a log of its deltas, so that any instance can
// show it, follow its events and have it cancelled. Implementations must
// be safe for concurrent use and bound every call by ctx.
type Shared interface {
	// Start records a task that began on this instance; the record
	// expires after ttl unless Finish renews it.
	Start(ctx context.Context, rec Record, ttl time.Duration) error
	// Append adds deltas with sequence numbers first, first+1, ... to the
	// task's log. It is idempotent: entries already written are skipped,
	// so a write whose answer was lost can be sent again.
	Append(ctx context.Context, id string, first int, deltas []string, ttl time.Duration) error
	// Finish adds the terminal event to the log and replaces the record
	// with the final one; both expire after ttl. It is idempotent too.
	Finish(ctx context.Context, rec Record, end stream.End, ttl time.Duration) error
	// Load returns the record of a task, or ErrNotShared.
	Load(ctx context.Context, id string) (Record, error)
	// Read returns the log entries after sequence number after: deltas
	// in order, then the end if the page reaches it. With wait > 0 it
	// waits up to wait for the first entry; an empty page means nothing
	// came in time.
	Read(ctx context.Context, id string, after int, wait time.Duration) (deltas []string, end *stream.End, err error)
	// RequestCancel asks the instance running the task to cancel it.
	// Delivery is not guaranteed (pub/sub): the caller checks the task.
	RequestCancel(ctx context.Context, id string) error
	// Cancels delivers the ids whose cancellation was requested, until
	// ctx ends; then the channel is closed.
	Cancels(ctx context.Context) <-chan string
}

// ErrNotShared is returned by Shared.Load for a task it does not hold.
var ErrNotShared = errors.New("orchestrator: no such shared task")

// Record is a task as it is shared between instances: its view without
// the text (the log holds that), the tenant it belongs to, and the time
// by which its owner will have ended it (its total cap).
type Record struct {
	Tenant   string    `json:"tenant"`
	Deadline time.Time `json:"deadline"`
	View     View      `json:"view"`
}

// Timing of the shared state; variables so that tests can shorten them.
var (
	// sharedCallTimeout bounds the calls to the shared state that a
	// request waits for: the write that makes a new task visible to
	// other instances, and the lookup of another instance's task.
	sharedCallTimeout = 250 * time.Millisecond
	// sharedBackOff is how long after a failed start new tasks publish
	// in the background rather than before their caller is answered.
	sharedBackOff = 5 * time.Second
	// sharedOpTimeout bounds every other call to the shared state.
	sharedOpTimeout = 2 * time.Second
	// mirrorInterval is the shortest time between two writes of one
	// task's deltas: what comes meanwhile goes in the next write.
	mirrorInterval = 20 * time.Millisecond
	// endAttempts is how many times the mirror tries to write a task's
	// end before it gives up.
	endAttempts = 3
	// followWait is how long one read of a followed log waits.
	followWait = time.Second
	// ownerGrace is how long past a task's deadline a follower waits for
	// its end before it calls the owning instance lost.
	ownerGrace = 10 * time.Second
	// remoteCancelWait bounds how long a DELETE of another instance's
	// task waits to see it end.
	remoteCancelWait = 2 * time.Second
)

// record returns t as a shared record.
func (t *Task) record() Record {
	v := t.View()
	v.Text = "" // the log holds the text
	return Record{Tenant: t.Tenant, Deadline: t.deadline, View: v}
}

// share publishes a local task: its record before the caller answers,
// so that any instance finds the task as soon as its id is known, then
// (in a goroutine) its deltas, its end and its final record. The caller
// has counted the goroutine in o.running. If the shared state fails, the
// task goes on unshared.
func (o *Orchestrator) share(t *Task) {
	if until := o.sharedDown.Load(); until != 0 && time.Now().UnixNano() < until {
		// The shared state failed a moment ago: do not make this request
		// wait for it too. Publish in the background instead.
		go func() {
			if o.start(t) {
				o.mirror(t)
			} else {
				o.running.Done()
			}
		}()
		return
	}
	if !o.start(t) {
		o.running.Done()
		return
	}
	go o.mirror(t)
}

// start writes a task's first record and reports whether it did. After a
// failure, new tasks publish in the background for a while.
func (o *Orchestrator) start(t *Task) bool {
	ctx, cancel := context.WithTimeout(o.root, sharedCallTimeout)
	defer cancel()
	if err := o.shared.Start(ctx, t.record(), o.cfg.TotalTimeout+o.cfg.TaskTTL); err != nil {
		o.sharedDown.Store(time.Now().Add(sharedBackOff).UnixNano())
		o.log.Warn("shared state write failed; other instances cannot see this task", "task_id", t.ID, "op", "start", "err", err)
		return false
	}
	o.sharedDown.Store(0)
	return true
}

// mirror copies a local task's transcript to the shared state. It is one
// more reader of the transcript, so it never slows the task: it writes
// what is pending at most every mirrorInterval, and a slow shared store
// only makes its pages bigger. A failed write is sent again (writes are
// idempotent) with a growing pause while the task runs, and the end is
// tried endAttempts times.
func (o *Orchestrator) mirror(t *Task) {
	defer o.running.Done()
	log := o.log.With("task_id", t.ID)
	write := func(op string, f func(ctx context.Context) error) bool {
		ctx, cancel := context.WithTimeout(context.Background(), sharedOpTimeout)
		defer cancel()
		err := f(ctx)
		if err != nil {
			log.Warn("shared state write failed; will retry", "op", op, "err", err)
		}
		return err == nil
	}
	ttl := o.cfg.TotalTimeout + o.cfg.TaskTTL
	pace := time.NewTimer(0)
	defer pace.Stop()
	after, failures := 0, 0
	for {
		p := t.tr.Read(after, 0)
		ok := true
		if len(p.Deltas) > 0 && after == 0 && p.End == nil {
			// The first token came: the record gets its TTFT before
			// delta 1 is visible elsewhere (an ended task's final record
			// comes with its end).
			ok = write("start", func(ctx context.Context) error {
				return o.shared.Start(ctx, t.record(), ttl)
			})
		}
		if ok && len(p.Deltas) > 0 {
			ok = write("append", func(ctx context.Context) error {
				return o.shared.Append(ctx, t.ID, p.First, p.Deltas, ttl)
			})
			if ok {
				after = p.Last()
			}
		}
		if ok && p.End != nil {
			<-t.done // the status is set just after the transcript ends
			ok = write("finish", func(ctx context.Context) error {
				return o.shared.Finish(ctx, t.record(), *p.End, o.cfg.TaskTTL)
			})
			if ok {
				return
			}
		}
		if !ok {
			failures++
			if p.End != nil && failures >= endAttempts {
				log.Error("shared state: gave up writing this task; other instances will call it lost", "attempts", failures)
				return
			}
			pace.Reset(min(100*time.Millisecond<<failures, 2*time.Second))
			<-pace.C // bounded: at most 2 s, and the task's deadline bounds the rounds
			continue
		}
		failures = 0
		if len(p.Deltas) > 0 {
			// Let the next deltas gather for a moment: one write per
			// interval instead of one per chunk, unless the task ends.
			pace.Reset(mirrorInterval)
			select {
			case <-pace.C:
			case <-t.done:
			}
			continue
		}
		<-p.Changed // the task always ends: its deadline bounds this wait
	}
}

// remote returns another instance's task as it stands in the shared
// state: its record and as much of its log as the call budget allows. A
// finished one is whole, and kept here (final tasks never change); a
// running one is a snapshot, kept nowhere (see follow for a live one).
// It returns nil when the task is unknown or the shared state fails.
func (o *Orchestrator) remote(id string) *Task {
	ctx, cancel := context.WithTimeout(o.root, sharedCallTimeout)
	defer cancel()
	rec, err := o.shared.Load(ctx, id)
	if err != nil {
		if !errors.Is(err, ErrNotShared) {
			o.log.Warn("shared state read failed", "task_id", id, "err", err)
		}
		return nil
	}
	v := rec.View
	t := &Task{
		ID: v.ID, Tenant: rec.Tenant, Model: v.Model, Namespace: v.Namespace, Upstream: v.Upstream,
		CreatedAt: v.CreatedAt, Cache: v.Cache, remote: true, deadline: rec.Deadline,
		tr: stream.NewTranscript(), done: make(chan struct{}),
		status: v.Status, retries: v.Retries,
	}
	if v.Status.Final() {
		// Final only once the end is in the log: the record can run
		// ahead of it (a task that ended before it was published).
		t.status = StatusRunning
	}
	if v.FirstTokenMs != nil {
		t.firstToken = max(time.Duration(*v.FirstTokenMs)*time.Millisecond, time.Microsecond)
	}
	t.cancel = func(error) {
		if t.Status().Final() {
			return
		}
		ctx, cancel := context.WithTimeout(o.root, sharedOpTimeout)
		defer cancel()
		if err := o.shared.RequestCancel(ctx, id); err != nil {
			o.log.Warn("shared cancel failed", "task_id", id, "err", err)
		}
	}
	f := &follower{o: o, t: t, rec: rec, log: o.log.With("task_id", id)}
	for {
		ended, n := f.pull(ctx, 0)
		switch {
		case ended:
			o.keep(t)
			return t
		case f.ownerLost():
			f.endLost() // shown as failed, not kept: a later lookup asks again
			return t
		case n == 0 || ctx.Err() != nil:
			t.follower = f
			return t
		}
	}
}

// keep stores a followed task that ended with its owner's end.
func (o *Orchestrator) keep(t *Task) {
	o.followMu.Lock()
	defer o.followMu.Unlock()
	if o.store.Get(t.ID) == nil {
		o.store.Put(t)
	}
}

// follow returns a task of another instance that readers can follow
// live: one goroutine per task on this instance copies its log into its
// transcript until the end. It returns nil if the task is not the
// tenant's.
func (o *Orchestrator) follow(tenant, id string) *Task {
	own := func(t *Task) *Task {
		if t == nil || t.Tenant != tenant {
			return nil
		}
		return t
	}
	o.followMu.Lock()
	t := o.following[id]
	o.followMu.Unlock()
	if t != nil {
		return own(t)
	}
	if t = own(o.remote(id)); t == nil || t.follower == nil {
		return t // unknown, another tenant's, or finished
	}
	o.followMu.Lock()
	defer o.followMu.Unlock()
	if cur := o.following[id]; cur != nil {
		return own(cur) // another reader started one meanwhile
	}
	if done := o.store.Get(id); done != nil {
		return own(done)
	}
	if !o.register() {
		return nil
	}
	o.following[id] = t
	go t.follower.run()
	return t
}

// follower copies a shared task's log into the local transcript of t.
type follower struct {
	o     *Orchestrator
	t     *Task
	rec   Record // the owner's record; the final one once the end came
	after int    // the last sequence number copied
	log   *slog.Logger
}

// run follows until the end, until the owning instance is presumed lost,
// or until Shutdown. Only an end read from the log is kept afterwards: an
// end made up here (lost owner, shutdown) is not, so that a later lookup
// asks the shared state again.
func (f *follower) run() {
	o, t := f.o, f.t
	defer o.running.Done()
	defer func() {
		o.followMu.Lock()
		delete(o.following, t.ID)
		o.followMu.Unlock()
	}()
	for {
		ctx, cancel := context.WithTimeout(o.root, followWait+sharedOpTimeout)
		ended, _ := f.pull(ctx, followWait)
		cancel()
		switch {
		case ended:
			o.keep(t)
			return
		case o.root.Err() != nil:
			f.end(stream.End{Event: "error", FinishReason: "cancelled",
				Code: CodeShuttingDown, Message: "the server is shutting down", FirstTokenMs: -1})
			return
		case f.ownerLost():
			f.endLost()
			return
		}
	}
}

// ownerLost reports whether the task has outlived its deadline by
// ownerGrace without an end in the log: the instance that ran it died, or
// could not write its end.
func (f *follower) ownerLost() bool {
	return time.Now().After(f.rec.Deadline.Add(ownerGrace))
}

// endLost ends the followed task of a lost owner.
func (f *follower) endLost() {
	f.end(stream.End{Event: "error", FinishReason: "upstream_error",
		Code: CodeUpstreamError, Message: "the instance running this task stopped answering", FirstTokenMs: -1,
		TotalMs: time.Since(f.t.CreatedAt).Milliseconds()})
}

// pull copies the log entries that come within wait (0: those already
// there) and reports whether the task ended and how many deltas came. A
// failed read is logged and paced by wait.
func (f *follower) pull(ctx context.Context, wait time.Duration) (ended bool, n int) {
	deltas, end, err := f.o.shared.Read(ctx, f.t.ID, f.after, wait)
	if err != nil {
		if ctx.Err() == nil {
			f.log.Warn("shared state read failed", "err", err)
			sleep(ctx, wait)
		}
		return false, 0
	}
	firstSeen := f.after == 0 && len(deltas) > 0
	for _, d := range deltas {
		f.t.tr.Append(d)
		f.after++
	}
	if firstSeen {
		f.t.setStatus(StatusRunning)
		// The owner refreshed the record with the TTFT before delta 1.
		if rec, err := f.o.shared.Load(ctx, f.t.ID); err == nil && rec.View.FirstTokenMs != nil {
			f.t.mu.Lock()
			f.t.firstToken = max(time.Duration(*rec.View.FirstTokenMs)*time.Millisecond, time.Microsecond)
			f.t.mu.Unlock()
		}
	}
	if end == nil {
		return false, len(deltas)
	}
	if !f.rec.View.Status.Final() {
		// The final record is written with the end: read it for the
		// status, error and retries.
		rec, err := f.o.shared.Load(ctx, f.t.ID)
		if err != nil {
			f.log.Warn("shared state read failed", "err", err)
		} else {
			f.rec = rec
		}
	}
	f.end(*end)
	return true, len(deltas)
}

// end ends the followed task. Its status comes from the owner's final
// record when there is one, else from the terminal event; it ended when
// its owner says.
func (f *follower) end(end stream.End) {
	t, v := f.t, f.rec.View
	status, reason, errInfo := v.Status, v.FinishReason, v.Error
	if !status.Final() {
		status, reason = statusOf(end), end.FinishReason
		if status == StatusFailed || status == StatusCancelled {
			errInfo = &ErrorInfo{Code: end.Code, Message: end.Message}
		}
	}
	total := time.Duration(end.TotalMs) * time.Millisecond
	t.mu.Lock()
	t.status, t.finishReason, t.err, t.total = status, reason, errInfo, total
	t.endedAt = t.CreatedAt.Add(total)
	if end.FirstTokenMs >= 0 {
		t.firstToken = max(time.Duration(end.FirstTokenMs)*time.Millisecond, time.Microsecond)
	}
	t.retries = max(t.retries, v.Retries)
	t.mu.Unlock()
	t.tr.Finish(end) // after the status, as for a local task
	close(t.done)
}

// statusOf derives a task status from its terminal event.
func statusOf(end stream.End) Status {
	switch {
	case end.Event == "done":
		return StatusDone
	case end.Event == "partial":
		return StatusPartial
	case end.Code == CodeCancelled:
		return StatusCancelled
	default:
		return StatusFailed
	}
}

// listenCancels cancels the local tasks other instances ask to cancel.
func (o *Orchestrator) listenCancels() {
	defer o.running.Done()
	for id := range o.shared.Cancels(o.root) {
		if t := o.store.Get(id); t != nil && !t.remote && t.cancel != nil {
			o.log.Info("task cancelled by another instance", "task_id", id)
			t.cancel(ErrCancelled)
		}
	}
}

// register counts one more goroutine that Shutdown waits for, unless the
// orchestrator is closed.
func (o *Orchestrator) register() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	o.running.Add(1)
	return true
}
