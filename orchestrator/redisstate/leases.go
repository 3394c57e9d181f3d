package redisstate

// The fleet budget (pipeline.Leases) in Redis. Each upstream's live
// leases are one sorted set, "budget:{UPSTREAM}:leases", of lease ids
// scored by their expiry in Redis's own clock (milliseconds, TIME), so
// that instances' clocks never matter. Every call is one Lua script over
// that one key (the braces are a hash tag: one Redis Cluster slot): it
// first drops the expired leases, then acquires (only below the limit),
// renews (re-adding leases Redis lost) or releases. A release publishes
// on "budget:UPSTREAM:released", which wakes the instances waiting for a
// slot. The key itself expires two lease times after its last write.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-dev/sluice/pipeline"
)

// Leases is a pipeline.Leases in Redis: one upstream's fleet budget.
// It is safe for concurrent use; Close stops its subscription.
type Leases struct {
	c       redis.UniversalClient
	key     string
	channel string
	ttl     time.Duration
	observe func(op string, d time.Duration, err error)

	released chan struct{} // cap 1, fed by the subscription
	ps       *redis.PubSub
	done     chan struct{} // closed when the subscription's reader returns
	close    sync.Once
}

var _ pipeline.Leases = (*Leases)(nil)

// NewLeases returns the fleet budget of upstream under prefix, with
// leases that live ttl without renewal, and subscribes to its release
// notifications. observe, if not nil, is told each call's latency and
// error. c must set ContextTimeoutEnabled (as the Store's clients), so
// that each call ends by its context's deadline (the gate's call
// timeout) even on a stalled Redis. Call Close when done.
func NewLeases(c redis.UniversalClient, prefix, upstream string, ttl time.Duration, observe func(op string, d time.Duration, err error)) *Leases {
	if observe == nil {
		observe = func(string, time.Duration, error) {}
	}
	l := &Leases{
		c: c, key: prefix + "budget:{" + upstream + "}:leases", channel: prefix + "budget:" + upstream + ":released",
		ttl: ttl, observe: observe, released: make(chan struct{}, 1), done: make(chan struct{}),
	}
	// Subscribe does not wait for Redis: go-redis (re)connects the
	// subscription in the background, for as long as it is open.
	l.ps = c.Subscribe(context.Background(), l.channel)
	go l.listen(l.ps.Channel())
	return l
}

// listen turns release messages into wake-ups until the subscription
// is closed.
func (l *Leases) listen(msgs <-chan *redis.Message) {
	defer close(l.done)
	for range msgs {
		select {
		case l.released <- struct{}{}:
		default:
		}
	}
}

// Close ends the subscription. The leases stay in Redis until released
// or expired.
func (l *Leases) Close() error {
	var err error
	l.close.Do(func() {
		err = l.ps.Close()
		<-l.done
	})
	if err != nil {
		return fmt.Errorf("redisstate: close budget subscription: %w", err)
	}
	return nil
}

// Released receives after leases were released anywhere in the fleet.
func (l *Leases) Released() <-chan struct{} { return l.released }

// leaseNow is the Lua that sets now to Redis's clock in milliseconds and
// drops the expired leases of KEYS[1].
const leaseNow = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
`

// acquireScript: ARGV = limit, ttl ms, ids... Adds the ids in order
// while below the limit. An id already live counts as granted and is
// refreshed, whatever the count: the script is idempotent, so a replay
// (the cluster client sends a script again after a network error) after
// its first run filled the fleet reports the leases that run added
// instead of leaving them held by nobody. Returns {granted, live}.
var acquireScript = redis.NewScript(leaseNow + `
local n = redis.call('ZCARD', KEYS[1])
local limit = tonumber(ARGV[1])
local ttl = tonumber(ARGV[2])
local k = 0
for i = 3, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
  elseif n < limit then
    redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
    n = n + 1
  else
    break
  end
  k = k + 1
end
if k > 0 then
  redis.call('PEXPIRE', KEYS[1], 2 * ttl)
end
return {k, n}
`)

// renewScript: ARGV = ttl ms, ids... Returns live.
var renewScript = redis.NewScript(leaseNow + `
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do
  redis.call('ZADD', KEYS[1], now + ttl, ARGV[i])
end
if #ARGV > 1 then
  redis.call('PEXPIRE', KEYS[1], 2 * ttl)
end
return redis.call('ZCARD', KEYS[1])
`)

// releaseScript: ARGV = channel, ids... Returns the leases removed.
var releaseScript = redis.NewScript(leaseNow + `
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('ZREM', KEYS[1], ARGV[i])
end
redis.call('PUBLISH', ARGV[1], n)
return n
`)

// Acquire implements pipeline.Leases.
func (l *Leases) Acquire(ctx context.Context, ids []string, limit int) (int, int, error) {
	start := time.Now()
	args := make([]any, 0, len(ids)+2)
	args = append(args, limit, l.ttl.Milliseconds())
	for _, id := range ids {
		args = append(args, id)
	}
	r, err := acquireScript.Run(ctx, l.c, []string{l.key}, args...).Int64Slice()
	l.observe("budget_acquire", time.Since(start), err)
	if err != nil {
		return 0, 0, fmt.Errorf("redisstate: acquire leases: %w", err)
	}
	if len(r) != 2 {
		return 0, 0, errors.New("redisstate: acquire leases: unexpected reply")
	}
	return int(r[0]), int(r[1]), nil
}

// Renew implements pipeline.Leases.
func (l *Leases) Renew(ctx context.Context, ids []string) (int, error) {
	start := time.Now()
	args := make([]any, 0, len(ids)+1)
	args = append(args, l.ttl.Milliseconds())
	for _, id := range ids {
		args = append(args, id)
	}
	n, err := renewScript.Run(ctx, l.c, []string{l.key}, args...).Int()
	l.observe("budget_renew", time.Since(start), err)
	if err != nil {
		return 0, fmt.Errorf("redisstate: renew leases: %w", err)
	}
	return n, nil
}

// Release implements pipeline.Leases.
func (l *Leases) Release(ctx context.Context, ids []string) error {
	start := time.Now()
	args := make([]any, 0, len(ids)+1)
	args = append(args, l.channel)
	for _, id := range ids {
		args = append(args, id)
	}
	err := releaseScript.Run(ctx, l.c, []string{l.key}, args...).Err()
	l.observe("budget_release", time.Since(start), err)
	if err != nil {
		return fmt.Errorf("redisstate: release leases: %w", err)
	}
	return nil
}

// Live returns the live (unexpired) leases in Redis now: for tests and
// tools; the gate reads the count from its own calls' replies.
func (l *Leases) Live(ctx context.Context) (int, error) {
	n, err := l.Renew(ctx, nil)
	if err != nil {
		return 0, err
	}
	return n, nil
}
