package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/pipeline"
)

// settings are every SLUICE_* setting, after parsing.
type settings struct {
	Addr           string
	Upstream       string
	UpstreamAPIKey string
	Model          string
	Budget         int
	AcquireTimeout time.Duration
	Queue          int
	// The fleet budget (issue 13).
	BudgetMode        string
	BudgetLease       time.Duration
	BudgetFail        string
	BudgetInstances   int
	BudgetCallTimeout time.Duration
	ConnectTimeout    time.Duration
	TTFTTimeout       time.Duration
	IdleTimeout       time.Duration
	TotalTimeout      time.Duration
	Heartbeat         time.Duration
	ConnBuffer        int64
	WriteTimeout      time.Duration
	RedisURL          string
	RedisPrefix       string
	CacheThreshold    float64
	CacheTTL          time.Duration
	CacheEntries      int
	CacheBytes        int64
	Embeddings        string
	EmbedModel        string
	EmbedAPIKey       string
	APIKeys           map[string]string
	MaxBody           int64
	TaskTTL           time.Duration
	MaxQueueWait      time.Duration
	TaskMaxKept       int
	TaskMaxBytes      int64
	MaxAnswer         int64
	IdemKeys          int
	Coalesce          string
	CoalesceMax       int
	BreakerMin        int
	BreakerRate       float64
	BreakerWindow     time.Duration
	BreakerCool       time.Duration
	SimTTFT           time.Duration
	SimTTFTSigma      float64
	SimGap            time.Duration
	SimGapSigma       float64
	LogFormat         string
	LogLevel          string
	LogPrompts        bool
	DebugAddr         string

	// Hardening (issue 10): server limits, bounded cache work and stats,
	// /metrics access.
	CacheMaxSemantic   int
	ReadHeaderTimeout  time.Duration
	BodyTimeout        time.Duration
	MaxHeaderBytes     int64
	MaxConns           int
	OpsConns           int
	TriageTimeout      time.Duration
	KeepAliveTimeout   time.Duration
	CacheNamespaces    int
	CacheReadings      int
	MetricsKey         string
	MetricsAddr        string
	MetricsNamespaces  int
	SharedHeartbeat    time.Duration
	SharedPendingTasks int
	SharedPendingBytes int64
	SharedFlush        time.Duration
	CutSettle          time.Duration
	// The first hour (issue 12): start-up probe and model discovery.
	ProbeTimeout time.Duration
	ModelsTTL    time.Duration
	// A fleet (issue 13): the cache shared through Redis.
	CacheShared     bool
	CacheLogMax     int
	CacheLogPending int
	// CacheLogEntryBytes bounds the question plus answer of a shared entry.
	CacheLogEntryBytes int64
	// Priority classes and tenant caps (issue 15).
	InteractiveShare float64
	InteractiveWait  time.Duration
	TenantPriority   map[string]pipeline.Class
	TenantMaxShare   float64
	TenantShares     map[string]float64

	// The adaptive budget (issue 15 B2).
	BudgetAdaptive         string
	BudgetMin              int
	BudgetMax              int
	BudgetAdaptiveInterval time.Duration
	SimCapacity            int

	// given holds the SLUICE_* names set by the environment or a flag
	// (a default is not given): SLUICE_MODEL unset means "ask the upstream".
	given map[string]bool
	// Config is SLUICE_CONFIG, the configuration file of several
	// upstreams (routes.go); routes is that file, checked.
	Config string
	routes *routesConfig
	// FallbackHold is web.Config.FallbackHold (SLUICE_FALLBACK_HOLD).
	FallbackHold time.Duration
	// unknown are the SLUICE_* variables of the environment that are no
	// setting (typos), each with the closest setting; serve warns of them.
	unknown []unknownVar
}

// errHelp means -h was asked for and the usage was printed.
var errHelp = errors.New("help requested")

// setting is one environment variable with its flag and parser.
type setting struct {
	env, flag, def, help string
	set                  func(string) error
}

