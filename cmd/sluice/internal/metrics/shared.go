package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-dev/sluice/orchestrator"
)

// SharedSource is where the shared-state link is read at scrape time; an
// *orchestrator.Orchestrator is one.
type SharedSource interface {
	SharedStatus() orchestrator.SharedStatus
}

// sharedScraper collects the shared-state link and its write-behind
// backlog, read from the orchestrator at scrape time. Nothing is
// collected for a single instance (no shared state).
type sharedScraper struct {
	mu  sync.Mutex // protects src
	src SharedSource

	up, pendingTasks, pendingBytes, dropped *prometheus.Desc
}

func newSharedScraper() *sharedScraper {
	return &sharedScraper{
		up:           newDesc(nameRedisUp),
		pendingTasks: newDesc(nameSharedPendingTasks),
		pendingBytes: newDesc(nameSharedPendingBytes),
		dropped:      newDesc(nameSharedDropped),
	}
}

func (s *sharedScraper) set(src SharedSource) {
	s.mu.Lock()
	s.src = src
	s.mu.Unlock()
}

func (s *sharedScraper) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{s.up, s.pendingTasks, s.pendingBytes, s.dropped} {
		ch <- d
	}
}

func (s *sharedScraper) Collect(ch chan<- prometheus.Metric) {
	s.mu.Lock()
	src := s.src
	s.mu.Unlock()
	if src == nil {
		return
	}
	st := src.SharedStatus()
	if !st.Enabled {
		return
	}
	up := 0.0
	if st.Up {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(s.up, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(s.pendingTasks, prometheus.GaugeValue, float64(st.PendingTasks))
	ch <- prometheus.MustNewConstMetric(s.pendingBytes, prometheus.GaugeValue, float64(st.PendingBytes))
	ch <- prometheus.MustNewConstMetric(s.dropped, prometheus.CounterValue, float64(st.Dropped))
}

// WatchShared makes every scrape read src's shared-state link (an
// *orchestrator.Orchestrator). A later call replaces src.
func (m *Metrics) WatchShared(src SharedSource) { m.shared.set(src) }
