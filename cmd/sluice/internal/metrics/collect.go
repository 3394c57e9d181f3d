package metrics

import (
	"maps"
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
)

// GateSource is where the gates and breakers are read at scrape time; an
// *orchestrator.Orchestrator is one.
type GateSource interface {
	Gates() []*pipeline.Gate
	Breakers() []*pipeline.Breaker
}

// retentionSource is a GateSource that also reports its retained tasks;
// an *orchestrator.Orchestrator is one.
type retentionSource interface {
	Retention() (orchestrator.RetentionStats, bool)
}

// adaptiveSource is a GateSource whose gates may have adaptive limits, in
// the order of Gates (nil: fixed); an *orchestrator.Orchestrator is one.
type adaptiveSource interface {
	Adaptives() []*pipeline.Adaptive
}

// CacheSource is where the cache counters are read at scrape time; a
// *cache.Cache is one.
type CacheSource interface {
	Stats() []cache.NamespaceStats
}

// shareSource is a CacheSource whose cache may be shared through a change
// log; a *cache.Cache is one.
type shareSource interface {
	ShareStatus() cache.ShareStatus
}

// ConnSource is where the connection counts are read at scrape time; a
// *web.Listener is one.
type ConnSource interface {
	ConnCounts() (open, reserved int, refused int64)
}

// RetiredCacheSource is a CacheSource that also sums the counters of the
// namespaces it has dropped (a *cache.Cache is one). Those are added to
// OtherNamespace, so that the cache counters never go down when a
// namespace's counters are dropped.
type RetiredCacheSource interface {
	CacheSource
	Retired() cache.NamespaceStats
}

// scraper is the collector of everything read from its source at scrape
// time: values already counted by the gate, the breaker and the cache are
// never counted twice, so they cannot drift.
type scraper struct {
	mu    sync.Mutex // protects gates, cache, conns and known
	gates GateSource
	cache CacheSource
	conns ConnSource
	// known are the request namespaces that have their own label value,
	// at most max of them, admitted in scrape order and never forgotten:
	// a namespace's counters must not move between series.
	known map[string]struct{}
	max   int

	gateInFlight, gateLimit, gateWaiting, gateQueued, gateQueueLimit *prometheus.Desc
	gateAcquired, gateReleased, gateRejected                         *prometheus.Desc
	classInFlight, classWaiting, classQueued, classGuaranteed        *prometheus.Desc
	classAcquired                                                    *prometheus.Desc
	breakerState                                                     *prometheus.Desc
	budgetDegraded, budgetFleet, budgetHeld, budgetAttempts          *prometheus.Desc
	budgetGranted, budgetChanges, budgetTTFT                         *prometheus.Desc
	taskRetained, taskRetBytes, taskEvicted                          *prometheus.Desc
	cacheLookups, cacheEntries, cacheBytes, cacheEvictions           *prometheus.Desc
	cacheNamespaces                                                  *prometheus.Desc
	cacheLogUp, cacheLogLag, cacheLogPending, cacheLogErrors         *prometheus.Desc
	cacheLogChanges                                                  *prometheus.Desc
	connsOpen, connsReserved, connsRefused                           *prometheus.Desc
}

func newDesc(name string) *prometheus.Desc {
	d := doc(name)
	return prometheus.NewDesc(d.Name, d.Help, d.Labels, nil)
}

func newScraper(maxNamespaces int) *scraper {
	return &scraper{
		known:           map[string]struct{}{},
		max:             maxNamespaces,
		gateInFlight:    newDesc(nameGateInFlight),
		gateLimit:       newDesc(nameGateLimit),
		gateWaiting:     newDesc(nameGateWaiting),
		gateQueued:      newDesc(nameGateQueued),
		gateQueueLimit:  newDesc(nameGateQueueLimit),
		gateAcquired:    newDesc(nameGateAcquired),
		gateReleased:    newDesc(nameGateReleased),
		gateRejected:    newDesc(nameGateRejected),
		classInFlight:   newDesc(nameClassInFlight),
		classWaiting:    newDesc(nameClassWaiting),
		classQueued:     newDesc(nameClassQueued),
		classGuaranteed: newDesc(nameClassGuaranteed),
		classAcquired:   newDesc(nameClassAcquired),
		breakerState:    newDesc(nameBreakerState),
		budgetDegraded:  newDesc(nameBudgetDegraded),
		budgetFleet:     newDesc(nameBudgetFleetInFlight),
		budgetHeld:      newDesc(nameBudgetLeasesHeld),
		budgetAttempts:  newDesc(nameBudgetAttempts),
		budgetGranted:   newDesc(nameBudgetGranted),
		budgetChanges:   newDesc(nameBudgetLimitChanges),
		budgetTTFT:      newDesc(nameBudgetAdaptiveTTFT),
		taskRetained:    newDesc(nameTasksRetained),
		taskRetBytes:    newDesc(nameTasksRetainedB),
		taskEvicted:     newDesc(nameTasksEvicted),
		cacheLookups:    newDesc(nameCacheLookups),
		cacheEntries:    newDesc(nameCacheEntries),
		cacheBytes:      newDesc(nameCacheBytes),
		cacheEvictions:  newDesc(nameCacheEvictions),
		cacheNamespaces: newDesc(nameCacheNamespaces),
		cacheLogUp:      newDesc(nameCacheLogUp),
		cacheLogLag:     newDesc(nameCacheLogLag),
		cacheLogPending: newDesc(nameCacheLogPending),
		cacheLogErrors:  newDesc(nameCacheLogErrors),
		cacheLogChanges: newDesc(nameCacheLogChanges),
		connsOpen:       newDesc(nameHTTPConnsOpen),
		connsReserved:   newDesc(nameHTTPConnsReserved),
		connsRefused:    newDesc(nameHTTPConnsRefused),
	}
}

