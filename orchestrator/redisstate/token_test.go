package redisstate_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
)

// TestTokenSecret: instances of one deployment (one prefix) that ask at
// once all get the same 32-byte key, and ask again later get it again; a
// deployment under another prefix gets a key of its own; a Redis that
// does not answer gives an error and no key. On each Redis deployment.
func TestTokenSecret(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) { tokenSecret(t, target.URL) })
	}
}

func tokenSecret(t *testing.T, url string) {
	t.Helper()
	_, prefix := redistest.Redis(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	const instances = 8
	keys := make([][]byte, instances)
	var wg sync.WaitGroup
	for i := range instances {
		wg.Go(func() {
			k, err := redisstate.TokenSecret(ctx, redistest.Universal(t, url), prefix)
			if err != nil {
				t.Errorf("instance %d: %v", i, err)
			}
			keys[i] = k
		})
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	if len(keys[0]) != 32 {
		t.Fatalf("key of %d bytes, want 32", len(keys[0]))
	}
	for i, k := range keys {
		if !bytes.Equal(k, keys[0]) {
			t.Fatalf("instance %d got another key than instance 0", i)
		}
	}
	again, err := redisstate.TokenSecret(ctx, redistest.Universal(t, url), prefix)
	if err != nil || !bytes.Equal(again, keys[0]) {
		t.Fatalf("asked again: %x %v, want the first key", again, err)
	}

	_, other := redistest.Redis(t)
	o, err := redisstate.TokenSecret(ctx, redistest.Universal(t, url), other)
	if err != nil || len(o) != 32 || bytes.Equal(o, keys[0]) {
		t.Fatalf("another deployment's key: %x %v, want 32 bytes of its own", o, err)
	}

	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true})
	defer down.Close()
	if k, err := redisstate.TokenSecret(ctx, down, prefix); err == nil || k != nil {
		t.Fatalf("Redis down: %x %v, want an error and no key", k, err)
	}
}