func (s *settings) table() []setting {
	return []setting{
		{"SLUICE_ADDR", "addr", ":8080", "listen address", str(&s.Addr)},
		{"SLUICE_CONFIG", "config", "", "configuration file (YAML) of several upstreams and the models they serve (docs/settings.md); its upstreams replace SLUICE_UPSTREAM and the per-upstream settings, which remain the defaults of the fields it leaves out; empty = the one upstream of SLUICE_UPSTREAM", str(&s.Config)},
		{"SLUICE_FALLBACK_HOLD", "fallback-hold", "1s", "with SLUICE_CONFIG, how long an event stream of a model with several upstreams waits for its first token before its headers and meta, so that a fallback before the first token is named by meta's upstream; 0s = none", dur(&s.FallbackHold, true)},
		{"SLUICE_UPSTREAM", "upstream", "sim", "`sim` or an OpenAI-compatible base URL (http://host:port/v1)", wordOrURL(&s.Upstream, "sim", "SLUICE_UPSTREAM_API_KEY")},
		{"SLUICE_UPSTREAM_API_KEY", "upstream-api-key", "", "bearer key sent upstream", str(&s.UpstreamAPIKey)},
		{"SLUICE_MODEL", "model", "sim-1", "model used when a request names none; unset with an upstream URL: the first model the upstream lists (GET /models)", nonEmpty(&s.Model)},
		{"SLUICE_BUDGET", "budget", "64", "in-flight upstream streams allowed at once (per upstream)", posInt(&s.Budget)},
		{"SLUICE_ACQUIRE_TIMEOUT", "acquire-timeout", "0s", "how long an interactive request may wait (FIFO) for budget; 0s = refuse at once", dur(&s.AcquireTimeout, true)},
		{"SLUICE_QUEUE", "queue", "1024", "async tasks allowed to wait for budget; beyond it 503", nonNegInt(&s.Queue)},
		{"SLUICE_BUDGET_MODE", "budget-mode", "local", "`local`: SLUICE_BUDGET per instance; `cluster`: SLUICE_BUDGET for the whole fleet on SLUICE_REDIS_URL (leases in Redis)", oneOf(&s.BudgetMode, "local", "cluster")},
		{"SLUICE_BUDGET_LEASE", "budget-lease", "15s", "cluster budget: lifetime of a slot's lease without renewal (renewed every third of it); a crashed instance's slots come back within it. At least 1s and 3 times SLUICE_BUDGET_CALL_TIMEOUT", durAtLeast(&s.BudgetLease, time.Second)},
		{"SLUICE_BUDGET_FAIL", "budget-fail", "closed", "cluster budget while Redis fails: `closed` refuses new requests (503 budget_unavailable); `open` serves a local share, ceil(SLUICE_BUDGET / SLUICE_BUDGET_INSTANCES)", oneOf(&s.BudgetFail, "closed", "open")},
		{"SLUICE_BUDGET_INSTANCES", "budget-instances", "1", "cluster budget: expected number of instances, which sizes the local share when failing open", posInt(&s.BudgetInstances)},
		{"SLUICE_BUDGET_CALL_TIMEOUT", "budget-call-timeout", "500ms", "cluster budget: bound of each call to Redis (a stalled Redis costs a request at most about twice this)", dur(&s.BudgetCallTimeout, false)},
		{"SLUICE_BUDGET_ADAPTIVE", "budget-adaptive", "off", "`on`: the budget moves between SLUICE_BUDGET_MIN and SLUICE_BUDGET_MAX from the upstream's time to first token and its 429/503 answers, starting at SLUICE_BUDGET (local budget only); `off`: SLUICE_BUDGET is fixed", oneOf(&s.BudgetAdaptive, "off", "on")},
		{"SLUICE_BUDGET_MIN", "budget-min", "1", "adaptive budget: the lowest limit", posInt(&s.BudgetMin)},
		{"SLUICE_BUDGET_MAX", "budget-max", "0", "adaptive budget: the highest limit; 0 = SLUICE_BUDGET", nonNegInt(&s.BudgetMax)},
		{"SLUICE_BUDGET_ADAPTIVE_INTERVAL", "budget-adaptive-interval", "1s", "adaptive budget: shortest window of observations it decides on (a window also waits for 40 of them)", dur(&s.BudgetAdaptiveInterval, false)},
		{"SLUICE_CONNECT_TIMEOUT", "connect-timeout", "1s", "upstream connect timeout", dur(&s.ConnectTimeout, false)},
		{"SLUICE_TTFT_TIMEOUT", "ttft-timeout", "10s", "request sent -> first content chunk", dur(&s.TTFTTimeout, false)},
		{"SLUICE_IDLE_TIMEOUT", "idle-timeout", "5s", "longest gap between two chunks once streaming", dur(&s.IdleTimeout, false)},
		{"SLUICE_TOTAL_TIMEOUT", "total-timeout", "30s", "total cap per task; at the cap the partial answer is returned", dur(&s.TotalTimeout, false)},
		{"SLUICE_HEARTBEAT", "heartbeat", "15s", "keep-alive interval on every stream, also before the first token (an SSE comment; on the OpenAI door an empty chunk)", dur(&s.Heartbeat, false)},
		{"SLUICE_CONN_BUFFER", "conn-buffer", "64KiB", "per-connection send buffer (bytes) before backpressure applies", size(&s.ConnBuffer)},
		{"SLUICE_WRITE_TIMEOUT", "write-timeout", "10s", "slow-reader limit: a write stuck this long closes the connection, on event streams (resume with Last-Event-ID) and large JSON answers alike", dur(&s.WriteTimeout, false)},
		{"SLUICE_REDIS_URL", "redis-url", "", "shared state: redis://host:port/db (one server) or redis+cluster://host1:port1,host2:port2 (a Redis Cluster; rediss:// and rediss+cluster:// for TLS); every instance can show, follow (Last-Event-ID) and cancel every task; /readyz checks it; the cache is shared too (SLUICE_CACHE_SHARED); empty = one instance, in memory", redisURL(&s.RedisURL)},
		{"SLUICE_REDIS_PREFIX", "redis-prefix", "sluice:", "prefix of every Redis key and channel: deployments sharing one Redis need different ones; no braces (Redis Cluster hash tags)", redisPrefix(&s.RedisPrefix)},
		{"SLUICE_CACHE_THRESHOLD", "cache-threshold", "0.92", "cosine similarity for a semantic hit (facets must match too)", unit(&s.CacheThreshold)},
		{"SLUICE_CACHE_TTL", "cache-ttl", "24h", "cache entry lifetime", dur(&s.CacheTTL, false)},
		{"SLUICE_CACHE_ENTRIES", "cache-entries", "100000", "most cache entries kept (oldest evicted first)", posInt(&s.CacheEntries)},
		{"SLUICE_CACHE_BYTES", "cache-bytes", "256MiB", "most bytes of cached questions and answers", size(&s.CacheBytes)},
		{"SLUICE_EMBEDDINGS", "embeddings", "builtin", "`builtin` or an OpenAI-compatible base URL serving /embeddings", wordOrURL(&s.Embeddings, "builtin", "SLUICE_EMBEDDINGS_API_KEY")},
		{"SLUICE_EMBEDDINGS_MODEL", "embeddings-model", "text-embedding-3-small", "model named in /embeddings requests (e.g. nomic-embed-text for Ollama)", nonEmpty(&s.EmbedModel)},
		{"SLUICE_EMBEDDINGS_API_KEY", "embeddings-api-key", "", "bearer key for the embeddings endpoint; empty = SLUICE_UPSTREAM_API_KEY", str(&s.EmbedAPIKey)},
		{"SLUICE_API_KEYS", "api-keys", "", "key1=tenantA,key2=tenantB; empty = auth off", apiKeys(&s.APIKeys)},
		{"SLUICE_MAX_BODY", "max-body", "1MiB", "request body limit", size(&s.MaxBody)},
		{"SLUICE_TASK_TTL", "task-ttl", "1h", "how long a finished task stays readable", dur(&s.TaskTTL, false)},
		{"SLUICE_TASK_MAX_RETAINED", "task-max-retained", "10000", "most finished tasks kept (oldest finished dropped first, before their TTL; running tasks never)", posInt(&s.TaskMaxKept)},
		{"SLUICE_TASK_MAX_RETAINED_BYTES", "task-max-retained-bytes", "128MiB", "most bytes of finished tasks kept (their text plus ~2 KiB each), like SLUICE_TASK_MAX_RETAINED", size(&s.TaskMaxBytes)},
		{"SLUICE_MAX_ANSWER_BYTES", "max-answer-bytes", "1MiB", "longest answer of one task; past it the answer is cut as partial (finish_reason length, code answer_too_large) and the upstream call ends", size(&s.MaxAnswer)},
		{"SLUICE_IDEMPOTENCY_KEYS", "idempotency-keys", "10000", "most Idempotency-Keys remembered (all tenants; when full, the tenant holding the most forgets its oldest; a key also ends with its task)", posInt(&s.IdemKeys)},
		{"SLUICE_COALESCE", "coalesce", "on", "`on`: a cacheable request identical to one already generating (same tenant, namespace, model, messages and every generation parameter) joins it: one slot, one upstream call, the same stream for all; `off`: every request generates on its own", oneOf(&s.Coalesce, "on", "off")},
		{"SLUICE_COALESCE_MAX", "coalesce-max", "10000", "most generations that identical requests can join at once (when full, a new request generates on its own)", posInt(&s.CoalesceMax)},
		{"SLUICE_CUT_SETTLE", "cut-settle", "100ms", "with SLUICE_BUDGET_MODE=cluster: how long the slot of an upstream stream that sluice cut (client cancel, timeouts) stays held after the cut, while the upstream sees the disconnect, so a fleet at its limit never has one stream more at the upstream; a stream that ended on its own frees its slot at once; 0 = at once", dur(&s.CutSettle, true)},
		{"SLUICE_MAX_QUEUE_WAIT", "max-queue-wait", "60s", "longest wait of an async task in the queue for budget; past it the task fails (finish_reason overloaded, code queue_timeout)", dur(&s.MaxQueueWait, false)},
		{"SLUICE_BREAKER_MIN_CALLS", "breaker-min-calls", "20", "upstream calls the breaker's window must hold before its failure rate can open the circuit", posInt(&s.BreakerMin)},
		{"SLUICE_BREAKER_FAILURE_RATE", "breaker-failure-rate", "0.5", "share of failed upstream calls in the window that opens the circuit", unit(&s.BreakerRate)},
		{"SLUICE_BREAKER_WINDOW", "breaker-window", "10s", "sliding window of the breaker's failure rate", dur(&s.BreakerWindow, false)},
		{"SLUICE_BREAKER_COOLDOWN", "breaker-cooldown", "5s", "first open period of the circuit (doubles while probes fail)", dur(&s.BreakerCool, false)},
		{"SLUICE_SIM_TTFT", "sim-ttft", "300ms", "simulated model: median time to first token (log-normal)", dur(&s.SimTTFT, true)},
		{"SLUICE_SIM_TTFT_SIGMA", "sim-ttft-sigma", "0.6", "simulated model: log-normal shape of the TTFT (larger = longer tail)", nonNegFloat(&s.SimTTFTSigma)},
		{"SLUICE_SIM_GAP", "sim-gap", "30ms", "simulated model: median gap between chunks (log-normal)", dur(&s.SimGap, true)},
		{"SLUICE_SIM_GAP_SIGMA", "sim-gap-sigma", "0.5", "simulated model: log-normal shape of the gaps", nonNegFloat(&s.SimGapSigma)},
		{"SLUICE_SIM_CAPACITY", "sim-capacity", "0", "simulated model: hidden capacity C; beyond C streams in flight the TTFT grows (×(1+4·excess/C)), beyond 1.5·C it answers 429; 0 = unlimited", nonNegInt(&s.SimCapacity)},
		{"SLUICE_LOG_FORMAT", "log-format", "text", "`text` or `json`", oneOf(&s.LogFormat, "text", "json")},
		{"SLUICE_LOG_LEVEL", "log-level", "info", "debug, info, warn or error", oneOf(&s.LogLevel, "debug", "info", "warn", "error")},
		{"SLUICE_LOG_PROMPTS", "log-prompts", "false", "log prompts and answers (debugging only)", boolean(&s.LogPrompts)},
		{"SLUICE_DEBUG_ADDR", "debug-addr", "", "address for pprof (e.g. 127.0.0.1:6060); empty = off", str(&s.DebugAddr)},
		// Hardening (issue 10).
		{"SLUICE_READ_HEADER_TIMEOUT", "read-header-timeout", "10s", "longest time to receive a request's headers; then the connection is closed", dur(&s.ReadHeaderTimeout, false)},
		{"SLUICE_BODY_TIMEOUT", "body-timeout", "10s", "longest time to receive a request's body; then 408", dur(&s.BodyTimeout, false)},
		{"SLUICE_MAX_HEADER_BYTES", "max-header-bytes", "64KiB", "request header limit; beyond it 431", size(&s.MaxHeaderBytes)},
		{"SLUICE_MAX_CONNS", "max-conns", "10000", "open connections served at once (lowered to fit the open-file limit); beyond it 503 overloaded + Retry-After", posInt(&s.MaxConns)},
		{"SLUICE_OPS_CONNS", "ops-conns", "16", "connections kept beyond SLUICE_MAX_CONNS for GET /healthz, /readyz and /metrics", posInt(&s.OpsConns)},
		{"SLUICE_TRIAGE_TIMEOUT", "triage-timeout", "1s", "how long a connection beyond SLUICE_MAX_CONNS may take to send its request line before its 503", dur(&s.TriageTimeout, false)},
		{"SLUICE_KEEPALIVE_TIMEOUT", "keepalive-timeout", "2m", "an idle keep-alive connection is closed after this long", dur(&s.KeepAliveTimeout, false)},
		{"SLUICE_CACHE_MAX_SEMANTIC_CHARS", "cache-max-semantic-chars", "2000", "longest question (characters, after normalization) the semantic tier analyses; longer ones use the exact tier only", posInt(&s.CacheMaxSemantic)},
		{"SLUICE_METRICS_KEY", "metrics-key", "", "bearer key GET /metrics requires; empty = /metrics is open", str(&s.MetricsKey)},
		{"SLUICE_METRICS_ADDR", "metrics-addr", "", "separate listen address for GET /metrics (then not served on SLUICE_ADDR); empty = on SLUICE_ADDR", str(&s.MetricsAddr)},
		{"SLUICE_METRICS_NAMESPACES", "metrics-namespaces", "0", "cache namespace names exported as metric labels (the first N seen); 0 = none, all summed under (other)", nonNegInt(&s.MetricsNamespaces)},
		{"SLUICE_CACHE_MAX_NAMESPACES", "cache-max-namespaces", "10000", "most cache namespaces (tenant, namespace, model) with counters; the least recently used lose theirs", posInt(&s.CacheNamespaces)},
		{"SLUICE_CACHE_READINGS", "cache-readings", "1024", "stored questions whose reading (what the verification compares: ~5 KiB, at most ~21 KiB each) is kept for the next lookup, the most recently used; 0 = none kept", nonNegInt(&s.CacheReadings)},
		{"SLUICE_SHARED_HEARTBEAT", "shared-heartbeat", "2s", "how often an instance renews its liveness in Redis; other instances call its unfinished tasks lost only after 3 periods without one", dur(&s.SharedHeartbeat, false)},
		{"SLUICE_SHARED_PENDING_TASKS", "shared-pending-tasks", "10000", "tasks whose Redis writes may wait for Redis to answer again; a task beyond it is not published (logged, counted)", posInt(&s.SharedPendingTasks)},
		{"SLUICE_SHARED_PENDING_BYTES", "shared-pending-bytes", "64MiB", "answer text that may wait for Redis to answer again; a task beyond it is not published (logged, counted)", size(&s.SharedPendingBytes)},
		{"SLUICE_SHARED_FLUSH", "shared-flush", "100ms", "window that batches a running task's deltas into one Redis write (about duration/window writes per task instead of one per chunk); the first delta and the end are written at once", dur(&s.SharedFlush, false)},
		{"SLUICE_PROBE_TIMEOUT", "probe-timeout", "3s", "bound of the start-up probe of the upstream (GET /models: the model when SLUICE_MODEL is unset, a warning when unreachable) and of each GET /v1/models passed upstream", dur(&s.ProbeTimeout, false)},
		{"SLUICE_MODELS_TTL", "models-ttl", "30s", "how long GET /v1/models reuses the upstream's model list", dur(&s.ModelsTTL, false)},
		// A fleet (issue 13).
		{"SLUICE_CACHE_SHARED", "cache-shared", "true", "with SLUICE_REDIS_URL, share the cache with every instance through a change log in Redis (an answer cached on one is a hit on all, a purge reaches all); false = each instance keeps its own", boolean(&s.CacheShared)},
		{"SLUICE_CACHE_LOG_MAX", "cache-log-max", "10000", "cache changes (puts and purges) the shared change log keeps in Redis, about; a new instance warms up from them", posInt(&s.CacheLogMax)},
		{"SLUICE_CACHE_LOG_ENTRY_BYTES", "cache-log-entry-bytes", "16KiB", "most bytes of question plus answer of a cache entry the shared change log takes: a larger entry stays on the instance that made it (and one read from the log is not applied), so Redis holds at most about SLUICE_CACHE_LOG_MAX x this (160 MiB at the defaults)", size(&s.CacheLogEntryBytes)},
		{"SLUICE_CACHE_LOG_PENDING", "cache-log-pending", "10000", "cache puts that may wait for Redis to answer again before the oldest is kept local only", posInt(&s.CacheLogPending)},
		// Priority classes and tenant caps (issue 15).
		{"SLUICE_PRIORITY_INTERACTIVE_SHARE", "priority-interactive-share", "0.5", "share of SLUICE_BUDGET guaranteed to the interactive class: ceil(share*budget) slots, the batch class the rest; either class borrows the other's idle slots, and a freed slot goes to a waiting interactive request unless batch is below its share. 0 = no interactive guarantee, 1 = none for batch", share(&s.InteractiveShare)},
		{"SLUICE_PRIORITY_INTERACTIVE_WAIT", "priority-interactive-wait", "5s", "how long, at least, an interactive request waits when the budget is full while batch holds part of interactive's guaranteed share: it gets one of the next freed slots, ahead of queued batch work, even with SLUICE_ACQUIRE_TIMEOUT=0s; 0s = only SLUICE_ACQUIRE_TIMEOUT (refused at once)", dur(&s.InteractiveWait, true)},
		{"SLUICE_TENANT_PRIORITY", "tenant-priority", "", "tenantA=batch,tenantB=interactive: a tenant's priority class when a request names none (else interactive for /v1/stream and the OpenAI doors, batch for /v1/tasks and background responses)", tenantPriority(&s.TenantPriority)},
		{"SLUICE_TENANT_MAX_SHARE", "tenant-max-share", "1", "most of SLUICE_BUDGET one tenant (API key's tenant) may hold: ceil(share*budget) slots, at least 1; beyond it its requests wait or are refused like a full budget while other tenants proceed; 1 = no cap", unit(&s.TenantMaxShare)},
		{"SLUICE_TENANT_SHARES", "tenant-shares", "", "tenantA=0.25,tenantB=1: SLUICE_TENANT_MAX_SHARE for the tenants named", tenantShares(&s.TenantShares)},
	}
}

