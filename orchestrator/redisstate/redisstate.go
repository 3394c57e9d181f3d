// Package redisstate keeps sluice's tasks in Redis, so that every instance
// of a deployment can show, follow and cancel every task: it implements
// orchestrator.Shared.
//
// Each task is two keys under a prefix: "task:{ID}" holds the task's
// record (JSON) and "task:{ID}:log" is a Redis stream of its deltas and
// terminal event, whose entry ids are "0-{seq}", so that an SSE cursor
// (Last-Event-ID) is also a stream id and a write sent twice is
// recognised. The braces are a hash tag: both keys of a task live in one
// Redis Cluster slot, so each write is one Lua script over both. A write
// to the log checks that the record is there and that the log reaches the
// entry just before the first one it adds; otherwise it writes nothing
// and returns orchestrator.ErrSharedGap (Redis lost the task, e.g. it
// restarted without persistence), and the owner publishes the task again
// from its start. Followers read the log with XREAD BLOCK, on a client of
// their own so that they never hold the connections that writes need.
// Cancellation requests travel on the pub/sub channel "cancel"; each
// instance renews a heartbeat key "instance:{ID}" that expires when it
// stops, and a marker "state-marker:{ID}" whose absence tells it that
// Redis lost its data. One more key, "events-token-secret", holds the
// deployment's key for events tokens (TokenSecret), so that a token from
// one instance opens the stream on another. The cluster budget's leases
// live here too (Leases, leases.go: one sorted set "budget:{UPSTREAM}:leases"
// per upstream and a release channel); the shared cache's change log is
// cache/redislog's.
//
// The Redis is one server or a Redis Cluster (ParseURL; the clients are
// redis.UniversalClient). Every command and script touches one slot: the
// keys of one task share the hash tag {ID}, as do an instance's heartbeat
// and marker ({instance}); the events token secret is one key; pub/sub
// channels are not keys (a cluster delivers a PUBLISH to the subscribers
// of every node). The prefix must hold no braces, or the hash tags would
// be the prefix's (ValidPrefix).
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
	c       redis.UniversalClient
	block   redis.UniversalClient // for blocking reads
	prefix  string
	observe func(op string, d time.Duration, err error)
}

var _ orchestrator.Shared = (*Store)(nil)

// readBatch is the most log entries one Read returns.
const readBatch = 1024

