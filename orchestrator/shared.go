package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"weak"

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
	// so a write whose answer was lost can be sent again. If the record is
	// missing or the log does not reach first-1 (the shared state lost
	// the task), it writes nothing and returns ErrSharedGap.
	Append(ctx context.Context, id string, first int, deltas []string, ttl time.Duration) error
	// Finish adds the terminal event to the log and replaces the record
	// with the final one; both expire after ttl. It is idempotent too,
	// and returns ErrSharedGap as Append does.
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
	// Beat renews the liveness of instance for ttl. lost reports that the
	// shared state does not hold what it held for instance (it was
	// emptied, e.g. a restart without persistence, or this is instance's
	// first beat): every instance learns of a loss at its next beat.
	Beat(ctx context.Context, instance string, ttl time.Duration) (lost bool, err error)
	// Alive reports whether instance's last Beat has not expired.
	Alive(ctx context.Context, instance string) (bool, error)
}

// ErrNotShared is returned by Shared.Load for a task it does not hold.
var ErrNotShared = errors.New("orchestrator: no such shared task")

// ErrSharedGap is returned by Shared writes that would leave a gap: the
// shared copy of the task is missing or shorter than the write assumes.
// The owner then publishes the task again from its start.
var ErrSharedGap = errors.New("orchestrator: the shared copy of the task has a gap")

// Record is a task as it is shared between instances: its view without
// the text (the log holds that), the tenant it belongs to, the time by
// which its owner will have ended it (its total cap) and the instance
// that runs it (see Shared.Alive).
type Record struct {
	Tenant   string    `json:"tenant"`
	Deadline time.Time `json:"deadline"`
	Owner    string    `json:"owner,omitempty"`
	View     View      `json:"view"`
}

// sharedTiming is the timing of the shared state. It is a field of Config
// that only this package's tests set (export_test.go), to shorten it; its
// zero fields take the defaults (setDefaults). The heartbeat and the
// write-behind bounds are exported Config fields.
type sharedTiming struct {
	// callTimeout bounds the calls to the shared state that a request
	// waits for: the write that makes a new task visible to other
	// instances, and the lookup of another instance's task. default: 250ms
	callTimeout time.Duration
	// backOff is how long after a failed start new tasks publish in the
	// background rather than before their caller is answered. default: 5s
	backOff time.Duration
	// opTimeout bounds every other call to the shared state. default: 2s
	opTimeout time.Duration
	// mirrorPage bounds the text of one write of a task's log.
	// default: 1 MiB
	mirrorPage int
	// retryMax is the longest pause between two tries of a failed write
	// (a write is also tried again as soon as the heartbeat succeeds).
	// default: 2s
	retryMax time.Duration
	// followWait is how long one read of a followed log waits. default: 1s
	followWait time.Duration
	// ownerGrace is how long past a task's deadline a follower waits for
	// its end before it calls the owning instance lost, when the record
	// names no owner (written by an older version). default: 10s
	ownerGrace time.Duration
	// remoteCancelWait bounds how long a DELETE of another instance's
	// task waits to see it end. default: 2s
	remoteCancelWait time.Duration
}

func (s *sharedTiming) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&s.callTimeout, 250*time.Millisecond)
	def(&s.backOff, 5*time.Second)
	def(&s.opTimeout, 2*time.Second)
	if s.mirrorPage <= 0 {
		s.mirrorPage = 1 << 20
	}
	def(&s.retryMax, 2*time.Second)
	def(&s.followWait, time.Second)
	def(&s.ownerGrace, 10*time.Second)
	def(&s.remoteCancelWait, 2*time.Second)
}

// SharedStatus is the state of this instance's link to the shared state,
// as the last heartbeat found it, and of its write-behind backlog.
type SharedStatus struct {
	// Enabled is false for a single instance (no shared state).
	Enabled bool `json:"enabled"`
	// Up is whether the last heartbeat succeeded.
	Up bool `json:"up"`
	// Err is the last heartbeat's error while the state is down.
	Err string `json:"error,omitempty"`
	// PendingTasks and PendingBytes are the tasks whose writes wait for
	// the shared state to answer, and the bytes of text among them.
	PendingTasks int   `json:"pending_tasks"`
	PendingBytes int64 `json:"pending_bytes"`
	// Dropped counts the tasks whose pending writes were given up
	// (backlog full, or shutdown while the shared state was down).
	Dropped int64 `json:"dropped_total"`
}