// loadSettings reads the environment, then flags of the same meaning
// (which win). An invalid value is an error naming the setting.
func loadSettings(args []string, getenv func(string) string) (*settings, error) {
	s := &settings{given: map[string]bool{}}
	table := s.table()
	fs := flag.NewFlagSet("sluice", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), topUsage())
		printSettingFlags(fs.Output(), table)
	}
	for _, st := range table {
		v := st.def
		if e := getenv(st.env); e != "" {
			v = e
			s.given[st.env] = true
		}
		if err := st.set(v); err != nil {
			var hide *hiddenValueError
			if errors.As(err, &hide) {
				return nil, fmt.Errorf("setting %s: %w", st.env, err)
			}
			return nil, fmt.Errorf("setting %s=%q: %w", st.env, v, err)
		}
		fs.Var(&settingFlag{st: st, given: s.given}, st.flag, st.help)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, errHelp
		}
		return nil, err
	}
	if s.BudgetMode == "cluster" && s.RedisURL == "" {
		return nil, errors.New("setting SLUICE_BUDGET_MODE=cluster: the fleet budget lives in Redis; set SLUICE_REDIS_URL")
	}
	if s.BudgetAdaptive == "on" && s.BudgetMode == "cluster" {
		return nil, errors.New("setting SLUICE_BUDGET_ADAPTIVE=on: the adaptive budget moves this instance's limit; it needs SLUICE_BUDGET_MODE=local")
	}
	if s.BudgetMax > 0 && s.BudgetMin > s.BudgetMax {
		return nil, fmt.Errorf("setting SLUICE_BUDGET_MIN=%d: must not exceed SLUICE_BUDGET_MAX (%d)", s.BudgetMin, s.BudgetMax)
	}
	if s.BudgetLease < 3*s.BudgetCallTimeout {
		// A renewal every third of the lease must fit in the lease even
		// when it takes its whole call timeout, or held leases expire.
		return nil, fmt.Errorf("setting SLUICE_BUDGET_LEASE=%s: must be at least 3 times SLUICE_BUDGET_CALL_TIMEOUT (%s), so that a renewal every third of the lease ends before the lease does", s.BudgetLease, s.BudgetCallTimeout)
	}
	if fs.NArg() == 0 && s.Config != "" {
		rc, err := loadRoutes(s.Config, s, getenv)
		if err != nil {
			return nil, err
		}
		s.routes = rc
	}
	if fs.NArg() > 0 {
		msg := fmt.Sprintf("unexpected argument %q (commands: %s; sluice help)", fs.Arg(0), strings.Join(commandNames(), ", "))
		if near, d := closest(fs.Arg(0), commandNames()); d <= 2 {
			msg += fmt.Sprintf("; did you mean %q?", near)
		}
		return nil, errors.New(msg)
	}
	return s, nil
}

