package orchestrator

import (
	"time"

	"github.com/google/uuid"

	"github.com/sluice-dev/sluice/pipeline"
)

// Config configures an Orchestrator. The zero value works.
type Config struct {
	// Budget is the number of in-flight upstream streams allowed at once.
	// default: 64
	Budget int
	// AcquireTimeout is how long an interactive request may wait (FIFO)
	// for a slot. default: 0 (refuse at once)
	AcquireTimeout time.Duration
	// QueueLimit bounds the async tasks waiting for a slot.
	// default: 1024; negative: no queue.
	QueueLimit int
	// TTFTTimeout bounds request sent -> first content chunk, per attempt.
	// default: 10s
	TTFTTimeout time.Duration
	// IdleTimeout bounds the gap between two chunks. default: 5s
	IdleTimeout time.Duration
	// TotalTimeout is the cap per task, from the moment its generation
	// starts (it has a budget slot): time waiting in the queue does not
	// count. Requests may ask for less, never more. At the cap the partial
	// answer is kept. default: 30s
	TotalTimeout time.Duration
	// MaxQueueWait bounds how long an async task waits in the queue for a
	// slot; past it the task fails with finish reason "overloaded" (code
	// queue_timeout), never having been sent upstream. default: 60s
	MaxQueueWait time.Duration
	// RetryBackoff is the base delay before the one retry; the delay is
	// drawn from [base/2, base*1.5) (jitter). A Retry-After from the
	// upstream replaces it when it fits in the deadline. default: 250ms
	RetryBackoff time.Duration
	// MaxRetries is the number of retries before any output: 0 or 1.
	// default: 1; negative: none.
	MaxRetries int
	// BreakerMinCalls is the number of upstream calls with an outcome the
	// breaker's window must hold before its failure rate can open the
	// circuit. default: 20; negative: the circuit never opens.
	BreakerMinCalls int
	// BreakerFailureRate is the share of failed calls in the window that
	// opens the circuit. default: 0.5
	BreakerFailureRate float64
	// BreakerWindow is the sliding window the failure rate is taken over.
	// default: 10s
	BreakerWindow time.Duration
	// BreakerCoolDown is the first open period; it doubles while probes
	// fail. default: 5s
	BreakerCoolDown time.Duration
	// RetryAfter is the Retry-After advertised with 503 overloaded.
	// default: 1s
	RetryAfter time.Duration
	// TaskTTL is how long a finished task stays readable. default: 1h
	TaskTTL time.Duration
	// MaxRetainedTasks bounds the finished tasks kept (with the default
	// store): beyond it the oldest finished are dropped before their TTL.
	// Queued and running tasks are never dropped. default: 10000;
	// negative: no limit.
	MaxRetainedTasks int
	// MaxRetainedBytes bounds the bytes of finished tasks kept (Task.Size),
	// like MaxRetainedTasks. default: 128 MiB; negative: no limit.
	MaxRetainedBytes int64
	// MaxAnswerBytes bounds one task's answer: past it the answer is cut
	// as partial (finish reason "length", code answer_too_large) with a
	// notice, the upstream call ends and the slot is freed. default: 1 MiB;
	// negative: no limit.
	MaxAnswerBytes int
	// MaxIdempotencyKeys bounds the Idempotency-Keys remembered (all
	// tenants); beyond it the oldest are forgotten. A key is also
	// forgotten when its task expires. default: 10000; negative: no limit.
	MaxIdempotencyKeys int
	// MaxCoalesced bounds the generations that identical requests can join
	// (coalesce.go): beyond it a new request runs on its own. default:
	// 10000; negative: coalescing off.
	MaxCoalesced int
	// DefaultModel is used when a request names none. default: "sim-1"
	// (with Models: it must be one of them)
	DefaultModel string
	// Models maps each model a request may name to the upstreams that
	// serve it, in order of preference (Deps.Routes; routes.go): a request
	// goes to the first that admits it and falls back to the next only
	// before any output. A model it does not list is refused
	// (UnknownModelError). default: nil, every model goes to every route
	// in order, under its own name
	Models map[string][]Target
	// LogPrompts adds the question and the answer to each task's end log
	// line. For debugging only: prompts and answers may be sensitive.
	// default: false
	LogPrompts bool

	// Instance names this instance in the shared state (the owner of its
	// tasks). default: a random id
	Instance string
	// SharedHeartbeat is how often this instance renews its liveness in
	// the shared state; it expires after 3 periods, and only then do
	// other instances call its unfinished tasks lost. It also paces how
	// soon writes kept during an outage are sent again. default: 2s
	SharedHeartbeat time.Duration
	// SharedPendingTasks and SharedPendingBytes bound the write-behind
	// backlog: the tasks whose writes wait for the shared state to answer
	// and the bytes of their unpublished text. A task beyond them is not
	// published (logged and counted). defaults: 10000 and 64 MiB
	SharedPendingTasks int
	SharedPendingBytes int64
	// SharedFlush is the window that batches a running task's deltas into
	// one write of its shared log: after a write, the deltas that come
	// within SharedFlush go in the next one, so that a task costs about
	// its duration / SharedFlush appends instead of one per chunk. The
	// first delta (after the record with the time to first token) is
	// written at once, as is the end, so that neither a follower's first
	// token nor the end waits for the window. default: 100ms
	SharedFlush time.Duration

	// CutSettle, with a fleet budget (Deps.Leases), is how long the slot
	// of an upstream stream that sluice cut (a client's cancel, a TTFT,
	// idle or total timeout) stays held after the cut: the time the
	// upstream takes to see the disconnect, so that a fleet at its limit,
	// whose freed slot another instance takes within milliseconds, never
	// has one stream more at the upstream meanwhile. A stream that ended
	// on its own frees its slot at once, and so does every stream with a
	// local budget (a freed slot there goes to the next request at once,
	// as an operator of one instance expects). default: 100ms; negative: 0
	CutSettle time.Duration

	// BudgetLeaseTime is how long a fleet budget lease lives without
	// renewal (Deps.Leases): a crashed instance's slots come back within
	// it; held leases are renewed every third of it. default: 15s
	BudgetLeaseTime time.Duration
	// BudgetCallTimeout bounds each call to the fleet budget's store, so
	// a stalled Redis costs a request at most about twice this.
	// default: 500ms
	BudgetCallTimeout time.Duration
	// BudgetFailOpen: while the fleet budget's store fails, serve a local
	// share of the budget (ceil(Budget / BudgetInstances)) instead of
	// refusing new requests with 503 budget_unavailable. default: false
	BudgetFailOpen bool
	// BudgetInstances is the expected number of instances, which sizes
	// the local share when failing open. default: 1
	BudgetInstances int

	// InteractiveShare is the share of Budget guaranteed to interactive
	// requests (pipeline.GateConfig.InteractiveShare); batch requests are
	// guaranteed the rest, and each class borrows the other's idle slots.
	// default: 0.5; negative: 0
	InteractiveShare float64
	// InteractiveWait is how long, at least, an interactive request waits
	// when the budget is full while batch holds part of interactive's
	// guaranteed share: the gate hands it one of the next freed slots,
	// ahead of queued batch work, even with an AcquireTimeout of 0
	// (pipeline.GateConfig.InteractiveShareWait). default: 5s; negative: 0
	// (AcquireTimeout alone)
	InteractiveWait time.Duration
	// TenantMaxShare caps each tenant at that share of Budget
	// (pipeline.GateConfig.TenantMaxShare). default: 0 (no cap)
	TenantMaxShare float64
	// TenantShares overrides TenantMaxShare per tenant. default: none
	TenantShares map[string]float64
	// TenantClass is the default priority class of the tenants it names,
	// for requests that do not choose one (Request.Class). default: none
	TenantClass map[string]pipeline.Class
	// Adaptive, when Enabled, moves the budget between Adaptive.Min and
	// Adaptive.Max (default: Budget) from the upstream's time to first
	// token and its 429/503 answers, starting at Budget
	// (pipeline.Adaptive). It needs a local budget. default: off
	Adaptive pipeline.AdaptiveConfig

	// timing is the shared state's timing: only tests change it.
	timing sharedTiming
}