// publisher is the write-behind state of an orchestrator's shared tasks.
type publisher struct {
	up      atomic.Bool
	lastErr atomic.Pointer[string]

	mu      sync.Mutex    // protects the fields below
	tasks   int           // tasks with pending writes
	bytes   int64         // their unpublished text
	dropped int64         // tasks given up
	back    chan struct{} // closed when the shared state answers again
	held    []*held       // local tasks published, for a republish
	// dead are the owners of followed tasks found without a heartbeat,
	// with when that was first seen (see ownerDead).
	dead map[string]time.Time
}

// held is a local task that was published: kept weakly, so that it
// leaves with the task store's copy.
type held struct {
	id     string
	t      weak.Pointer[Task]
	active atomic.Bool // a mirror publishes it now
}

// SharedStatus returns the state of the shared-state link and backlog.
func (o *Orchestrator) SharedStatus() SharedStatus {
	if o.shared == nil {
		return SharedStatus{}
	}
	p := &o.pub
	st := SharedStatus{Enabled: true, Up: p.up.Load()}
	if e := p.lastErr.Load(); e != nil && !st.Up {
		st.Err = *e
	}
	p.mu.Lock()
	st.PendingTasks, st.PendingBytes, st.Dropped = p.tasks, p.bytes, p.dropped
	p.mu.Unlock()
	return st
}

// startShared beats once (so that the state of the link is known from
// the start), then starts the goroutines of the shared state: the
// heartbeat and the listener of cancel requests. o.running counts them.
func (o *Orchestrator) startShared() {
	o.pub.back = make(chan struct{})
	o.pub.dead = map[string]time.Time{}
	o.pub.up.Store(true)
	o.beat(o.cfg.timing.callTimeout) // a fresh state: nothing is held yet to publish again
	o.running.Add(2)
	go o.heartbeat()
	go o.listenCancels()
}

// beat renews this instance's liveness within timeout, records whether
// the shared state answered, and wakes the writes waiting for it when it
// answers again. It reports whether the shared state lost its data.
func (o *Orchestrator) beat(timeout time.Duration) (lost bool) {
	ctx, cancel := context.WithTimeout(o.root, timeout)
	lost, err := o.shared.Beat(ctx, o.cfg.Instance, 3*o.cfg.SharedHeartbeat)
	cancel()
	if o.root.Err() != nil {
		return false
	}
	if err != nil {
		msg := err.Error()
		o.pub.lastErr.Store(&msg)
		if o.pub.up.Swap(false) {
			o.log.Warn("shared state unreachable: tasks are served here and their writes kept until it answers", "err", msg)
		}
		return false
	}
	if !o.pub.up.Swap(true) {
		st := o.SharedStatus()
		o.log.Info("shared state answers again: publishing the pending writes", "tasks", st.PendingTasks, "bytes", st.PendingBytes)
		o.pub.mu.Lock()
		close(o.pub.back)
		o.pub.back = make(chan struct{})
		o.pub.mu.Unlock()
	}
	return lost
}

// heartbeat beats every Config.SharedHeartbeat until Shutdown (the
// liveness expires after 3 periods), and publishes the held tasks again
// when the shared state lost its data.
func (o *Orchestrator) heartbeat() {
	defer o.running.Done()
	period := o.cfg.SharedHeartbeat
	tick := time.NewTicker(period)
	defer tick.Stop()
	var republish chan struct{} // non-nil while a republish runs
	for {
		select {
		case <-tick.C:
		case <-o.root.Done():
		}
		if republish != nil {
			select {
			case <-republish:
				republish = nil
			default:
			}
		}
		if o.root.Err() != nil {
			break
		}
		o.prune()
		if o.beat(min(period, o.cfg.timing.opTimeout)) && republish == nil {
			o.log.Warn("shared state lost its data (restarted without persistence?): publishing the held tasks again")
			republish = make(chan struct{})
			go func(done chan struct{}) { defer close(done); o.republish() }(republish)
		}
	}
	if republish != nil {
		<-republish // bounded: each write is, and it stops at the first that fails
	}
}

// backOnline returns a channel closed when the shared state answers again.
func (o *Orchestrator) backOnline() <-chan struct{} {
	o.pub.mu.Lock()
	defer o.pub.mu.Unlock()
	return o.pub.back
}

// hold remembers a published local task for a republish.
func (o *Orchestrator) hold(t *Task) *held {
	h := &held{id: t.ID, t: weak.Make(t)}
	h.active.Store(true)
	o.pub.mu.Lock()
	o.pub.held = append(o.pub.held, h)
	o.pub.mu.Unlock()
	return h
}

