package metrics

// MetricDoc documents one exported metric.
type MetricDoc struct {
	// Name is the metric's name. For a histogram it is the base name; the
	// series are Name_bucket, Name_sum and Name_count.
	Name string
	// Type is counter, gauge or histogram.
	Type string
	// Help is the metric's HELP text.
	Help string
	// Labels are the metric's label names, in order.
	Labels []string
	// Buckets are a histogram's upper bounds, in seconds.
	Buckets []float64
	// Scraped is true for metrics read from their source at scrape time
	// (gates, breakers, cache) rather than counted from events.
	Scraped bool
}

// Bucket layouts. LLM latencies run from tens of milliseconds (a cache
// hit, a fast first token) to the 30-60 s total caps; gaps between chunks
// from a millisecond (a burst) to the 5-10 s idle timeouts.
var (
	latencyBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 8, 12, 20, 30, 45, 60}
	gapBuckets     = []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	waitBuckets    = []float64{0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60}
	redisBuckets   = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1}
)

// The metric names, one constant each, so that code and catalog agree.
const (
	nameGateInFlight      = "sluice_gate_in_flight"
	nameGateLimit         = "sluice_gate_limit"
	nameGateWaiting       = "sluice_gate_waiting"
	nameGateQueued        = "sluice_gate_queued"
	nameGateQueueLimit    = "sluice_gate_queue_limit"
	nameGateAcquired      = "sluice_gate_acquired_total"
	nameGateReleased      = "sluice_gate_released_total"
	nameGateRejected      = "sluice_gate_rejected_total"
	nameGateWait          = "sluice_gate_wait_seconds"
	nameClassInFlight     = "sluice_gate_class_in_flight"
	nameClassWaiting      = "sluice_gate_class_waiting"
	nameClassQueued       = "sluice_gate_class_queued"
	nameClassGuaranteed   = "sluice_gate_class_guaranteed"
	nameClassAcquired     = "sluice_gate_class_acquired_total"
	nameRefusals          = "sluice_refusals_total"
	nameBreakerState      = "sluice_breaker_state"
	nameBreakerTrans      = "sluice_breaker_transitions_total"
	nameTasksRetained     = "sluice_tasks_retained"
	nameTasksRetainedB    = "sluice_tasks_retained_bytes"
	nameTasksEvicted      = "sluice_tasks_evicted_total"
	nameUpstreamRequests  = "sluice_upstream_requests_total"
	nameUpstreamRetries   = "sluice_upstream_retries_total"
	nameUpstreamFallbacks = "sluice_upstream_fallbacks_total"
	nameCoalesced         = "sluice_coalesced_total"
	nameTTFT              = "sluice_time_to_first_token_seconds"
	nameChunkGap          = "sluice_chunk_gap_seconds"
	nameTasks             = "sluice_tasks_total"
	nameTaskDuration      = "sluice_task_duration_seconds"
	nameConnsActive       = "sluice_sse_connections_active"
	nameConnsOpened       = "sluice_sse_connections_opened_total"
	nameConnsClosed       = "sluice_sse_connections_closed_total"
	nameSentBytes         = "sluice_sse_sent_bytes_total"
	nameSentEvents        = "sluice_sse_events_sent_total"
	nameMergedEvents      = "sluice_sse_merged_events_total"
	nameMergedDeltas      = "sluice_sse_merged_deltas_total"
	nameCacheLookups      = "sluice_cache_lookups_total"
	nameCacheEntries      = "sluice_cache_entries"
	nameCacheBytes        = "sluice_cache_bytes"
	nameCacheEvictions    = "sluice_cache_evictions_total"
	nameCacheNamespaces   = "sluice_cache_namespaces"
	nameRedisOps          = "sluice_redis_operations_total"
	nameRedisDuration     = "sluice_redis_operation_duration_seconds"
	nameLogSuppressed     = "sluice_log_records_suppressed_total"
	nameLogAggregatorFull = "sluice_log_aggregator_untracked_total"
	nameHTTPConnsOpen     = "sluice_http_connections_open"
	nameHTTPConnsReserved = "sluice_http_connections_reserved"
	nameHTTPConnsRefused  = "sluice_http_connections_refused_total"

	nameBudgetDegraded      = "sluice_budget_degraded"
	nameBudgetFleetInFlight = "sluice_budget_fleet_in_flight"
	nameBudgetLeasesHeld    = "sluice_budget_leases_held"
	nameBudgetAttempts      = "sluice_budget_lease_attempts_total"
	nameBudgetGranted       = "sluice_budget_leases_granted_total"

	nameBudgetLimitChanges = "sluice_budget_limit_changes_total"
	nameBudgetAdaptiveTTFT = "sluice_budget_adaptive_ttft_seconds"

	nameRedisUp            = "sluice_redis_up"
	nameSharedPendingTasks = "sluice_shared_pending_tasks"
	nameSharedPendingBytes = "sluice_shared_pending_bytes"
	nameSharedDropped      = "sluice_shared_dropped_total"

	nameCacheLogUp      = "sluice_cache_log_up"
	nameCacheLogLag     = "sluice_cache_log_lag_seconds"
	nameCacheLogPending = "sluice_cache_log_pending"
	nameCacheLogErrors  = "sluice_cache_log_errors_total"
	nameCacheLogChanges = "sluice_cache_log_changes_total"

	nameRuntimeSched   = "sluice_runtime_sched_latency_seconds"
	nameRuntimeGCPause = "sluice_runtime_gc_pause_seconds"
)

