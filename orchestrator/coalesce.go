package orchestrator

// Coalescing (shared generations). A cacheable request identical to one
// whose generation is already under way on this instance (waiting for its
// budget slot, queued or streaming) joins that generation instead of
// starting its own: one budget slot, one upstream call, and every client
// reads the same task, so the same deltas from the start (the transcript
// replays what was produced, then follows live) and the same terminal
// event.
//
// Identical means the whole canonical request: tenant, the effective cache
// namespace (namespace, model, the conversation around the question and
// the token limit), every message, max_tokens, every forwarded sampling
// parameter (temperature, top_p, stop, seed, penalties), the deadline and
// the resolved priority class (classOf): a request only ever waits in its
// own class's line. A request that differs in any of them runs on its own. nocache requests
// never join and are never joined. An Idempotency-Key does not change
// this: the first request with a key may itself lead or join.
//
// What a joiner gets is the leader's task (the same id: X-Task-Id, GET
// /v1/tasks/{id} and the events stream all name the one generation),
// marked "coalesced" by the door (Admission.Coalesced), and counted in the
// task's "joined" and in Observer.Coalesced.
//
// The generation is registered before the leader's wait for budget: a
// request that comes while the leader waits for a slot (interactive) waits
// with it and gets the same outcome. When the leader is refused (overloaded,
// circuit open, budget unavailable) the joiners of the same mode get the
// same refusal. An async request never waits with an interactive leader
// (an async submission never waits for budget): it submits on its own.
// The leader's wait for a slot ends only when
// every request waiting for it has left; if so the others try again (one of
// them leads).
//
// Leaving. A task never depends on a client connection, except for POST
// /v1/stream with "detach": false, whose leaving cancels the task: with
// joiners, such a leaving only releases its share (Release), and the
// task is cancelled when every request that shared it has released it (a
// detached joiner never does, so the generation goes on for it); the
// generation then leaves the table, and a task that was cancelled takes
// no joiner: the next identical request leads a fresh one. The
// shares are Task.holders, changed under the table's lock: settle counts
// the requests waiting on the entry (a leader that left while waiting for
// its slot is not among them and gets no task), claim counts a late
// joiner, release gives one back. DELETE
// /v1/tasks/{id} (and the Responses cancel) is an explicit cancel of the
// task: every request sharing it sees it end cancelled, as they share the
// tenant and the id.
//
// The cache keeps its semantics: it answers by question and context
// (cacheContext), not by sampling parameters, so a request with another
// temperature still gets a cached answer (stop sequences are the
// exception: they cut the answer, so they are part of the context); coalescing only shares a
// generation that is running. A purge of the scope (DELETE
// /v1/cache/namespaces/...) applies to running generations too: a request
// that comes after it does not join a generation that looked the cache up
// before it (its answer is not stored either), but starts a fresh one.
// Coalescing is per instance.
//
// NOTE: not golang.org/x/sync/singleflight. Its key lives only while the
// leader's function runs, and here a generation must stay joinable until
// its task ends (a late joiner replays the transcript, then follows);
// its leader's wait must outlive the leader while others wait; and the
// table must be bounded. A map of entries with a ready channel, like the
// Idempotency-Key table (idempotency.go), does all three in ~100 lines.

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"sync"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/pipeline"
)

// CoalesceObserver is an Observer that also counts the requests that
// joined a running generation.
type CoalesceObserver interface {
	Coalesced(upstream string)
}

// Admission says how a request got its task.
type Admission struct {
	// Attached: a repeat with the same Idempotency-Key got the first
	// request's task.
	Attached bool
	// Coalesced: the request joined an identical request's generation.
	Coalesced bool
}

// genKey is the digest of a canonical request (coalesceKey).
type genKey [32]byte

// genEntry is one generation others can join: ready is closed once the
// leader's submission returned, with task or err set.
type genEntry struct {
	key   genKey
	mode  Mode
	ready chan struct{}
	task  *Task // set before ready is closed; nil when err
	err   error

	waiting    int                // requests waiting for ready (the leader too); under genTable.mu
	leaderGone bool               // the leader left before ready; under genTable.mu
	stopWait   context.CancelFunc // ends the leader's wait once nobody waits
}

// genTable maps canonical requests to their running generation, bounded:
// when full, a new request runs on its own.
type genTable struct {
	max int

	mu      sync.Mutex // protects entries and the entries' waiting
	entries map[genKey]*genEntry
}

func newGenTable(max int) *genTable {
	return &genTable{max: max, entries: map[genKey]*genEntry{}}
}

// effective fills in the defaults submit applies, so that two requests
// that differ only by a default are identical.
func (o *Orchestrator) effective(req Request) Request {
	if req.Model == "" {
		req.Model = o.cfg.DefaultModel
	}
	if req.Namespace == "" {
		req.Namespace = "default"
	}
	if req.Deadline <= 0 || req.Deadline > o.cfg.TotalTimeout {
		req.Deadline = o.cfg.TotalTimeout
	}
	return req
}