// sharedTTL is how long a task's shared record must outlive its start: it
// may wait up to MaxQueueWait for a slot, run for TotalTimeout, then stay
// readable for TaskTTL.
func (o *Orchestrator) sharedTTL() time.Duration {
	return o.cfg.MaxQueueWait + o.cfg.TotalTimeout + o.cfg.TaskTTL
}

// prune forgets the held tasks that the task store dropped, and the dead
// owners that no shared record can name any more.
func (o *Orchestrator) prune() {
	o.pub.mu.Lock()
	defer o.pub.mu.Unlock()
	for owner, since := range o.pub.dead {
		if time.Since(since) > o.sharedTTL() {
			delete(o.pub.dead, owner)
		}
	}
	keep := o.pub.held[:0]
	for _, h := range o.pub.held {
		if t := h.t.Value(); t != nil && o.store.Get(h.id) == t {
			keep = append(keep, h)
		}
	}
	clear(o.pub.held[len(keep):])
	o.pub.held = keep
}

// republish publishes again, whole, every held task that no mirror is
// publishing: the shared state lost them. It stops at the first write
// that fails (the mirrors' own gap checks cover what runs meanwhile).
func (o *Orchestrator) republish() {
	o.pub.mu.Lock()
	list := slices.Clone(o.pub.held)
	o.pub.mu.Unlock()
	n := 0
	for _, h := range list {
		if o.root.Err() != nil {
			o.log.Warn("shared state: republish stopped by shutdown", "republished", n)
			return
		}
		t := h.t.Value()
		if t == nil || h.active.Load() {
			continue
		}
		if err := o.publishWhole(t); err != nil {
			o.log.Warn("shared state: republish stopped", "republished", n, "err", err)
			return
		}
		n++
	}
	o.log.Info("shared state had lost its data: held tasks published again", "tasks", n)
}

// publishWhole writes a finished local task to the shared state from its
// record to its end.
func (o *Orchestrator) publishWhole(t *Task) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.cfg.timing.opTimeout)
	defer cancel()
	if err := o.shared.Start(ctx, o.recordOf(t), o.sharedTTL()); err != nil {
		return err
	}
	for after := 0; ; {
		p := t.tr.Read(after, o.cfg.timing.mirrorPage)
		if len(p.Deltas) > 0 {
			if err := o.shared.Append(ctx, t.ID, p.First, p.Deltas, o.sharedTTL()); err != nil {
				return err
			}
			after = p.Last()
		}
		if p.End != nil {
			return o.shared.Finish(ctx, o.recordOf(t), *p.End, o.cfg.TaskTTL)
		}
		if len(p.Deltas) == 0 {
			return nil // not final: never for a task no mirror publishes
		}
	}
}

// enter counts a task into the backlog with n bytes pending; false when
// the backlog is full.
func (p *publisher) enter(n int64, maxTasks int, maxBytes int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tasks+1 > maxTasks || p.bytes+n > maxBytes {
		return false
	}
	p.tasks++
	p.bytes += n
	return true
}

// grow changes a pending task's bytes from old to n; false when that
// overflows the backlog (nothing changes then).
func (p *publisher) grow(old, n, maxBytes int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if n > old && p.bytes-old+n > maxBytes {
		return false
	}
	p.bytes += n - old
	return true
}

// drop counts a task given up that was not in the backlog.
func (p *publisher) drop() {
	p.mu.Lock()
	p.dropped++
	p.mu.Unlock()
}

// leave takes a task with n bytes out of the backlog; dropped counts it
// as given up.
func (p *publisher) leave(n int64, dropped bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.tasks--
	p.bytes -= n
	if dropped {
		p.dropped++
	}
}

// textLen is the length of the text of deltas.
func textLen(deltas []string) int {
	n := 0
	for _, d := range deltas {
		n += len(d)
	}
	return n
}

// record returns t as a shared record.
func (t *Task) record() Record {
	v := t.View()
	v.Text = "" // the log holds the text
	t.mu.Lock()
	deadline := t.deadline // read after the status: a running task's is its cap's
	t.mu.Unlock()
	return Record{Tenant: t.Tenant, Deadline: deadline, View: v}
}

