package orchestrator

// Several upstreams (issue 15): one route per upstream, each with its own
// gate and breaker created once in newRoute, and the models mapped to an
// ordered list of routes. A request goes to the first route of its model
// that admits it; a route that refuses before any output (budget full
// after its acquire wait, circuit open, a retryable failure before the
// first token once its retries are spent) passes it to the next one.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// RouteSpec is one upstream of an Orchestrator with several (Deps.Routes),
// with its own admission and breaker settings. A zero field takes the
// Config field of the same name (Budget, AcquireTimeout, QueueLimit,
// TTFTTimeout, IdleTimeout, Breaker*), so the GateConfig and BreakerConfig
// of every route are built from one place (newRoute).
type RouteSpec struct {
	// Name names the route in Config.Models, metrics, /v1/budget and
	// Task.Upstream; unique. default: Upstream.Name()
	Name string
	// Upstream is the model server. Required.
	Upstream upstream.Upstream
	// Budget is the route's in-flight upstream streams. default: Config.Budget
	Budget int
	// AcquireTimeout is how long an interactive request waits (FIFO) for
	// a slot of this route before it falls back to the next route.
	// default: Config.AcquireTimeout; negative: refuse at once.
	AcquireTimeout time.Duration
	// QueueLimit bounds the async tasks waiting for this route.
	// default: Config.QueueLimit; negative: no queue.
	QueueLimit int
	// TTFTTimeout and IdleTimeout are the route's watchdogs.
	// defaults: Config.TTFTTimeout and Config.IdleTimeout
	TTFTTimeout time.Duration
	IdleTimeout time.Duration
	// The route's circuit breaker. defaults: Config.Breaker*; a negative
	// BreakerMinCalls: the circuit never opens.
	BreakerMinCalls    int
	BreakerFailureRate float64
	BreakerWindow      time.Duration
	BreakerCoolDown    time.Duration
	// Leases, when set, makes Budget the budget of the whole fleet for
	// this route (see Deps.Leases). nil: a budget of this instance.
	Leases pipeline.Leases
	// Adaptive, when Enabled, moves the route's budget from the
	// upstream's time to first token and 429/503 answers (see
	// Config.Adaptive); it needs a local budget. default: Config.Adaptive
	Adaptive pipeline.AdaptiveConfig
}

// Target is one upstream serving a model (Config.Models): the route's
// name and the name that upstream knows the model by.
type Target struct {
	// Upstream is a RouteSpec.Name.
	Upstream string
	// Model is the model name sent upstream. default: the requested name
	Model string
}

// UnknownModelError is returned by SubmitOnce for a model that
// Config.Models does not list.
type UnknownModelError struct {
	Model string
	Known []string // the configured models, sorted
}

func (e *UnknownModelError) Error() string {
	return fmt.Sprintf("orchestrator: unknown model %q (known: %s)", e.Model, strings.Join(e.Known, ", "))
}

// route is one upstream with its gate and breaker, created once.
type route struct {
	name           string
	up             upstream.Upstream
	gate           *pipeline.Gate
	breaker        *pipeline.Breaker
	acquireTimeout time.Duration
	ttft, idle     time.Duration
	// settle is Config.CutSettle for a fleet budget (Leases), else 0: a
	// local budget frees a cut stream's slot at once.
	settle time.Duration
	// adaptiveCfg is the route's adaptive budget, and adaptive the
	// controller that moves gate's limit (New); nil: a fixed limit.
	adaptiveCfg pipeline.AdaptiveConfig
	adaptive    *pipeline.Adaptive
}

// hop is one route a model's requests may take, with the model name sent
// there.
type hop struct {
	r     *route
	model string // "" = the requested model
}

