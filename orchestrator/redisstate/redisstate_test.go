package redisstate_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/orchestrator/sharedtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSharedContract runs the suite every orchestrator.Shared must pass
// against each real Redis deployment (redistest.Targets: the server and
// the cluster), with two clients, as two instances.
func TestSharedContract(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			sharedtest.Run(t, func(t *testing.T) (orchestrator.Shared, orchestrator.Shared) {
				t.Helper()
				a, open := redistest.NewOn(t, target.URL)
				return a, open()
			})
		})
	}
}

// TestClusterKeysOfATaskShareANode: on the Redis Cluster, the keys of one
// task (record and log) are on one master, whichever it is, and tasks
// spread over the masters. (A script over two slots would fail with
// CROSSSLOT: the contract suite on the cluster proves the writes work;
// this shows where the keys land.)
func TestClusterKeysOfATaskShareANode(t *testing.T) {
	var cluster string
	for _, target := range redistest.Targets(t) {
		if target.Name == "cluster" {
			cluster = target.URL
		}
	}
	if cluster == "" {
		t.Skip("no Redis Cluster (SLUICE_TEST_REDIS_CLUSTER): nothing to check")
	}
	_, prefix := redistest.Redis(t)
	s := redisstate.New(redistest.Universal(t, cluster), nil, prefix, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	const tasks = 24
	for i := range tasks {
		id := fmt.Sprintf("6f1d2c3b-0000-4000-8000-%012d", i)
		rec := orchestrator.Record{Tenant: "t", Deadline: time.Now().Add(time.Minute), View: orchestrator.View{ID: id, Status: orchestrator.StatusRunning}}
		if err := s.Start(ctx, rec, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := s.Append(ctx, id, 1, []string{"a", "b"}, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	c := redistest.Universal(t, cluster).(*redis.ClusterClient)
	var (
		mu      sync.Mutex
		masters = map[string]int{}    // master address -> task keys there
		where   = map[string]string{} // task id -> master of its record
	)
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		iter := m.Scan(ctx, 0, prefix+"task:*", 1000).Iterator()
		for iter.Next(ctx) {
			k := strings.TrimPrefix(iter.Val(), prefix+"task:")
			id := strings.TrimSuffix(strings.TrimSuffix(k, ":log"), "}")
			id = strings.TrimPrefix(id, "{")
			mu.Lock()
			masters[m.Options().Addr]++
			if prev, ok := where[id]; ok && prev != m.Options().Addr {
				t.Errorf("task %s has keys on %s and %s", id, prev, m.Options().Addr)
			}
			where[id] = m.Options().Addr
			mu.Unlock()
		}
		return iter.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, keys := range masters {
		n += keys
	}
	if n != 2*tasks || len(where) != tasks || len(masters) < 2 {
		t.Fatalf("%d keys of %d tasks over masters %v; want %d keys, every task, on 2 masters or more", n, len(where), masters, 2*tasks)
	}
}