// share publishes a local task: its record before the caller answers,
// so that any instance finds the task as soon as its id is known, then
// (in a goroutine) its deltas, its end and its final record. The caller
// has counted the goroutine in o.running. If the shared state fails, the
// writes wait in the backlog until it answers (see mirror).
func (o *Orchestrator) share(t *Task) {
	h := o.hold(t)
	if until := o.sharedDown.Load(); until != 0 && time.Now().UnixNano() < until {
		// The shared state failed a moment ago: do not make this request
		// wait for it too. Publish in the background instead.
		go o.mirror(t, h, false)
		return
	}
	go o.mirror(t, h, o.start(t))
}

// start writes a task's first record and reports whether it did. After a
// failure, new tasks publish in the background for a while.
func (o *Orchestrator) start(t *Task) bool {
	ctx, cancel := context.WithTimeout(o.root, o.cfg.timing.callTimeout)
	defer cancel()
	if err := o.shared.Start(ctx, o.recordOf(t), o.sharedTTL()); err != nil {
		o.sharedDown.Store(time.Now().Add(o.cfg.timing.backOff).UnixNano())
		o.log.Warn("shared state write failed; the task is published when it answers", "task_id", t.ID, "op", "start", "err", err)
		return false
	}
	o.sharedDown.Store(0)
	return true
}

// recordOf is t's record with this instance as its owner.
func (o *Orchestrator) recordOf(t *Task) Record {
	r := t.record()
	r.Owner = o.cfg.Instance
	return r
}

// mirror copies a local task's transcript to the shared state, in order:
// its record (unless started), its deltas, its end with the final record.
// A task queued at submit has its record written again when it gets its
// slot: its deadline is then its total cap's, no longer the queue wait's.
// It is one more reader of the transcript, so it never slows the task: it
// writes what is pending at most every Config.SharedFlush (the first delta
// and the end at once), and
// a slow shared store only makes its pages bigger. A failed write puts the task in the
// backlog (bounded by Config.SharedPendingTasks and SharedPendingBytes)
// and is sent again (writes are idempotent) after a growing pause or as
// soon as the heartbeat finds the shared state back, however long that
// takes; the task leaves the backlog when its writes succeed. If the
// shared copy turns out to have a gap (the shared state lost it), the task
// is published again from its record. A task whose writes do not fit in
// the backlog, or are still pending at shutdown, is dropped: logged and
// counted.
func (o *Orchestrator) mirror(t *Task, h *held, started bool) {
	defer o.running.Done()
	defer h.active.Store(false)
	log := o.log.With("task_id", t.ID)
	write := func(op string, f func(ctx context.Context) error) error {
		ctx, cancel := context.WithTimeout(context.Background(), o.cfg.timing.opTimeout)
		defer cancel()
		err := f(ctx)
		if err != nil && !errors.Is(err, ErrSharedGap) {
			log.Debug("shared state write failed; will retry", "op", op, "err", err)
		}
		return err
	}
	ttl := o.sharedTTL()
	pace := time.NewTimer(0)
	defer pace.Stop()
	var (
		after, failures, gaps int
		ttftSent              bool
		pending               bool        // in the backlog
		pendingBytes          int64       // what the backlog counts for it
		slotted               = t.slotted // nil once the record has the deadline of the slot
	)
	leave := func(dropped bool) {
		if pending {
			o.pub.leave(pendingBytes, dropped)
			pending, pendingBytes = false, 0
		}
	}
	defer leave(false)
	for {
		p := t.tr.Read(after, o.cfg.timing.mirrorPage)
		select {
		case <-slotted:
			// The queued task got its slot: the record goes again, with
			// the deadline of its total cap.
			slotted, started = nil, false
		default: // nil: no news, or seen
		}
		var err error
		if !started || (!ttftSent && after == 0 && len(p.Deltas) > 0 && p.End == nil) {
			// The record comes first; when the first token came, it is
			// written again with its TTFT before delta 1 is visible
			// elsewhere (an ended task's final record comes with its end).
			err = write("start", func(ctx context.Context) error {
				return o.shared.Start(ctx, o.recordOf(t), ttl)
			})
			if err == nil {
				started, ttftSent = true, len(p.Deltas) > 0
			}
		}
		if err == nil && len(p.Deltas) > 0 {
			err = write("append", func(ctx context.Context) error {
				return o.shared.Append(ctx, t.ID, p.First, p.Deltas, ttl)
			})
			if err == nil {
				after = p.Last()
			}
		}
		if err == nil && p.End != nil {
			<-t.done // the status is set just after the transcript ends
			err = write("finish", func(ctx context.Context) error {
				return o.shared.Finish(ctx, o.recordOf(t), *p.End, o.cfg.TaskTTL)
			})
			if err == nil {
				if pending {
					log.Debug("shared state: pending writes of the task published")
				}
				return
			}
		}
		if errors.Is(err, ErrSharedGap) && gaps < 3 {
			// The shared state lost the task (restarted empty): publish
			// it again from its record rather than append at a gap.
			gaps++
			log.Warn("shared state lost the task; publishing it again from its start", "err", err)
			started, ttftSent, after = false, false, 0
			continue
		}
		if err != nil {
			failures++
			n := int64(p.Pending)
			switch {
			case !pending && !o.pub.enter(n, o.cfg.SharedPendingTasks, o.cfg.SharedPendingBytes):
				o.pub.drop()
				log.Error("shared state backlog full: this task's writes are dropped; other instances will not see its rest",
					"published_deltas", after, "unpublished_bytes", n, "limit_tasks", o.cfg.SharedPendingTasks, "limit_bytes", o.cfg.SharedPendingBytes)
				return
			case !pending:
				pending, pendingBytes = true, n
			case !o.pub.grow(pendingBytes, n, o.cfg.SharedPendingBytes):
				log.Error("shared state backlog full: this task's writes are dropped; other instances will not see its rest",
					"published_deltas", after, "unpublished_bytes", n, "limit_bytes", o.cfg.SharedPendingBytes)
				leave(true)
				return
			default:
				pendingBytes = n
			}
			if o.root.Err() != nil && t.Status().Final() {
				log.Error("shutting down with the shared state unreachable: this task's writes are dropped",
					"published_deltas", after, "unpublished_bytes", n, "err", err)
				leave(true)
				return
			}
			// Wait for the next try; once shutting down, for the task's
			// end (then one last try).
			stop := o.root.Done()
			if o.root.Err() != nil {
				stop = t.done
			}
			pace.Reset(min(100*time.Millisecond<<min(failures, 8), o.cfg.timing.retryMax))
			select {
			case <-pace.C:
			case <-o.backOnline():
				pace.Stop()
			case <-stop:
				pace.Stop()
			}
			continue
		}
		failures, gaps = 0, 0
		if pending {
			// Caught up so far: out of the backlog until a write fails.
			o.pub.leave(pendingBytes, false)
			pending, pendingBytes = false, 0
		}
		if len(p.Deltas) > 0 {
			if size := textLen(p.Deltas); size < p.Pending {
				continue // a page of a longer catch-up: the next one now
			}
			// Let the next deltas gather: one write per SharedFlush
			// instead of one per chunk, unless the task ends (its end
			// is written at once). The first delta went out at once: a
			// write follows a quiet spell without waiting.
			pace.Reset(o.cfg.SharedFlush)
			select {
			case <-pace.C:
			case <-t.done:
			}
			continue
		}
		select { // the task always ends: its deadline bounds this wait
		case <-p.Changed:
		case <-slotted: // nil once seen
		}
	}
}

