package stream

import (
	"bytes"
	"net/http"
	"strconv"

	sse "github.com/tmaxmax/go-sse"
)

// Framing is how one kind of client sees a transcript on the wire. The
// write loop (Conn.Serve) owns everything else: the waiting, heartbeats,
// the send buffer and catch-up merging, write deadlines and close
// reasons. A Framing only encodes: each method appends one or more
// complete SSE events to b (the current write burst) and cannot fail.
// Its methods run on the write loop, one at a time.
type Framing interface {
	// Open encodes what opens the stream (the task API's EventMeta),
	// written with the status line.
	Open(b *bytes.Buffer)
	// Delta encodes text, the deltas up to sequence number seq (more than
	// one when a lagging reader's deltas were merged to catch up).
	Delta(b *bytes.Buffer, seq int, text string)
	// End encodes the terminal event(s).
	End(b *bytes.Buffer, end *End)
	// KeepAlive encodes a heartbeat, sent after Heartbeat of silence.
	KeepAlive(b *bytes.Buffer)
}

// A Holder is a Framing whose status line waits for the first event: the
// loop sends the 200 and Open's events with the first delta, the end, or
// the first heartbeat, whichever comes first (go-sse's Upgrade holds its
// headers back the same way, so that the status can still change).
type Holder interface {
	Framing
	// Refuse is asked when the transcript ends before anything was sent
	// (no delta after the cursor): it may answer the request itself, with
	// an HTTP error say, and return true; the stream is then never
	// started. It returns false to stream the end as usual.
	Refuse(w http.ResponseWriter, end *End) bool
}

// TaskEvents is the native framing of the task API's event streams:
// EventMeta (Meta), EventDelta events {"text"} whose id is the sequence
// number of their last delta, the terminal event named by End.Event with
// End.Data, and ": ping" comment heartbeats. Its status line is sent at
// once.
type TaskEvents struct {
	// Meta is the data of the EventMeta event, always sent first.
	Meta []byte
}

var _ Framing = TaskEvents{}

// Open implements Framing: the EventMeta event.
func (f TaskEvents) Open(b *bytes.Buffer) { writeEvent(b, "", EventMeta, f.Meta) }

// Delta implements Framing: "id: seq", "event: delta" and the data
// {"text": text}, encoded by hand into b's spare capacity (the same bytes
// as go-sse's encoding of json.Marshal's, which cost a struct, a message
// and a dozen allocations per delta).
func (TaskEvents) Delta(b *bytes.Buffer, seq int, text string) {
	w := b.AvailableBuffer()
	w = append(w, "id: "...)
	w = strconv.AppendInt(w, int64(seq), 10)
	w = append(w, "\nevent: "+string(EventDelta)+"\ndata: {\"text\":"...)
	w = AppendJSONString(w, text)
	w = append(w, "}\n\n"...)
	b.Write(w)
}

// End implements Framing.
func (TaskEvents) End(b *bytes.Buffer, end *End) { writeEvent(b, "", end.Event, end.Data()) }

// KeepAlive implements Framing.
func (TaskEvents) KeepAlive(b *bytes.Buffer) { b.WriteString(": ping\n\n") }

// writeEvent encodes one event with go-sse.
func writeEvent(b *bytes.Buffer, id string, typ Event, data []byte) {
	msg := sse.Message{Type: sse.Type(string(typ))}
	if id != "" {
		msg.ID = sse.ID(id)
	}
	msg.AppendData(string(data))
	_, _ = msg.WriteTo(b) // a bytes.Buffer does not fail
}
