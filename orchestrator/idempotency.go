package orchestrator

import (
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sync"
	"time"
)

// ErrIdempotencyConflict is returned by SubmitOnce when the request's
// idempotency key was already used by the tenant for a different request.
var ErrIdempotencyConflict = errors.New("orchestrator: idempotency key reused for a different request")

// idemKey is an idempotency key in a tenant's scope.
type idemKey struct{ tenant, key string }

// idemEntry is the request an idempotency key was first used for, and
// its task once submitted (ready is closed then, or when the submission
// failed and the entry was removed).
type idemEntry struct {
	key         idemKey
	fingerprint [32]byte
	ready       chan struct{}
	taskID      string // set before ready is closed; empty: the submission failed
	// (an id, not the task: a task the store drops must not be kept
	// alive here)
	expires time.Time
	el      *list.Element // in idemTable.order
	tel     *list.Element // in its tenant's list
}

// idemTable maps (tenant, key) to the first request's task: bounded in
// time (the task's TTL) and in entries: when full, the tenant holding the
// most keys loses its oldest, so one tenant's flood of keys pushes out its
// own before anyone else's (with one tenant: the oldest key).
type idemTable struct {
	max int

	mu       sync.Mutex // protects the fields below
	entries  map[idemKey]*idemEntry
	order    list.List             // of *idemEntry, oldest first (and so first to expire)
	byTenant map[string]*list.List // of *idemEntry per tenant, oldest first
}

func newIdemTable(max int) *idemTable {
	return &idemTable{max: max, entries: map[idemKey]*idemEntry{}, byTenant: map[string]*list.List{}}
}

// fingerprint identifies what a request asks for (not its tenant or key).
func fingerprint(req Request, mode Mode) [32]byte {
	b, _ := json.Marshal(struct { // strings, numbers and slices of them: cannot fail
		Mode                       Mode
		Question, Model, Namespace string
		Messages                   any
		NoCache                    bool
		MaxTokens                  int
		Deadline                   time.Duration
		Sampling                   any
	}{mode, req.Question, req.Model, req.Namespace, req.Messages, req.NoCache, req.MaxTokens, req.Deadline, req.Sampling})
	return sha256.Sum256(b)
}

// claim returns the entry of k: the existing one (mine false), or a new
// one reserved for the caller (mine true), who must then call settle.
func (it *idemTable) claim(k idemKey, fp [32]byte, now time.Time, ttl time.Duration) (e *idemEntry, mine bool) {
	it.mu.Lock()
	defer it.mu.Unlock()
	if e := it.entries[k]; e != nil {
		if now.Before(e.expires) {
			return e, false
		}
		it.removeLocked(e)
	}
	e = &idemEntry{key: k, fingerprint: fp, ready: make(chan struct{}), expires: now.Add(ttl)}
	e.el = it.order.PushBack(e)
	own := it.byTenant[k.tenant]
	if own == nil {
		own = list.New()
		it.byTenant[k.tenant] = own
	}
	e.tel = own.PushBack(e)
	it.entries[k] = e
	for it.max > 0 && it.order.Len() > it.max {
		var most *list.List // the tenant holding the most keys; tenants are few (one per API key)
		for _, l := range it.byTenant {
			if most == nil || l.Len() > most.Len() {
				most = l
			}
		}
		it.removeLocked(most.Front().Value.(*idemEntry))
	}
	return e, true
}

// settle records the task of a claimed entry, or removes the entry when
// the submission failed (t nil), and wakes the waiters.
func (it *idemTable) settle(e *idemEntry, t *Task) {
	it.mu.Lock()
	if t != nil {
		e.taskID = t.ID
	} else {
		it.removeLocked(e)
	}
	it.mu.Unlock()
	close(e.ready)
}

// forget removes e if it is still the entry of its key.
func (it *idemTable) forget(e *idemEntry) {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.removeLocked(e)
}

func (it *idemTable) removeLocked(e *idemEntry) {
	if it.entries[e.key] == e {
		delete(it.entries, e.key)
		it.order.Remove(e.el)
		own := it.byTenant[e.key.tenant]
		own.Remove(e.tel)
		if own.Len() == 0 {
			delete(it.byTenant, e.key.tenant)
		}
	}
}

// sweep drops the entries that expired before now.
func (it *idemTable) sweep(now time.Time) {
	it.mu.Lock()
	defer it.mu.Unlock()
	for it.order.Len() > 0 {
		e := it.order.Front().Value.(*idemEntry)
		if now.Before(e.expires) {
			return
		}
		it.removeLocked(e)
	}
}

// SubmitOnce is Admit that reports only whether the request attached to
// an earlier one with the same Idempotency-Key.
func (o *Orchestrator) SubmitOnce(ctx context.Context, req Request, mode Mode) (t *Task, attached bool, err error) {
	t, adm, err := o.Admit(ctx, req, mode)
	return t, adm.Attached, err
}

// Admit starts a task for req. A cache hit returns a task that is
// already done. Otherwise the task needs a slot: in mode Interactive it
// gets one before Admit returns or is refused with a *Refusal; in
// mode Async it is queued (or refused when the queue is full). ctx bounds
// only the wait of an interactive request, never the task. After Shutdown
// it returns ErrClosed.
//
// A cacheable request identical to one already generating joins it
// (Admission.Coalesced: the same task; see coalesce.go).
//
// req.IdempotencyKey makes it idempotent: the first request with a key
// starts a task; a repeat by the same tenant with the same request, while
// that task is held (its TTL and the retention limits), returns that task
// with Attached true and starts nothing (no second upstream call). A
// repeat after that task failed or was cancelled is a retry: it starts a
// new task, which the key then names. The
// same key with a different request is ErrIdempotencyConflict. A repeat
// that comes while the first is still being admitted waits for it (within
// ctx).
func (o *Orchestrator) Admit(ctx context.Context, req Request, mode Mode) (t *Task, adm Admission, err error) {
	if req.IdempotencyKey == "" {
		return o.coalesce(ctx, req, mode)
	}
	k := idemKey{req.Tenant, req.IdempotencyKey}
	if req.Model == "" {
		req.Model = o.cfg.DefaultModel // as submit does: the fingerprint is of the effective request
	}
	fp := fingerprint(req, mode)
	ttl := o.sharedTTL()
	for range 3 { // a claim whose task was dropped or failed is retried
		e, mine := o.idem.claim(k, fp, time.Now(), ttl)
		if mine {
			t, adm, err := o.coalesce(ctx, req, mode)
			o.idem.settle(e, t)
			return t, adm, err
		}
		if e.fingerprint != fp {
			select {
			case <-e.ready:
			default:
				return nil, adm, ErrIdempotencyConflict // the first is being admitted
			}
			if e.taskID != "" && o.store.Get(e.taskID) != nil {
				return nil, adm, ErrIdempotencyConflict
			}
			o.idem.forget(e) // its task is gone: the key is free again
			continue
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			return nil, adm, ctx.Err()
		}
		if t := o.store.Get(e.taskID); e.taskID != "" && t != nil {
			if st := t.Status(); st != StatusFailed && st != StatusCancelled {
				return t, Admission{Attached: true}, nil
			}
			// It ended with no usable answer: a repeat is a retry, which
			// gets a new task (and the key).
		}
		// The first submission was refused, its task is gone or it
		// failed: this request is a new one.
		o.idem.forget(e)
	}
	return o.coalesce(ctx, req, mode)
}
