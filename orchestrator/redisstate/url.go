package redisstate

import (
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Options is a parsed Redis URL (SLUICE_REDIS_URL): exactly one of
// Single (a redis:// or rediss:// URL: one server) and Cluster (a
// redis+cluster:// or rediss+cluster:// URL: a Redis Cluster) is set.
type Options struct {
	Single  *redis.Options
	Cluster *redis.ClusterOptions
}

// ParseURL parses the URL of the shared state's Redis:
//
//	redis://[user:password@]host:port[/db][?option=value...]      one server
//	rediss://...                                                   the same over TLS
//	redis+cluster://[user:password@]host1:port1,host2:port2[,...][?option=value...]
//	rediss+cluster://...                                           a cluster over TLS
//
// A cluster URL names one or more of the cluster's nodes (the seeds: the
// client discovers the others, and follows failovers and resharding);
// more may be given as addr=host:port options, as go-redis's
// ParseClusterURL takes them. A cluster has no database number. The
// options are go-redis's (e.g. dial_timeout=3s, pool_size=100).
func ParseURL(raw string) (Options, error) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return Options{}, errors.New("redis URL: want redis://host:port/db or redis+cluster://host1:port1,host2:port2")
	}
	switch scheme {
	case "redis", "rediss":
		o, err := redis.ParseURL(raw)
		if err != nil {
			return Options{}, fmt.Errorf("redis URL: %w", err)
		}
		return Options{Single: o}, nil
	case "redis+cluster", "rediss+cluster":
	default:
		return Options{}, fmt.Errorf("redis URL: scheme %q: want redis, rediss, redis+cluster or rediss+cluster", scheme)
	}
	// Turn "host1:p1,host2:p2/?q" into go-redis's cluster form
	// "host1:p1?q&addr=host2:p2".
	authority, tail := rest, ""
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		authority, tail = rest[:i], rest[i:]
	}
	userinfo := ""
	if i := strings.LastIndex(authority, "@"); i >= 0 {
		userinfo, authority = authority[:i+1], authority[i+1:]
	}
	path, query, _ := strings.Cut(tail, "?")
	if path != "" && path != "/" && path != "/0" {
		return Options{}, fmt.Errorf("redis URL: a cluster has no database (%q): drop the path", path)
	}
	var addrs []string
	for a := range strings.SplitSeq(authority, ",") {
		if a = strings.TrimSpace(a); a != "" {
			addrs = append(addrs, a)
		}
	}
	if len(addrs) == 0 {
		return Options{}, errors.New("redis URL: a cluster URL names at least one node (redis+cluster://host1:port1,host2:port2)")
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return Options{}, fmt.Errorf("redis URL: options: %w", err)
	}
	for _, a := range addrs[1:] {
		q.Add("addr", a)
	}
	form := strings.TrimSuffix(scheme, "+cluster") + "://" + userinfo + addrs[0]
	if len(q) > 0 {
		form += "?" + q.Encode()
	}
	o, err := redis.ParseClusterURL(form)
	if err != nil {
		return Options{}, fmt.Errorf("redis URL: %w", err)
	}
	return Options{Cluster: o}, nil
}

// IsCluster reports whether o names a Redis Cluster.
func (o Options) IsCluster() bool { return o.Cluster != nil }

// Addrs returns the addresses o names: the server, or the cluster's seed
// nodes.
func (o Options) Addrs() []string {
	if o.Cluster != nil {
		return o.Cluster.Addrs
	}
	return []string{o.Single.Addr}
}

// NewClient returns a client for o: a *redis.ClusterClient for a cluster,
// a *redis.Client for one server.
func (o Options) NewClient() redis.UniversalClient {
	if o.Cluster != nil {
		return redis.NewClusterClient(o.Cluster)
	}
	return redis.NewClient(o.Single)
}
