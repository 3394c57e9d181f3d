package metrics

import (
	"log/slog"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream"
)

// Config configures a Metrics. The zero value works.
type Config struct {
	// MaxNamespaces is the most request namespaces that get their own
	// value of the cache metrics' namespace label; the request namespaces
	// seen after those (in scrape order) are summed under OtherNamespace.
	// Namespace names are the tenants' own words, so by default none is
	// exported, and when some are, the label is capped; tenants and models
	// are never labels (they are summed).
	// default: 0, every namespace is OtherNamespace (as when negative).
	MaxNamespaces int
	// NoRuntime leaves out the Go runtime and process collectors (tests
	// that build many registries do not need them); the
	// sluice_runtime_ histograms stay, as sluice's own. default: false
	NoRuntime bool
}

func (c *Config) setDefaults() {
	if c.MaxNamespaces < 0 {
		c.MaxNamespaces = 0
	}
}

// OtherNamespace is the namespace label value of the request namespaces
// beyond Config.MaxNamespaces (all of them by default), and of the
// counters of namespaces the cache no longer keeps (see
// RetiredCacheSource). Request namespaces match [A-Za-z0-9._-]{1,64}, so
// it cannot collide with one.
const OtherNamespace = "(other)"

// Metrics holds sluice's metrics on a private registry. It implements
// orchestrator.Observer and web.ConnObserver, and is itself a
// prometheus.Collector of every sluice_ metric. It is safe for concurrent
// use; its methods never block.
type Metrics struct {
	cfg     Config
	reg     *prometheus.Registry
	handler http.Handler
	scrape  *scraper
	shared  *sharedScraper
	runtime *runtimeScraper

	gateWait      *prometheus.HistogramVec
	refusals      *prometheus.CounterVec
	breakerTrans  *prometheus.CounterVec
	upRequests    *prometheus.CounterVec
	upRetries     *prometheus.CounterVec
	upFallbacks   *prometheus.CounterVec
	coalesced     *prometheus.CounterVec
	ttft          *prometheus.HistogramVec
	chunkGap      *prometheus.HistogramVec
	tasks         *prometheus.CounterVec
	taskDuration  *prometheus.HistogramVec
	connsActive   prometheus.Gauge
	connsOpened   prometheus.Counter
	connsClosed   *prometheus.CounterVec
	sentBytes     prometheus.Counter
	sentEvents    prometheus.Counter
	mergedEvents  prometheus.Counter
	mergedDeltas  prometheus.Counter
	redisOps      *prometheus.CounterVec
	redisDuration *prometheus.HistogramVec
	logSuppressed *prometheus.CounterVec
	logUntracked  prometheus.Counter

	event []prometheus.Collector // the event-fed collectors above
}

// runtimeTail are the Go runtime histograms exported beside
// client_golang's default go_ set, to tell a request's tail latency apart
// from the process's own waits (issue 16):
//
//   - /sched/latencies:seconds, go_sched_latencies_seconds: how long
//     goroutines waited runnable before they ran (CPU queueing);
//   - /sched/pauses/total/gc:seconds, go_sched_pauses_total_gc_seconds:
//     each stop-the-world pause of the GC (the runtime's preferred name
//     for the deprecated, identical /gc/pauses:seconds).
//
// client_golang re-buckets runtime histograms in seconds to powers of
// ten (~64 ns, 640 ns, 7.2 µs, 82 µs, 0.92 ms, 10.5 ms, 117 ms, +Inf),
// so a quantile read from them places a value within a decade, not
// finer; the same two are therefore also sluice_runtime_ histograms in
// powers of two (runtime.go), which `sluice load` reads before and after
// each run.
var runtimeTail = []collectors.GoRuntimeMetricsRule{
	{Matcher: regexp.MustCompile(`^/sched/latencies:seconds$`)},
	{Matcher: regexp.MustCompile(`^/sched/pauses/total/gc:seconds$`)},
}

