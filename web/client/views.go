package client

// The views of the server's JSON. Where the server answers with an
// exported type of its own packages, the view is that type (an alias);
// the few answers that package web builds in place are declared here
// once, and web's tests check that they decode the server's JSON.

import (
	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
)

// Task is GET /v1/tasks/{id}.
type Task = orchestrator.View

// Meta is the data of a stream's meta event.
type Meta = orchestrator.Meta

// CacheInfo is a task's cache decision.
type CacheInfo = orchestrator.CacheInfo

// Explanation is POST /v1/cache/lookup.
type Explanation = cache.Explanation

// NamespaceStats are one namespace's counters in GET /v1/cache/stats.
type NamespaceStats = cache.NamespaceStats

// GateStats are one upstream's budget counters in GET /v1/budget.
type GateStats = pipeline.GateStats

// TaskRequest is the body of POST /v1/tasks and POST /v1/stream: a prompt
// or messages, and options (zero: the server's default).
type TaskRequest struct {
	Prompt    string    `json:"prompt,omitempty"`
	Messages  []Message `json:"messages,omitempty"`
	Model     string    `json:"model,omitempty"`
	Namespace string    `json:"namespace,omitempty"`
	NoCache   bool      `json:"nocache"`
	MaxTokens int       `json:"max_tokens,omitempty"`
	// Priority is the budget's priority class, "interactive" or "batch";
	// empty: the door's (or the tenant's) default.
	Priority string `json:"priority,omitempty"`
}

// Message is one chat message.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Created is the answer to POST /v1/tasks (202).
type Created struct {
	ID        string    `json:"id"`
	Status    string    `json:"status"`
	URL       string    `json:"url"`
	EventsURL string    `json:"events_url"`
	Cache     CacheInfo `json:"cache"`
	// Coalesced: the request joined an identical request's running
	// task (the same id) instead of starting its own.
	Coalesced bool `json:"coalesced,omitempty"`
}

// End is the data of a stream's terminal event: done and partial carry
// the finish reason and timings, error its code and message.
type End struct {
	FinishReason string `json:"finish_reason"`
	Notice       string `json:"notice,omitempty"`
	Code         string `json:"code,omitempty"`
	Message      string `json:"message,omitempty"`
	FirstTokenMs *int64 `json:"first_token_ms,omitempty"` // nil: no token came
	TotalMs      int64  `json:"total_ms"`
	Chunks       int    `json:"chunks,omitempty"`
}

// Delta is the data of a delta event.
type Delta struct {
	Text string `json:"text"`
}

// Budget is GET /v1/budget: the top-level figures sum over the upstreams.
type Budget struct {
	// Mode is "cluster" when an upstream's budget is the whole fleet's
	// (its UpstreamBudget then has FleetStats), else "local".
	Mode          string `json:"mode"`
	Limit         int    `json:"limit"`
	InFlight      int    `json:"in_flight"`
	Queued        int    `json:"queued"`
	RejectedTotal int64  `json:"rejected_total"`
	// Classes sums each priority class's counters over the upstreams.
	Classes   map[string]ClassStats `json:"classes"`
	Upstreams []UpstreamBudget      `json:"upstreams"`
	// Coalesce: the generations identical requests can join, and the
	// requests waiting for their leader's slot.
	Coalesce orchestrator.CoalesceStats `json:"coalesce"`
}

// ClassStats are one priority class's budget counters in GET /v1/budget.
type ClassStats = pipeline.ClassStats

// Totals sums the permits acquired and released over the upstreams.
func (b Budget) Totals() (acquired, released int64) {
	for _, u := range b.Upstreams {
		acquired += u.AcquiredTotal
		released += u.ReleasedTotal
	}
	return acquired, released
}

// UpstreamBudget is one upstream's entry in GET /v1/budget.
type UpstreamBudget struct {
	GateStats
	Breaker         string `json:"breaker"`
	BreakerCalls    int    `json:"breaker_window_calls"`
	BreakerFailures int    `json:"breaker_window_failures"`
}

// CacheStats is GET /v1/cache/stats.
type CacheStats struct {
	Threshold  float64          `json:"threshold"`
	Namespaces []NamespaceStats `json:"namespaces"`
}

// CacheLookupRequest is the body of POST /v1/cache/lookup.
type CacheLookupRequest struct {
	Q         string `json:"q"`
	Namespace string `json:"namespace"`
	Model     string `json:"model"`
}
