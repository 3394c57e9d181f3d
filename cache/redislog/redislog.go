// Package redislog is the cache's shared change log (cache.ChangeLog) in
// Redis: one Redis Stream of puts and purges, read by every instance with
// XREAD from its own position, and one hash of the scopes' generations.
//
// An epoch key names one life of the log: when Redis loses the log and
// the generations (a restart without persistence), the next instance to
// read the generations starts a new epoch, appends made under the old one
// are refused until their instance has read the new generations, and every
// instance takes its entries as made under generation 0 of the new epoch.
//
// The keys carry the same hash tag ("{cache}" after the deployment's
// prefix), so each of the Lua scripts touches one Redis Cluster slot:
// a purge bumps its scope's generation and appends in one step, and a put
// is appended only if the generation it was made under is still current,
// in one step, so no purge can come between the check and the append. The
// stream is trimmed (XADD MAXLEN ~) so Redis memory is bounded; trimming
// from the front never reorders, and the hash keeps every scope's
// generation whatever was trimmed.
//
// Every read is checked in a third script, after it: when the oldest
// change kept is after the reader's position, changes were trimmed unread
// (cache.ErrTrimmed: the reader reads the generations again); when the
// stream ends before the reader's position, or a put's generation is above
// its scope's, the log went back (lost writes: a failover, an older
// snapshot) and the script starts a new epoch (cache.ErrEpoch).
//
// One stream, not several, keeps one total order and one XREAD per
// instance: a put is one append per stored answer (a finished, cacheable
// generation), far below what one Redis node serves.
package redislog

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-dev/sluice/cache"
)

// DefaultMaxLen is the default number of changes the stream keeps.
const DefaultMaxLen = 10000

// Log is a cache.ChangeLog in Redis. It is safe for concurrent use.
type Log struct {
	client  redis.UniversalClient
	block   redis.UniversalClient // blocking reads: they never hold client's connections
	stream  string
	gens    string
	epoch   string
	maxLen  int64
	observe func(op string, d time.Duration, err error)
}

var _ cache.ChangeLog = (*Log)(nil)

// Config configures a Log.
type Config struct {
	// Prefix is put before both keys: deployments sharing one Redis need
	// different ones.
	Prefix string
	// MaxLen is the number of changes the stream keeps, about (Redis
	// trims whole nodes of the stream). default: DefaultMaxLen
	MaxLen int64
	// Block, if not nil, is the client of the blocking reads. default:
	// the client.
	Block redis.UniversalClient
	// Observe, if set, is told the duration and error of every call.
	Observe func(op string, d time.Duration, err error)
}

// New returns the change log of cfg.Prefix on client.
func New(client redis.UniversalClient, cfg Config) *Log {
	if cfg.MaxLen <= 0 {
		cfg.MaxLen = DefaultMaxLen
	}
	if cfg.Block == nil {
		cfg.Block = client
	}
	return &Log{client: client, block: cfg.Block, stream: cfg.Prefix + "{cache}:log", gens: cfg.Prefix + "{cache}:gen",
		epoch:  cfg.Prefix + "{cache}:epoch",
		maxLen: cfg.MaxLen, observe: cfg.Observe}
}

// Keys returns the stream's, the generations' and the epoch's keys.
func (l *Log) Keys() (stream, gens, epoch string) { return l.stream, l.gens, l.epoch }

// appendScript appends a change. KEYS: the stream, the generations, the
// epoch. ARGV: max length, op, scope field, the put's generation (a
// purge's steps), origin, body, the appender's epoch, the purge's known
// generation, a new epoch. Nothing is appended under another epoch (the
// log was lost since the appender read it). A purge moves its scope's
// generation to max(current + steps, known) and appends with the new one;
// a put is appended with its generation if it is the current one, not at
// all if it is older, and if it is newer the log went back (it lost the
// purge that made it: a failover to a replica that had not received it,
// an older snapshot): the script starts a new epoch (ARGV[9]) so that
// every instance resets its generations. It returns {appended (1|0; -1:
// another epoch), generation}.
var appendScript = redis.NewScript(`
if redis.call('GET', KEYS[3]) ~= ARGV[7] then
  return {-1, 0}
end
local cur = tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0')
if ARGV[2] == 'purge' then
  cur = math.max(cur + tonumber(ARGV[4]), tonumber(ARGV[8]))
  redis.call('HSET', KEYS[2], ARGV[3], cur)
elseif tonumber(ARGV[4]) < cur then
  return {0, cur}
elseif tonumber(ARGV[4]) > cur then
  redis.call('SET', KEYS[3], ARGV[9])
  return {-1, 0}
end
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'op', ARGV[2], 'gen', tostring(cur), 'origin', ARGV[5], 'body', ARGV[6])
return {1, cur}
`)