// catalog is the single source of every sluice_ metric: the collectors
// are built from it, and the tests read it (Describe) to check the docs.
var catalog = []MetricDoc{
	// Admission gate, read from Gate.Stats at scrape time.
	{Name: nameGateInFlight, Type: "gauge", Labels: []string{"upstream"}, Scraped: true,
		Help: "Upstream streams holding a budget slot now."},
	{Name: nameGateLimit, Type: "gauge", Labels: []string{"upstream"}, Scraped: true,
		Help: "The budget: the most upstream streams allowed in flight at once."},
	{Name: nameGateWaiting, Type: "gauge", Labels: []string{"upstream"}, Scraped: true,
		Help: "Requests waiting for a slot now: queued async tasks plus interactive requests within their acquire timeout."},
	{Name: nameGateQueued, Type: "gauge", Labels: []string{"upstream"}, Scraped: true,
		Help: "Async tasks waiting in the bounded queue now."},
	{Name: nameGateQueueLimit, Type: "gauge", Labels: []string{"upstream"}, Scraped: true,
		Help: "The bound of the async queue (0: no queue)."},
	{Name: nameGateAcquired, Type: "counter", Labels: []string{"upstream"}, Scraped: true,
		Help: "Budget slots granted (first attempts and retries)."},
	{Name: nameGateReleased, Type: "counter", Labels: []string{"upstream"}, Scraped: true,
		Help: "Budget slots given back."},
	{Name: nameGateRejected, Type: "counter", Labels: []string{"upstream"}, Scraped: true,
		Help: "Claims the gate refused (no slot in time, or the queue full)."},
	{Name: nameGateWait, Type: "histogram", Labels: []string{"upstream"}, Buckets: waitBuckets,
		Help: "How long each granted claim waited for its slot, in seconds."},
	// Priority classes (issue 15), read from Gate.Stats at scrape time.
	{Name: nameClassInFlight, Type: "gauge", Labels: []string{"upstream", "class"}, Scraped: true,
		Help: "Budget slots held now by each priority class (interactive, batch)."},
	{Name: nameClassWaiting, Type: "gauge", Labels: []string{"upstream", "class"}, Scraped: true,
		Help: "Requests of each priority class waiting for a slot now."},
	{Name: nameClassQueued, Type: "gauge", Labels: []string{"upstream", "class"}, Scraped: true,
		Help: "Async tasks of each priority class waiting in the bounded queue now."},
	{Name: nameClassGuaranteed, Type: "gauge", Labels: []string{"upstream", "class"}, Scraped: true,
		Help: "Budget slots guaranteed to each priority class (SLUICE_PRIORITY_INTERACTIVE_SHARE); a class borrows the other's idle slots beyond it."},
	{Name: nameClassAcquired, Type: "counter", Labels: []string{"upstream", "class"}, Scraped: true,
		Help: "Budget slots granted to each priority class."},
	{Name: nameRefusals, Type: "counter", Labels: []string{"upstream", "reason"},
		Help: "Requests refused before their task started, by reason: overloaded, queue_full, breaker_open or budget_unavailable."},

	// Cluster budget (SLUICE_BUDGET_MODE=cluster), read from Gate.Stats
	// at scrape time; absent with a local budget.
	{Name: nameBudgetDegraded, Type: "gauge", Labels: []string{"upstream", "fail"}, Scraped: true,
		Help: "1 while the cluster budget's Redis does not answer (fail: closed refuses new requests, open serves a local share), 0 while it does."},
	{Name: nameBudgetFleetInFlight, Type: "gauge", Labels: []string{"upstream"}, Scraped: true,
		Help: "Live leases of the whole fleet, as of this instance's last call to Redis (at most a third of SLUICE_BUDGET_LEASE old)."},
	{Name: nameBudgetLeasesHeld, Type: "gauge", Labels: []string{"upstream"}, Scraped: true,
		Help: "Cluster budget leases this instance holds (its streams in flight)."},
	{Name: nameBudgetAttempts, Type: "counter", Labels: []string{"upstream"}, Scraped: true,
		Help: "Calls to Redis asking for a cluster budget lease; divided by sluice_budget_leases_granted_total: Redis round trips per granted slot."},
	{Name: nameBudgetGranted, Type: "counter", Labels: []string{"upstream"}, Scraped: true,
		Help: "Cluster budget leases granted by Redis."},

	// Adaptive budget (SLUICE_BUDGET_ADAPTIVE=on), read from the
	// controller at scrape time; absent with a fixed budget. The limit
	// itself is sluice_gate_limit.
	{Name: nameBudgetLimitChanges, Type: "counter", Labels: []string{"upstream", "reason"}, Scraped: true,
		Help: "Changes of the adaptive budget's limit, by reason: growth (TTFT near its baseline while the limit was reached), ttft (TTFT above the tolerated), overload (the upstream answered 429 or 503) or probe (one window at half the limit to measure the unloaded TTFT, and back)."},
	{Name: nameBudgetAdaptiveTTFT, Type: "gauge", Labels: []string{"upstream", "window"}, Scraped: true,
		Help: "The time to first token the adaptive budget steers by, in seconds: window baseline (the upstream's unloaded TTFT, as estimated) or recent (the last window's)."},

	// Circuit breakers.
	{Name: nameBreakerState, Type: "gauge", Labels: []string{"upstream", "state"}, Scraped: true,
		Help: "1 for the breaker's current state (closed, open or half_open), 0 for the others."},
	{Name: nameBreakerTrans, Type: "counter", Labels: []string{"upstream", "from", "to"},
		Help: "Circuit breaker state changes."},

	// Task retention.
	{Name: nameTasksRetained, Type: "gauge", Scraped: true,
		Help: "Finished tasks kept readable (at most SLUICE_TASK_MAX_RETAINED)."},
	{Name: nameTasksRetainedB, Type: "gauge", Scraped: true,
		Help: "Bytes of the finished tasks kept, as counted against SLUICE_TASK_MAX_RETAINED_BYTES (text plus ~2 KiB each)."},
	{Name: nameTasksEvicted, Type: "counter", Scraped: true,
		Help: "Finished tasks dropped before their TTL to keep the retention limits; their ids answer 404."},

	// Upstream calls.
	{Name: nameUpstreamRequests, Type: "counter", Labels: []string{"upstream", "outcome", "status"},
		Help: "Upstream calls by outcome (ok, http_error, connect_error, truncated, ttft_timeout, idle_timeout, cancelled, deadline, error) and HTTP status (0: no response)."},
	{Name: nameUpstreamRetries, Type: "counter", Labels: []string{"upstream"},
		Help: "Upstream calls retried."},
	{Name: nameUpstreamFallbacks, Type: "counter", Labels: []string{"upstream", "reason"},
		Help: "Requests passed on to the next upstream of their model (SLUICE_CONFIG) before any output, by the upstream that refused or failed them and why: overloaded, queue_full, breaker_open, budget_unavailable or upstream_error."},
	{Name: nameCoalesced, Type: "counter", Labels: []string{"upstream"},
		Help: "Requests that joined an identical request's running generation (SLUICE_COALESCE) instead of calling the upstream themselves."},
	{Name: nameTTFT, Type: "histogram", Labels: []string{"upstream"}, Buckets: latencyBuckets,
		Help: "Time from a task's acceptance (so including its budget wait) to its first content chunk, in seconds. Cache hits are not observed."},
	{Name: nameChunkGap, Type: "histogram", Labels: []string{"upstream"}, Buckets: gapBuckets,
		Help: "Gap between two content chunks of an upstream stream, in seconds."},

	// Tasks.
	{Name: nameTasks, Type: "counter", Labels: []string{"upstream", "status", "finish_reason", "cache"},
		Help: "Tasks ended, by final status (done, partial, failed, cancelled), finish_reason and cache status (hit, miss, bypass)."},
	{Name: nameTaskDuration, Type: "histogram", Labels: []string{"upstream", "status", "cache"}, Buckets: latencyBuckets,
		Help: "Total duration of ended tasks, from acceptance to the final status, in seconds (millisecond resolution)."},

	// SSE connections.
	{Name: nameConnsActive, Type: "gauge",
		Help: "SSE connections streaming now."},
	{Name: nameConnsOpened, Type: "counter",
		Help: "SSE connections opened."},
	{Name: nameConnsClosed, Type: "counter", Labels: []string{"reason"},
		Help: "SSE connections closed, by reason: end, client_gone, slow_consumer or write_error."},
	{Name: nameSentBytes, Type: "counter",
		Help: "Bytes written to SSE connections, heartbeat comments included."},
	{Name: nameSentEvents, Type: "counter",
		Help: "SSE events written (heartbeat comments are not events)."},
	{Name: nameMergedEvents, Type: "counter",
		Help: "Catch-up events that merged several deltas for a reader lagging more than its send buffer."},
	{Name: nameMergedDeltas, Type: "counter",
		Help: "Deltas merged into catch-up events."},

	// Answer cache, read from Cache.Stats at scrape time.
	{Name: nameCacheLookups, Type: "counter", Labels: []string{"namespace", "result", "kind"}, Scraped: true,
		Help: "Cache lookups by request namespace (capped, see docs), result (hit, miss, bypass) and kind (exact, semantic, none)."},
	{Name: nameCacheEntries, Type: "gauge", Labels: []string{"namespace"}, Scraped: true,
		Help: "Cache entries stored, by request namespace."},
	{Name: nameCacheBytes, Type: "gauge", Labels: []string{"namespace"}, Scraped: true,
		Help: "Bytes of cached questions and answers, by request namespace."},
	{Name: nameCacheEvictions, Type: "counter", Labels: []string{"namespace"}, Scraped: true,
		Help: "Cache entries evicted (capacity or TTL), by request namespace."},
	{Name: nameCacheNamespaces, Type: "gauge", Scraped: true,
		Help: "Effective cache namespaces (tenant, request namespace, model) the cache has counters for."},

	// The cache's shared change log, read from Cache.ShareStatus at scrape
	// time (only when the cache is shared: SLUICE_REDIS_URL and
	// SLUICE_CACHE_SHARED).
	{Name: nameCacheLogUp, Type: "gauge", Scraped: true,
		Help: "1 while the cache's shared change log (Redis) answered this instance's last read and append, 0 while it does not: the cache serves and stores locally meanwhile."},
	{Name: nameCacheLogLag, Type: "gauge", Scraped: true,
		Help: "How long this instance has been behind the cache's change log, in seconds: 0 while its last read came back with less than a full batch."},
	{Name: nameCacheLogPending, Type: "gauge", Scraped: true,
		Help: "Cache changes (puts and purges) waiting to be appended to the change log (puts bounded by SLUICE_CACHE_LOG_PENDING)."},
	{Name: nameCacheLogErrors, Type: "counter", Scraped: true,
		Help: "Calls to the cache's change log that failed (each is retried)."},
	{Name: nameCacheLogChanges, Type: "counter", Labels: []string{"result"}, Scraped: true,
		Help: "Cache changes by result: appended (this instance's puts and purges), applied (other instances' changes that changed this cache), refused (puts made before a purge: not logged, dropped here too), dropped (puts past SLUICE_CACHE_LOG_PENDING: kept here only)."},

	// HTTP connections, read from the listener at scrape time.
	{Name: nameHTTPConnsOpen, Type: "gauge", Scraped: true,
		Help: "Client connections open within SLUICE_MAX_CONNS."},
	{Name: nameHTTPConnsReserved, Type: "gauge", Scraped: true,
		Help: "Connections open beyond SLUICE_MAX_CONNS for /healthz, /readyz or /metrics (at most SLUICE_OPS_CONNS)."},
	{Name: nameHTTPConnsRefused, Type: "counter", Scraped: true,
		Help: "Connections answered 503 overloaded for being beyond SLUICE_MAX_CONNS."},

	// Redis (defined now, fed by ObserveRedis once Redis is wired).
	{Name: nameRedisOps, Type: "counter", Labels: []string{"op", "result"},
		Help: "Redis operations by operation name and result (ok, error)."},
	{Name: nameRedisDuration, Type: "histogram", Labels: []string{"op"}, Buckets: redisBuckets,
		Help: "Redis operation latency, in seconds."},

	// Shared state link and write-behind, read from the orchestrator at
	// scrape time (only with SLUICE_REDIS_URL).
	{Name: nameRedisUp, Type: "gauge", Scraped: true,
		Help: "1 while the shared state (Redis) answered the last heartbeat, 0 while it does not: the instance serves its own tasks and keeps their writes."},
	{Name: nameSharedPendingTasks, Type: "gauge", Scraped: true,
		Help: "Tasks whose writes wait for the shared state to answer (bounded by SLUICE_SHARED_PENDING_TASKS)."},
	{Name: nameSharedPendingBytes, Type: "gauge", Scraped: true,
		Help: "Bytes of answer text waiting to be published to the shared state (bounded by SLUICE_SHARED_PENDING_BYTES)."},
	{Name: nameSharedDropped, Type: "counter", Scraped: true,
		Help: "Tasks whose pending shared-state writes were given up (backlog full, or shutdown while the shared state was down): other instances do not see their rest."},

	// The Go runtime, read from runtime/metrics at scrape time.
	{Name: nameRuntimeSched, Type: "histogram", Buckets: runtimeBuckets, Scraped: true,
		Help: "How long goroutines waited runnable before they ran (CPU queueing in the process), in seconds, from the runtime's /sched/latencies:seconds in power-of-two buckets (the runtime keeps no sum: _sum counts each observation at its bucket's lower end)."},
	{Name: nameRuntimeGCPause, Type: "histogram", Buckets: runtimeBuckets, Scraped: true,
		Help: "Stop-the-world pauses of the garbage collector, in seconds, from the runtime's /sched/pauses/total/gc:seconds in power-of-two buckets (_sum as for the scheduling latency)."},

	// Logging.
	{Name: nameLogSuppressed, Type: "counter", Labels: []string{"level"},
		Help: "Repeated log records held back by the log aggregator (summarised once per window)."},
	{Name: nameLogAggregatorFull, Type: "counter",
		Help: "Log records passed through unaggregated because the aggregator tracked its maximum of distinct records."},
}

// doc returns the catalog entry of name; a missing one is a bug.
func doc(name string) MetricDoc {
	for _, d := range catalog {
		if d.Name == name {
			return d
		}
	}
	panic("metrics: no catalog entry for " + name)
}
