// Package rediscache shares sluice's cache entries between instances
// through Redis: it implements cache.Replica.
//
// Each entry is one key, "cache:{ns}:{id}" under a prefix, holding the
// entry as JSON (the vector little-endian float32, as cache.EncodeVector
// writes it) and expiring with the entry; {ns} is a hash of tenant and
// request namespace, so a purge deletes one key pattern. New entries and
// purges are announced on the pub/sub channel "cache"; each instance
// keeps its own index in memory and fills it from there.
package rediscache

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-dev/sluice/cache"
)

// Replica is a cache.Replica in Redis. It is safe for concurrent use.
type Replica struct {
	c       *redis.Client
	prefix  string
	self    string // this instance, so that it skips its own announcements
	observe func(op string, d time.Duration, err error)
}

var _ cache.Replica = (*Replica)(nil)

// New returns a Replica using c with every key and channel under prefix.
// observe, if not nil, is told each operation's latency and error.
func New(c *redis.Client, prefix string, observe func(op string, d time.Duration, err error)) *Replica {
	if observe == nil {
		observe = func(string, time.Duration, error) {}
	}
	return &Replica{c: c, prefix: prefix, self: uuid.NewString(), observe: observe}
}

// subscribeWait bounds the wait for the subscription at start.
const subscribeWait = 2 * time.Second

// message is one announcement on the channel.
type message struct {
	From  string              `json:"from"`
	Entry *cache.SharedEntry  `json:"entry,omitempty"`
	Purge *cache.PurgeRequest `json:"purge,omitempty"`
}

func (r *Replica) channel() string { return r.prefix + "cache" }

// nsPattern is the key prefix of one tenant's request namespace.
func (r *Replica) nsPattern(tenant, name string) string {
	h := sha256.Sum256([]byte(tenant + "\x00" + name))
	return r.prefix + "cache:" + hex.EncodeToString(h[:8]) + ":"
}

func (r *Replica) measure(op string, start time.Time, err error) error {
	r.observe(op, time.Since(start), err)
	if err != nil {
		return fmt.Errorf("rediscache: %s: %w", op, err)
	}
	return nil
}

// Publish stores e until it expires and announces it.
func (r *Replica) Publish(ctx context.Context, e cache.SharedEntry) error {
	start := time.Now()
	var ttl time.Duration
	if !e.Expires.IsZero() {
		if ttl = time.Until(e.Expires); ttl <= 0 {
			return nil // expired on the way
		}
	}
	b, err := json.Marshal(e)
	if err != nil {
		return r.measure("cache_publish", start, err)
	}
	msg, err := json.Marshal(message{From: r.self, Entry: &e})
	if err != nil {
		return r.measure("cache_publish", start, err)
	}
	_, err = r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, r.nsPattern(e.Tenant, e.Namespace)+e.ID, b, ttl)
		p.Publish(ctx, r.channel(), msg)
		return nil
	})
	return r.measure("cache_publish", start, err)
}

// Purge deletes the entries of a tenant's request namespace and announces
// the purge.
func (r *Replica) Purge(ctx context.Context, tenant, name string) error {
	start := time.Now()
	err := r.scan(ctx, r.nsPattern(tenant, name)+"*", func(keys []string) error {
		return r.c.Unlink(ctx, keys...).Err()
	})
	if err == nil {
		var msg []byte
		msg, err = json.Marshal(message{From: r.self, Purge: &cache.PurgeRequest{Tenant: tenant, Name: name}})
		if err == nil {
			err = r.c.Publish(ctx, r.channel(), msg).Err()
		}
	}
	return r.measure("cache_purge", start, err)
}

// Load calls fn with every stored entry.
func (r *Replica) Load(ctx context.Context, fn func(cache.SharedEntry)) error {
	start := time.Now()
	err := r.scan(ctx, r.prefix+"cache:*", func(keys []string) error {
		vals, err := r.c.MGet(ctx, keys...).Result()
		if err != nil {
			return err
		}
		for _, v := range vals {
			s, ok := v.(string)
			if !ok {
				continue // expired since the scan
			}
			var e cache.SharedEntry
			if err := json.Unmarshal([]byte(s), &e); err != nil {
				return fmt.Errorf("entry: %w", err)
			}
			fn(e)
		}
		return nil
	})
	return r.measure("cache_load", start, err)
}

// scan calls fn with the keys matching pattern, a batch at a time.
func (r *Replica) scan(ctx context.Context, pattern string, fn func(keys []string) error) error {
	var cursor uint64
	for {
		keys, next, err := r.c.Scan(ctx, cursor, pattern, 500).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := fn(keys); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

// Updates subscribes to the announcements of the other instances until
// ctx ends. The subscription reconnects by itself while Redis is away
// (entries announced meanwhile are missed until the next start).
func (r *Replica) Updates(ctx context.Context) <-chan cache.Update {
	sub := r.c.Subscribe(ctx, r.channel())
	// Wait (briefly) for the subscription to be in place, so that what is
	// announced after Updates returns is heard; if Redis is away, the
	// subscription keeps trying in the background.
	start := time.Now()
	rctx, cancel := context.WithTimeout(ctx, subscribeWait)
	_, err := sub.Receive(rctx)
	cancel()
	r.observe("cache_subscribe", time.Since(start), err)
	out := make(chan cache.Update)
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
				var msg message
				if err := json.Unmarshal([]byte(m.Payload), &msg); err != nil {
					r.observe("cache_update", 0, errors.New("undecodable announcement"))
					continue
				}
				if msg.From == r.self {
					continue
				}
				select {
				case out <- cache.Update{Entry: msg.Entry, Purge: msg.Purge}:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}
