// Package sharedmem is an in-memory orchestrator.Shared, for tests: it
// behaves like the Redis one (orchestrator/redisstate) in what the
// orchestrator relies on, so that several orchestrators sharing one Mem
// exercise the sharing logic without Redis, and it can fail every call
// (an outage) or come back empty (a restart without persistence).
//
// Like redisstate, each task is a record and an ordered log of deltas
// ended by at most one terminal entry; a write that would leave a gap in
// the log (or has no record) writes nothing and returns
// orchestrator.ErrSharedGap; records, logs and heartbeats expire after
// their TTL; the first Beat after creation or Restart reports the state
// lost to each instance; Read waits up to its wait for the first entry; cancel requests
// reach the Cancels subscribers present, without a delivery guarantee.
package sharedmem

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
)

// readBatch is the most log entries one Read returns (as redisstate).
const readBatch = 1024

// ErrDown is the error of every call while the Mem is down (see Fail).
var ErrDown = errors.New("sharedmem: shared state unreachable")

// Mem is an orchestrator.Shared in memory. The zero value is not usable:
// call New. It is safe for concurrent use.
type Mem struct {
	mu        sync.Mutex      // protects the fields below
	down      error           // non-nil: every call fails with it
	markers   map[string]bool // the instances' markers (see Beat)
	records   map[string]entry[orchestrator.Record]
	logs      map[string]*taskLog
	instances map[string]time.Time // heartbeat expiry by instance
	subs      map[*sub]struct{}
	changed   chan struct{} // closed and replaced at each change of a log
}

var _ orchestrator.Shared = (*Mem)(nil)

type entry[T any] struct {
	v       T
	expires time.Time
}

// taskLog is a task's log: its deltas in order, then its end.
type taskLog struct {
	deltas  []string
	end     *stream.End
	expires time.Time
}

// top is the sequence number of the log's last entry.
func (l *taskLog) top() int {
	if l.end != nil {
		return len(l.deltas) + 1
	}
	return len(l.deltas)
}

type sub struct{ ch chan string }

// New returns an empty, reachable Mem.
func New() *Mem {
	m := &Mem{subs: map[*sub]struct{}{}, changed: make(chan struct{})}
	m.clear()
	return m
}

// clear empties the state; m.mu is held (or m is new).
func (m *Mem) clear() {
	m.markers = map[string]bool{}
	m.records = map[string]entry[orchestrator.Record]{}
	m.logs = map[string]*taskLog{}
	m.instances = map[string]time.Time{}
}

// Fail makes every call fail with err (ErrDown if nil) until Recover:
// the shared state is unreachable. Blocked reads fail too.
func (m *Mem) Fail(err error) {
	if err == nil {
		err = ErrDown
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = err
	m.notify()
}

// Recover makes the calls succeed again, with the state as it was.
func (m *Mem) Recover() {
	m.mu.Lock()
	m.down = nil
	m.mu.Unlock()
}

// Restart empties the state, as a Redis restarted without persistence:
// records, logs, heartbeats and markers are gone (the next Beat of each
// instance reports the state lost). Subscribers of Cancels stay (redisstate's
// subscriptions reconnect by themselves). It also recovers from Fail.
func (m *Mem) Restart() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.down = nil
	m.clear()
	m.notify()
}

// Log returns a copy of a task's log as it stands (nil when it has none),
// for tests that check what was published.
func (m *Mem) Log(id string) (deltas []string, end *stream.End) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.log(id, time.Now())
	if l == nil {
		return nil, nil
	}
	return append([]string(nil), l.deltas...), l.end
}

// notify wakes the blocked reads; m.mu is held.
func (m *Mem) notify() {
	close(m.changed)
	m.changed = make(chan struct{})
}

// check fails while down or once ctx has ended; m.mu is held.
func (m *Mem) check(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sharedmem: %s: %w", op, err)
	}
	if m.down != nil {
		return fmt.Errorf("sharedmem: %s: %w", op, m.down)
	}
	return nil
}

// record returns a task's unexpired record; m.mu is held.
func (m *Mem) record(id string, now time.Time) (orchestrator.Record, bool) {
	e, ok := m.records[id]
	if ok && !now.Before(e.expires) {
		delete(m.records, id)
		ok = false
	}
	return e.v, ok
}

// log returns a task's unexpired log, or nil; m.mu is held.
func (m *Mem) log(id string, now time.Time) *taskLog {
	l := m.logs[id]
	if l != nil && !now.Before(l.expires) {
		delete(m.logs, id)
		l = nil
	}
	return l
}

// writable returns the log of a task that a write starting at sequence
// number first may extend, creating it; ErrSharedGap when the record is
// missing or the log ends before first-1. m.mu is held.
func (m *Mem) writable(id string, first int, now time.Time) (*taskLog, error) {
	if _, ok := m.record(id, now); !ok {
		return nil, fmt.Errorf("%w: no record", orchestrator.ErrSharedGap)
	}
	l := m.log(id, now)
	top := 0
	if l != nil {
		top = l.top()
	}
	if top < first-1 {
		return nil, fmt.Errorf("%w: log ends at %d", orchestrator.ErrSharedGap, top)
	}
	if l == nil {
		l = &taskLog{}
		m.logs[id] = l
	}
	return l, nil
}

