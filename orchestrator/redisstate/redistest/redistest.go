// Package redistest gives tests the Redis deployments of the test
// environment: the server of SLUICE_TEST_REDIS_URL and the Redis Cluster
// of SLUICE_TEST_REDIS_CLUSTER (.ci/redis-cluster.sh starts one), under a
// key prefix of their own, with clients and shared-state Stores on them;
// and Redis servers and proxies of a test's own to kill, cut and stall.
package redistest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
)

// Redis returns the URL of the test Redis and a key prefix that is t's
// alone; every key under it is deleted when t ends, on the test Redis and
// on the test cluster (so that a test may use the prefix on every
// Target). It skips t when SLUICE_TEST_REDIS_URL is unset and fails it
// when Redis does not answer.
func Redis(t testing.TB) (url, prefix string) {
	t.Helper()
	url = os.Getenv("SLUICE_TEST_REDIS_URL")
	if url == "" {
		t.Skip("SLUICE_TEST_REDIS_URL is not set (e.g. redis://127.0.0.1:6379/9): skipping the shared-state test")
	}
	admins := []redis.UniversalClient{Client(t, url)}
	if cluster := os.Getenv("SLUICE_TEST_REDIS_CLUSTER"); cluster != "" {
		admins = append(admins, Universal(t, cluster))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := admins[0].Ping(ctx).Err(); err != nil {
		t.Fatalf("SLUICE_TEST_REDIS_URL=%s does not answer: %v", url, err)
	}
	prefix = "sluice-test:" + t.Name() + ":" + uuid.NewString()[:8] + ":"
	if redisstate.ValidPrefix(prefix) != nil { // a brace in the test's name
		prefix = "sluice-test:" + uuid.NewString() + ":"
	}
	t.Cleanup(func() {
		for _, admin := range admins {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = deletePrefix(ctx, admin, prefix)
			cancel()
		}
	})
	return url, prefix
}

// deletePrefix deletes every key under prefix: on each master of a
// cluster (SCAN is per node), or on the one server.
func deletePrefix(ctx context.Context, c redis.UniversalClient, prefix string) error {
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			if err := c.Del(ctx, iter.Val()).Err(); err != nil {
				return fmt.Errorf("delete %s: %w", iter.Val(), err)
			}
		}
		return iter.Err()
	}
	switch c := c.(type) {
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, scan)
	case *redis.Client:
		return scan(ctx, c)
	default:
		return fmt.Errorf("redistest: unexpected client %T", c)
	}
}

// New returns a Store on the test Redis under a prefix of t's own, and a
// function that returns another Store on the same prefix (another
// instance of one deployment).
func New(t testing.TB) (*redisstate.Store, func() *redisstate.Store) {
	t.Helper()
	url, _ := Redis(t)
	return NewOn(t, url)
}

// NewOn is New on the Redis of url (a Target's): one server or a cluster.
func NewOn(t testing.TB, url string) (*redisstate.Store, func() *redisstate.Store) {
	t.Helper()
	_, prefix := Redis(t)
	open := func() *redisstate.Store { return redisstate.New(Universal(t, url), Universal(t, url), prefix, nil) }
	return open(), open
}

// Client returns a client for url (one server) that is closed when t ends.
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
	URL  string // as SLUICE_REDIS_URL takes it (redisstate.ParseURL)
}

// Targets returns the Redis deployments of the test environment: the
// single server of SLUICE_TEST_REDIS_URL (t is skipped when it is unset)
// and the cluster of SLUICE_TEST_REDIS_CLUSTER
// (redis+cluster://host1:port1,host2:port2,...; .ci/redis-cluster.sh
// starts one). Without the cluster, t runs on the server alone (logged),
// unless SLUICE_REQUIRE_E2E=1: then t fails. A cluster that does not
// answer, or whose state is not ok, fails t. Tests of shared state run
// once per target.
func Targets(t testing.TB) []Target {
	t.Helper()
	url, _ := Redis(t)
	targets := []Target{{Name: "single", URL: url}}
	cluster := os.Getenv("SLUICE_TEST_REDIS_CLUSTER")
	if cluster == "" {
		if os.Getenv("SLUICE_REQUIRE_E2E") == "1" {
			t.Fatal("SLUICE_REQUIRE_E2E=1 but SLUICE_TEST_REDIS_CLUSTER is not set (.ci/redis-cluster.sh start)")
		}
		t.Log("SLUICE_TEST_REDIS_CLUSTER is not set: running on the single Redis only (.ci/redis-cluster.sh start)")
		return targets
	}
	c, ok := Universal(t, cluster).(*redis.ClusterClient)
	if !ok {
		t.Fatalf("SLUICE_TEST_REDIS_CLUSTER=%s is not a cluster URL (redis+cluster://host1:port1,host2:port2)", cluster)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		t.Fatalf("SLUICE_TEST_REDIS_CLUSTER=%s does not answer: %v", cluster, err)
	}
	if !strings.Contains(info, "cluster_state:ok") {
		t.Fatalf("SLUICE_TEST_REDIS_CLUSTER=%s: cluster state is not ok:\n%s", cluster, info)
	}
	return append(targets, Target{Name: "cluster", URL: cluster})
}

// Universal returns a client for url (one server or a cluster:
// redisstate.ParseURL), as production code takes it, with
// ContextTimeoutEnabled, closed when t ends. A cluster client has learnt
// the slots and reached every master before it is returned.
func Universal(t testing.TB, url string) redis.UniversalClient {
	t.Helper()
	opt, err := redisstate.ParseURL(url)
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	if opt.Cluster != nil {
		opt.Cluster.ContextTimeoutEnabled = true
	} else {
		opt.Single.ContextTimeoutEnabled = true
	}
	c := opt.NewClient()
	t.Cleanup(func() { c.Close() })
	if cc, ok := c.(*redis.ClusterClient); ok {
		// Learn the slots and open a connection to every master now, as a
		// running deployment has: a test's first write must not pay for
		// the discovery (and miss a 250 ms bound on a loaded machine).
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := cc.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Ping(ctx).Err() }); err != nil {
			t.Fatalf("redistest: cluster %s: %v", url, err)
		}
	}
	return c
}