// New returns a Metrics whose registry holds its sluice_ metrics, the
// promhttp handler's own metrics, and (unless cfg.NoRuntime) the Go
// runtime (with runtimeTail) and process collectors. Call WatchGates and
// WatchCache to have the gates, breakers and cache read at scrape time.
func New(cfg Config) *Metrics {
	cfg.setDefaults()
	m := &Metrics{cfg: cfg, reg: prometheus.NewRegistry(), scrape: newScraper(cfg.MaxNamespaces), shared: newSharedScraper(), runtime: newRuntimeScraper()}
	m.gateWait = m.histogram(nameGateWait)
	m.refusals = m.counter(nameRefusals)
	m.breakerTrans = m.counter(nameBreakerTrans)
	m.upRequests = m.counter(nameUpstreamRequests)
	m.upRetries = m.counter(nameUpstreamRetries)
	m.upFallbacks = m.counter(nameUpstreamFallbacks)
	m.coalesced = m.counter(nameCoalesced)
	m.ttft = m.histogram(nameTTFT)
	m.chunkGap = m.histogram(nameChunkGap)
	m.tasks = m.counter(nameTasks)
	m.taskDuration = m.histogram(nameTaskDuration)
	m.connsActive = m.gauge(nameConnsActive)
	m.connsOpened = m.counter(nameConnsOpened).WithLabelValues()
	m.connsClosed = m.counter(nameConnsClosed)
	m.sentBytes = m.counter(nameSentBytes).WithLabelValues()
	m.sentEvents = m.counter(nameSentEvents).WithLabelValues()
	m.mergedEvents = m.counter(nameMergedEvents).WithLabelValues()
	m.mergedDeltas = m.counter(nameMergedDeltas).WithLabelValues()
	m.redisOps = m.counter(nameRedisOps)
	m.redisDuration = m.histogram(nameRedisDuration)
	m.logSuppressed = m.counter(nameLogSuppressed)
	m.logUntracked = m.counter(nameLogAggregatorFull).WithLabelValues()

	// Series that exist from the start, so that rates and ratios have a
	// zero to start from instead of appearing with the first event.
	for _, r := range []stream.CloseReason{stream.CloseEnd, stream.CloseClientGone, stream.CloseSlowConsumer, stream.CloseWriteError} {
		m.connsClosed.WithLabelValues(r.String())
	}

	m.reg.MustRegister(m)
	if !cfg.NoRuntime {
		m.reg.MustRegister(
			collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(runtimeTail...)),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m.handler = promhttp.InstrumentMetricHandler(m.reg, promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{
		ErrorHandling:       promhttp.ContinueOnError, // a failing collector must not hide the others
		Registry:            m.reg,                    // counts promhttp_metric_handler_errors_total
		MaxRequestsInFlight: 4,
	}))
	return m
}

func (m *Metrics) counter(name string) *prometheus.CounterVec {
	d := doc(name)
	v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: d.Name, Help: d.Help}, d.Labels)
	m.event = append(m.event, v)
	return v
}

func (m *Metrics) gauge(name string) prometheus.Gauge {
	d := doc(name)
	v := prometheus.NewGauge(prometheus.GaugeOpts{Name: d.Name, Help: d.Help})
	m.event = append(m.event, v)
	return v
}

func (m *Metrics) histogram(name string) *prometheus.HistogramVec {
	d := doc(name)
	v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: d.Name, Help: d.Help, Buckets: d.Buckets}, d.Labels)
	m.event = append(m.event, v)
	return v
}

// Handler serves the registry in the Prometheus exposition formats (for
// web.Config.Metrics).
func (m *Metrics) Handler() http.Handler { return m.handler }

// Registry returns the private registry, for collectors added later.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.event {
		c.Describe(ch)
	}
	m.scrape.Describe(ch)
	m.shared.Describe(ch)
	m.runtime.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.event {
		c.Collect(ch)
	}
	m.scrape.Collect(ch)
	m.shared.Collect(ch)
	m.runtime.Collect(ch)
}

// WatchGates makes every scrape read src's gates and breakers
// (an *orchestrator.Orchestrator). A later call replaces src.
func (m *Metrics) WatchGates(src GateSource) { m.scrape.setGates(src) }

// WatchCache makes every scrape read src's counters (a *cache.Cache; nil
// stops). A later call replaces src.
func (m *Metrics) WatchCache(src CacheSource) { m.scrape.setCache(src) }

// WatchConns makes every scrape read src's connection counts (a
// *web.Listener). A later call replaces src.
func (m *Metrics) WatchConns(src ConnSource) { m.scrape.setConns(src) }

// Refused implements orchestrator.Observer.
func (m *Metrics) Refused(upstream, reason string) {
	m.refusals.WithLabelValues(upstream, reason).Inc()
}

// BudgetWait implements orchestrator.Observer.
func (m *Metrics) BudgetWait(upstream string, wait time.Duration) {
	m.gateWait.WithLabelValues(upstream).Observe(wait.Seconds())
}