// coalesceKey is the digest of the whole canonical request (effective).
// The cache's effective namespace needs no place of its own: its context
// (cacheContext) is a function of the messages, max_tokens and the stop
// sequences, which are in it. The resolved priority class is part of it: a request only ever
// shares a generation that waits in its own class's line.
func coalesceKey(req Request, class pipeline.Class) genKey {
	b, _ := json.Marshal(struct { // strings, numbers and slices of them: cannot fail
		Tenant, Namespace, Model, Question, Class string
		Messages                                  any
		MaxTokens                                 int
		Sampling                                  any
		Deadline                                  int64
	}{req.Tenant, req.Namespace, req.Model, req.Question, class.String(), req.Messages, req.MaxTokens, req.Sampling, int64(req.Deadline)})
	return sha256.Sum256(b)
}

// claim returns the entry of k: the existing one (mine false), or a new
// one for the caller to lead (mine true), who must then call settle. A
// caller that finds the entry unsettled counts among its waiters until
// ready or leave: settle then counts it among the task's holders. A caller
// that finds it settled joins the task only while it is alive: some
// request still holds it (holders > 0) and it was not cancelled; its share
// is then taken here, under the lock release takes, so a task whose last
// share was given back (and that is being cancelled) takes no joiner: the
// caller leads a fresh generation instead. ok is false when the table is
// full, or when an Async request finds an Interactive leader still waiting
// for its slot (an Async submission never waits for budget, so it must
// not wait there): the request runs on its own.
func (g *genTable) claim(k genKey, mode Mode) (e *genEntry, mine, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if e := g.entries[k]; e != nil {
		select {
		case <-e.ready:
			if t := e.task; t != nil && t.holders.Load() > 0 && !t.stopping() {
				t.holders.Add(1)
				return e, false, true
			}
			// Released by every request that shared it, or cancelled:
			// it goes no further, nobody joins it.
			g.removeLocked(e)
		default:
			if mode == Async && e.mode == Interactive {
				return nil, false, false
			}
			e.waiting++
			return e, false, true
		}
	}
	if g.max > 0 && len(g.entries) >= g.max {
		return nil, false, false
	}
	e = &genEntry{key: k, mode: mode, ready: make(chan struct{}), waiting: 1}
	g.entries[k] = e
	return e, true, true
}

// leave is a waiter of e that stops waiting (its client left): when none
// is left, the leader's wait ends and nobody can join e any more. It
// reports false when e was settled first: the waiter was then counted
// among the task's holders.
func (g *genTable) leave(e *genEntry, leader bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-e.ready:
		return false // settled: nobody waits any more
	default:
	}
	e.leaderGone = e.leaderGone || leader
	e.waiting--
	if e.waiting == 0 {
		g.removeLocked(e)
		if e.stopWait != nil {
			e.stopWait()
		}
	}
	return true
}

// settle records the leader's outcome and wakes the joiners. A refused
// submission, or a task that is already final (a cache hit, or one that
// ended at once), takes no more joiners.
func (g *genTable) settle(e *genEntry, t *Task, err error) {
	g.mu.Lock()
	e.task, e.err = t, err
	if t != nil {
		// Every request still waiting (the leader too, unless it left)
		// shares the task; Release gives a share back.
		t.holders.Add(int32(e.waiting))
	}
	if t == nil || t.Status().Final() {
		g.removeLocked(e)
	}
	close(e.ready) // under the lock: leave sees it
	g.mu.Unlock()
}

// ended removes t's generation once t is final: a request that comes
// later asks the cache (or starts over).
func (g *genTable) ended(t *Task) {
	if t.gen == nil {
		return
	}
	g.mu.Lock()
	g.removeLocked(t.gen)
	g.mu.Unlock()
}

// forget removes e if it is still its key's entry.
func (g *genTable) forget(e *genEntry) {
	g.mu.Lock()
	g.removeLocked(e)
	g.mu.Unlock()
}

func (g *genTable) removeLocked(e *genEntry) {
	if g.entries[e.key] == e {
		delete(g.entries, e.key)
	}
}

// CoalesceStats is what the coalescing table holds.
type CoalesceStats struct {
	// Generations is the number of generations that can be joined.
	Generations int `json:"generations"`
	// Waiting is the number of requests waiting for their generation's
	// leader to be admitted (the leaders included).
	Waiting int `json:"waiting"`
	// Limit is Config.MaxCoalesced (negative: off).
	Limit int `json:"limit"`
}

// CoalesceStats returns what the coalescing table holds.
func (o *Orchestrator) CoalesceStats() CoalesceStats {
	g := o.gens
	g.mu.Lock()
	defer g.mu.Unlock()
	st := CoalesceStats{Generations: len(g.entries), Limit: o.cfg.MaxCoalesced}
	for _, e := range g.entries {
		select {
		case <-e.ready:
		default:
			st.Waiting += e.waiting
		}
	}
	return st
}

