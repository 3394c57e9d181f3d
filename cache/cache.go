package cache

import (
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"time"
)

// Defaults of Config.
const (
	DefaultThreshold    = 0.92
	DefaultTTL          = 24 * time.Hour
	DefaultMaxEntries   = 100000
	DefaultMaxBytes     = 256 << 20
	DefaultEmbedTimeout = 200 * time.Millisecond
)

// entryOverhead is the bookkeeping charged to every entry on top of its
// question, answer and vector bytes.
const entryOverhead = 256

// setDefaults fills the zero fields of c. Negative MaxEntries, MaxBytes and
// TTL mean "no bound"; a negative EmbedTimeout disables the semantic tier.
func (c *Config) setDefaults() {
	if c.Threshold == 0 {
		c.Threshold = DefaultThreshold
	}
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.MaxEntries == 0 {
		c.MaxEntries = DefaultMaxEntries
	}
	if c.MaxBytes == 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.Embedder == nil {
		c.Embedder = Builtin{}
	}
	if c.EmbedTimeout == 0 {
		c.EmbedTimeout = DefaultEmbedTimeout
	}
	if c.Now == nil {
		c.Now = time.Now
	}
}

// Cache is the namespaced answer cache: an exact tier keyed by ExactKey and
// a semantic tier in which a hit needs cosine >= Threshold and equal Facets,
// within one effective Namespace. All methods are safe for concurrent use.
type Cache struct {
	cfg Config

	mu    sync.RWMutex // protects st and stats
	st    store
	stats map[string]*NamespaceStats

	denseOnly bool // store every vector densely (tests compare both forms)
}

// New returns a Cache configured by cfg; the zero Config works.
func New(cfg Config) *Cache {
	cfg.setDefaults()
	return &Cache{cfg: cfg, st: newMemStore(), stats: map[string]*NamespaceStats{}}
}

// Threshold returns the cosine similarity a semantic hit needs.
func (c *Cache) Threshold() float64 { return c.cfg.Threshold }

// errNoSemantic reports that the semantic tier is disabled.
var errNoSemantic = errors.New("cache: semantic tier disabled")