// body is a change's payload on the wire. It has no normalized text, key
// or facets: readers compute those from the question.
type body struct {
	Tenant   string   `json:"tenant,omitempty"`
	Name     string   `json:"ns"`
	Model    string   `json:"model,omitempty"`
	Context  string   `json:"ctx,omitempty"`
	Question string   `json:"q,omitempty"`
	Chunks   []string `json:"a,omitempty"`
	Created  int64    `json:"created_ms,omitempty"`
	Embedder string   `json:"emb,omitempty"`
	Dim      int      `json:"dim,omitempty"`
	Vector   []byte   `json:"vec,omitempty"` // cache.EncodeVector
}

// field is a scope's field in the generations hash: unambiguous whatever
// the tenant holds.
func field(s cache.Scope) string {
	return strconv.Itoa(len(s.Tenant)) + ":" + s.Tenant + s.Namespace
}

func parseField(f string) (cache.Scope, bool) {
	n, rest, ok := strings.Cut(f, ":")
	if !ok {
		return cache.Scope{}, false
	}
	k, err := strconv.Atoi(n)
	if err != nil || k < 0 || k > len(rest) {
		return cache.Scope{}, false
	}
	return cache.Scope{Tenant: rest[:k], Namespace: rest[k:]}, true
}

// Append implements cache.ChangeLog.
func (l *Log) Append(ctx context.Context, ch cache.Change) (uint64, error) {
	if ch.Op != cache.ChangePut && ch.Op != cache.ChangePurge {
		return 0, fmt.Errorf("redislog: unknown change %q", ch.Op)
	}
	b := body{Tenant: ch.Scope.Tenant, Name: ch.Scope.Namespace}
	if ch.Op == cache.ChangePut {
		b.Model, b.Context, b.Question, b.Chunks = ch.Model, ch.Context, ch.Question, ch.Chunks
		b.Created, b.Embedder, b.Dim = ch.Created.UnixMilli(), ch.Embedder, ch.Dim
		if len(ch.Vector) > 0 {
			b.Vector = cache.EncodeVector(ch.Vector)
		}
	}
	raw, err := json.Marshal(b)
	if err != nil {
		return 0, fmt.Errorf("redislog: encode: %w", err)
	}
	genArg := ch.Gen
	if ch.Op == cache.ChangePurge {
		genArg = max(ch.Steps, 1)
	}
	start := time.Now()
	res, err := appendScript.Run(ctx, l.client, []string{l.stream, l.gens, l.epoch},
		l.maxLen, string(ch.Op), field(ch.Scope), genArg, ch.Origin, raw, ch.Epoch, ch.Known, newEpoch()).Int64Slice()
	l.note("cache_log_"+string(ch.Op), start, err)
	if err != nil {
		return 0, fmt.Errorf("redislog: append %s: %w", ch.Op, err)
	}
	if len(res) != 2 {
		return 0, fmt.Errorf("redislog: append %s: unexpected reply %v", ch.Op, res)
	}
	gen := uint64(max(res[1], 0))
	switch res[0] {
	case -1:
		return 0, cache.ErrEpoch
	case 0:
		return gen, cache.ErrStale
	}
	return gen, nil
}

// checkScript checks a read that went from position ARGV[1] ("0-0": the
// start) to ARGV[2]. KEYS: the stream, the epoch. The log went back when
// its last entry is before ARGV[2] (entries are only trimmed from the
// front, so the last one this reader read is there while the log keeps
// its writes): it starts a new epoch (ARGV[3]) and returns -1. Entries
// after ARGV[1] were trimmed unread when the first entry kept is after
// it: it returns 1. Otherwise 0.
var checkScript = redis.NewScript(`
local function before(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, as, bm, bs = tonumber(am), tonumber(as), tonumber(bm), tonumber(bs)
  return am < bm or (am == bm and as < bs)
end
if ARGV[2] ~= '0-0' then
  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
  if #last == 0 or before(last[1][1], ARGV[2]) then
    redis.call('SET', KEYS[2], ARGV[3])
    return -1
  end
end
if ARGV[1] ~= '0-0' then
  local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)
  if #first > 0 and before(ARGV[1], first[1][1]) then
    return 1
  end
end
return 0
`)