// settingFlag is the flag of one setting. A setting whose default is
// true or false is a boolean flag: -log-prompts means -log-prompts=true.
type settingFlag struct {
	st    setting
	given map[string]bool
}

func (f *settingFlag) String() string { return "" }

// Set parses v into the setting; an error names its variable.
func (f *settingFlag) Set(v string) error {
	if err := f.st.set(v); err != nil {
		return fmt.Errorf("%s: %w", f.st.env, err)
	}
	f.given[f.st.env] = true
	return nil
}

// IsBoolFlag tells the flag package that the flag needs no value.
func (f *settingFlag) IsBoolFlag() bool { return f.st.def == "true" || f.st.def == "false" }

// settingType names the kind of value a setting takes, for the flag
// help, from its default (every setting has a typed default).
func settingType(st setting) string {
	def := st.def
	if def == "true" || def == "false" {
		return ""
	}
	if _, err := strconv.Atoi(def); err == nil {
		return "int" // before durations: "0" parses as both
	}
	if _, err := time.ParseDuration(def); err == nil {
		return "duration"
	}
	if _, err := strconv.ParseFloat(def, 64); err == nil {
		return "float"
	}
	var n int64
	if strings.HasSuffix(def, "B") && size(&n)(def) == nil {
		return "size"
	}
	return "string"
}

