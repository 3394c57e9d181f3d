package redisstate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/orchestrator/redisstate"
)

// TestParseURL: a redis:// URL is one server, a redis+cluster:// URL a
// cluster whose seed nodes are the listed hosts (and addr= options), with
// its credentials, TLS and options; anything else is a clear error.
func TestParseURL(t *testing.T) {
	o, err := redisstate.ParseURL("redis://:pw@10.0.0.1:6380/3?pool_size=7")
	if err != nil || o.IsCluster() || o.Single.Addr != "10.0.0.1:6380" || o.Single.DB != 3 || o.Single.Password != "pw" || o.Single.PoolSize != 7 {
		t.Fatalf("single: %+v %v", o.Single, err)
	}
	o, err = redisstate.ParseURL("redis+cluster://u:p,w@h1:7000,h2:7001, h3:7002/?dial_timeout=3s&addr=h4:7003")
	if err != nil || !o.IsCluster() {
		t.Fatalf("cluster: %+v %v", o, err)
	}
	c := o.Cluster
	if want := []string{"h1:7000", "h2:7001", "h3:7002", "h4:7003"}; !slices.Equal(slices.Sorted(slices.Values(c.Addrs)), want) ||
		c.Username != "u" || c.Password != "p,w" || c.DialTimeout.String() != "3s" || c.TLSConfig != nil {
		t.Fatalf("cluster options: addrs %v user %q password %q dial %s", c.Addrs, c.Username, c.Password, c.DialTimeout)
	}
	o, err = redisstate.ParseURL("rediss+cluster://h1:7000")
	if err != nil || o.Cluster.TLSConfig == nil || !slices.Equal(o.Addrs(), []string{"h1:7000"}) {
		t.Fatalf("TLS cluster: %+v %v", o, err)
	}
	for _, bad := range []string{"", "h1:7000", "http://h1:7000", "redis+cluster://", "redis+cluster://h1:7000/2",
		"redis+cluster://h1:7000?no_such_option=1", "redis://h1:7000/x"} {
		if _, err := redisstate.ParseURL(bad); err == nil || !strings.HasPrefix(err.Error(), "redis URL") {
			t.Errorf("ParseURL(%q): %v, want an error", bad, err)
		}
	}
}

// TestValidPrefix: braces would become the hash tag of every key.
func TestValidPrefix(t *testing.T) {
	if err := redisstate.ValidPrefix("sluice:prod:"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"sluice:{prod}:", "a{", "}"} {
		if redisstate.ValidPrefix(bad) == nil {
			t.Errorf("ValidPrefix(%q) accepted", bad)
		}
	}
}
