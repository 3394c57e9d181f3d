package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream"
)

// probeUpstream asks a real upstream for its models once at start, within
// SLUICE_PROBE_TIMEOUT. Without SLUICE_MODEL the first model becomes the
// default (logged), and no answer is an error naming SLUICE_MODEL: sending
// "sim-1" to a real model only fails later, request by request. With
// SLUICE_MODEL set, an unreachable upstream is a warning only: it may come
// up after sluice.
func probeUpstream(ctx context.Context, s *settings, up upstream.Upstream, log *slog.Logger) error {
	lister, ok := up.(upstream.ModelLister)
	if !ok {
		return nil // the simulated model
	}
	pctx, cancel := context.WithTimeout(ctx, s.ProbeTimeout)
	defer cancel()
	models, err := lister.Models(pctx)
	if err == nil && len(models) == 0 {
		err = errors.New("it lists no model")
	}
	if !s.given["SLUICE_MODEL"] {
		if err != nil {
			return fmt.Errorf("no model set and the upstream did not say which it serves (GET %s/models: %w); set SLUICE_MODEL (or -model) to the model to use", s.Upstream, err)
		}
		s.Model = models[0]
		log.Info("model: the upstream's first (GET /models); set SLUICE_MODEL to choose another",
			"model", s.Model, "upstream_models", len(models))
		return nil
	}
	switch {
	case err != nil:
		log.Warn("upstream not reachable at start (requests fail until it is; /readyz reports it)",
			"upstream", s.Upstream, "err", err.Error())
	case !slices.Contains(models, s.Model):
		log.Warn("SLUICE_MODEL is not among the upstream's models", "model", s.Model, "upstream_models", models)
	}
	return nil
}

// modelList is GET /v1/models passed upstream: the upstream's list,
// reused for SLUICE_MODELS_TTL so that SDKs listing models on start do not
// each reach the upstream. One fetch at a time, each bounded by
// SLUICE_PROBE_TIMEOUT.
type modelList struct {
	lister  upstream.ModelLister
	ttl     time.Duration
	timeout time.Duration
	sem     chan struct{} // one fetch at a time; a waiter leaves with its ctx

	mu     sync.Mutex
	at     time.Time
	models []string
}

func newModelList(l upstream.ModelLister, ttl, timeout time.Duration) *modelList {
	return &modelList{lister: l, ttl: ttl, timeout: timeout, sem: make(chan struct{}, 1)}
}

func (m *modelList) fresh() ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.models, m.models != nil && time.Since(m.at) < m.ttl
}

// Models returns the upstream's models, from the last answer while it is
// fresh.
func (m *modelList) Models(ctx context.Context) ([]string, error) {
	if ms, ok := m.fresh(); ok {
		return ms, nil
	}
	select {
	case m.sem <- struct{}{}:
		defer func() { <-m.sem }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if ms, ok := m.fresh(); ok { // fetched while this call waited
		return ms, nil
	}
	fctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	ms, err := m.lister.Models(fctx)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	m.models, m.at = ms, time.Now()
	m.mu.Unlock()
	return ms, nil
}

// redactedURL is u without its password, for logs.
func redactedURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable)"
	}
	return p.Redacted()
}