// coalesce is submit for a request that may join an identical running
// generation, or lead one that others join.
func (o *Orchestrator) coalesce(ctx context.Context, req Request, mode Mode) (*Task, Admission, error) {
	if o.cfg.MaxCoalesced < 0 || req.NoCache {
		t, err := o.submit(ctx, req, mode)
		return t, Admission{}, err
	}
	class, err := o.classOf(req, mode)
	if err != nil {
		t, err := o.submit(ctx, req, mode) // which says what is wrong with it
		return t, Admission{}, err
	}
	req = o.effective(req)
	k := coalesceKey(req, class)
	for range 3 { // a generation whose leader left or was cancelled is tried again
		e, mine, ok := o.gens.claim(k, mode)
		if !ok {
			break
		}
		if mine {
			t, err := o.lead(ctx, e, req, mode)
			return t, Admission{}, err
		}
		select {
		case <-e.ready:
		case <-ctx.Done():
			if !o.gens.leave(e, false) && e.task != nil {
				o.release(e.task) // settled as it left: its share goes back
			}
			return nil, Admission{}, ctx.Err()
		}
		if t := e.task; t != nil {
			// The request holds a share of t: settle counted it, or
			// claim did for a late joiner.
			if t.Cache.Status == CacheHit {
				break // the cache answers: the request asks it itself
			}
			if o.purgedSince(t, req) {
				// The scope was purged since this generation looked the
				// cache up: its answer is as stale as a purged entry. The
				// request starts a fresh one, which others then join.
				o.release(t)
				o.gens.forget(e)
				continue
			}
			t.joined.Add(1)
			if co, ok := o.obs.(CoalesceObserver); ok {
				co.Coalesced(t.Meta().Upstream) // under t.mu: a fallback changes it
			}
			o.log.Debug("request joined a running generation", "task_id", t.ID)
			return t, Admission{Coalesced: true}, nil
		}
		var ref *Refusal
		switch {
		case errors.Is(e.err, ErrClosed):
			return nil, Admission{}, e.err
		case errors.As(e.err, &ref) && e.mode == mode:
			// The same refusal, counted like the leader's.
			o.obs.Refused(ref.Upstream, string(ref.Reason))
			return nil, Admission{}, e.err
		}
		// The leader left while waiting, or was refused in the other
		// mode: try again.
	}
	t, err := o.submit(ctx, req, mode)
	return t, Admission{}, err
}

// generationer is a Cache that tells the current generation of a scope
// (*cache.Cache does).
type generationer interface {
	Generation(ns cache.Namespace) cache.Generation
}

// purgedSince reports whether t's cache scope was purged after t looked
// the cache up (t a cache miss of req's scope).
func (o *Orchestrator) purgedSince(t *Task, req Request) bool {
	g, ok := o.cache.(generationer)
	if !ok || t.Cache.Status != CacheMiss {
		return false
	}
	ns := cache.Namespace{Tenant: req.Tenant, Namespace: req.Namespace, Model: req.Model, Context: cacheContext(req)}
	return g.Generation(ns) != t.cacheGen
}

// lead submits req as the generation e that others may join. Its wait for
// a slot lasts while any request waits for it (not only the leader's ctx).
func (o *Orchestrator) lead(ctx context.Context, e *genEntry, req Request, mode Mode) (*Task, error) {
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	o.gens.mu.Lock()
	e.stopWait = stop
	o.gens.mu.Unlock()
	unwatch := context.AfterFunc(ctx, func() { o.gens.leave(e, true) })
	req.gen = e
	t, err := o.submit(wctx, req, mode)
	unwatch()
	o.gens.settle(e, t, err)
	o.gens.mu.Lock()
	gone := e.leaderGone
	o.gens.mu.Unlock()
	if gone {
		// The leader left while waiting: it holds no share of the task,
		// which goes on for the joiners.
		return nil, ctx.Err()
	}
	return t, err
}

// Release is a request that no longer needs the tenant's task t (its
// client left a stream that said "detach": false): the task is cancelled
// when no request that shared it needs it any more, at once when it was
// never shared. It returns nil when there is no such task.
func (o *Orchestrator) Release(tenant, id string) *Task {
	t := o.Get(tenant, id)
	if t != nil {
		o.release(t)
	}
	return t
}

// release gives back one share of t (holders counts them; a task that
// was never shared has none): the last one cancels it. It does so under
// the table's lock, and removes t's generation from the table then, so
// that no request joins a task being cancelled (claim checks holders under
// the same lock): an identical request that comes next (a client that
// reconnects) starts a fresh generation.
func (o *Orchestrator) release(t *Task) {
	g := o.gens
	g.mu.Lock()
	last := t.holders.Add(-1) <= 0
	if last && t.gen != nil {
		g.removeLocked(t.gen)
	}
	g.mu.Unlock()
	if last && t.cancel != nil {
		t.cancel(ErrCancelled)
	}
}