// BreakerTransition implements orchestrator.Observer. It runs under the
// breaker's lock, so it only increments a counter; the state gauge is
// read at scrape time.
func (m *Metrics) BreakerTransition(upstream string, from, to pipeline.BreakerState) {
	m.breakerTrans.WithLabelValues(upstream, from.String(), to.String()).Inc()
}

// UpstreamAttempt implements orchestrator.Observer.
func (m *Metrics) UpstreamAttempt(upstream, outcome string, status int) {
	m.upRequests.WithLabelValues(upstream, outcome, statusLabel(status)).Inc()
}

// statusLabel keeps the status label bounded: a valid HTTP status code,
// or "0" for none.
func statusLabel(code int) string {
	if code < 100 || code > 599 {
		return "0"
	}
	return strconv.Itoa(code)
}

// Retry implements orchestrator.Observer.
func (m *Metrics) Retry(upstream string) { m.upRetries.WithLabelValues(upstream).Inc() }

var _ orchestrator.FallbackObserver = (*Metrics)(nil)

// Fallback implements orchestrator.FallbackObserver.
func (m *Metrics) Fallback(upstream, reason string) {
	m.upFallbacks.WithLabelValues(upstream, reason).Inc()
}

// Coalesced implements orchestrator.CoalesceObserver.
func (m *Metrics) Coalesced(upstream string) { m.coalesced.WithLabelValues(upstream).Inc() }

// FirstToken implements orchestrator.Observer.
func (m *Metrics) FirstToken(upstream string, d time.Duration) {
	m.ttft.WithLabelValues(upstream).Observe(d.Seconds())
}

// ChunkGap implements orchestrator.Observer.
func (m *Metrics) ChunkGap(upstream string, d time.Duration) {
	m.chunkGap.WithLabelValues(upstream).Observe(d.Seconds())
}

// TaskEnded implements orchestrator.Observer. Only bounded fields of the
// view become labels; never its id, text or namespace.
func (m *Metrics) TaskEnded(v orchestrator.View) {
	cacheStatus := string(v.Cache.Status)
	if cacheStatus == "" {
		cacheStatus = "none"
	}
	status := string(v.Status)
	m.tasks.WithLabelValues(v.Upstream, status, v.FinishReason, cacheStatus).Inc()
	if v.TotalMs != nil {
		m.taskDuration.WithLabelValues(v.Upstream, status, cacheStatus).Observe(float64(*v.TotalMs) / 1000)
	}
}

// ConnOpened implements web.ConnObserver.
func (m *Metrics) ConnOpened() {
	m.connsActive.Inc()
	m.connsOpened.Inc()
}

// ConnClosed implements web.ConnObserver.
func (m *Metrics) ConnClosed(st stream.ConnStats) {
	m.connsActive.Dec()
	m.connsClosed.WithLabelValues(st.Reason.String()).Inc()
}

// ConnWrote implements web.ConnObserver: one successful write of events
// of which merged deltas were merged into one catch-up event.
func (m *Metrics) ConnWrote(bytes, events, merged int) {
	m.sentBytes.Add(float64(bytes))
	m.sentEvents.Add(float64(events))
	if merged > 0 {
		m.mergedEvents.Inc()
		m.mergedDeltas.Add(float64(merged))
	}
}

// ObserveRedis records one Redis operation: op is a fixed operation name
// chosen by the caller (get, set, publish, ...; anything not matching
// [a-z0-9_]{1,32} is counted as "other"), d its latency and err its error.
// A cache miss (redis.Nil) is not an error: pass nil for it.
func (m *Metrics) ObserveRedis(op string, d time.Duration, err error) {
	op = opLabel(op)
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.redisOps.WithLabelValues(op, result).Inc()
	m.redisDuration.WithLabelValues(op).Observe(d.Seconds())
}

func opLabel(op string) string {
	if op == "" || len(op) > 32 {
		return "other"
	}
	if strings.IndexFunc(op, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_')
	}) >= 0 {
		return "other"
	}
	return op
}

// LogSuppressed counts a log record held back as a repeat (for
// logagg.Config.OnSuppressed).
func (m *Metrics) LogSuppressed(level slog.Level) {
	m.logSuppressed.WithLabelValues(strings.ToLower(level.String())).Inc()
}

// LogUntracked counts a record passed through because the aggregator was
// full (for logagg.Config.OnUntracked).
func (m *Metrics) LogUntracked() { m.logUntracked.Inc() }