// remote returns another instance's task as it stands in the shared
// state: its record and as much of its log as the call budget allows. A
// finished one is whole, and kept here (final tasks never change); a
// running one is a snapshot, kept nowhere (see follow for a live one).
// It returns nil when the task is unknown or the shared state fails.
func (o *Orchestrator) remote(id string) *Task {
	ctx, cancel := context.WithTimeout(o.root, o.cfg.timing.callTimeout)
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
		ctx, cancel := context.WithTimeout(o.root, o.cfg.timing.opTimeout)
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
		case n == 0 && f.ownerLost(ctx): // the log read to its top first: the text is all there is
			f.endLost() // not kept: a later lookup asks again
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
		ctx, cancel := context.WithTimeout(o.root, o.cfg.timing.followWait+3*o.cfg.timing.opTimeout)
		ended, n := f.pull(ctx, o.cfg.timing.followWait)
		if !ended && n == 0 {
			f.refresh(ctx)
		}
		// Lost only with the log read to its top: the text is all there is.
		lost := !ended && n == 0 && o.root.Err() == nil && f.ownerLost(ctx)
		cancel()
		switch {
		case ended:
			o.keep(t)
			return
		case o.root.Err() != nil:
			f.end(stream.End{Event: EventError, FinishReason: string(FinishCancelled),
				Code: CodeShuttingDown, Message: "the server is shutting down", FirstTokenMs: -1})
			return
		case lost:
			f.endLost()
			return
		}
	}
}

