package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisDep is the shared-state Redis of a multi-instance deployment
// (SLUICE_REDIS_URL): tasks are published there (orchestrator/redisstate),
// cache entries are replicated through it (cache/rediscache), and /readyz
// fails while it does not answer. Every operation is measured.
type redisDep struct {
	client  *redis.Client
	observe func(op string, d time.Duration, err error)
}

// redisLog routes go-redis's own messages (a pool that cannot dial, a
// subscription that reconnects) to the service's structured log, where
// repeated ones are aggregated, instead of plain lines on stderr.
type redisLog struct{ log *slog.Logger }

// redisLogOnce sets go-redis's process-wide logger once: the first
// server of the process names it.
var redisLogOnce sync.Once

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}

// newRedis parses url and returns a client; it does not dial yet.
func newRedis(url string, observe func(string, time.Duration, error), log *slog.Logger) (*redisDep, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("setting SLUICE_REDIS_URL: %w", err)
	}
	opt.DialTimeout = time.Second
	opt.ReadTimeout = time.Second
	opt.WriteTimeout = time.Second
	opt.MaxRetries = -1   // a failed write is reported, not retried
	opt.DialerRetries = 1 // nor is a refused dial: no request waits for a Redis that is down
	if opt.PoolSize == 0 {
		// Each followed task holds a connection while it waits for its
		// next entry (XREAD BLOCK), on top of the writes.
		opt.PoolSize = 64
	}
	redisLogOnce.Do(func() { redis.SetLogger(redisLog{log}) })
	return &redisDep{client: redis.NewClient(opt), observe: observe}, nil
}

// Ready pings Redis within ctx.
func (r *redisDep) Ready(ctx context.Context) error {
	start := time.Now()
	err := r.client.Ping(ctx).Err()
	r.observe("ping", time.Since(start), err)
	if err != nil {
		return fmt.Errorf("redis unreachable: %w", err)
	}
	return nil
}

// Close closes the client.
func (r *redisDep) Close() error { return r.client.Close() }
