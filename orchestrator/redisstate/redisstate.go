// Package redisstate keeps sluice's tasks in Redis, so that every instance
// of a deployment can show, follow and cancel every task: it implements
// orchestrator.Shared.
//
// Each task is two keys under a prefix: "task:{ID}" holds the task's
// record (JSON) and "task:{ID}:log" is a Redis stream of its deltas and
// terminal event, whose entry ids are "0-{seq}", so that an SSE cursor
// (Last-Event-ID) is also a stream id and a write sent twice is
// recognised. The braces are a hash tag: both keys of a task live in one
// Redis Cluster slot, so the end and the final record are written in one
// transaction. Followers read the log with XREAD BLOCK, on a client of
// their own so that they never hold the connections that writes need.
// Cancellation requests travel on the pub/sub channel "cancel".
//
// Clients must set ContextTimeoutEnabled, so that a stalled Redis costs a
// caller its context's deadline and no more.
package redisstate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
)

// Store is an orchestrator.Shared in Redis. It is safe for concurrent use.
type Store struct {
	c       *redis.Client
	block   *redis.Client // for blocking reads
	prefix  string
	observe func(op string, d time.Duration, err error)
}

var _ orchestrator.Shared = (*Store)(nil)

// readBatch is the most log entries one Read returns.
const readBatch = 1024

// New returns a Store using c with every key under prefix (e.g.
// "sluice:"), and block (c if nil) for the reads that wait. observe, if
// not nil, is told each operation's latency and error.
func New(c, block *redis.Client, prefix string, observe func(op string, d time.Duration, err error)) *Store {
	if observe == nil {
		observe = func(string, time.Duration, error) {}
	}
	if block == nil {
		block = c
	}
	return &Store{c: c, block: block, prefix: prefix, observe: observe}
}

func (s *Store) recordKey(id string) string { return s.prefix + "task:{" + id + "}" }
func (s *Store) logKey(id string) string    { return s.prefix + "task:{" + id + "}:log" }
func (s *Store) cancelChannel() string      { return s.prefix + "cancel" }

// written reports whether err is Redis refusing an XADD id at or below
// the stream's last one: the entry was written before (a write sent
// again after its answer was lost).
func written(err error) bool {
	return err != nil && strings.Contains(err.Error(), "equal or smaller than the target stream top item")
}

// execErr is the error of a transaction, not counting entries written
// before: the first command error of another kind, else err itself unless
// it is such an entry.
func execErr(cmds []redis.Cmder, err error) error {
	if err == nil {
		return nil
	}
	for _, c := range cmds {
		if e := c.Err(); e != nil && !written(e) {
			return e
		}
	}
	if written(err) {
		return nil
	}
	return err
}

// entryID is the stream id of sequence number seq.
func entryID(seq int) string { return "0-" + strconv.Itoa(seq) }

// measure reports an operation to the observer and returns its error.
func (s *Store) measure(op string, start time.Time, err error) error {
	s.observe(op, time.Since(start), err)
	if err != nil {
		return fmt.Errorf("redisstate: %s: %w", op, err)
	}
	return nil
}

// Start writes the record of a task that began.
func (s *Store) Start(ctx context.Context, rec orchestrator.Record, ttl time.Duration) error {
	start := time.Now()
	b, err := json.Marshal(rec)
	if err == nil {
		err = s.c.Set(ctx, s.recordKey(rec.View.ID), b, ttl).Err()
	}
	return s.measure("task_start", start, err)
}

// Append adds deltas to the task's log in one transaction, so that a
// blocked reader wakes once for the whole batch.
func (s *Store) Append(ctx context.Context, id string, first int, deltas []string, ttl time.Duration) error {
	start := time.Now()
	key := s.logKey(id)
	cmds, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for i, d := range deltas {
			p.XAdd(ctx, &redis.XAddArgs{Stream: key, ID: entryID(first + i), Values: []string{"d", d}})
		}
		p.Expire(ctx, key, ttl)
		return nil
	})
	return s.measure("task_append", start, execErr(cmds, err))
}

