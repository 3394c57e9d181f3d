package redisstate

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// tokenSecretKey is the key, under a deployment's prefix, of its events
// token secret.
const tokenSecretKey = "events-token-secret"

// TokenSecret returns the deployment's key for events tokens, kept at
// prefix+"events-token-secret": the first instance to ask creates it (32
// random bytes, SET NX, no expiry) and every instance, then and later,
// reads the same one, so that a token from one instance opens the stream
// on another. It returns an error, and no key, when Redis does not answer
// within ctx.
func TokenSecret(ctx context.Context, c redis.UniversalClient, prefix string) ([]byte, error) {
	fresh := make([]byte, 32)
	_, _ = rand.Read(fresh) // crypto/rand never fails on supported platforms
	key := prefix + tokenSecretKey
	err := c.SetNX(ctx, key, fresh, 0).Err()
	var secret []byte
	if err == nil {
		secret, err = c.Get(ctx, key).Bytes()
	}
	if err != nil {
		return nil, fmt.Errorf("redis: events token key: %w", err)
	}
	return secret, nil
}