func (s *scraper) setConns(src ConnSource) {
	s.mu.Lock()
	s.conns = src
	s.mu.Unlock()
}

func (s *scraper) setGates(src GateSource) {
	s.mu.Lock()
	s.gates = src
	s.mu.Unlock()
}

func (s *scraper) setCache(src CacheSource) {
	if c, ok := src.(*cache.Cache); ok && c == nil {
		src = nil // a nil *cache.Cache would panic in Stats
	}
	s.mu.Lock()
	s.cache = src
	s.mu.Unlock()
}

func (s *scraper) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		s.gateInFlight, s.gateLimit, s.gateWaiting, s.gateQueued, s.gateQueueLimit,
		s.gateAcquired, s.gateReleased, s.gateRejected, s.breakerState,
		s.classInFlight, s.classWaiting, s.classQueued, s.classGuaranteed, s.classAcquired,
		s.budgetDegraded, s.budgetFleet, s.budgetHeld, s.budgetAttempts, s.budgetGranted,
		s.budgetChanges, s.budgetTTFT,
		s.taskRetained, s.taskRetBytes, s.taskEvicted,
		s.cacheLookups, s.cacheEntries, s.cacheBytes, s.cacheEvictions, s.cacheNamespaces,
		s.cacheLogUp, s.cacheLogLag, s.cacheLogPending, s.cacheLogErrors, s.cacheLogChanges,
		s.connsOpen, s.connsReserved, s.connsRefused,
	} {
		ch <- d
	}
}

func (s *scraper) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	gates, c, conns := s.gates, s.cache, s.conns
	s.mu.Unlock()
	if conns != nil {
		open, reserved, refused := conns.ConnCounts()
		ch <- prometheus.MustNewConstMetric(s.connsOpen, prometheus.GaugeValue, float64(open))
		ch <- prometheus.MustNewConstMetric(s.connsReserved, prometheus.GaugeValue, float64(reserved))
		ch <- prometheus.MustNewConstMetric(s.connsRefused, prometheus.CounterValue, float64(refused))
	}
	if gates != nil {
		s.collectGates(ch, gates)
	}
	if c != nil {
		s.collectCache(ch, c)
	}
}

func (s *scraper) collectGates(ch chan<- prometheus.Metric, src GateSource) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	for _, g := range src.Gates() {
		st := g.Stats() // one consistent snapshot
		gauge(s.gateInFlight, float64(st.InFlight), st.Name)
		gauge(s.gateLimit, float64(st.Limit), st.Name)
		gauge(s.gateWaiting, float64(st.Waiting), st.Name)
		gauge(s.gateQueued, float64(st.Queued), st.Name)
		gauge(s.gateQueueLimit, float64(st.QueueLimit), st.Name)
		counter(s.gateAcquired, float64(st.AcquiredTotal), st.Name)
		counter(s.gateReleased, float64(st.ReleasedTotal), st.Name)
		counter(s.gateRejected, float64(st.RejectedTotal), st.Name)
		for class, c := range st.Classes {
			gauge(s.classInFlight, float64(c.InFlight), st.Name, class)
			gauge(s.classWaiting, float64(c.Waiting), st.Name, class)
			gauge(s.classQueued, float64(c.Queued), st.Name, class)
			gauge(s.classGuaranteed, float64(c.Guaranteed), st.Name, class)
			counter(s.classAcquired, float64(c.AcquiredTotal), st.Name, class)
		}
		if st.FleetStats != nil {
			degraded := 0.0
			if st.Degraded != "" {
				degraded = 1
			}
			gauge(s.budgetDegraded, degraded, st.Name, st.FailMode)
			gauge(s.budgetFleet, float64(st.FleetInFlight), st.Name)
			gauge(s.budgetHeld, float64(st.LeasesHeld), st.Name)
			counter(s.budgetAttempts, float64(st.LeaseAttempts), st.Name)
			counter(s.budgetGranted, float64(st.LeasesGranted), st.Name)
		}
	}
	if as, ok := src.(adaptiveSource); ok {
		for i, a := range as.Adaptives() {
			if a == nil {
				continue
			}
			name := src.Gates()[i].Stats().Name
			st := a.Stats()
			for _, reason := range slices.Sorted(maps.Keys(st.Changes)) {
				counter(s.budgetChanges, float64(st.Changes[reason]), name, reason)
			}
			gauge(s.budgetTTFT, st.BaselineTTFTMs/1000, name, "baseline")
			gauge(s.budgetTTFT, st.RecentTTFTMs/1000, name, "recent")
		}
	}
	for _, b := range src.Breakers() {
		cur := b.State()
		for _, st := range []pipeline.BreakerState{pipeline.BreakerClosed, pipeline.BreakerOpen, pipeline.BreakerHalfOpen} {
			v := 0.0
			if st == cur {
				v = 1
			}
			gauge(s.breakerState, v, b.Name(), st.String())
		}
	}
	if rs, ok := src.(retentionSource); ok {
		if st, ok := rs.Retention(); ok {
			gauge(s.taskRetained, float64(st.Finished))
			gauge(s.taskRetBytes, float64(st.FinishedBytes))
			counter(s.taskEvicted, float64(st.Evicted))
		}
	}
}

