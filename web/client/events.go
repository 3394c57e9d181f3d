package client

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	sse "github.com/r3labs/sse/v2"
	"gopkg.in/cenkalti/backoff.v1"

	"github.com/sluice-dev/sluice/stream"
)

// MaxEventSize bounds one event of a stream.
const MaxEventSize = 4 << 20

// Event is one event of a stream.
type Event struct {
	Type stream.Event // the event name (stream.EventMeta, ...); "" for an unnamed event (chat chunks)
	ID   string       // the id field: a delta's sequence number
	Data []byte
}

// Terminal reports whether the event ends a task's stream.
func (e Event) Terminal() bool { return e.Type.Terminal() }

// EventReader reads the events of one response body, framed by r3labs/sse.
// Events without an id, event or data field (keep-alive comments) are
// skipped.
type EventReader struct {
	r *sse.EventStreamReader
}

// NewEventReader reads the events of body; an event longer than
// MaxEventSize is an error.
func NewEventReader(body io.Reader) *EventReader {
	return &EventReader{r: sse.NewEventStreamReader(body, MaxEventSize)}
}

// Next returns the next event, io.EOF at the end of the body, or the
// error that broke the body.
func (er *EventReader) Next() (Event, error) {
	for {
		raw, err := er.r.ReadEvent()
		if err != nil {
			return Event{}, err
		}
		if ev, ok := parseEvent(raw); ok {
			return ev, nil
		}
	}
}

// parseEvent reads the fields of one event as r3labs/sse's Client does
// (its parser is not exported): "field: value" lines, data lines joined
// with "\n", other lines ignored. ok is false for an event without
// content.
func parseEvent(raw []byte) (Event, bool) {
	var ev Event
	var data []byte
	hasData := false
	for _, line := range bytes.FieldsFunc(raw, func(r rune) bool { return r == '\n' || r == '\r' }) {
		name, value, found := bytes.Cut(line, []byte(":"))
		if !found {
			name, value = line, nil
		}
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(name) {
		case "id":
			ev.ID = string(value)
		case "event":
			ev.Type = stream.Event(value)
		case "data":
			if hasData {
				data = append(data, '\n')
			}
			data, hasData = append(data, value...), true
		}
	}
	ev.Data = data
	return ev, ev.ID != "" || ev.Type != "" || hasData
}

// Reconnection policy of Follow.
const (
	// DefaultResumeTries is the most reconnections of one stream in a row
	// without a new delta in between.
	DefaultResumeTries = 8
	// DefaultMaxBackoff caps the pause between two reconnections.
	DefaultMaxBackoff = 2 * time.Second
)

// FollowOptions shape Follow.
type FollowOptions struct {
	// After is the sequence number of the last delta already had: the
	// stream starts after it (as Last-Event-ID). 0: from the start.
	After int
	// OnEvent receives every event once, in order: the meta event (once,
	// though the server repeats it on every connection), the deltas
	// without a duplicate, and the terminal event last.
	OnEvent func(Event)
	// OnResume, when set, is told of each reconnection: after is the
	// last delta had, wait the pause before it, and err why the connection
	// ended (nil when the server closed it cleanly before the end).
	OnResume func(after int, wait time.Duration, err error)
	// Tries bounds the reconnections in a row without a new delta
	// (default DefaultResumeTries).
	Tries int
	// MaxBackoff caps the pause between reconnections, which starts at
	// 100ms and doubles (default DefaultMaxBackoff).
	MaxBackoff time.Duration
}

// FollowResult is how a followed stream ended.
type FollowResult struct {
	End        Event // the terminal event
	LastSeq    int   // the last delta had
	Reconnects int
}

// ErrKeptClosing is returned by Follow when the server closed the stream
// before its end Tries times in a row without a new delta.
var ErrKeptClosing = errors.New("the server kept closing the stream before its end")