// newRoute builds a route's gate and breaker from spec, whose zero fields
// take cfg's values. It is the one place where gates and breakers are
// made.
func newRoute(spec RouteSpec, cfg Config, obs Observer) *route {
	name := spec.Name
	or := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	ord := func(v, d time.Duration) time.Duration {
		if v == 0 {
			return d
		}
		return v
	}
	budget := or(spec.Budget, cfg.Budget)
	instances := max(cfg.BudgetInstances, 1)
	rate := spec.BreakerFailureRate
	if rate <= 0 || rate > 1 {
		rate = cfg.BreakerFailureRate
	}
	r := &route{
		name: name, up: spec.Upstream,
		acquireTimeout: max(ord(spec.AcquireTimeout, cfg.AcquireTimeout), 0),
		ttft:           ord(spec.TTFTTimeout, cfg.TTFTTimeout),
		idle:           ord(spec.IdleTimeout, cfg.IdleTimeout),
		gate: pipeline.NewGate(pipeline.GateConfig{
			Name: name, Limit: budget, QueueLimit: or(spec.QueueLimit, cfg.QueueLimit),
			OnWait:           func(w time.Duration) { obs.BudgetWait(name, w) },
			InteractiveShare: cfg.InteractiveShare, InteractiveShareWait: cfg.InteractiveWait, TenantMaxShare: cfg.TenantMaxShare, TenantShares: cfg.TenantShares,
			Cluster: pipeline.ClusterConfig{
				Leases: spec.Leases, LeaseTime: cfg.BudgetLeaseTime, CallTimeout: cfg.BudgetCallTimeout,
				FailOpen: cfg.BudgetFailOpen, LocalShare: (budget + instances - 1) / instances,
			},
		}),
		breaker: pipeline.NewBreaker(pipeline.BreakerConfig{
			Name: name, MinCalls: or(spec.BreakerMinCalls, cfg.BreakerMinCalls), FailureRate: rate,
			Window: ord(spec.BreakerWindow, cfg.BreakerWindow), CoolDown: ord(spec.BreakerCoolDown, cfg.BreakerCoolDown),
			OnTransition: func(from, to pipeline.BreakerState) { obs.BreakerTransition(name, from, to) },
		}),
	}
	if spec.Leases != nil {
		r.settle = cfg.CutSettle
	}
	r.adaptiveCfg = cfg.Adaptive
	if spec.Adaptive.Enabled {
		r.adaptiveCfg = spec.Adaptive
	}
	return r
}

// buildRoutes checks the routes of d and the models of cfg and makes the
// routes: Deps.Upstream alone is one route with Config's settings (and
// Deps.Leases); Deps.Routes are several.
func buildRoutes(cfg *Config, d Deps, obs Observer) ([]*route, map[string][]hop, error) {
	specs := d.Routes
	switch {
	case d.Upstream != nil && len(specs) > 0:
		return nil, nil, errors.New("orchestrator: set Deps.Upstream or Deps.Routes, not both")
	case d.Upstream != nil:
		specs = []RouteSpec{{Upstream: d.Upstream, Leases: d.Leases}}
	case len(specs) == 0:
		return nil, nil, errors.New("orchestrator: no upstream")
	}
	var routes []*route
	byName := map[string]*route{}
	for i, spec := range specs {
		if spec.Upstream == nil {
			return nil, nil, fmt.Errorf("orchestrator: route %d: no upstream", i)
		}
		if spec.Name == "" {
			spec.Name = spec.Upstream.Name()
		}
		if byName[spec.Name] != nil {
			return nil, nil, fmt.Errorf("orchestrator: two routes named %q", spec.Name)
		}
		if (spec.Adaptive.Enabled || cfg.Adaptive.Enabled) && spec.Leases != nil {
			return nil, nil, fmt.Errorf("orchestrator: route %q: an adaptive budget needs a local budget, not a fleet budget", spec.Name)
		}
		r := newRoute(spec, *cfg, obs)
		routes = append(routes, r)
		byName[spec.Name] = r
	}
	if len(cfg.Models) == 0 {
		return routes, nil, nil
	}
	models := map[string][]hop{}
	for m, targets := range cfg.Models {
		if len(targets) == 0 {
			return nil, nil, fmt.Errorf("orchestrator: model %q has no upstream", m)
		}
		for i, tg := range targets {
			r := byName[tg.Upstream]
			if r == nil {
				return nil, nil, fmt.Errorf("orchestrator: model %q: no route named %q", m, tg.Upstream)
			}
			if slices.ContainsFunc(targets[:i], func(o Target) bool { return o.Upstream == tg.Upstream }) {
				return nil, nil, fmt.Errorf("orchestrator: model %q lists route %q twice", m, tg.Upstream)
			}
			models[m] = append(models[m], hop{r: r, model: tg.Model})
		}
	}
	if models[cfg.DefaultModel] == nil {
		return nil, nil, fmt.Errorf("orchestrator: the default model %q is not among Config.Models", cfg.DefaultModel)
	}
	return routes, models, nil
}

// ModelNames returns the models of Config.Models, sorted, or nil when
// every model goes to every route.
func (o *Orchestrator) ModelNames() []string {
	if o.models == nil {
		return nil
	}
	names := make([]string, 0, len(o.models))
	for m := range o.models {
		names = append(names, m)
	}
	sort.Strings(names)
	return names
}

// Upstreams returns the names of the upstreams that serve model, in
// order (every route without Config.Models; none for a model it does not
// list).
func (o *Orchestrator) Upstreams(model string) []string {
	hs, err := o.hops(model)
	if err != nil {
		return nil
	}
	names := make([]string, len(hs))
	for i, h := range hs {
		names[i] = h.r.name
	}
	return names
}

