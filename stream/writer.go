package stream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ConnConfig is the per-connection policy of the SSE write loop.
type ConnConfig struct {
	// Heartbeat is how long a connection may stay silent before a
	// keep-alive is sent (Framing.KeepAlive: a ": ping" comment on the
	// task API), from the moment it opens (also while the
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

// WithDefaults returns c with its zero fields set to their defaults.
func (c ConnConfig) WithDefaults() ConnConfig {
	c.setDefaults()
	return c
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
	Events int   // events written: the opening, deltas, the end (not heartbeats)
	Pings  int   // heartbeats written
	Bytes  int64 // bytes written
	Merges int   // events that carried more than one delta
	Cursor int   // the last delta sequence number written
	Err    error // the write error, if any
}

// Conn is one SSE connection following one transcript. Its Serve method is
// the connection's only writer: one write loop serves every door, and
// each door supplies its Framing (the task API's TaskEvents, the OpenAI
// door's chat.completion.chunk events).
type Conn struct {
	// Config is the connection's policy.
	Config ConnConfig
	// Framing encodes the stream's events. A Holder also holds back the
	// status line until the first event. Required.
	Framing Framing
	// OnWrite, when set, observes every write (bytes, events in it, how
	// many deltas were merged into one event). It runs on the write loop.
	OnWrite func(bytes, events, merged int)
}

// BadLastEventIDError is LastEventID's error for a value that is no event
// id: not a whole number >= 0 (an id this server sends), or too large for
// one. It comes with the value as sent.
type BadLastEventIDError struct{ Value string }

func (e *BadLastEventIDError) Error() string {
	return fmt.Sprintf("stream: Last-Event-ID %q is not an event id", e.Value)
}

// LastEventID returns the resume cursor from the Last-Event-ID header (or
// the lastEventId query parameter, for clients that cannot set headers):
// the sequence number of the last delta the client has; 0, from the
// start, when there is none. A value that is no event id (a sign, a
// fraction, letters, more digits than an id has) is an
// *BadLastEventIDError: replaying from the start would repeat what the
// client has.
func LastEventID(r *http.Request) (int, error) {
	v := r.Header.Get("Last-Event-ID")
	if v == "" {
		v = r.URL.Query().Get("lastEventId")
	}
	id := strings.TrimSpace(v)
	if id == "" {
		return 0, nil
	}
	if len(id) > 18 || strings.Trim(id, "0123456789") != "" {
		return 0, &BadLastEventIDError{Value: v}
	}
	n, err := strconv.Atoi(id)
	if err != nil {
		return 0, &BadLastEventIDError{Value: v}
	}
	return n, nil
}

// Serve writes the transcript after sequence number after to w as
// text/event-stream in c's Framing: its opening (meta) first, then the deltas (one
// event each, or merged when the reader lags) as they arrive, then the
// end. It returns when the end is written (or refused by a Holder), ctx
// ends, or the reader is too slow. It never holds up the transcript's
// writer.
func (c *Conn) Serve(ctx context.Context, w http.ResponseWriter, tr *Transcript, after int) ConnStats {
	l := newConnLoop(c, ctx, w, tr, after)
	defer l.close()
	l.run()
	return l.st
}

// newConnLoop returns the loop's state.
//
//go:noinline
func newConnLoop(c *Conn, ctx context.Context, w http.ResponseWriter, tr *Transcript, after int) *connLoop {
	l := &connLoop{f: c.Framing, onWrite: c.OnWrite, cfg: c.Config, ctx: ctx, w: w, rc: http.NewResponseController(w), tr: tr}
	l.holder, _ = c.Framing.(Holder)
	l.cfg.setDefaults()
	l.st.Cursor = after
	if l.cfg.Heartbeat > 0 {
		l.hb = time.NewTimer(l.cfg.Heartbeat)
	}
	return l
}

// close releases the loop's timer and buffer.
func (l *connLoop) close() {
	if l.hb != nil {
		l.hb.Stop()
	}
	putBuf(l.buf)
	l.buf = nil
}

// connLoop is the state of one Serve. Its methods run on Serve's
// goroutine only.
//
// NOTE: the encoding lives in methods apart from the waiting loop so that
// a parked connection's stack holds only the small frame of run: Go
// shrinks a parked goroutine's stack when it uses less than a quarter of
// it, and the one-frame Serve of before kept every idle stream at a 16 KiB
// stack instead of 8 KiB.
type connLoop struct {
	f       Framing
	holder  Holder // f, when it holds the status line; else nil
	onWrite func(bytes, events, merged int)
	cfg     ConnConfig
	ctx     context.Context
	w       http.ResponseWriter
	rc      *http.ResponseController
	tr      *Transcript
	hb      *time.Timer // nil: no heartbeats
	st      ConnStats
	started bool // the status line and opening are in a burst or written
	// buf holds one write burst. It is taken from bufPool when a burst
	// starts and given back once written, so a quiet connection holds no
	// buffer: idle streams cost their goroutine and the server's own
	// buffers, not a send buffer each.
	buf *bytes.Buffer
}

// run is the write loop: it writes what the transcript has after the
// cursor, then waits for more, a heartbeat or the end of ctx.
func (l *connLoop) run() {
	var hbC <-chan time.Time
	if l.hb != nil {
		hbC = l.hb.C
	}
	if l.holder == nil && !l.open() {
		return
	}
	for {
		changed, more, ok := l.page()
		if !ok {
			return
		}
		if more {
			continue // more may be pending already
		}
		select {
		case <-changed:
		case <-hbC:
			if !l.ping() {
				return
			}
		case <-l.ctx.Done():
			l.st.Reason = CloseClientGone
			l.st.Err = l.ctx.Err()
			return
		}
	}
}

// open sends the status line and the stream's opening at once.
//
//go:noinline
func (l *connLoop) open() bool {
	l.start()
	l.st.Events++
	return l.flush(1, 0)
}

// start commits the response: the stream's headers, the 200 (sent with
// the burst's first write) and the opening events into the burst.
func (l *connLoop) start() {
	h := l.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	l.w.WriteHeader(http.StatusOK)
	l.f.Open(l.burst())
	l.started = true
}

// burst returns the write burst's buffer, taking one from the pool when
// the burst starts.
func (l *connLoop) burst() *bytes.Buffer {
	if l.buf == nil {
		l.buf = getBuf()
	}
	return l.buf
}

// page writes the transcript's next page after the cursor. more is true
// when it held deltas (more may be pending already); ok is false when
// the loop must end (end written or refused, or a failed write).
//
//go:noinline
func (l *connLoop) page() (changed <-chan struct{}, more, ok bool) {
	p := l.tr.Read(l.st.Cursor, l.cfg.MaxPendingBytes)
	events, merged := 0, 0
	if !l.started {
		if len(p.Deltas) == 0 && p.End == nil {
			return p.Changed, false, true // nothing yet: the status line waits
		}
		if len(p.Deltas) == 0 && l.holder.Refuse(l.w, p.End) {
			l.st.Reason = CloseEnd
			return nil, false, false
		}
		l.start()
		events++
	}
	if len(p.Deltas) > 1 && p.Pending > l.cfg.MaxPendingBytes {
		// The reader lags by more than its buffer: catch it up with
		// one event carrying this page's deltas merged.
		l.f.Delta(l.burst(), p.Last(), strings.Join(p.Deltas, ""))
		events, merged = events+1, len(p.Deltas)
		l.st.Merges++
	} else {
		// Keeping up: every delta is its own event, in the original
		// chunking, all of the page in one write.
		for i, d := range p.Deltas {
			l.f.Delta(l.burst(), p.First+i, d)
		}
		events += len(p.Deltas)
	}
	if p.End != nil {
		l.f.End(l.burst(), p.End)
		events++
	}
	if events > 0 {
		l.st.Events += events
		if !l.flush(events, merged) {
			return nil, false, false
		}
		l.st.Cursor = p.Last()
	}
	if p.End != nil {
		l.st.Reason = CloseEnd
		return nil, false, false
	}
	return p.Changed, len(p.Deltas) > 0, true
}

// ping writes a heartbeat; a held status line is sent with the first.
//
//go:noinline
func (l *connLoop) ping() bool {
	events := 0
	if !l.started {
		// NOTE: the first event is late; keeping the connection alive
		// wins over answering a later failure as a status.
		l.start()
		l.st.Events++
		events = 1
	}
	l.f.KeepAlive(l.burst())
	l.st.Pings++
	return l.flush(events, 0)
}

// flush writes and flushes the burst in buf under the write timeout, and
// gives buf back.
func (l *connLoop) flush(events, merged int) bool {
	if l.cfg.WriteTimeout > 0 {
		// Not every ResponseWriter supports deadlines (a recorder in
		// tests does not); that is not an error.
		_ = l.rc.SetWriteDeadline(time.Now().Add(l.cfg.WriteTimeout))
	}
	n, err := l.w.Write(l.buf.Bytes())
	if err == nil {
		err = l.rc.Flush()
	}
	l.st.Bytes += int64(n)
	putBuf(l.buf)
	l.buf = nil
	if err != nil {
		l.st.Err = err
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			l.st.Reason = CloseSlowConsumer
		case l.ctx.Err() != nil:
			l.st.Reason = CloseClientGone
		default:
			l.st.Reason = CloseWriteError
		}
		return false
	}
	if l.onWrite != nil {
		l.onWrite(n, events, merged)
	}
	if l.hb != nil {
		l.hb.Reset(l.cfg.Heartbeat)
	}
	return true
}

// bufPool holds the write-burst buffers of every connection. A buffer is
// taken for one burst and given back after its write, so the buffers in
// use are those of the connections writing at this moment.
var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBuf is the largest buffer given back to bufPool: a burst that
// grew one beyond it (a large MaxPendingBytes catching up) lets it go, so
// the pool shrinks back to ordinary bursts.
const maxPooledBuf = 128 << 10

func getBuf() *bytes.Buffer { return bufPool.Get().(*bytes.Buffer) }

// putBuf gives b (which may be nil) back to the pool, emptied.
func putBuf(b *bytes.Buffer) {
	if b == nil || b.Cap() > maxPooledBuf {
		return
	}
	b.Reset()
	bufPool.Put(b)
}