// Follow reads the task stream at path (an events_url, relative to the
// server) to its terminal event with r3labs/sse's Client, and resumes it
// after a dropped or closed connection with Last-Event-ID (the last delta
// had), within bounds. An answer other than 200 ends it at once with an
// *APIError, except a 5xx, which is tried again like a failed
// connection. When ctx ends first, Follow returns ctx's error.
func (c *Client) Follow(ctx context.Context, path string, opt FollowOptions) (FollowResult, error) {
	if opt.Tries <= 0 {
		opt.Tries = DefaultResumeTries
	}
	if opt.MaxBackoff <= 0 {
		opt.MaxBackoff = DefaultMaxBackoff
	}
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		res   FollowResult
		ended bool
		meta  bool
	)
	res.LastSeq = opt.After

	sc := sse.NewClient(c.server+path, sse.ClientMaxBufferSize(MaxEventSize))
	sc.Connection = c.http
	if c.apiKey != "" {
		sc.Headers["Authorization"] = "Bearer " + c.apiKey
	}
	if opt.After > 0 {
		sc.LastEventID.Store([]byte(strconv.Itoa(opt.After)))
	}
	sc.ResponseValidator = func(_ *sse.Client, resp *http.Response) error {
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		err := readAPIError(resp)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			return err // worth another try
		}
		return backoff.Permanent(err) // 401, 404, ...: no use retrying
	}
	sc.ReconnectNotify = func(err error, d time.Duration) {
		if sctx.Err() != nil {
			return
		}
		res.Reconnects++
		if opt.OnResume != nil {
			opt.OnResume(res.LastSeq, d, err)
		}
	}
	deliver := func(ev Event) {
		if opt.OnEvent != nil {
			opt.OnEvent(ev)
		}
	}
	// The handler runs on the goroutine that calls Subscribe, so the
	// state above needs no lock.
	handler := func(m *sse.Event) {
		if ended {
			return
		}
		ev := Event{Type: stream.Event(m.Event), ID: string(m.ID), Data: append([]byte(nil), m.Data...)}
		switch {
		case ev.Type == stream.EventMeta:
			if meta {
				return // repeated on every connection
			}
			meta = true
		case ev.Type == stream.EventDelta:
			seq, err := strconv.Atoi(ev.ID)
			if err != nil || seq <= res.LastSeq {
				return // never happens with a correct server; be safe
			}
			res.LastSeq = seq
		case ev.Terminal():
			ended, res.End = true, ev
			cancel() // the server closes now; do not reconnect
		default:
			return
		}
		deliver(ev)
	}

	// The SSE client reconnects on errors (bounded backoff, Last-Event-ID)
	// but returns nil when the server ends the response cleanly, which a
	// server does without a terminal event only when it dropped this
	// reader (slow reader, restart): subscribe again then, within the
	// same bounds.
	b := newBackoff(opt.MaxBackoff)
	for tries := 0; ; tries++ {
		// Within one subscription the SSE client retries failed
		// connections itself, at most opt.Tries times, stopping at once
		// when sctx ends (after the terminal event, or the caller's end).
		sc.ReconnectStrategy = backoff.WithContext(backoff.WithMaxTries(newBackoff(opt.MaxBackoff), uint64(opt.Tries)), sctx)
		seqBefore := res.LastSeq
		err := sc.SubscribeRawWithContext(sctx, handler)
		switch {
		case ended:
			return res, nil
		case ctx.Err() != nil:
			return res, ctx.Err()
		case err != nil:
			return res, err
		}
		if res.LastSeq > seqBefore {
			tries = 0
			b.Reset()
		}
		if tries >= opt.Tries {
			return res, ErrKeptClosing
		}
		d := b.NextBackOff()
		res.Reconnects++
		if opt.OnResume != nil {
			opt.OnResume(res.LastSeq, d, nil)
		}
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return res, ctx.Err()
		}
	}
}

// newBackoff is the pause between reconnections: 100ms doubling (with
// jitter) up to max, with no overall time limit (the number of tries
// bounds it).
func newBackoff(max time.Duration) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, max, 0
	b.Reset()
	return b
}