// UpstreamCount is len(Upstreams(model)), without allocating.
func (o *Orchestrator) UpstreamCount(model string) int {
	hs, _ := o.hops(model)
	return len(hs)
}

// routeNamed returns the route called name, or the first route (a task's
// Upstream always names one of o's routes).
func (o *Orchestrator) routeNamed(name string) *route {
	for _, r := range o.routes {
		if r.name == name {
			return r
		}
	}
	return o.routes[0]
}

// hops returns the routes model may take, in order.
func (o *Orchestrator) hops(model string) ([]hop, error) {
	if o.models == nil {
		return o.allHops, nil // shared: read only
	}
	hs := o.models[model]
	if hs == nil {
		return nil, &UnknownModelError{Model: model, Known: o.ModelNames()}
	}
	return hs, nil
}

// admit takes a slot for a new task on the first of hops that admits it:
// interactive requests try the routes with a free slot first, then wait
// each other route's acquire timeout in turn; async ones queue on the
// first route whose circuit is not open and whose queue has room. The
// slot records the hop taken and the routes not yet tried, in the order
// admit would have tried them (slot.rest): a task that fails before any
// output falls back through those (fallBack), so a route passed over only
// because it was busy is still a fallback, and a route that refused here
// is not tried again. When every route refuses, the refusal is overloaded
// if any route's budget (or queue) was full, else budget_unavailable if
// any fleet budget did not answer, else upstream_unavailable (every
// circuit open).
func (o *Orchestrator) admit(ctx context.Context, hops []hop, mode Mode, who pipeline.Who, log func(from string, ref *Refusal)) (sl *slot, err error) {
	order := o.inOrder[:len(hops)] // shared: reordered only in a copy
	if mode == Interactive && len(hops) > 1 {
		// A route with a free slot now comes before one whose budget is
		// full, so that a request does not wait the first route's acquire
		// timeout while another has room; each group keeps the model's
		// order. The look is a hint (the gate may fill before the
		// acquire, which then waits as usual) and counts no rejection.
		free := make([]bool, len(hops))
		busy := make([]RefusalReason, len(hops)) // why a route is not free
		for i, h := range hops {
			inFlight, limit, waiting := h.r.gate.Occupancy()
			blocked, _ := h.r.breaker.Blocked()
			free[i] = !blocked && inFlight < limit && waiting == 0
			busy[i] = RefusedOverloaded
			if blocked {
				busy[i] = RefusedBreakerOpen
			}
		}
		order = slices.Clone(order)
		sort.SliceStable(order, func(a, b int) bool { return free[order[a]] && !free[order[b]] })
		defer func() {
			// The routes before the one taken (in the model's order) that
			// were passed over untried, because they were busy, are
			// fallbacks too; those tried and refused are counted in the
			// loop below, once. A route passed over stays in sl.rest.
			if sl == nil {
				return
			}
			for _, j := range sl.rest {
				if j < sl.hop {
					o.fellBack(hops[j].r.name, string(busy[j]))
				}
			}
		}()
	}
	var refs []*Refusal
	for n, i := range order {
		h := hops[i]
		got, ref, err := o.admitOn(ctx, h.r, mode, who)
		if err != nil {
			return nil, err
		}
		if ref == nil {
			got.hop = i
			got.rest = order[n+1:]
			return got, nil
		}
		if n+1 < len(order) {
			o.fellBack(h.r.name, string(ref.Reason))
			if log != nil {
				log(h.r.name, ref)
			}
		}
		refs = append(refs, ref)
	}
	ref := pickRefusal(refs)
	o.obs.Refused(ref.Upstream, string(ref.Reason))
	return nil, ref
}

// pickRefusal is the refusal a client sees when every route refused.
func pickRefusal(refs []*Refusal) *Refusal {
	rank := func(r *Refusal) int {
		switch r.Reason {
		case RefusedOverloaded, RefusedQueueFull:
			return 0
		case RefusedBudgetUnavailable:
			return 1
		}
		return 2
	}
	best := refs[0]
	for _, r := range refs[1:] {
		if rank(r) < rank(best) {
			best = r
		}
	}
	if best.Reason == RefusedBreakerOpen {
		// Every circuit is open: retry when the first one may close.
		for _, r := range refs {
			best.RetryAfter = min(best.RetryAfter, r.RetryAfter)
		}
	}
	return best
}