// Finish writes the terminal event and the final record.
func (s *Store) Finish(ctx context.Context, rec orchestrator.Record, end stream.End, ttl time.Duration) error {
	start := time.Now()
	rb, err := json.Marshal(rec)
	if err != nil {
		return s.measure("task_finish", start, err)
	}
	eb, err := json.Marshal(end)
	if err != nil {
		return s.measure("task_finish", start, err)
	}
	id := rec.View.ID
	cmds, err := s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: s.logKey(id), ID: entryID(end.Chunks + 1), Values: []string{"end", string(eb)}})
		p.Expire(ctx, s.logKey(id), ttl)
		p.Set(ctx, s.recordKey(id), rb, ttl)
		return nil
	})
	return s.measure("task_finish", start, execErr(cmds, err))
}

// Load reads a task's record.
func (s *Store) Load(ctx context.Context, id string) (orchestrator.Record, error) {
	start := time.Now()
	var rec orchestrator.Record
	b, err := s.c.Get(ctx, s.recordKey(id)).Bytes()
	if errors.Is(err, redis.Nil) {
		s.observe("task_load", time.Since(start), nil)
		return rec, orchestrator.ErrNotShared
	}
	if err == nil {
		err = json.Unmarshal(b, &rec)
	}
	return rec, s.measure("task_load", start, err)
}

// Read returns the log entries after sequence number after, waiting up to
// wait for the first one when wait > 0.
func (s *Store) Read(ctx context.Context, id string, after int, wait time.Duration) ([]string, *stream.End, error) {
	start := time.Now()
	args := &redis.XReadArgs{Streams: []string{s.logKey(id), entryID(after)}, Count: readBatch, Block: -1}
	c := s.c
	if wait > 0 {
		args.Block, c = wait, s.block // Block 0 would wait for ever
	}
	res, err := c.XRead(ctx, args).Result()
	if errors.Is(err, redis.Nil) {
		s.observe("task_read", time.Since(start), nil)
		return nil, nil, nil // nothing came in time
	}
	if err != nil {
		return nil, nil, s.measure("task_read", start, err)
	}
	var (
		deltas []string
		end    *stream.End
	)
	for _, st := range res {
		for _, m := range st.Messages {
			seq, perr := strconv.Atoi(strings.TrimPrefix(m.ID, "0-"))
			if perr != nil || seq != after+len(deltas)+1 {
				return nil, nil, s.measure("task_read", start, fmt.Errorf("task %s: log entry %q out of order after %d", id, m.ID, after+len(deltas)))
			}
			if d, ok := m.Values["d"].(string); ok {
				deltas = append(deltas, d)
				continue
			}
			raw, _ := m.Values["end"].(string)
			var e stream.End
			if err := json.Unmarshal([]byte(raw), &e); err != nil {
				return nil, nil, s.measure("task_read", start, fmt.Errorf("task %s: terminal entry: %w", id, err))
			}
			end = &e
			break
		}
	}
	return deltas, end, s.measure("task_read", start, nil)
}

// RequestCancel publishes a cancellation request for the task.
func (s *Store) RequestCancel(ctx context.Context, id string) error {
	start := time.Now()
	err := s.c.Publish(ctx, s.cancelChannel(), id).Err()
	return s.measure("task_cancel", start, err)
}

// Cancels subscribes to cancellation requests until ctx ends. The
// subscription reconnects by itself while Redis is away.
func (s *Store) Cancels(ctx context.Context) <-chan string {
	sub := s.c.Subscribe(ctx, s.cancelChannel())
	out := make(chan string)
	go func() {
		defer close(out)
		defer sub.Close()
		in := sub.Channel()
		for {
			select {
			case <-ctx.Done():
				return
			case m, ok := <-in:
				if !ok {
					return
				}
				select {
				case out <- m.Payload:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
