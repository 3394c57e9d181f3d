package cache

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"
)

// Replica shares cache entries between the instances of a deployment
// (Redis when SLUICE_REDIS_URL is set): what one instance stores, every
// other one can answer from, and a restarted instance starts warm. Each
// instance keeps its own index in memory; the replica carries entries and
// purges between them. Implementations must be safe for concurrent use
// and bound every call by ctx.
type Replica interface {
	// Publish stores e for the other instances and for later starts.
	Publish(ctx context.Context, e SharedEntry) error
	// Purge deletes the shared entries of request namespace name of
	// tenant (every model) and tells the other instances.
	Purge(ctx context.Context, tenant, name string) error
	// Load calls fn with every stored entry that has not expired.
	Load(ctx context.Context, fn func(SharedEntry)) error
	// Updates delivers the entries and purges that other instances
	// publish, until ctx ends; then the channel is closed.
	Updates(ctx context.Context) <-chan Update
}

// SharedEntry is a cache entry as instances exchange it. Vector is the
// embedding as EncodeVector writes it (little-endian float32): a wrong
// byte order would raise no error and silently ruin every score.
type SharedEntry struct {
	ID         string    `json:"id"`
	Tenant     string    `json:"tenant,omitempty"`
	Namespace  string    `json:"namespace"`
	Model      string    `json:"model"`
	Question   string    `json:"question"`
	Normalized string    `json:"normalized"`
	Facets     []string  `json:"facets"`
	Vector     []byte    `json:"vector,omitempty"`
	Chunks     []string  `json:"chunks"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires,omitzero"`
}

// Update is what another instance published: an entry, or a purge.
type Update struct {
	Entry *SharedEntry
	Purge *PurgeRequest
}

// PurgeRequest names the entries a purge drops: request namespace Name of
// Tenant, every model.
type PurgeRequest struct {
	Tenant string `json:"tenant,omitempty"`
	Name   string `json:"name"`
}

// errEntryID reports a shared entry whose id is not its exact key.
var errEntryID = errors.New("cache: shared entry id does not match its namespace and question")

// outboxSize bounds the entries waiting to be published; past it, new
// entries stay local (and are counted in ReplicaStats.Dropped).
const outboxSize = 1024

// ReplicaStats are the counters of the replication of one Cache.
type ReplicaStats struct {
	Published int64 `json:"published"` // entries written to the replica
	Received  int64 `json:"received"`  // entries taken from it (start and updates)
	Dropped   int64 `json:"dropped"`   // entries not published: outbox full or write failed
}

// Replicate shares this cache through r until ctx ends: it subscribes to
// what other instances publish, then (in the background) loads the
// entries r holds, takes in the others' entries and purges, and publishes
// what Store adds here. Call it once, before the cache serves; wait
// returns when the background work has stopped after ctx ended.
func (c *Cache) Replicate(ctx context.Context, r Replica) (wait func()) {
	updates := r.Updates(ctx) // before the outbox: nothing stored meanwhile is missed
	c.mu.Lock()
	c.replica = r
	c.outbox = make(chan SharedEntry, outboxSize)
	out := c.outbox
	c.mu.Unlock()

	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the other instances' entries and purges
		defer wg.Done()
		for u := range updates {
			switch {
			case u.Entry != nil:
				c.take(*u.Entry)
			case u.Purge != nil:
				c.purgeLocal(u.Purge.Tenant, u.Purge.Name)
			}
		}
	}()
	go func() { // the warm start, then this instance's entries
		defer wg.Done()
		defer func() {
			c.mu.Lock()
			c.replica, c.outbox = nil, nil
			c.mu.Unlock()
		}()
		lctx, cancel := context.WithTimeout(ctx, replicaLoadTimeout)
		if err := r.Load(lctx, c.take); err != nil && ctx.Err() == nil {
			c.cfg.OnReplicaError("load", err)
		}
		cancel()
		for {
			select {
			case <-ctx.Done():
				return
			case e := <-out:
				wctx, cancel := context.WithTimeout(ctx, replicaWriteTimeout)
				err := r.Publish(wctx, e)
				cancel()
				c.mu.Lock()
				if err != nil {
					c.replStats.Dropped++
				} else {
					c.replStats.Published++
				}
				c.mu.Unlock()
				if err != nil && ctx.Err() == nil {
					c.cfg.OnReplicaError("publish", err)
				}
			}
		}
	}()
	return wg.Wait
}

// Timing of replication; variables so that tests can change them.
var (
	replicaLoadTimeout  = time.Minute
	replicaWriteTimeout = 2 * time.Second
)

// ReplicaStats returns the replication counters.
func (c *Cache) ReplicaStats() ReplicaStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.replStats
}

// shared returns e as it is published. It needs e's vector, so it must
// run before e is put in the index (which takes the vector over).
func (e *entry) shared() SharedEntry {
	se := SharedEntry{
		ID: e.id, Tenant: e.ns.Tenant, Namespace: e.ns.Namespace, Model: e.ns.Model,
		Question: e.question, Normalized: e.normalized, Facets: e.facets,
		Chunks: e.answer.Chunks, Created: e.created, Expires: e.expires,
	}
	if e.vec.dim > 0 {
		se.Vector = EncodeVector(e.vec.dense())
	}
	return se
}

// publish queues se for the replica without ever waiting. c.mu must be
// held and c.outbox set.
func (c *Cache) publish(se SharedEntry) {
	select {
	case c.outbox <- se:
	default:
		c.replStats.Dropped++
	}
}

// take adds an entry that another instance stored (or that the replica
// held at start). An entry that has expired, or that this cache already
// holds as new or newer, is ignored.
func (c *Cache) take(se SharedEntry) {
	now := c.cfg.Now()
	if !se.Expires.IsZero() && !now.Before(se.Expires) {
		return
	}
	vec, err := DecodeVector(se.Vector)
	if err != nil {
		c.cfg.OnReplicaError("decode", err)
		vec = nil // the exact tier still serves it
	}
	ns := Namespace{Tenant: se.Tenant, Namespace: se.Namespace, Model: se.Model}
	if ExactKey(ns, se.Normalized) != se.ID {
		c.cfg.OnReplicaError("decode", errEntryID)
		return
	}
	e := &entry{
		id: se.ID, ns: ns, nsKey: ns.String(), question: se.Question, normalized: se.Normalized,
		facets: se.Facets, facetKey: strings.Join(se.Facets, "\x1f"),
		answer: cloneAnswer(Answer{Chunks: se.Chunks}), vec: newVector(vec, !c.denseOnly),
		created: se.Created, expires: se.Expires,
	}
	e.size = entrySize(e)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replStats.Received++
	if old, ok := c.st.get(e.id); ok && !old.created.Before(e.created) {
		return
	}
	c.insert(e, now)
}