// admitOn takes a slot on r: a permit and the breaker's permission
// (interactive), or a place in r's queue (async). A refusal of r is
// returned as ref; err is for the caller leaving or a shutdown.
func (o *Orchestrator) admitOn(ctx context.Context, r *route, mode Mode, who pipeline.Who) (sl *slot, ref *Refusal, err error) {
	// Peek at the breaker before taking a place in line: an open circuit
	// (or a half-open one whose probe is out) is refused at once, without
	// a slot and before any byte of a stream.
	if blocked, after := r.breaker.Blocked(); blocked {
		return nil, refusal(r, CodeUpstreamUnavailable, RefusedBreakerOpen, after, pipeline.ErrBreakerOpen), nil
	}
	if mode == Async {
		claim, err := r.gate.EnqueueAs(who)
		switch {
		case errors.Is(err, pipeline.ErrGateClosed):
			return nil, nil, ErrClosed
		case errors.Is(err, pipeline.ErrBudgetUnavailable):
			return nil, refusal(r, CodeBudgetUnavailable, RefusedBudgetUnavailable, o.cfg.RetryAfter, err), nil
		case err != nil:
			return nil, refusal(r, CodeOverloaded, RefusedQueueFull, o.cfg.RetryAfter, err), nil
		}
		return &slot{claim: claim, r: r, o: o, who: who}, nil, nil
	}
	permit, err := r.gate.AcquireAs(ctx, who, r.acquireTimeout)
	switch {
	case errors.Is(err, pipeline.ErrOverloaded):
		return nil, refusal(r, CodeOverloaded, RefusedOverloaded, o.cfg.RetryAfter, err), nil
	case errors.Is(err, pipeline.ErrGateClosed):
		return nil, nil, ErrClosed // shutting down
	case errors.Is(err, pipeline.ErrBudgetUnavailable):
		return nil, refusal(r, CodeBudgetUnavailable, RefusedBudgetUnavailable, o.cfg.RetryAfter, err), nil
	case err != nil:
		return nil, nil, err // the caller left while waiting
	}
	// Take the breaker's permission now, so that a half-open circuit
	// lets exactly one interactive request through and refuses the
	// others before their streams start.
	probe, after, err := r.breaker.Allow()
	if err != nil {
		permit.Release()
		return nil, refusal(r, CodeUpstreamUnavailable, RefusedBreakerOpen, after, err), nil
	}
	return &slot{permit: permit, probe: probe, r: r, o: o, who: who}, nil, nil
}

func refusal(r *route, code string, reason RefusalReason, after time.Duration, err error) *Refusal {
	return &Refusal{Code: code, Reason: reason, Upstream: r.name, RetryAfter: after, Err: err}
}

// mayFallBack reports whether a task whose call on its route ended with
// err may go on to the next route: nothing was output, the task goes on,
// and the route refused (circuit open) or failed retryably with its
// retries spent.
func mayFallBack(ctx context.Context, err error, hasOut bool) bool {
	if err == nil || hasOut || ctx.Err() != nil {
		return false
	}
	var ref *Refusal
	return errors.As(err, &ref) || retryable(err)
}

// fallBack moves a running task's slot to the next route of s.rest (the
// routes of hops not yet tried for this task, in admission order) that
// admits it, waiting as a new request would (the acquire timeout of each
// route, or its queue within the task's deadline). Each route is taken
// off s.rest as it is tried, so no route is tried twice for a task. It
// returns false, with s empty, when none admits it.
func (o *Orchestrator) fallBack(ctx context.Context, t *Task, hops []hop, s *slot, mode Mode, cause error, log logFunc) bool {
	from := s.r.name
	reason := FallbackUpstreamError
	var ref *Refusal
	if errors.As(cause, &ref) {
		reason = string(ref.Reason)
	}
	o.fellBack(from, reason)
	who := s.who // the class and tenant claim again as the same
	rest := s.rest
	s.release()
	s.rest = nil
	for len(rest) > 0 {
		i := rest[0]
		rest = rest[1:]
		h := hops[i]
		next, ref, err := o.admitOn(ctx, h.r, mode, who)
		if err != nil {
			return false
		}
		if ref != nil {
			log("fallback route refused", "upstream", h.r.name, "reason", string(ref.Reason))
			continue
		}
		log("falling back to the next upstream", "from", from, "upstream", h.r.name, "cause", cause.Error())
		t.mu.Lock()
		t.Upstream = h.r.name
		t.mu.Unlock()
		*s = *next
		s.hop, s.rest = i, rest
		if s.claim != nil {
			// An async task waits in the next route's queue (status
			// queued) within its deadline.
			t.setStatus(StatusQueued)
			p, err := s.claim.Wait(ctx)
			s.claim = nil
			t.setStatus(StatusRunning)
			if err != nil {
				return false
			}
			s.permit = p
		}
		return true
	}
	return false
}

// fellBack tells the Observer, if it counts fallbacks, that upstream
// passed a request on to the next one for reason.
func (o *Orchestrator) fellBack(upstream, reason string) {
	if f, ok := o.obs.(FallbackObserver); ok {
		f.Fallback(upstream, reason)
	}
}

// logFunc is slog.Logger.Info's shape.
type logFunc func(msg string, args ...any)