// printSettingFlags prints the flags of the settings as flag.PrintDefaults
// would, with the type of each value and without markdown backticks.
func printSettingFlags(w io.Writer, table []setting) {
	fmt.Fprint(w, "serve flags (each also read from its SLUICE_* variable; the flag wins):\n")
	for _, st := range table {
		def := strconv.Quote(st.def)
		if st.def == "" {
			def = "empty"
		}
		name := "-" + st.flag
		if typ := settingType(st); typ != "" {
			name += " " + typ
		}
		fmt.Fprintf(w, "  %s\n    \t%s (%s, default %s)\n", name, strings.ReplaceAll(st.help, "`", ""), st.env, def)
	}
}

func str(p *string) func(string) error { return func(v string) error { *p = v; return nil } }

func nonEmpty(p *string) func(string) error {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("must not be empty")
		}
		*p = v
		return nil
	}
}

func oneOf(p *string, allowed ...string) func(string) error {
	return func(v string) error {
		for _, a := range allowed {
			if v == a {
				*p = v
				return nil
			}
		}
		return fmt.Errorf("must be one of %s", strings.Join(allowed, ", "))
	}
}

// hiddenValueError is a setting's error whose value must not be echoed
// (it may hold a credential).
type hiddenValueError struct{ msg string }

func (e *hiddenValueError) Error() string { return e.msg }

