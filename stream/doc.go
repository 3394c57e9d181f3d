// Package stream writes answers to sluice's clients as Server-Sent Events.
//
// It holds a task's Transcript (the append-only, sequence-numbered record
// of an answer that every reader follows with its own cursor, ended by
// exactly one End), the per-connection write loop that turns a cursor into
// an SSE response with heartbeats, a bounded send buffer and a slow-reader
// limit, and the Framings that loop writes through (TaskEvents for the
// task API, others for other doors). The names of the events it writes
// (EventMeta, EventDelta, EventDone, ...) are its typed constants.
//
// Reading from model upstreams is package stream/upstream's job: stream
// never calls a model, and upstream never writes to a client.
package stream