// embed returns the unit vector of a normalized question, or an error when
// the embedder fails or does not answer within EmbedTimeout. It never waits
// longer than EmbedTimeout: a slow embedder keeps running in its goroutine
// until it returns, but nobody waits for it.
func (c *Cache) embed(ctx context.Context, normalized string) ([]float32, error) {
	if c.cfg.EmbedTimeout < 0 {
		return nil, errNoSemantic
	}
	if _, ok := c.cfg.Embedder.(Builtin); ok {
		return Builtin{}.Embed(ctx, normalized) // in-process and fast
	}
	ctx, cancel := context.WithTimeout(ctx, c.cfg.EmbedTimeout)
	defer cancel()
	type result struct {
		v   []float32
		err error
	}
	ch := make(chan result, 1) // buffered: the goroutine never blocks
	go func() {
		v, err := c.cfg.Embedder.Embed(ctx, normalized)
		ch <- result{v, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return nil, r.err
		}
		if len(r.v) == 0 {
			return nil, errors.New("cache: empty embedding")
		}
		v := append([]float32(nil), r.v...)
		normalizeL2(v)
		return v, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// nsStats returns the counters of nsKey, creating them. c.mu must be held
// for writing.
func (c *Cache) nsStats(ns Namespace, nsKey string) *NamespaceStats {
	s := c.stats[nsKey]
	if s == nil {
		name := ns.Namespace
		if name == "" {
			name = DefaultNamespace
		}
		s = &NamespaceStats{Namespace: nsKey, Tenant: ns.Tenant, Name: name, Model: ns.Model}
		c.stats[nsKey] = s
	}
	return s
}

// Lookup returns the cached answer for question in ns, or a miss. It tries
// the exact tier first, then the semantic tier: the question is embedded
// (within EmbedTimeout; a slow or failing embedder means an exact-only
// miss), and among the live entries of ns with exactly the same facets the
// most similar one is a hit if its cosine is at least Threshold and the
// verification stage accepts it (the three best are tried in turn). It counts
// the hit or miss in the namespace's stats and the entry's hits. Lookup
// never fails: any problem is a miss.
//
// The semantic scan visits only the entries whose facets equal the
// question's (a hash bucket), m <= n entries of the namespace; that
// prefilter is exact, since no other entry could be a hit. Each visited
// entry costs O(k) for a vector stored sparsely with k nonzeros (the
// builtin embedder: k is a few dozen of 1024) and O(d) for one stored
// densely with dimension d (model embedders), so the scan costs
// O(m·k) or O(m·d). Sparse and dense storage give bit-identical scores.
func (c *Cache) Lookup(ctx context.Context, ns Namespace, question string) Result {
	d := c.decide(ctx, ns, question, false)
	nsKey := ns.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.nsStats(ns, nsKey)
	if d.hit == nil {
		s.Misses++
		return Result{Score: d.score}
	}
	// The entry may have gone between the read and this write lock.
	if e, ok := c.st.get(d.hit.id); !ok || e != d.hit {
		s.Misses++
		return Result{}
	}
	if d.kind == "exact" {
		s.HitsExact++
	} else {
		s.HitsSemantic++
	}
	d.hit.hits++
	c.st.touch(d.hit)
	return Result{Hit: true, Kind: d.kind, Score: d.score, Answer: cloneAnswer(d.hit.answer)}
}

func cloneAnswer(a Answer) Answer {
	return Answer{Chunks: append([]string(nil), a.Chunks...)}
}

// Store caches ans as the answer to question in ns. The caller guarantees
// that ans is complete (finish_reason "stop"). The entry id is the exact
// key, so storing the same question again replaces the entry. The vector
// is computed now; if the embedder fails, the entry serves the exact tier
// only. Entries past MaxEntries or MaxBytes are evicted, least recently
// used first; an answer larger than MaxBytes on its own is not stored.
func (c *Cache) Store(ctx context.Context, ns Namespace, question string, ans Answer) {
	norm := Normalize(question)
	nsKey := ns.String()
	facets := facetsOf(analyze(norm))
	vec, _ := c.embed(ctx, norm)
	now := c.cfg.Now()
	e := &entry{
		id:         ExactKey(ns, norm),
		ns:         ns,
		nsKey:      nsKey,
		question:   question,
		normalized: norm,
		facets:     facets,
		facetKey:   strings.Join(facets, "\x1f"),
		answer:     cloneAnswer(ans),
		vec:        newVector(vec, !c.denseOnly),
		created:    now,
	}
	if c.cfg.TTL > 0 {
		e.expires = now.Add(c.cfg.TTL)
	}
	e.size = int64(len(question)+len(norm)) + e.vec.bytes() + entryOverhead
	for _, ch := range ans.Chunks {
		e.size += int64(len(ch)) + 16
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.cfg.MaxBytes > 0 && e.size > c.cfg.MaxBytes {
		return
	}
	c.nsStats(ns, nsKey)
	c.st.put(e)
	c.evict(now)
}

// evict drops expired entries at the LRU tail, then least recently used
// entries until the bounds hold. c.mu must be held for writing.
func (c *Cache) evict(now time.Time) {
	for {
		old, ok := c.st.oldest()
		if !ok {
			return
		}
		over := (c.cfg.MaxEntries > 0 && c.st.count() > c.cfg.MaxEntries) ||
			(c.cfg.MaxBytes > 0 && c.st.bytes() > c.cfg.MaxBytes)
		if !over && !old.expired(now) {
			return
		}
		c.st.remove(old.id)
		if !old.expired(now) {
			c.nsStats(old.ns, old.nsKey).Evictions++
		}
	}
}

// Bypass counts a request of ns that skipped the cache (nocache).
func (c *Cache) Bypass(ns Namespace) {
	nsKey := ns.String()
	c.mu.Lock()
	c.nsStats(ns, nsKey).Bypasses++
	c.mu.Unlock()
}

// Stats returns the counters of every namespace seen, sorted by namespace
// string. Entries and Bytes count live and not yet swept entries.
func (c *Cache) Stats() []NamespaceStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]NamespaceStats, 0, len(c.stats))
	for k, s := range c.stats {
		v := *s
		v.Entries, v.Bytes = c.st.nsCount(k)
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

// Purge drops every entry of request namespace namespace ("" means
// "default") for tenant, across all models, and returns how many it
// dropped. Counters are kept.
func (c *Cache) Purge(tenant, namespace string) int {
	if namespace == "" {
		namespace = DefaultNamespace
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for nsKey, s := range c.stats {
		if s.Tenant != tenant || s.Name != namespace {
			continue
		}
		for _, e := range c.st.namespace(nsKey) {
			c.st.remove(e.id)
			n++
		}
	}
	return n
}