// errURLUserinfo refuses credentials in a base URL: the URL is printed
// (logs, config check), a key is not.
func errURLUserinfo(keyHint string) error {
	return &hiddenValueError{msg: "the URL holds credentials (user:password@); they would be printed with it (not echoed here): remove them and give the key with " + keyHint}
}

// wordOrURL accepts word (the built-in choice) or an http(s) base URL
// without credentials (keyHint names where the key goes instead).
func wordOrURL(p *string, word, keyHint string) func(string) error {
	return func(v string) error {
		if v == word {
			*p = v
			return nil
		}
		if err := checkBaseURL(v, keyHint); err != nil {
			var hide *hiddenValueError
			if errors.As(err, &hide) {
				return err
			}
			return fmt.Errorf("must be %q or an http(s) base URL such as http://127.0.0.1:11434/v1", word)
		}
		*p = strings.TrimRight(v, "/")
		return nil
	}
}

func redisURL(p *string) func(string) error {
	return func(v string) error {
		if v != "" {
			if _, err := redisstate.ParseURL(v); err != nil {
				return fmt.Errorf("must be redis://host:port/db or redis+cluster://host1:port1,host2:port2: %w", err)
			}
		}
		*p = v
		return nil
	}
}

func redisPrefix(p *string) func(string) error {
	return func(v string) error {
		if strings.TrimSpace(v) == "" {
			return fmt.Errorf("must not be empty")
		}
		if err := redisstate.ValidPrefix(v); err != nil {
			return err
		}
		*p = v
		return nil
	}
}

