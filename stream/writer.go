package stream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// ConnConfig is the per-connection policy of the SSE write loop.
type ConnConfig struct {
	// Heartbeat is how long a connection may stay silent before a
	// ": ping" comment is sent, from the moment it opens (also while the
	// first token is awaited). default: 15s; negative: no heartbeats.
	Heartbeat time.Duration
	// MaxPendingBytes is the connection's send buffer: the most answer
	// text encoded for one write (plus the events' framing). The write
	// loop reads from the transcript only when the previous write has
	// gone, so a connection's memory stays bounded whatever its reader
	// does; a reader that lags by more than this gets its pending deltas
	// merged into one event per write to catch up. default: 64 KiB
	MaxPendingBytes int
	// WriteTimeout is the slow-reader limit: a write (with its flush) that
	// has not completed within it closes the connection, and the client
	// resumes with Last-Event-ID. default: 10s; negative: no limit.
	WriteTimeout time.Duration
}

func (c *ConnConfig) setDefaults() {
	if c.Heartbeat == 0 {
		c.Heartbeat = 15 * time.Second
	}
	if c.MaxPendingBytes <= 0 {
		c.MaxPendingBytes = 64 << 10
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = 10 * time.Second
	}
}

// CloseReason says why a connection's write loop ended.
type CloseReason int

// The reasons a write loop ends.
const (
	// CloseEnd: the terminal event was written.
	CloseEnd CloseReason = iota
	// CloseClientGone: the request's context ended (the client left, or
	// the server is shutting down).
	CloseClientGone
	// CloseSlowConsumer: a write did not complete within WriteTimeout.
	CloseSlowConsumer
	// CloseWriteError: a write failed for another reason.
	CloseWriteError
)

func (r CloseReason) String() string {
	switch r {
	case CloseEnd:
		return "end"
	case CloseClientGone:
		return "client_gone"
	case CloseSlowConsumer:
		return "slow_consumer"
	case CloseWriteError:
		return "write_error"
	}
	return "unknown"
}

// ConnStats reports what one write loop did.
type ConnStats struct {
	Reason CloseReason
	Events int   // SSE events written (not counting heartbeats)
	Pings  int   // heartbeat comments written
	Bytes  int64 // bytes written
	Merges int   // events that carried more than one delta
	Cursor int   // the last delta sequence number written
	Err    error // the write error, if any
}

// Conn is one SSE connection following one transcript. Its Serve method is
// the connection's only writer.
type Conn struct {
	// Config is the connection's policy.
	Config ConnConfig
	// Meta is the data of the "meta" event, always sent first.
	Meta []byte
	// OnWrite, when set, observes every write (bytes, events in it, how
	// many deltas were merged into one event). It runs on the write loop.
	OnWrite func(bytes, events, merged int)
}

// LastEventID returns the resume cursor from the Last-Event-ID header (or
// the lastEventId query parameter, for clients that cannot set headers):
// the sequence number of the last delta the client has. Anything that is
// not a non-negative integer means "from the start".
func LastEventID(r *http.Request) int {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("lastEventId")
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// Serve writes the transcript after sequence number after to w as
// text/event-stream: meta first, then the deltas (event "delta", id = the
// sequence number of its last delta) as they arrive, then the terminal
// event. It returns when the terminal event is written, ctx ends, or the
// reader is too slow. It never holds up the transcript's writer.
func (c *Conn) Serve(ctx context.Context, w http.ResponseWriter, tr *Transcript, after int) ConnStats {
	cfg := c.Config
	cfg.setDefaults()
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)

	st := ConnStats{Cursor: after}
	var buf bytes.Buffer
	buf.Grow(min(cfg.MaxPendingBytes, 64<<10) + 512)
	var msg sse.Message

	var hb *time.Timer
	var hbC <-chan time.Time
	if cfg.Heartbeat > 0 {
		hb = time.NewTimer(cfg.Heartbeat)
		defer hb.Stop()
		hbC = hb.C
	}
	flush := func(events, merged int) bool {
		if cfg.WriteTimeout > 0 {
			// Not every ResponseWriter supports deadlines (a recorder in
			// tests does not); that is not an error.
			_ = rc.SetWriteDeadline(time.Now().Add(cfg.WriteTimeout))
		}
		n, err := w.Write(buf.Bytes())
		if err == nil {
			err = rc.Flush()
		}
		st.Bytes += int64(n)
		buf.Reset()
		if err != nil {
			st.Err = err
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				st.Reason = CloseSlowConsumer
			case ctx.Err() != nil:
				st.Reason = CloseClientGone
			default:
				st.Reason = CloseWriteError
			}
			return false
		}
		if c.OnWrite != nil {
			c.OnWrite(n, events, merged)
		}
		if hb != nil {
			hb.Reset(cfg.Heartbeat)
		}
		return true
	}
	writeEvent := func(id, typ string, data []byte) {
		msg = sse.Message{Type: sse.Type(typ)}
		if id != "" {
			msg.ID = sse.ID(id)
		}
		msg.AppendData(string(data))
		_, _ = msg.WriteTo(&buf) // a bytes.Buffer does not fail
	}

	writeDelta := func(seq int, text string) {
		data, _ := json.Marshal(struct {
			Text string `json:"text"`
		}{text})
		writeEvent(strconv.Itoa(seq), "delta", data)
	}

	writeEvent("", "meta", c.Meta)
	st.Events++
	if !flush(1, 0) {
		return st
	}
	for {
		p := tr.Read(st.Cursor, cfg.MaxPendingBytes)
		events, merged := 0, 0
		if len(p.Deltas) > 1 && p.Pending > cfg.MaxPendingBytes {
			// The reader lags by more than its buffer: catch it up with
			// one event carrying this page's deltas merged.
			writeDelta(p.Last(), strings.Join(p.Deltas, ""))
			events, merged = 1, len(p.Deltas)
			st.Merges++
		} else {
			// Keeping up: every delta is its own event, in the original
			// chunking, all of the page in one write.
			for i, d := range p.Deltas {
				writeDelta(p.First+i, d)
			}
			events = len(p.Deltas)
		}
		if p.End != nil {
			writeEvent("", p.End.Event, p.End.Data())
			events++
		}
		if events > 0 {
			st.Events += events
			if !flush(events, merged) {
				return st
			}
			st.Cursor = p.Last()
		}
		if p.End != nil {
			st.Reason = CloseEnd
			return st
		}
		if len(p.Deltas) > 0 {
			continue // more may be pending already
		}
		select {
		case <-p.Changed:
		case <-hbC:
			buf.WriteString(": ping\n\n")
			st.Pings++
			if !flush(0, 0) {
				return st
			}
		case <-ctx.Done():
			st.Reason = CloseClientGone
			st.Err = ctx.Err()
			return st
		}
	}
}