func (c *Config) setDefaults() {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	if c.Budget <= 0 {
		c.Budget = 64
	}
	if c.QueueLimit == 0 {
		c.QueueLimit = 1024
	}
	if c.AcquireTimeout < 0 {
		c.AcquireTimeout = 0
	}
	def(&c.TTFTTimeout, 10*time.Second)
	def(&c.IdleTimeout, 5*time.Second)
	def(&c.TotalTimeout, 30*time.Second)
	def(&c.MaxQueueWait, time.Minute)
	def(&c.RetryBackoff, 250*time.Millisecond)
	def(&c.BreakerCoolDown, 5*time.Second)
	def(&c.RetryAfter, time.Second)
	def(&c.TaskTTL, time.Hour)
	if c.MaxRetainedTasks == 0 {
		c.MaxRetainedTasks = 10000
	}
	if c.MaxRetainedBytes == 0 {
		c.MaxRetainedBytes = 128 << 20
	}
	if c.MaxIdempotencyKeys == 0 {
		c.MaxIdempotencyKeys = 10000
	}
	if c.MaxAnswerBytes == 0 {
		c.MaxAnswerBytes = 1 << 20
	}
	if c.MaxCoalesced == 0 {
		c.MaxCoalesced = 10000
	}
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = 1
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	case c.MaxRetries > 1:
		c.MaxRetries = 1 // the field notes' rule: at most one retry
	}
	if c.BreakerMinCalls == 0 {
		c.BreakerMinCalls = 20
	}
	def(&c.SharedHeartbeat, 2*time.Second)
	def(&c.SharedFlush, 100*time.Millisecond)
	if c.CutSettle == 0 {
		c.CutSettle = 100 * time.Millisecond
	}
	c.CutSettle = max(c.CutSettle, 0)
	def(&c.BudgetLeaseTime, 15*time.Second)
	def(&c.BudgetCallTimeout, 500*time.Millisecond)
	if c.BudgetInstances <= 0 {
		c.BudgetInstances = 1
	}
	c.timing.setDefaults()
	if c.SharedPendingTasks <= 0 {
		c.SharedPendingTasks = 10000
	}
	if c.SharedPendingBytes <= 0 {
		c.SharedPendingBytes = 64 << 20
	}
	if c.Instance == "" {
		c.Instance = uuid.NewString()
	}
	if c.BreakerFailureRate <= 0 || c.BreakerFailureRate > 1 {
		c.BreakerFailureRate = 0.5
	}
	def(&c.BreakerWindow, 10*time.Second)
	if c.DefaultModel == "" {
		c.DefaultModel = "sim-1"
	}
}