func posInt(p *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("must be a whole number > 0")
		}
		*p = n
		return nil
	}
}

func nonNegInt(p *int) func(string) error {
	return func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return fmt.Errorf("must be a whole number >= 0")
		}
		*p = n
		return nil
	}
}

// finiteFloat parses a number, refusing NaN and ±Inf, which
// strconv.ParseFloat accepts ("NaN", "Inf") and which pass a range check
// written as "f < lo || f > hi" (every comparison with NaN is false).
func finiteFloat(v string) (float64, bool) {
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
}

func unit(p *float64) func(string) error {
	return func(v string) error {
		f, ok := finiteFloat(v)
		if !ok || !(f > 0 && f <= 1) {
			return fmt.Errorf("must be a number in (0, 1]")
		}
		*p = f
		return nil
	}
}

func nonNegFloat(p *float64) func(string) error {
	return func(v string) error {
		f, ok := finiteFloat(v)
		if !ok || !(f >= 0) {
			return fmt.Errorf("must be a finite number >= 0")
		}
		*p = f
		return nil
	}
}

func boolean(p *bool) func(string) error {
	return func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("must be true or false")
		}
		*p = b
		return nil
	}
}

func dur(p *time.Duration, zeroOK bool) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || (d == 0 && !zeroOK) {
			if zeroOK {
				return fmt.Errorf("must be a duration >= 0 such as 1.5s or 300ms")
			}
			return fmt.Errorf("must be a duration > 0 such as 1.5s or 300ms")
		}
		*p = d
		return nil
	}
}

