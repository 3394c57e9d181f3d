// Package redistest gives tests the Redis named by SLUICE_TEST_REDIS_URL,
// under a key prefix of their own, clients, and shared-state Stores on it.
package redistest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
)

// Redis returns the URL of the test Redis and a key prefix that is t's
// alone; every key under it is deleted when t ends. It skips t when
// SLUICE_TEST_REDIS_URL is unset and fails it when Redis does not answer.
func Redis(t testing.TB) (url, prefix string) {
	t.Helper()
	url = os.Getenv("SLUICE_TEST_REDIS_URL")
	if url == "" {
		t.Skip("SLUICE_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/9): skipping the shared-state test")
	}
	admin := Client(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := admin.Ping(ctx).Err(); err != nil {
		t.Fatalf("SLUICE_TEST_REDIS_URL=%s does not answer: %v", url, err)
	}
	prefix = "sluice-test:" + t.Name() + ":" + uuid.NewString()[:8] + ":"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		iter := admin.Scan(ctx, 0, prefix+"*", 100).Iterator()
		for iter.Next(ctx) {
			admin.Del(ctx, iter.Val())
		}
	})
	return url, prefix
}

// New returns a Store on the test Redis under a prefix of t's own, and a
// function that returns another Store on the same prefix (another
// instance of one deployment).
func New(t testing.TB) (*redisstate.Store, func() *redisstate.Store) {
	t.Helper()
	url, prefix := Redis(t)
	open := func() *redisstate.Store { return redisstate.New(Client(t, url), Client(t, url), prefix, nil) }
	return open(), open
}

// Client returns a client for url that is closed when t ends.
func Client(t testing.TB, url string) *redis.Client {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatalf("SLUICE_TEST_REDIS_URL: %v", err)
	}
	opt.ContextTimeoutEnabled = true
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	return c
}

// Target is one Redis deployment that tests run against: a single server
// or a Redis Cluster.
type Target struct {
	Name string // "single" or "cluster": a subtest name
	URL  string
}

// Targets returns the Redis deployments of the test environment: the
// single server of SLUICE_TEST_REDIS_URL (t is skipped when it is unset)
// and, once Redis Cluster support lands, the cluster of
// SLUICE_TEST_REDIS_CLUSTER. Tests of shared state run once per target.
func Targets(t testing.TB) []Target {
	t.Helper()
	url, _ := Redis(t)
	return []Target{{Name: "single", URL: url}}
}

// Universal returns a client for url, as production code takes it (a
// redis.UniversalClient), closed when t ends.
func Universal(t testing.TB, url string) redis.UniversalClient {
	t.Helper()
	return Client(t, url)
}
