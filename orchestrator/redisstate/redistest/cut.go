package redistest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Cut plays a Redis outage for the clients of one URL, on a single server
// or a Redis Cluster: Cut closes their connections and refuses new ones,
// Restore lets them in again. Others on the same Redis are not touched.
// On a single server it is a Proxy; on a cluster, whose clients reach
// every node directly (one proxy cannot stand in front of them), it is a
// Redis ACL user of the test's own on every node, turned off and its
// connections killed to cut.
type Cut struct {
	t       testing.TB
	proxy   *Proxy
	cluster *redis.ClusterClient // the admin client: the target's own user
	user    string
}

// NewCut returns a Cut for the Redis of url and the URL its clients use
// (through the proxy, or as the test's ACL user). It is undone when t
// ends.
func NewCut(t testing.TB, url string) (*Cut, string) {
	t.Helper()
	if !strings.Contains(strings.SplitN(url, "://", 2)[0], "+cluster") {
		p, proxied := NewProxy(t, url)
		return &Cut{t: t, proxy: p}, proxied
	}
	cc, ok := Universal(t, url).(*redis.ClusterClient)
	if !ok {
		t.Fatalf("redistest: %s is not a cluster URL", url)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	c := &Cut{t: t, cluster: cc, user: "redistest-cut-" + hex.EncodeToString(b[:])}
	pass := hex.EncodeToString(b[:]) + "pw"
	if err := c.each(func(ctx context.Context, n *redis.Client) error {
		return n.Do(ctx, "ACL", "SETUSER", c.user, "reset", "on", ">"+pass, "~*", "&*", "+@all").Err()
	}); err != nil {
		t.Fatalf("redistest: ACL user on the cluster: %v", err)
	}
	t.Cleanup(func() {
		_ = c.each(func(ctx context.Context, n *redis.Client) error { return n.Do(ctx, "ACL", "DELUSER", c.user).Err() })
	})
	scheme, rest, _ := strings.Cut(url, "://")
	if i := strings.LastIndex(strings.SplitN(rest, "/", 2)[0], "@"); i >= 0 {
		rest = rest[i+1:] // the test's user instead of the target's
	}
	return c, scheme + "://" + c.user + ":" + pass + "@" + rest
}

// each runs fn on every node of the cluster (masters and replicas).
func (c *Cut) each(fn func(ctx context.Context, n *redis.Client) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return c.cluster.ForEachShard(ctx, fn)
}

// Cut closes the clients' connections and refuses new ones.
func (c *Cut) Cut() {
	if c.proxy != nil {
		c.proxy.Cut()
		return
	}
	if err := c.each(func(ctx context.Context, n *redis.Client) error {
		if err := n.Do(ctx, "ACL", "SETUSER", c.user, "off").Err(); err != nil {
			return err
		}
		return n.Do(ctx, "CLIENT", "KILL", "USER", c.user).Err()
	}); err != nil {
		c.t.Errorf("redistest: cut: %v", err)
	}
}

// Restore lets the clients connect again.
func (c *Cut) Restore() {
	if c.proxy != nil {
		c.proxy.Restore()
		return
	}
	if err := c.each(func(ctx context.Context, n *redis.Client) error {
		return n.Do(ctx, "ACL", "SETUSER", c.user, "on").Err()
	}); err != nil {
		c.t.Errorf("redistest: restore: %v", err)
	}
}