// New returns a Store using c with every key under prefix (e.g.
// "sluice:"), and block (c if nil) for the reads that wait. observe, if
// not nil, is told each operation's latency and error.
func New(c, block redis.UniversalClient, prefix string, observe func(op string, d time.Duration, err error)) *Store {
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

func (s *Store) instanceKey(id string) string { return s.prefix + "instance:{" + id + "}" }
func (s *Store) markerKey(id string) string   { return s.prefix + "state-marker:{" + id + "}" }

// gapReply starts the error a script returns when the task's shared copy
// does not reach the write (gapErr).
const gapReply = "SLUICEGAP"

// logTop is the Lua that sets top to the sequence number of the log's
// last entry (0 for none) and fails with gapReply when the record is
// missing.
const logTop = `
if redis.call('EXISTS', KEYS[1]) == 0 then
  return redis.error_reply('` + gapReply + ` no record')
end
local top = 0
local last = redis.call('XREVRANGE', KEYS[2], '+', '-', 'COUNT', 1)
if #last > 0 then top = tonumber(string.match(last[1][1], '%-(%d+)$')) end
`

// appendScript adds the deltas ARGV[3..] with sequence numbers ARGV[2],
// ARGV[2]+1, ... to the log KEYS[2] of the record KEYS[1], skipping those
// already there, and sets the log's TTL to ARGV[1] ms.
var appendScript = redis.NewScript(logTop + `
local first = tonumber(ARGV[2])
if top < first - 1 then
  return redis.error_reply('` + gapReply + ` log ends at ' .. top)
end
for i = 3, #ARGV do
  local seq = first + i - 3
  if seq > top then redis.call('XADD', KEYS[2], '0-' .. seq, 'd', ARGV[i]) end
end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return top
`)

// finishScript adds the terminal entry ARGV[3] with sequence number
// ARGV[2] to the log KEYS[2] unless it is there, and replaces the record
// KEYS[1] with ARGV[4]; both expire after ARGV[1] ms.
var finishScript = redis.NewScript(logTop + `
local seq = tonumber(ARGV[2])
if top < seq - 1 then
  return redis.error_reply('` + gapReply + ` log ends at ' .. top)
end
if top < seq then redis.call('XADD', KEYS[2], '0-' .. seq, 'end', ARGV[3]) end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[1])
return top
`)

// gapErr turns a script's gap reply into orchestrator.ErrSharedGap.
func gapErr(err error) error {
	if err != nil && strings.HasPrefix(err.Error(), gapReply) {
		return fmt.Errorf("%w: %s", orchestrator.ErrSharedGap, strings.TrimPrefix(err.Error(), gapReply+" "))
	}
	return err
}

// ms is d in whole milliseconds, at least 1 (PEXPIRE with 0 deletes).
func ms(d time.Duration) int64 { return max(d.Milliseconds(), 1) }

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

// Append adds deltas to the task's log in one script, so that a blocked
// reader wakes once for the whole batch. Entries already there are
// skipped; a log that does not reach first-1, or a missing record, is
// orchestrator.ErrSharedGap and nothing is written.
func (s *Store) Append(ctx context.Context, id string, first int, deltas []string, ttl time.Duration) error {
	start := time.Now()
	args := make([]any, 0, len(deltas)+2)
	args = append(args, ms(ttl), first)
	for _, d := range deltas {
		args = append(args, d)
	}
	err := appendScript.Run(ctx, s.c, []string{s.recordKey(id), s.logKey(id)}, args...).Err()
	return s.measure("task_append", start, gapErr(err))
}

// Finish writes the terminal event and the final record in one script;
// a log that does not reach the end's sequence number less one, or a
// missing record, is orchestrator.ErrSharedGap and nothing is written.
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
	err = finishScript.Run(ctx, s.c, []string{s.recordKey(id), s.logKey(id)}, ms(ttl), end.Chunks+1, eb, rb).Err()
	return s.measure("task_finish", start, gapErr(err))
}

// markerTTL is how long an instance's marker outlives its last beat.
const markerTTL = 24 * time.Hour

// ValidPrefix reports an error when prefix cannot prefix keys on a Redis
// Cluster: a brace in it would make its text the hash tag of every key,
// or break the tags of a task's keys.
func ValidPrefix(prefix string) error {
	if strings.ContainsAny(prefix, "{}") {
		return fmt.Errorf("redis prefix %q: no braces ({ and } are Redis Cluster hash tags)", prefix)
	}
	return nil
}

// Beat renews the heartbeat of instance for ttl, and reports the shared
// state lost when the instance's marker key (written by its first beat,
// renewed by each) is missing: Redis was emptied, or this is the
// instance's first beat. The marker is the instance's own, so that every
// instance learns of the loss, not only the first to beat after it; it
// expires markerTTL after the instance's last beat.
func (s *Store) Beat(ctx context.Context, instance string, ttl time.Duration) (lost bool, err error) {
	start := time.Now()
	var fresh *redis.BoolCmd
	_, err = s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, s.instanceKey(instance), "1", ttl)
		fresh = p.SetNX(ctx, s.markerKey(instance), time.Now().UTC().Format(time.RFC3339), markerTTL)
		p.PExpire(ctx, s.markerKey(instance), markerTTL)
		return nil
	})
	if err == nil {
		lost = fresh.Val()
	}
	return lost, s.measure("heartbeat", start, err)
}

// Alive reports whether instance's heartbeat has not expired.
func (s *Store) Alive(ctx context.Context, instance string) (bool, error) {
	start := time.Now()
	n, err := s.c.Exists(ctx, s.instanceKey(instance)).Result()
	return n > 0, s.measure("alive", start, err)
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
