package orchestrator

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/stream"
)

// Status is a task's state. queued and running are live; the others are
// final.
type Status string

// The task statuses of the contract.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusDone      Status = "done"
	StatusPartial   Status = "partial"
	StatusFailed    Status = "failed"
	StatusCancelled Status = "cancelled"
)

// LogValue implements slog.LogValuer (a plain string for slog: without it the handlers format it with fmt and reflection, most of the cost of the "task end" line).
func (s Status) LogValue() slog.Value { return slog.StringValue(string(s)) }

// Final reports whether s is a terminal status.
func (s Status) Final() bool { return s != StatusQueued && s != StatusRunning }

// CacheStatus is what the cache did for a task.
type CacheStatus string

// The cache statuses of a task.
const (
	CacheHit    CacheStatus = "hit"    // answered from the cache
	CacheMiss   CacheStatus = "miss"   // asked upstream (and stored if it ends done)
	CacheBypass CacheStatus = "bypass" // neither read nor written (nocache)
)

// LogValue implements slog.LogValuer (a plain string for slog: without it the handlers format it with fmt and reflection, most of the cost of the "task end" line).
func (c CacheStatus) LogValue() slog.Value { return slog.StringValue(string(c)) }

// CacheInfo is the cache decision recorded on a task.
type CacheInfo struct {
	Status    CacheStatus `json:"status"`
	Kind      cache.Kind  `json:"kind,omitempty"` // on a hit
	Score     float64     `json:"score,omitempty"`
	Namespace string      `json:"namespace"`
}

// ErrorInfo is the error object of a failed task.
type ErrorInfo struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Task is one generation. Its transcript is the answer; the fields behind
// mu are its state. The task goroutine is the only writer of both.
type Task struct {
	ID        string
	Tenant    string
	Model     string
	Namespace string
	// Upstream is the route the task runs on; a fallback (run) changes
	// it under mu before the first token.
	Upstream  string
	CreatedAt time.Time
	Cache     CacheInfo
	Priority  string // the pipeline.Class it was admitted as; "" for a cache hit

	tr       *stream.Transcript
	cancel   context.CancelCauseFunc // nil for tasks that never run (cache hits)
	stop     <-chan struct{}         // closed once cancel was called (or the task ended); nil with cancel
	done     chan struct{}           // closed when the task is final
	ended    atomic.Bool             // end has run: it runs once
	remote   bool                    // runs on another instance (from the shared state)
	follower *follower               // of a running remote task, until it is followed; set before the task is shared
	slotted  chan struct{}           // closed when a task queued at submit gets its slot (run); nil for one that never queued
	cacheGen cache.Generation        // the generation its cache miss saw: its answer is stored under it
	gen      *genEntry               // its entry in the coalescing table, if it leads one
	joined   atomic.Int32            // requests that joined it (coalesce.go)
	holders  atomic.Int32            // requests sharing it that have not released it (coalesce.go); 0 when never shared

	mu           sync.Mutex // protects the fields below
	status       Status
	finishReason FinishReason
	err          *ErrorInfo
	firstToken   time.Duration // 0 until the first token
	total        time.Duration
	endedAt      time.Time
	retries      int
	upstreamCode int // the last upstream HTTP status, 0 if none
	// deadline is when the task ends at the latest: its total cap from
	// its slot, or, while it is queued, its queue wait plus the cap. The
	// shared record carries it (a follower's ownerLost).
	deadline time.Time
}

// taskOverhead is the heap of a small finished task beside its text: the
// Task, its transcript, its channels and strings, measured with
// TestRetainedHeapPerTask (about 1.5 KiB; rounded up).
const taskOverhead = 2048

// chunkOverhead is the heap per delta beside its text: the string header
// and the running length in the transcript.
const chunkOverhead = 24

// Size estimates the heap a task holds, for the store's byte limit: a
// fixed overhead plus its text and deltas. A cache hit shares its text
// with the cache, but counts it too: the task keeps it alive once the
// cache lets it go.
func (t *Task) Size() int64 {
	if t.tr == nil {
		return taskOverhead
	}
	return taskOverhead + int64(t.tr.Bytes()) + int64(t.tr.Len())*chunkOverhead
}

// Transcript returns the task's answer record, which readers follow.
func (t *Task) Transcript() *stream.Transcript { return t.tr }

// Done is closed when the task reaches a final status.
func (t *Task) Done() <-chan struct{} { return t.done }

// Status returns the task's current status.
func (t *Task) Status() Status {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.status
}

func (t *Task) setStatus(s Status) {
	t.mu.Lock()
	t.status = s
	t.mu.Unlock()
}

// View is a task as the API shows it.
type View struct {
	ID           string     `json:"id"`
	Status       Status     `json:"status"`
	Text         string     `json:"text"`
	FinishReason string     `json:"finish_reason,omitempty"` // a FinishReason
	Cache        CacheInfo  `json:"cache"`
	Model        string     `json:"model"`
	Namespace    string     `json:"namespace"`
	Upstream     string     `json:"upstream,omitempty"`
	Priority     string     `json:"priority,omitempty"` // the priority class it waited for budget in
	CreatedAt    time.Time  `json:"created_at"`
	FirstTokenMs *int64     `json:"first_token_ms"`
	TotalMs      *int64     `json:"total_ms"`
	Chunks       int        `json:"chunks"`
	Retries      int        `json:"retries"`
	Error        *ErrorInfo `json:"error,omitempty"`

	// Joined counts the identical requests that joined this task's
	// generation (coalescing) instead of starting their own.
	Joined int `json:"joined,omitempty"`
}

// View returns a consistent snapshot of the task.
func (t *Task) View() View {
	text, chunks, _ := t.tr.Snapshot()
	t.mu.Lock()
	defer t.mu.Unlock()
	v := View{
		ID: t.ID, Status: t.status, Text: text, FinishReason: string(t.finishReason),
		Cache: t.Cache, Model: t.Model, Namespace: t.Namespace, Upstream: t.Upstream, Priority: t.Priority,
		CreatedAt: t.CreatedAt.UTC(), Chunks: chunks, Retries: t.retries, Error: t.err,
		Joined: int(t.joined.Load()),
	}
	if t.firstToken > 0 {
		ms := t.firstToken.Milliseconds()
		v.FirstTokenMs = &ms
	}
	if t.status.Final() {
		ms := t.total.Milliseconds()
		v.TotalMs = &ms
	}
	return v
}

// Meta is the data of the task's "meta" SSE event.
type Meta struct {
	ID        string    `json:"id"`
	Model     string    `json:"model"`
	Namespace string    `json:"namespace"`
	Cache     CacheInfo `json:"cache"`
	// Upstream is the upstream the task runs on when the event is sent
	// (a fallback before the first token may move it: the task's View
	// says where it ended).
	Upstream string `json:"upstream,omitempty"`
	// Coalesced is set on the meta event of a request that joined a
	// generation already running (the door sets it; the task is the same).
	Coalesced bool `json:"coalesced,omitempty"`
}

// stopping reports whether t was cancelled (or has ended): a request must
// not join it any more (coalesce.go).
func (t *Task) stopping() bool {
	select {
	case <-t.stop: // nil: never
		return true
	default:
		return false
	}
}

// Meta returns the task's meta event data.
func (t *Task) Meta() Meta {
	t.mu.Lock()
	up := t.Upstream
	t.mu.Unlock()
	return Meta{ID: t.ID, Model: t.Model, Namespace: t.Namespace, Cache: t.Cache, Upstream: up}
}
