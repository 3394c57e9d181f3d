package stream

// Event is the name of an SSE event of the task API's event streams (the
// "event:" field). Every stream opens with EventMeta, carries EventDelta
// events, and ends with exactly one terminal event: EventDone,
// EventPartial or EventError (End.Event).
type Event string

// The events of a task's stream.
const (
	// EventMeta opens a stream: the task's id, model and cache status.
	EventMeta Event = "meta"
	// EventDelta carries text; its id is the sequence number of its last
	// delta.
	EventDelta Event = "delta"
	// EventDone ends a complete answer.
	EventDone Event = "done"
	// EventPartial ends an answer cut short (deadline, idle upstream,
	// size limit): the text so far stands.
	EventPartial Event = "partial"
	// EventError ends a task that failed.
	EventError Event = "error"
)

// Terminal reports whether e ends a stream.
func (e Event) Terminal() bool { return e == EventDone || e == EventPartial || e == EventError }