// nsCounters are the cache counters of one namespace label value.
type nsCounters struct {
	hitsExact, hitsSemantic, misses, bypasses, evictions int64
	entries                                              int
	bytes                                                int64
}

func (s *scraper) collectCache(ch chan<- prometheus.Metric, src CacheSource) {
	stats := src.Stats()
	byLabel := map[string]*nsCounters{}
	if r, ok := src.(RetiredCacheSource); ok {
		st := r.Retired()
		c := &nsCounters{hitsExact: st.HitsExact, hitsSemantic: st.HitsSemantic, misses: st.Misses,
			bypasses: st.Bypasses, evictions: st.Evictions}
		byLabel[OtherNamespace] = c
	}
	s.mu.Lock()
	for _, st := range stats {
		l := s.labelLocked(st.Name)
		c := byLabel[l]
		if c == nil {
			c = &nsCounters{}
			byLabel[l] = c
		}
		c.hitsExact += st.HitsExact
		c.hitsSemantic += st.HitsSemantic
		c.misses += st.Misses
		c.bypasses += st.Bypasses
		c.evictions += st.Evictions
		c.entries += st.Entries
		c.bytes += st.Bytes
	}
	s.mu.Unlock()
	labels := make([]string, 0, len(byLabel))
	for l := range byLabel {
		labels = append(labels, l)
	}
	slices.Sort(labels)
	for _, l := range labels {
		c := byLabel[l]
		counter := func(d *prometheus.Desc, v int64, extra ...string) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), append([]string{l}, extra...)...)
		}
		counter(s.cacheLookups, c.hitsExact, "hit", "exact")
		counter(s.cacheLookups, c.hitsSemantic, "hit", "semantic")
		counter(s.cacheLookups, c.misses, "miss", "none")
		counter(s.cacheLookups, c.bypasses, "bypass", "none")
		counter(s.cacheEvictions, c.evictions)
		ch <- prometheus.MustNewConstMetric(s.cacheEntries, prometheus.GaugeValue, float64(c.entries), l)
		ch <- prometheus.MustNewConstMetric(s.cacheBytes, prometheus.GaugeValue, float64(c.bytes), l)
	}
	ch <- prometheus.MustNewConstMetric(s.cacheNamespaces, prometheus.GaugeValue, float64(len(stats)))
	if ss, ok := src.(shareSource); ok {
		s.collectCacheLog(ch, ss.ShareStatus())
	}
}

// collectCacheLog reports the state of the cache's shared change log, when
// the cache is shared.
func (s *scraper) collectCacheLog(ch chan<- prometheus.Metric, st cache.ShareStatus) {
	if !st.Enabled {
		return
	}
	up := 0.0
	if st.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(s.cacheLogUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(s.cacheLogLag, prometheus.GaugeValue, st.Lag.Seconds())
	ch <- prometheus.MustNewConstMetric(s.cacheLogPending, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(s.cacheLogErrors, prometheus.CounterValue, float64(st.Errors))
	for _, r := range []struct {
		result string
		n      int64
	}{{"appended", st.Appended}, {"applied", st.Applied}, {"refused", st.Refused}, {"dropped", st.Dropped}} {
		ch <- prometheus.MustNewConstMetric(s.cacheLogChanges, prometheus.CounterValue, float64(r.n), r.result)
	}
}

// labelLocked maps a request namespace to its label value. s.mu must be
// held.
func (s *scraper) labelLocked(name string) string {
	if name == "" {
		name = cache.DefaultNamespace
	}
	if _, ok := s.known[name]; ok {
		return name
	}
	if len(s.known) < s.max {
		s.known[name] = struct{}{}
		return name
	}
	return OtherNamespace
}
