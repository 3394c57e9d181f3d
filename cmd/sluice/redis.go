package main

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisDep is the shared-state Redis of a multi-instance deployment
// (SLUICE_REDIS_URL). Today it is a readiness dependency: /readyz fails
// while it does not answer, and every check is measured. The task and
// cache stores that will live in it sit behind orchestrator.TaskStore and
// the cache's store interface.
type redisDep struct {
	client  *redis.Client
	observe func(op string, d time.Duration, err error)
}

// newRedis parses url and returns a client; it does not dial yet.
func newRedis(url string, observe func(string, time.Duration, error)) (*redisDep, error) {
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("setting SLUICE_REDIS_URL: %w", err)
	}
	opt.DialTimeout = time.Second
	opt.ReadTimeout = time.Second
	opt.WriteTimeout = time.Second
	opt.MaxRetries = -1 // a readiness probe reports, it does not retry
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