// Start writes the record of a task that began.
func (m *Mem) Start(ctx context.Context, rec orchestrator.Record, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, "task_start"); err != nil {
		return err
	}
	m.records[rec.View.ID] = entry[orchestrator.Record]{rec, time.Now().Add(ttl)}
	return nil
}

// Append adds the deltas not yet in the log, or returns ErrSharedGap.
func (m *Mem) Append(ctx context.Context, id string, first int, deltas []string, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, "task_append"); err != nil {
		return err
	}
	now := time.Now()
	l, err := m.writable(id, first, now)
	if err != nil {
		return fmt.Errorf("sharedmem: task_append: %w", err)
	}
	for i, d := range deltas {
		if seq := first + i; seq > l.top() && l.end == nil {
			l.deltas = append(l.deltas, d)
		}
	}
	l.expires = now.Add(ttl)
	m.notify()
	return nil
}

// Finish adds the end unless it is there and replaces the record, or
// returns ErrSharedGap.
func (m *Mem) Finish(ctx context.Context, rec orchestrator.Record, end stream.End, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, "task_finish"); err != nil {
		return err
	}
	now := time.Now()
	id := rec.View.ID
	seq := end.Chunks + 1
	l, err := m.writable(id, seq, now)
	if err != nil {
		return fmt.Errorf("sharedmem: task_finish: %w", err)
	}
	if l.top() < seq {
		e := end
		l.end = &e
	}
	l.expires = now.Add(ttl)
	m.records[id] = entry[orchestrator.Record]{rec, now.Add(ttl)}
	m.notify()
	return nil
}

// Load returns a task's record, or orchestrator.ErrNotShared.
func (m *Mem) Load(ctx context.Context, id string) (orchestrator.Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, "task_load"); err != nil {
		return orchestrator.Record{}, err
	}
	rec, ok := m.record(id, time.Now())
	if !ok {
		return orchestrator.Record{}, orchestrator.ErrNotShared
	}
	return rec, nil
}

// Read returns the log entries after sequence number after, waiting up to
// wait (if > 0) for the first one. An empty page means nothing came in
// time (or the task has no log).
func (m *Mem) Read(ctx context.Context, id string, after int, wait time.Duration) ([]string, *stream.End, error) {
	var timeout <-chan time.Time
	if wait > 0 {
		tm := time.NewTimer(wait)
		defer tm.Stop()
		timeout = tm.C
	}
	for {
		m.mu.Lock()
		if err := m.check(ctx, "task_read"); err != nil {
			m.mu.Unlock()
			return nil, nil, err
		}
		var (
			deltas []string
			end    *stream.End
		)
		if l := m.log(id, time.Now()); l != nil {
			if after < len(l.deltas) {
				deltas = append(deltas, l.deltas[after:min(len(l.deltas), after+readBatch)]...)
			}
			if l.end != nil && after+len(deltas) == len(l.deltas) && len(deltas) < readBatch {
				e := *l.end
				end = &e
			}
		}
		changed := m.changed
		m.mu.Unlock()
		if len(deltas) > 0 || end != nil || timeout == nil {
			return deltas, end, nil
		}
		select {
		case <-changed:
		case <-timeout:
			return nil, nil, nil
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("sharedmem: task_read: %w", ctx.Err())
		}
	}
}

// RequestCancel hands id to every subscriber of Cancels that has room
// for it: like pub/sub, delivery is not guaranteed.
func (m *Mem) RequestCancel(ctx context.Context, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, "task_cancel"); err != nil {
		return err
	}
	for s := range m.subs {
		select {
		case s.ch <- id:
		default:
		}
	}
	return nil
}

// Cancels delivers the cancel requests made after it is called, until
// ctx ends; then the channel is closed. Requests made while the Mem is
// down fail (RequestCancel), so none is delivered then.
func (m *Mem) Cancels(ctx context.Context) <-chan string {
	s := &sub{ch: make(chan string, 64)}
	m.mu.Lock()
	m.subs[s] = struct{}{}
	m.mu.Unlock()
	out := make(chan string)
	go func() {
		defer close(out)
		defer func() {
			m.mu.Lock()
			delete(m.subs, s)
			m.mu.Unlock()
		}()
		for {
			select {
			case id := <-s.ch:
				select {
				case out <- id:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// Beat renews instance's heartbeat for ttl; lost is true on the first
// beat of instance after New or Restart (its marker was missing).
func (m *Mem) Beat(ctx context.Context, instance string, ttl time.Duration) (lost bool, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, "heartbeat"); err != nil {
		return false, err
	}
	m.instances[instance] = time.Now().Add(ttl)
	lost = !m.markers[instance]
	m.markers[instance] = true
	return lost, nil
}

// Alive reports whether instance's heartbeat has not expired.
func (m *Mem) Alive(ctx context.Context, instance string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.check(ctx, "alive"); err != nil {
		return false, err
	}
	exp, ok := m.instances[instance]
	return ok && time.Now().Before(exp), nil
}