func newEpoch() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Read implements cache.ChangeLog with XREAD (BLOCK when block > 0),
// then checks the read (checkScript): it returns cache.ErrTrimmed when
// changes after after were trimmed unread, and cache.ErrEpoch when the
// log went back (it started a new epoch). The check comes after the read,
// so a trim during the read cannot hide a gap; it costs one more call per
// read.
func (l *Log) Read(ctx context.Context, after string, max int, block time.Duration) ([]cache.Change, string, error) {
	from := after
	if from == "" {
		from = "0-0"
	}
	args := &redis.XReadArgs{Streams: []string{l.stream, from}, Count: int64(max), Block: -1}
	if block > 0 {
		args.Block = block
	}
	start := time.Now()
	res, err := l.block.XRead(ctx, args).Result()
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	l.note("cache_log_read", start, err)
	if err != nil {
		return nil, after, fmt.Errorf("redislog: read: %w", err)
	}
	next := after
	var out []cache.Change
	for _, s := range res {
		for _, m := range s.Messages {
			next = m.ID
			if ch, ok := decode(m); ok {
				out = append(out, ch)
			}
		}
	}
	to := next
	if to == "" {
		to = "0-0"
	}
	start = time.Now()
	verdict, err := checkScript.Run(ctx, l.client, []string{l.stream, l.epoch}, from, to, newEpoch()).Int64()
	l.note("cache_log_check", start, err)
	switch {
	case err != nil:
		return nil, after, fmt.Errorf("redislog: read: check: %w", err)
	case verdict < 0:
		return nil, after, fmt.Errorf("redislog: read: the log no longer holds position %s (it lost writes): %w", to, cache.ErrEpoch)
	case verdict > 0:
		return nil, after, fmt.Errorf("redislog: read: %w", cache.ErrTrimmed)
	}
	return out, next, nil
}

// decode reads one stream entry; ok is false for an entry it cannot read
// (skipped, never applied).
func decode(m redis.XMessage) (cache.Change, bool) {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	gen, err := strconv.ParseUint(str("gen"), 10, 64)
	if err != nil {
		return cache.Change{}, false
	}
	var b body
	if err := json.Unmarshal([]byte(str("body")), &b); err != nil {
		return cache.Change{}, false
	}
	ch := cache.Change{Pos: m.ID, Op: cache.ChangeOp(str("op")), Origin: str("origin"), Gen: gen,
		Scope: cache.Scope{Tenant: b.Tenant, Namespace: b.Name}}
	switch ch.Op {
	case cache.ChangePurge:
		return ch, true
	case cache.ChangePut:
	default:
		return cache.Change{}, false
	}
	ch.Model, ch.Context, ch.Question, ch.Chunks = b.Model, b.Context, b.Question, b.Chunks
	ch.Embedder, ch.Dim = b.Embedder, b.Dim
	if b.Created > 0 {
		ch.Created = time.UnixMilli(b.Created)
	}
	if len(b.Vector) > 0 {
		v, err := cache.DecodeVector(b.Vector)
		if err != nil {
			v = nil // exact tier only
		}
		ch.Vector = v
	}
	return ch, true
}

// generationsScript returns the epoch, making it ARGV[1] when there is
// none (a new or lost log), and every generation. KEYS: the epoch, the
// generations.
var generationsScript = redis.NewScript(`
local e = redis.call('GET', KEYS[1])
if not e then
  e = ARGV[1]
  redis.call('SET', KEYS[1], e)
end
return {e, redis.call('HGETALL', KEYS[2])}
`)

// Generations implements cache.ChangeLog.
func (l *Log) Generations(ctx context.Context) (string, map[cache.Scope]uint64, error) {
	start := time.Now()
	res, err := generationsScript.Run(ctx, l.client, []string{l.epoch, l.gens}, newEpoch()).Slice()
	l.note("cache_log_generations", start, err)
	if err != nil {
		return "", nil, fmt.Errorf("redislog: generations: %w", err)
	}
	epoch, _ := res[0].(string)
	all, _ := res[1].([]any)
	if len(res) != 2 || epoch == "" {
		return "", nil, fmt.Errorf("redislog: generations: unexpected reply %v", res)
	}
	out := make(map[cache.Scope]uint64, len(all)/2)
	for i := 0; i+1 < len(all); i += 2 {
		f, _ := all[i].(string)
		v, _ := all[i+1].(string)
		s, ok := parseField(f)
		g, err := strconv.ParseUint(v, 10, 64)
		if ok && err == nil {
			out[s] = g
		}
	}
	return epoch, out, nil
}

func (l *Log) note(op string, start time.Time, err error) {
	if l.observe != nil {
		l.observe(op, time.Since(start), err)
	}
}
