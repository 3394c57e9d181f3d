package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// Cache is what the orchestrator needs of the answer cache. A nil Cache
// passes every request through.
type Cache interface {
	Lookup(ctx context.Context, ns cache.Namespace, question string) cache.Result
	// Store stores an answer under gen, the generation its Lookup's
	// Result reported: it is refused when the scope was purged since.
	Store(ctx context.Context, ns cache.Namespace, question string, gen cache.Generation, ans cache.Answer)
	Bypass(ns cache.Namespace)
}

// Mode is how a request waits for budget.
type Mode int

const (
	// Interactive requests (POST /v1/stream) wait FIFO at most
	// Config.AcquireTimeout and are refused before any byte is written.
	Interactive Mode = iota
	// Async requests (POST /v1/tasks) wait in the bounded queue with
	// status queued.
	Async
)

// Request is one generation asked of the orchestrator.
type Request struct {
	Tenant    string
	Question  string // the cache question: the prompt or the last user message
	Messages  []upstream.Message
	Model     string // empty: Config.DefaultModel
	Namespace string // already validated
	NoCache   bool
	MaxTokens int
	// Deadline is the task's total cap; 0 or more than Config.TotalTimeout
	// means Config.TotalTimeout.
	Deadline time.Duration
	// IdempotencyKey, when set, makes SubmitOnce attach a repeat of this
	// request (same tenant, key and request) to the first one's task.
	IdempotencyKey string
	// Class is the priority class, "interactive" or "batch" (a
	// pipeline.Class's name); empty means the tenant's default
	// (Config.TenantClass), else interactive for an Interactive request
	// and batch for an Async one.
	Class string

	// Sampling is forwarded upstream as it is (temperature, top_p, ...).
	// It is part of what makes two requests identical for coalescing,
	// not of the cache's key (see coalesce.go).
	Sampling upstream.Sampling

	gen *genEntry // the coalesced generation this request leads (coalesce.go)
}

// Orchestrator turns requests into tasks and runs them. It is safe for
// concurrent use.
type Orchestrator struct {
	cfg    Config
	routes []*route         // one per upstream, in Deps order (routes.go)
	models map[string][]hop // Config.Models resolved; nil: every model takes every route
	// allHops is every route in order: the hops of every model without
	// Config.Models (shared, read only).
	allHops []hop
	// inOrder is 0, 1, ... len(routes)-1 (read only): the order of a
	// model's hops when admission does not reorder them, without a slice
	// made per request (a model lists each route at most once).
	inOrder []int
	cache   Cache
	store   taskStore  // in memory, bounded by Config.MaxRetainedTasks and MaxRetainedBytes
	idem    *idemTable // Idempotency-Key -> task, per tenant
	gens    *genTable  // running generations by canonical request (coalesce.go)
	log     *slog.Logger
	obs     Observer

	shared     Shared           // nil: one instance
	sharedDown atomic.Int64     // unix ns until which new tasks publish in the background
	followMu   sync.Mutex       // protects following; one follower per remote task
	following  map[string]*Task // remote tasks followed live, by id
	pub        publisher        // write-behind of the shared state (shared.go)

	root     context.Context // parent of every task context; ends at Shutdown
	stop     context.CancelCauseFunc
	running  sync.WaitGroup // task goroutines and the sweeper
	mu       sync.Mutex     // protects closed
	closed   bool
	sweeperC chan struct{}
}

// Deps are the collaborators of an Orchestrator.
type Deps struct {
	// Upstream is the model to stream from: the one-upstream shortcut,
	// with Config's budget, timeouts and breaker settings. Set it or
	// Routes.
	Upstream upstream.Upstream
	// Routes are several upstreams, each with its own gate and breaker
	// (routes.go); Config.Models says which serve which model. Set it or
	// Upstream.
	Routes []RouteSpec
	// Cache answers repeated questions; nil passes through.
	Cache Cache
	// Logger receives structured logs; nil means slog.Default().
	Logger *slog.Logger
	// Observer receives metrics events; nil means none.
	Observer Observer
	// Shared publishes this instance's tasks to other instances and finds
	// theirs; nil means one instance.
	Shared Shared
	// Leases, when set, makes Config.Budget the budget of the whole fleet
	// (every instance on the same Leases): each slot is also a lease
	// there. nil means a budget of this instance alone. With Routes, each
	// RouteSpec has its own Leases instead.
	Leases pipeline.Leases
}

