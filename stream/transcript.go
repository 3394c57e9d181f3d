package stream

import (
	"encoding/json"
	"slices"
	"strings"
	"sync"
)

// End is a transcript's terminal event. Exactly one ends every transcript.
type End struct {
	// Event is the terminal SSE event: EventDone, EventPartial or
	// EventError.
	Event Event
	// FinishReason is the contract's finish reason (stop, deadline, ...).
	FinishReason string
	// Notice tells a reader of a partial answer that it was cut.
	Notice string
	// Code and Message describe an error (EventError), and the cause of
	// a partial answer.
	Code, Message string
	// FirstTokenMs is the time to the first token; negative when none came.
	FirstTokenMs int64
	// TotalMs is the task's duration from acceptance to its end.
	TotalMs int64
	// Chunks is the number of deltas in the transcript.
	Chunks int
}

// Data returns the JSON payload of the terminal SSE event.
func (e End) Data() []byte {
	var v any
	switch e.Event {
	case EventError:
		v = struct {
			Code         string `json:"code"`
			Message      string `json:"message"`
			FinishReason string `json:"finish_reason,omitempty"`
			TotalMs      int64  `json:"total_ms"`
		}{e.Code, e.Message, e.FinishReason, e.TotalMs}
	default:
		v = struct {
			FinishReason string `json:"finish_reason"`
			Notice       string `json:"notice,omitempty"`
			Code         string `json:"code,omitempty"`
			FirstTokenMs *int64 `json:"first_token_ms"`
			TotalMs      int64  `json:"total_ms"`
			Chunks       int    `json:"chunks"`
		}{e.FinishReason, e.Notice, e.Code, e.firstToken(), e.TotalMs, e.Chunks}
	}
	b, _ := json.Marshal(v) // plain structs of strings and numbers: cannot fail
	return b
}

func (e End) firstToken() *int64 {
	if e.FirstTokenMs < 0 {
		return nil
	}
	return &e.FirstTokenMs
}

// Transcript is the append-only record of one answer: deltas numbered
// 1, 2, 3, ... and then one End. Any number of readers follow it with
// their own cursor (the last sequence number they have); the single
// writer never waits for them. It is safe for concurrent use.
type Transcript struct {
	mu      sync.Mutex    // protects every field below
	deltas  []string      // deltas[i] has sequence number i+1
	ends    []int         // ends[i] is the length of deltas[0..i] together
	bytes   int           // total length of deltas
	end     *End          // set once
	changed chan struct{} // closed and replaced on a change, if watched
	watched bool          // a reader holds changed: the next change must close it
}

// firstDeltas is the room a transcript makes at its first delta.
const firstDeltas = 16

// NewTranscript returns an empty, open transcript.
func NewTranscript() *Transcript {
	return &Transcript{changed: make(chan struct{})}
}

// NewFinishedTranscript returns a transcript holding chunks and already
// ended with end (a cache hit replayed as a stream). It shares chunks
// instead of copying them (a cache hit refers to the cached answer): the
// caller must never modify the slice, which a finished transcript never
// does either. Empty chunks are dropped (then the slice is copied).
func NewFinishedTranscript(chunks []string, end End) *Transcript {
	for _, c := range chunks {
		if c == "" {
			chunks = slices.DeleteFunc(slices.Clone(chunks), func(c string) bool { return c == "" })
			break
		}
	}
	t := &Transcript{deltas: slices.Clip(chunks), ends: make([]int, len(chunks)), changed: make(chan struct{})}
	for i, c := range chunks {
		t.bytes += len(c)
		t.ends[i] = t.bytes
	}
	end.Chunks = len(chunks)
	t.end = &end
	return t
}

// Append adds a delta and returns its sequence number. Empty text and
// appends after the end are ignored (they return 0).
func (t *Transcript) Append(text string) int {
	if text == "" {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.end != nil {
		return 0
	}
	if t.deltas == nil {
		// Room for a short answer at once, rather than growing through
		// 1, 2, 4, 8 and 16 (ten allocations for a 20-chunk answer).
		t.deltas = make([]string, 0, firstDeltas)
		t.ends = make([]int, 0, firstDeltas)
	}
	t.deltas = append(t.deltas, text)
	t.bytes += len(text)
	t.ends = append(t.ends, t.bytes)
	t.wakeLocked()
	return len(t.deltas)
}

// Finish ends the transcript. Only the first call has an effect; it
// reports whether this call ended it. End.Chunks is filled in.
func (t *Transcript) Finish(end End) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.end != nil {
		return false
	}
	end.Chunks = len(t.deltas)
	t.end = &end
	t.wakeLocked()
	return true
}

// wakeLocked wakes the readers waiting for a change. A channel nobody
// was handed is left alone, which keeps Append allocation-free while no
// reader waits. t.mu must be held.
func (t *Transcript) wakeLocked() {
	if !t.watched {
		return
	}
	close(t.changed)
	t.changed = make(chan struct{})
	t.watched = false
}

// Snapshot returns the whole text so far, the number of deltas and the end
// (nil while open).
func (t *Transcript) Snapshot() (text string, chunks int, end *End) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.deltas, ""), len(t.deltas), t.end
}

// Bytes returns the length of the text so far.
func (t *Transcript) Bytes() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bytes
}

// Len returns the number of deltas so far.
func (t *Transcript) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.deltas)
}

// Chunks returns a copy of the deltas so far.
func (t *Transcript) Chunks() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.deltas...)
}

// Ended returns the end, or nil while the transcript is open.
func (t *Transcript) Ended() *End {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.end
}

// prefixBytes is the length of the first n deltas. t.mu must be held.
func (t *Transcript) prefixBytes(n int) int {
	n = min(n, len(t.ends))
	if n <= 0 {
		return 0
	}
	return t.ends[n-1]
}

// Page is what a reader gets from Read: the deltas after its cursor (the
// first has sequence number First), the end once every delta has been
// read, and a channel closed at the next change.
type Page struct {
	Deltas []string
	First  int
	// Pending is the length of all the text after the cursor, of which
	// Deltas is the start: how far the reader lags.
	Pending int
	End     *End
	Changed <-chan struct{}
}

// Last returns the sequence number of the last delta in the page, or
// First-1 when there is none.
func (p Page) Last() int { return p.First + len(p.Deltas) - 1 }

// Read returns the deltas after sequence number after, at most maxBytes of
// text (always at least one delta when any is pending; maxBytes <= 0 means
// no limit). End is set only when the page reaches the last delta. The
// returned slice shares the transcript's strings, not its array.
func (t *Transcript) Read(after, maxBytes int) Page {
	t.mu.Lock()
	defer t.mu.Unlock()
	after = max(after, 0)
	t.watched = true
	p := Page{First: after + 1, Changed: t.changed, Pending: t.bytes - t.prefixBytes(after)}
	if after >= len(t.deltas) {
		p.End = t.end
		return p
	}
	n, size := 0, 0
	for _, d := range t.deltas[after:] {
		if n > 0 && maxBytes > 0 && size+len(d) > maxBytes {
			break
		}
		n++
		size += len(d)
	}
	p.Deltas = append([]string(nil), t.deltas[after:after+n]...)
	if after+n == len(t.deltas) {
		p.End = t.end
	}
	return p
}
