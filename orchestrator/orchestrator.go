package orchestrator

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
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
}

// route is one upstream with its gate and breaker, created once.
type route struct {
	up      upstream.Upstream
	gate    *pipeline.Gate
	breaker *pipeline.Breaker
	// adaptive moves gate's limit (Config.Adaptive); nil: a fixed limit.
	adaptive *pipeline.Adaptive
}

// Orchestrator turns requests into tasks and runs them. It is safe for
// concurrent use.
type Orchestrator struct {
	cfg   Config
	route *route
	cache Cache
	store taskStore  // in memory, bounded by Config.MaxRetainedTasks and MaxRetainedBytes
	idem  *idemTable // Idempotency-Key -> task, per tenant
	log   *slog.Logger
	obs   Observer

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
	// Upstream is the model to stream from. Required.
	Upstream upstream.Upstream
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
	// there. nil means a budget of this instance alone.
	Leases pipeline.Leases
}

// New returns a running Orchestrator. Call Shutdown to stop it.
func New(cfg Config, d Deps) (*Orchestrator, error) {
	if d.Upstream == nil {
		return nil, errors.New("orchestrator: no upstream")
	}
	cfg.setDefaults()
	if cfg.Adaptive.Enabled && d.Leases != nil {
		return nil, errors.New("orchestrator: an adaptive budget needs a local budget, not a fleet budget")
	}
	if d.Leases == nil {
		cfg.CutSettle = 0 // a local budget frees a cut stream's slot at once
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.Observer == nil {
		d.Observer = nopObserver{}
	}
	name := d.Upstream.Name()
	obs := d.Observer
	o := &Orchestrator{
		cfg: cfg,
		route: &route{
			up: d.Upstream,
			gate: pipeline.NewGate(pipeline.GateConfig{
				Name: name, Limit: cfg.Budget, QueueLimit: cfg.QueueLimit,
				OnWait: func(w time.Duration) { obs.BudgetWait(name, w) },
				Cluster: pipeline.ClusterConfig{
					Leases: d.Leases, LeaseTime: cfg.BudgetLeaseTime, CallTimeout: cfg.BudgetCallTimeout,
					FailOpen: cfg.BudgetFailOpen, LocalShare: (cfg.Budget + cfg.BudgetInstances - 1) / cfg.BudgetInstances,
				},
			}),
			breaker: pipeline.NewBreaker(pipeline.BreakerConfig{
				Name: name, MinCalls: cfg.BreakerMinCalls, FailureRate: cfg.BreakerFailureRate,
				Window: cfg.BreakerWindow, CoolDown: cfg.BreakerCoolDown,
				OnTransition: func(from, to pipeline.BreakerState) { obs.BreakerTransition(name, from, to) },
			}),
		},
		cache:     d.Cache,
		store:     newMemoryStore(retentionLimits{MaxTasks: cfg.MaxRetainedTasks, MaxBytes: cfg.MaxRetainedBytes}),
		idem:      newIdemTable(cfg.MaxIdempotencyKeys),
		log:       d.Logger,
		obs:       obs,
		shared:    d.Shared,
		following: map[string]*Task{},
		sweeperC:  make(chan struct{}),
	}
	if cfg.Adaptive.Enabled {
		r, log := o.route, d.Logger
		r.adaptive = pipeline.NewAdaptive(r.gate, cfg.Adaptive, func(c pipeline.LimitChange) {
			log.Info("budget limit changed", "upstream", name, "from", c.From, "to", c.To, "reason", c.Reason)
		})
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

// Gates returns the admission gates, one per upstream.
func (o *Orchestrator) Gates() []*pipeline.Gate { return []*pipeline.Gate{o.route.gate} }

// Adaptives returns the adaptive limits of the gates, in the order of
// Gates; an entry is nil where the limit is fixed.
func (o *Orchestrator) Adaptives() []*pipeline.Adaptive {
	return []*pipeline.Adaptive{o.route.adaptive}
}

// Breakers returns the circuit breakers, one per upstream.
func (o *Orchestrator) Breakers() []*pipeline.Breaker { return []*pipeline.Breaker{o.route.breaker} }

// Ready reports whether the orchestrator can serve: some upstream's
// circuit is not open and that upstream answers its Ping (upstream.Pinger),
// within ctx.
func (o *Orchestrator) Ready(ctx context.Context) error {
	r := o.route
	if r.breaker.State() == pipeline.BreakerOpen {
		return fmt.Errorf("upstream %s: circuit open", r.up.Name())
	}
	if p, ok := r.up.(upstream.Pinger); ok {
		if err := p.Ping(ctx); err != nil {
			return fmt.Errorf("upstream %s unreachable: %w", r.up.Name(), err)
		}
	}
	return nil
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
	if req.Model == "" {
		req.Model = o.cfg.DefaultModel
	}
	if req.Namespace == "" {
		req.Namespace = "default"
	}
	if req.Deadline <= 0 || req.Deadline > o.cfg.TotalTimeout {
		req.Deadline = o.cfg.TotalTimeout
	}
	ns := cache.Namespace{Tenant: req.Tenant, Namespace: req.Namespace, Model: req.Model, Context: cacheContext(req)}
	t := &Task{
		ID: uuid.NewString(), Tenant: req.Tenant, Model: req.Model, Namespace: req.Namespace,
		Upstream: o.route.up.Name(), CreatedAt: accepted, deadline: accepted.Add(req.Deadline), done: make(chan struct{}),
		Cache: CacheInfo{Status: CacheMiss, Namespace: ns.String()},
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

	r := o.route
	// Peek at the breaker before taking a place in line: an open circuit
	// (or a half-open one whose probe is out) is refused at once, without
	// a slot and before any byte of a stream.
	if blocked, after := r.breaker.Blocked(); blocked {
		return nil, o.refuse(r, CodeUpstreamUnavailable, RefusedBreakerOpen, after, pipeline.ErrBreakerOpen)
	}
	var (
		permit *pipeline.Permit
		claim  *pipeline.Claim
		probe  func(pipeline.Outcome)
		err    error
	)
	if mode == Interactive {
		permit, err = r.gate.Acquire(ctx, o.cfg.AcquireTimeout)
		switch {
		case errors.Is(err, pipeline.ErrOverloaded):
			return nil, o.refuse(r, CodeOverloaded, RefusedOverloaded, o.cfg.RetryAfter, err)
		case errors.Is(err, pipeline.ErrGateClosed):
			return nil, ErrClosed // shutting down
		case errors.Is(err, pipeline.ErrBudgetUnavailable):
			return nil, o.refuse(r, CodeBudgetUnavailable, RefusedBudgetUnavailable, o.cfg.RetryAfter, err)
		case err != nil:
			return nil, err // the caller left while waiting
		}
		// Take the breaker's permission now, so that a half-open circuit
		// lets exactly one interactive request through and refuses the
		// others before their streams start.
		var after time.Duration
		probe, after, err = r.breaker.Allow()
		if err != nil {
			permit.Release()
			return nil, o.refuse(r, CodeUpstreamUnavailable, RefusedBreakerOpen, after, err)
		}
		t.status = StatusRunning
	} else {
		claim, err = r.gate.Enqueue()
		switch {
		case errors.Is(err, pipeline.ErrGateClosed):
			return nil, ErrClosed
		case errors.Is(err, pipeline.ErrBudgetUnavailable):
			return nil, o.refuse(r, CodeBudgetUnavailable, RefusedBudgetUnavailable, o.cfg.RetryAfter, err)
		case err != nil:
			return nil, o.refuse(r, CodeOverloaded, RefusedQueueFull, o.cfg.RetryAfter, err)
		}
		t.status = StatusQueued
		select {
		case <-claim.Ready():
			t.status = StatusRunning
		default:
		}
	}
	sl := &slot{permit: permit, claim: claim, probe: probe, o: o}
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
	// The total cap runs from the moment the generation has its slot: an
	// interactive task has it now; a queued one when the queue lets it go
	// (run sets the cap then), and it ends by MaxQueueWait + the cap.
	t.deadline = time.Now().Add(req.Deadline)
	if mode == Async {
		t.deadline = accepted.Add(o.cfg.MaxQueueWait + req.Deadline)
	}
	cctx, cancel := context.WithCancelCause(o.root)
	t.cancel = cancel
	o.store.Put(t)
	go func() {
		defer o.running.Done()
		defer cancel(nil) // detach from root once final
		o.run(cctx, t, req, ns, sl, mode)
	}()
	if o.shared != nil {
		o.share(t)
	}
	return t, nil
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

func (o *Orchestrator) refuse(r *route, code string, reason RefusalReason, after time.Duration, err error) *Refusal {
	o.obs.Refused(r.up.Name(), string(reason))
	return &Refusal{Code: code, Reason: reason, Upstream: r.up.Name(), RetryAfter: after, Err: err}
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
	o.route.gate.Close()
	done := make(chan struct{})
	go func() {
		o.running.Wait()
		<-o.route.gate.Stopped() // its fleet goroutine, once every slot is back
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
// question stands among them, and the token limit. Requests share cached
// answers only when it is equal: the same question after other turns, or
// under other instructions, is another question. "" for a lone question
// without a limit.
func cacheContext(req Request) string {
	if len(req.Messages) <= 1 && req.MaxTokens <= 0 {
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
	return hex.EncodeToString(h.Sum(nil)[:12])
}