// New returns a running Orchestrator. Call Shutdown to stop it.
func New(cfg Config, d Deps) (*Orchestrator, error) {
	cfg.setDefaults()
	fleet := d.Leases != nil
	for _, r := range d.Routes {
		fleet = fleet || r.Leases != nil
	}
	if !fleet {
		cfg.CutSettle = 0 // a local budget frees a cut stream's slot at once
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Observer == nil {
		d.Observer = nopObserver{}
	}
	obs := d.Observer
	routes, models, err := buildRoutes(&cfg, d, obs)
	if err != nil {
		return nil, err
	}
	o := &Orchestrator{
		cfg:       cfg,
		routes:    routes,
		models:    models,
		cache:     d.Cache,
		store:     newMemoryStore(retentionLimits{MaxTasks: cfg.MaxRetainedTasks, MaxBytes: cfg.MaxRetainedBytes}),
		idem:      newIdemTable(cfg.MaxIdempotencyKeys),
		gens:      newGenTable(cfg.MaxCoalesced),
		log:       d.Logger,
		obs:       obs,
		shared:    d.Shared,
		following: map[string]*Task{},
		sweeperC:  make(chan struct{}),
	}
	for _, r := range routes {
		o.inOrder = append(o.inOrder, len(o.allHops))
		o.allHops = append(o.allHops, hop{r: r})
		if ac := r.adaptiveCfg; ac.Enabled {
			name, log := r.name, d.Logger
			r.adaptive = pipeline.NewAdaptive(r.gate, ac, func(c pipeline.LimitChange) {
				log.Info("budget limit changed", "upstream", name, "from", c.From, "to", c.To, "reason", c.Reason)
			})
		}
	}
	o.root, o.stop = context.WithCancelCause(context.Background())
	o.running.Add(1)
	go o.sweep()
	if o.shared != nil {
		o.startShared()
	}
	return o, nil
}

// Retention returns what the task store holds, when it is the in-memory
// store (ok).
func (o *Orchestrator) Retention() (RetentionStats, bool) {
	if m, ok := o.store.(*memoryStore); ok {
		return m.Stats(), true
	}
	return RetentionStats{}, false
}

// Config returns the configuration in force (defaults filled in).
func (o *Orchestrator) Config() Config { return o.cfg }

// Gates returns the admission gates, one per upstream, in the order of
// the routes.
func (o *Orchestrator) Gates() []*pipeline.Gate {
	gs := make([]*pipeline.Gate, len(o.routes))
	for i, r := range o.routes {
		gs[i] = r.gate
	}
	return gs
}

// Breakers returns the circuit breakers, one per upstream, in the order
// of Gates.
func (o *Orchestrator) Breakers() []*pipeline.Breaker {
	bs := make([]*pipeline.Breaker, len(o.routes))
	for i, r := range o.routes {
		bs[i] = r.breaker
	}
	return bs
}

// Adaptives returns the adaptive limits of the gates, in the order of
// Gates; an entry is nil where the limit is fixed.
func (o *Orchestrator) Adaptives() []*pipeline.Adaptive {
	as := make([]*pipeline.Adaptive, len(o.routes))
	for i, r := range o.routes {
		as[i] = r.adaptive
	}
	return as
}

// Ready reports whether the orchestrator can serve: some upstream's
// circuit is not open and that upstream answers its Ping (upstream.Pinger),
// within ctx. The error names every upstream that cannot.
func (o *Orchestrator) Ready(ctx context.Context) error {
	var errs []error
	for _, r := range o.routes {
		if r.breaker.State() == pipeline.BreakerOpen {
			errs = append(errs, fmt.Errorf("upstream %s: circuit open", r.name))
			continue
		}
		if p, ok := r.up.(upstream.Pinger); ok {
			if err := p.Ping(ctx); err != nil {
				errs = append(errs, fmt.Errorf("upstream %s unreachable: %w", r.name, err))
				continue
			}
		}
		return nil
	}
	return errors.Join(errs...)
}

// Get returns the tenant's task with that id, or nil (also for another
// tenant's task).
func (o *Orchestrator) Get(tenant, id string) *Task {
	t := o.GetAny(id)
	if t == nil || t.Tenant != tenant {
		return nil
	}
	return t
}

// Cancel cancels the tenant's queued or running task; its slot is freed
// as soon as its upstream call has stopped. It returns nil when there is
// no such task. Cancelling a final task changes nothing.
func (o *Orchestrator) Cancel(tenant, id string) *Task {
	t := o.Get(tenant, id)
	if t != nil && t.cancel != nil {
		t.cancel(ErrCancelled)
	}
	return t
}

// CancelAndWait cancels a task and waits until it is final or ctx ends.
// A task of another instance is asked to stop through the shared state,
// and waited for at most 2s (sharedTiming.remoteCancelWait): the request may not arrive,
// and the caller then sees the task still running.
func (o *Orchestrator) CancelAndWait(ctx context.Context, tenant, id string) *Task {
	t := o.Follow(tenant, id)
	if t == nil {
		return nil
	}
	if t.cancel != nil {
		t.cancel(ErrCancelled)
	}
	if t.remote {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.cfg.timing.remoteCancelWait)
		defer cancel()
	}
	select {
	case <-t.done:
	case <-ctx.Done():
	}
	return t
}