// ownerLost reports whether the instance running the task is gone: the
// task outlived its deadline without an end in the log and its owner's
// heartbeat has expired (ownerDead). While the owner lives, its end will come (it
// keeps its writes until the shared state takes them), up to the task's
// TTL, past which the shared copy would have expired anyway. A record
// without an owner (an older version wrote it) is lost ownerGrace (sharedTiming) after
// its deadline. A failed liveness check is not a loss.
func (f *follower) ownerLost(ctx context.Context) bool {
	now := time.Now()
	if !now.After(f.rec.Deadline) {
		return false
	}
	if f.rec.Owner == "" {
		return now.After(f.rec.Deadline.Add(f.o.cfg.timing.ownerGrace))
	}
	if now.After(f.rec.Deadline.Add(f.o.cfg.TaskTTL)) {
		return true
	}
	return f.o.ownerDead(ctx, f.rec.Owner)
}

// ownerDead reports whether owner's heartbeat has been missing for a
// whole heartbeat TTL (3 × Config.SharedHeartbeat, a setting every
// instance of a deployment shares) as seen from this instance. One look
// is not enough: after an outage of the shared state every heartbeat has
// expired, and the owners renew theirs within a period.
func (o *Orchestrator) ownerDead(ctx context.Context, owner string) bool {
	alive, err := o.shared.Alive(ctx, owner)
	if err != nil {
		if ctx.Err() == nil {
			o.log.Warn("shared state: owner liveness unknown", "owner", owner, "err", err)
		}
		return false
	}
	o.pub.mu.Lock()
	defer o.pub.mu.Unlock()
	if alive {
		delete(o.pub.dead, owner)
		return false
	}
	since, seen := o.pub.dead[owner]
	if !seen {
		o.pub.dead[owner] = time.Now()
		return false
	}
	return time.Since(since) >= 3*o.cfg.SharedHeartbeat
}

// endLost ends the followed task of a lost owner as the owner ends a task
// whose upstream dropped: with output it is a cut, partial with the text
// that reached the shared state and its notice; without, failed.
func (f *follower) endLost() {
	const message = "the instance running this task stopped answering"
	end := stream.End{Event: EventError, FinishReason: string(FinishUpstreamError),
		Code: CodeUpstreamError, Message: message, FirstTokenMs: -1,
		TotalMs: time.Since(f.t.CreatedAt).Milliseconds()}
	if hasOutput(f.t.tr) {
		end.Event, end.Notice = EventPartial, fmt.Sprintf(noticeFmt, message, noticeHint(FinishUpstreamError))
		f.t.mu.Lock()
		if ttft := f.t.firstToken; ttft > 0 {
			end.FirstTokenMs = ttft.Milliseconds()
		}
		f.t.mu.Unlock()
	}
	f.end(end)
}

// refresh reads the record of a task that its owner showed queued: once
// it has its slot, the owner writes it again with the deadline of its
// total cap (mirror), which ownerLost needs, and the status running.
func (f *follower) refresh(ctx context.Context) {
	if f.rec.View.Status != StatusQueued {
		return
	}
	rec, err := f.o.shared.Load(ctx, f.t.ID)
	if err != nil || rec.View.Status.Final() {
		return // a failed read is no news; a final record comes with the end (pull)
	}
	f.rec = rec
	if rec.View.Status == StatusRunning {
		f.t.setStatus(StatusRunning)
	}
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
	if f.after == 0 && len(deltas) > 0 {
		// The owner refreshed the record with the TTFT before delta 1;
		// read it before delta 1 is visible here, so that whoever sees
		// delta 1 on this instance also sees the TTFT.
		// It also has the deadline of the task's slot.
		rec, err := f.o.shared.Load(ctx, f.t.ID)
		if err == nil && !rec.View.Status.Final() {
			f.rec = rec
		}
		if err == nil && rec.View.FirstTokenMs != nil {
			f.t.mu.Lock()
			f.t.firstToken = max(time.Duration(*rec.View.FirstTokenMs)*time.Millisecond, time.Microsecond)
			f.t.mu.Unlock()
		}
		f.t.setStatus(StatusRunning)
	}
	for _, d := range deltas {
		f.t.tr.Append(d)
		f.after++
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
	status, reason, errInfo := v.Status, FinishReason(v.FinishReason), v.Error
	if !status.Final() {
		status, reason = statusOf(end), FinishReason(end.FinishReason)
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
	case end.Event == EventDone:
		return StatusDone
	case end.Event == EventPartial:
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
