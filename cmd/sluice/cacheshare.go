package main

import (
	"context"
	"log/slog"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/cache/redislog"
)

// shareCache shares c with every instance on the same Redis and prefix
// through the change log of cache/redislog, unless SLUICE_CACHE_SHARED is
// false. The returned stop ends the replication (it waits for its two
// goroutines); it is a no-op when the cache is not shared.
func shareCache(ctx context.Context, s *settings, c *cache.Cache, rd *redisDep, log *slog.Logger) (stop func()) {
	if !s.CacheShared || c == nil {
		log.Info("cache sharing off: each instance keeps its own cache (SLUICE_CACHE_SHARED=false)")
		return func() {}
	}
	lg := redislog.New(rd.client, redislog.Config{Prefix: s.RedisPrefix, MaxLen: int64(s.CacheLogMax), Block: rd.block, Observe: rd.observe})
	stop, err := c.Share(ctx, lg, cache.ShareConfig{
		Outbox:      s.CacheLogPending,
		MaxPutBytes: s.CacheLogEntryBytes,
		OnError: func(op string, err error) {
			log.Warn("cache change log unreachable; the cache serves and stores locally meanwhile", "op", op, "err", err.Error())
		},
	})
	if err != nil {
		log.Error("cache sharing not started", "err", err.Error())
		return func() {}
	}
	log.Info("cache sharing on: entries and purges go through the change log", "keep", s.CacheLogMax, "entry_bytes", s.CacheLogEntryBytes)
	return stop
}