// Follow is Get for a reader that follows the task live (its event
// stream): a running task of another instance is followed from the shared
// state by one goroutine of this instance, whatever the number of readers.
func (o *Orchestrator) Follow(tenant, id string) *Task {
	if o.shared == nil || o.store.Get(id) != nil {
		return o.Get(tenant, id)
	}
	return o.follow(tenant, id)
}

// submit starts a task for req, without an idempotency key (SubmitOnce
// says what it does).
func (o *Orchestrator) submit(ctx context.Context, req Request, mode Mode) (*Task, error) {
	o.mu.Lock()
	closed := o.closed
	o.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	accepted := time.Now()
	class, err := o.classOf(req, mode)
	if err != nil {
		return nil, err
	}
	who := pipeline.Who{Class: class, Tenant: req.Tenant}
	req = o.effective(req) // the defaults (coalesce.go keys on the same)
	hops, err := o.hops(req.Model)
	if err != nil {
		return nil, err // before the cache: an unknown model has no answers
	}
	ns := cache.Namespace{Tenant: req.Tenant, Namespace: req.Namespace, Model: req.Model, Context: cacheContext(req)}
	t := &Task{
		ID: uuid.NewString(), Tenant: req.Tenant, Model: req.Model, Namespace: req.Namespace, Priority: class.String(),
		Upstream: hops[0].r.name, CreatedAt: accepted, deadline: accepted.Add(req.Deadline), done: make(chan struct{}),
		Cache: CacheInfo{Status: CacheMiss, Namespace: ns.String()}, gen: req.gen,
	}
	switch {
	case o.cache == nil:
		t.Cache.Status = CacheBypass
	case req.NoCache:
		t.Cache.Status = CacheBypass
		o.cache.Bypass(ns)
	default:
		res := o.cache.Lookup(ctx, ns, req.Question)
		if res.Hit {
			return o.replay(t, res, accepted), nil
		}
		t.cacheGen = res.Gen
	}

	sl, err := o.admit(ctx, hops, mode, who, func(from string, ref *Refusal) {
		// Debug: under overload this is every request (the fallbacks
		// metric counts them).
		o.log.Debug("upstream refused a new task; trying the next", "upstream", from, "reason", string(ref.Reason), "model", req.Model)
	})
	if err != nil {
		return nil, err
	}
	t.Upstream = sl.r.name
	t.status = StatusRunning
	if sl.claim != nil {
		t.status = StatusQueued
		select {
		case <-sl.claim.Ready():
			t.status = StatusRunning
		default:
		}
	}
	// Register the task goroutine under the lock that Shutdown takes to
	// close: a task either starts before Shutdown waits, or not at all.
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		sl.release()
		return nil, ErrClosed
	}
	o.running.Add(1)
	if o.shared != nil {
		o.running.Add(1) // share
	}
	o.mu.Unlock()
	// From here on the slot (or the place in line) belongs to the task
	// goroutine, which releases it exactly once on every path.
	t.tr = stream.NewTranscript()
	// The total cap runs from the moment the generation has its slot: a
	// task running now (interactive, or async with a free slot) has it
	// now; a queued one when the queue lets it go, and until then it ends
	// by MaxQueueWait + the cap (run sets the cap when it gets the slot,
	// and closes slotted so that the shared record learns it: mirror).
	t.deadline = time.Now().Add(req.Deadline)
	if t.status == StatusQueued {
		t.deadline = accepted.Add(o.cfg.MaxQueueWait + req.Deadline)
		t.slotted = make(chan struct{})
	}
	cctx, cancel := context.WithCancelCause(o.root)
	t.cancel, t.stop = cancel, cctx.Done()
	o.store.Put(t)
	go func() {
		defer o.running.Done()
		defer cancel(nil) // detach from root once final
		o.run(cctx, t, &req, ns, hops, sl, mode)
	}()
	if o.shared != nil {
		o.share(t)
	}
	return t, nil
}