// durAtLeast parses a duration of at least least.
func durAtLeast(p *time.Duration, least time.Duration) func(string) error {
	return func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < least {
			return fmt.Errorf("must be a duration >= %s such as 15s", least)
		}
		*p = d
		return nil
	}
}

// size parses a byte size: 65536, 64KiB, 1MiB, 2GiB (also KB/MB/GB as
// powers of 1000).
func size(p *int64) func(string) error {
	return func(v string) error {
		units := []struct {
			suffix string
			mult   int64
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000_000}, {"GB", 1000_000_000}, {"B", 1}}
		num, mult := strings.TrimSpace(v), int64(1)
		for _, u := range units {
			if rest, ok := strings.CutSuffix(num, u.suffix); ok {
				num, mult = strings.TrimSpace(rest), u.mult
				break
			}
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n <= 0 || n > (1<<40)/mult {
			return fmt.Errorf("must be a size > 0 such as 65536, 64KiB or 1MiB")
		}
		*p = n * mult
		return nil
	}
}

func apiKeys(p *map[string]string) func(string) error {
	return func(v string) error {
		m := map[string]string{}
		if strings.TrimSpace(v) != "" {
			for _, kv := range strings.Split(v, ",") {
				k, t, ok := strings.Cut(strings.TrimSpace(kv), "=")
				if !ok || k == "" || t == "" {
					return fmt.Errorf("must be key1=tenantA,key2=tenantB")
				}
				if _, dup := m[k]; dup {
					return fmt.Errorf("a key is listed twice")
				}
				m[k] = t
			}
		}
		*p = m
		return nil
	}
}

// share parses a number in [0, 1].
func share(p *float64) func(string) error {
	return func(v string) error {
		f, ok := finiteFloat(v)
		if !ok || !(f >= 0 && f <= 1) {
			return fmt.Errorf("must be a number in [0, 1]")
		}
		*p = f
		return nil
	}
}

// tenantPairs parses tenantA=v1,tenantB=v2 with parse for each value.
func tenantPairs(v, want string, parse func(tenant, val string) error) error {
	seen := map[string]bool{}
	if strings.TrimSpace(v) == "" {
		return nil
	}
	for _, kv := range strings.Split(v, ",") {
		t, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		t, val = strings.TrimSpace(t), strings.TrimSpace(val)
		if !ok || t == "" || val == "" {
			return fmt.Errorf("must be %s", want)
		}
		if seen[t] {
			return fmt.Errorf("tenant %q is listed twice", t)
		}
		seen[t] = true
		if err := parse(t, val); err != nil {
			return fmt.Errorf("tenant %q: %w", t, err)
		}
	}
	return nil
}

func tenantPriority(p *map[string]pipeline.Class) func(string) error {
	return func(v string) error {
		m := map[string]pipeline.Class{}
		err := tenantPairs(v, "tenantA=batch,tenantB=interactive", func(t, val string) error {
			c, err := pipeline.ParseClass(val)
			if err != nil {
				return fmt.Errorf("the class must be interactive or batch, not %q", val)
			}
			m[t] = c
			return nil
		})
		if err != nil {
			return err
		}
		*p = m
		return nil
	}
}

func tenantShares(p *map[string]float64) func(string) error {
	return func(v string) error {
		m := map[string]float64{}
		err := tenantPairs(v, "tenantA=0.25,tenantB=1", func(t, val string) error {
			var f float64
			if err := unit(&f)(val); err != nil {
				return err
			}
			m[t] = f
			return nil
		})
		if err != nil {
			return err
		}
		*p = m
		return nil
	}
}
