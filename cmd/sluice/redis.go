package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
)

// redisDep is the shared-state Redis of a multi-instance deployment
// (SLUICE_REDIS_URL: one server or a Redis Cluster): tasks are published there (orchestrator/redisstate).
// It is not a readiness dependency: while it does not answer, the
// instance serves its own tasks and /readyz reports "degraded" (from the
// orchestrator's heartbeat). Every operation is measured.
type redisDep struct {
	client  redis.UniversalClient
	block   redis.UniversalClient // blocking reads of followed tasks: they never hold client's connections
	observe func(op string, d time.Duration, err error)
}

// redisLog routes go-redis's own messages (a pool that cannot dial, a
// subscription that reconnects) to the service's structured log, where
// repeated ones are aggregated, instead of plain lines on stderr.
type redisLog struct{ log *slog.Logger }

func (l redisLog) Printf(ctx context.Context, format string, v ...any) {
	l.log.WarnContext(ctx, "redis client", "detail", fmt.Sprintf(format, v...))
}

// redisLogOnce sets go-redis's process-wide logger once: the first
// server of the process names it.
var redisLogOnce sync.Once

// newRedis parses url (one server or a Redis Cluster: redisstate.ParseURL)
// and returns its clients; it does not dial yet.
func newRedis(url string, observe func(string, time.Duration, error), log *slog.Logger) (*redisDep, error) {
	opt, err := redisstate.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("setting SLUICE_REDIS_URL: %w", err)
	}
	// Pool sizes, unless the URL sets one (pool_size): every running
	// task's mirror writes through the main client, on top of the
	// requests that wait for a write (a new task's record); each task
	// followed from another instance holds a blocking-read connection
	// while it waits for its next entry (XREAD BLOCK). On a cluster the
	// sizes are per node.
	const pool, blockPool = 64, 256
	redisLogOnce.Do(func() { redis.SetLogger(redisLog{log}) })
	if c := opt.Cluster; c != nil {
		c.DialTimeout = time.Second
		c.ReadTimeout = time.Second
		c.WriteTimeout = time.Second
		// A cluster client tries a command again to follow a redirection
		// (MOVED, ASK: a failover or a resharding) or after a network
		// error, at most MaxRedirects (3) times and within the caller's
		// deadline (every write is idempotent); its node clients do not
		// retry, and a refused dial is not retried, as for one server.
		c.DialerRetries = 1
		c.ContextTimeoutEnabled = true
		block := *c
		if c.PoolSize == 0 {
			c.PoolSize, block.PoolSize = pool, blockPool
		}
		return &redisDep{client: redis.NewClusterClient(c), block: redis.NewClusterClient(&block), observe: observe}, nil
	}
	o := opt.Single
	o.DialTimeout = time.Second
	o.ReadTimeout = time.Second
	o.WriteTimeout = time.Second
	o.MaxRetries = -1              // a failed write is reported (and sent again by its owner), not retried here
	o.DialerRetries = 1            // nor is a refused dial: no request waits for a Redis that is down
	o.ContextTimeoutEnabled = true // a stalled Redis costs a caller its deadline, no more
	block := *o
	if o.PoolSize == 0 {
		o.PoolSize, block.PoolSize = pool, blockPool
	}
	return &redisDep{client: redis.NewClient(o), block: redis.NewClient(&block), observe: observe}, nil
}

// tokenSecret returns the deployment's key for events tokens
// (redisstate.TokenSecret), waiting at most 2s for Redis; on an error the
// caller starts without one (the server then makes a key of its own).
func (r *redisDep) tokenSecret(ctx context.Context, prefix string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	start := time.Now()
	secret, err := redisstate.TokenSecret(ctx, r.client, prefix)
	r.observe("token_secret", time.Since(start), err)
	return secret, err
}

// Ready pings Redis within ctx (at start, to log whether it answers).
func (r *redisDep) Ready(ctx context.Context) error {
	start := time.Now()
	err := r.client.Ping(ctx).Err()
	r.observe("ping", time.Since(start), err)
	if err != nil {
		return fmt.Errorf("redis unreachable: %w", err)
	}
	return nil
}

// Close closes the clients.
func (r *redisDep) Close() error { return errors.Join(r.client.Close(), r.block.Close()) }