// classOf is req's priority class: its own, else its tenant's default
// (Config.TenantClass), else by mode (Interactive: interactive, Async:
// batch).
func (o *Orchestrator) classOf(req Request, mode Mode) (pipeline.Class, error) {
	if req.Class != "" {
		c, err := pipeline.ParseClass(req.Class)
		if err != nil {
			return 0, fmt.Errorf("orchestrator: %w", err)
		}
		return c, nil
	}
	if c, ok := o.cfg.TenantClass[req.Tenant]; ok {
		return c, nil
	}
	if mode == Async {
		return pipeline.ClassBatch, nil
	}
	return pipeline.ClassInteractive, nil
}

// replay makes a finished task out of a cache hit: the stored chunks are
// replayed as a normal stream. It takes no slot.
func (o *Orchestrator) replay(t *Task, res cache.Result, accepted time.Time) *Task {
	t.Cache.Status, t.Cache.Kind, t.Cache.Score = CacheHit, res.Kind, res.Score
	total := time.Since(accepted)
	t.tr = stream.NewFinishedTranscript(res.Answer.Chunks, stream.End{
		Event: EventDone, FinishReason: string(FinishStop), FirstTokenMs: total.Milliseconds(), TotalMs: total.Milliseconds(),
	})
	t.status, t.finishReason, t.total, t.firstToken, t.endedAt = StatusDone, FinishStop, total, max(total, time.Microsecond), time.Now()
	close(t.done)
	o.store.Put(t)
	if o.shared != nil && o.register() {
		o.share(t)
	}
	o.obs.TaskEnded(t.View())
	o.log.Info("task end", "task_id", t.ID, "status", StatusDone, "finish_reason", FinishStop,
		"cache", CacheHit, "cache_kind", res.Kind, "total_ms", total.Milliseconds(), "chunks", len(res.Answer.Chunks))
	return t
}

// Shutdown refuses new tasks, cancels the running ones (their partial
// answers are kept) and waits for every task goroutine to end or ctx.
func (o *Orchestrator) Shutdown(ctx context.Context) error {
	o.mu.Lock()
	if !o.closed {
		o.closed = true
		close(o.sweeperC)
	}
	o.mu.Unlock()
	o.stop(ErrShutdown)
	for _, r := range o.routes {
		r.gate.Close()
	}
	done := make(chan struct{})
	go func() {
		o.running.Wait()
		for _, r := range o.routes {
			<-r.gate.Stopped() // its fleet goroutine, once every slot is back
		}
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("orchestrator: shutdown: %w", ctx.Err())
	}
}

// sweep drops expired tasks until Shutdown.
func (o *Orchestrator) sweep() {
	defer o.running.Done()
	tick := time.NewTicker(min(o.cfg.TaskTTL/4, time.Minute))
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			o.store.Sweep(time.Now().Add(-o.cfg.TaskTTL))
			o.idem.sweep(time.Now())
		case <-o.sweeperC:
			return
		}
	}
}

// GetAny returns the task with that id whatever its tenant, or nil. It is
// for callers that authorize by other means (tools, tests). With shared
// state, a task of another instance is found there: as it is followed
// here if it is, else as it stands in the shared state.
func (o *Orchestrator) GetAny(id string) *Task {
	t := o.store.Get(id)
	if t != nil || o.shared == nil {
		return t
	}
	o.followMu.Lock()
	t = o.following[id]
	o.followMu.Unlock()
	if t == nil {
		t = o.remote(id)
	}
	return t
}

// cacheContext is the digest of what surrounds req's question: every
// message but the question's own (the last user message), where the
// question stands among them, the token limit and the stop sequences
// (a set: their order and repeats do not count). Requests share cached
// answers only when it is equal: the same question after other turns, or
// under other instructions, is another question, and an answer cut at a
// stop sequence is another answer. "" for a lone question without a
// limit or stop sequences, so such requests keep the keys they had.
func cacheContext(req Request) string {
	if len(req.Messages) <= 1 && req.MaxTokens <= 0 && len(req.Sampling.Stop) == 0 {
		return ""
	}
	q := -1
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if req.Messages[i].Role == "user" {
			q = i
			break
		}
	}
	h := sha256.New()
	for i, m := range req.Messages {
		if i == q {
			h.Write([]byte("\x01question\x00"))
			continue
		}
		fmt.Fprintf(h, "%d:%s\x00%d:%s\x00", len(m.Role), m.Role, len(m.Content), m.Content)
	}
	if req.MaxTokens > 0 {
		fmt.Fprintf(h, "max_tokens=%d\x00", req.MaxTokens)
	}
	if len(req.Sampling.Stop) > 0 {
		stop := slices.Compact(slices.Sorted(slices.Values(req.Sampling.Stop)))
		h.Write([]byte("stop\x00"))
		for _, s := range stop {
			fmt.Fprintf(h, "%d:%s\x00", len(s), s)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}
