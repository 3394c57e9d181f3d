package cache

import (
	"container/list"
	"context"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/sluice-dev/sluice/cache/text"
)

// Defaults of Config.
const (
	DefaultThreshold    = 0.92
	DefaultTTL          = 24 * time.Hour
	DefaultMaxEntries   = 100000
	DefaultMaxBytes     = 256 << 20
	DefaultEmbedTimeout = 200 * time.Millisecond
	// DefaultMaxSemanticRunes is the default Config.MaxSemanticRunes.
	DefaultMaxSemanticRunes = 2000
	// DefaultMaxNamespaces is the default Config.MaxNamespaces.
	DefaultMaxNamespaces = 10000
	// DefaultReadings is the default Config.Readings.
	DefaultReadings = 1024
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
	if c.MaxSemanticRunes == 0 {
		c.MaxSemanticRunes = DefaultMaxSemanticRunes
	}
	if c.MaxNamespaces == 0 {
		c.MaxNamespaces = DefaultMaxNamespaces
	}
	if c.Readings == 0 {
		c.Readings = DefaultReadings
	}
}

// Cache is the namespaced answer cache: an exact tier keyed by ExactKey and
// a semantic tier in which a hit needs cosine >= Threshold and equal Facets,
// within one effective Namespace. All methods are safe for concurrent use.
type Cache struct {
	cfg Config

	mu       sync.RWMutex // protects st, stats and statsLRU
	st       store
	stats    map[string]*nsCounters
	statsLRU *list.List     // of nsKey strings; front: most recently used
	retired  NamespaceStats // the sum of the counters dropped

	// gens is the generation of every scope that was purged (absent: 0),
	// as this instance knows it, under mu. life counts the resets of the
	// shared log's generations (an epoch change, see Share): a Generation
	// of an earlier life means generation 0 of the current one. It is
	// written under mu and read without it by the writer goroutine.
	gens  map[Scope]uint64
	life  atomic.Uint64
	share *sharing // the shared change log, nil when not shared; under mu
	// embedDim is the dimension of the vectors the embedder returned
	// (0: none yet): a vector of another instance is taken only when it
	// has the same one.
	embedDim atomic.Int64

	// readings are the readings of recently verified candidates (nil
	// when Config.Readings is negative); safe for concurrent use.
	readings *lru.Cache[readingKey, *storedReading]

	denseOnly bool // store every vector densely (tests compare both forms)
}

// New returns a Cache configured by cfg; the zero Config works.
func New(cfg Config) *Cache {
	cfg.setDefaults()
	c := &Cache{cfg: cfg, st: newMemStore(), stats: map[string]*nsCounters{}, statsLRU: list.New(),
		gens: map[Scope]uint64{}}
	if cfg.Readings > 0 {
		c.readings, _ = lru.New[readingKey, *storedReading](cfg.Readings) // errs only on a size <= 0
	}
	return c
}

// Threshold returns the cosine similarity a semantic hit needs.
func (c *Cache) Threshold() float64 { return c.cfg.Threshold }

// errNoSemantic reports that the semantic tier is disabled.
var errNoSemantic = errors.New("cache: semantic tier disabled")

// errNoFeatures reports that a question has nothing the semantic tier can
// compare: neither content nor facets are left once normalization and stop
// words are taken out ("???", "the", "🔥🔥"). Such questions are all alike to an embedding, so they would all
// match each other: they use the exact tier only.
var errNoFeatures = errors.New("cache: the question has no features to compare")

// errZeroVector reports that the embedder returned the zero vector (or one
// that cannot be normalized): it is similar to nothing, like errNoFeatures.
var errZeroVector = errors.New("cache: the embedder returned a zero vector")

// embed returns the unit vector of a normalized question read as r, or an error when
// the question has no features (errNoFeatures), the embedder fails or does
// not answer within EmbedTimeout. It never waits longer than EmbedTimeout:
// a slow embedder keeps running in its goroutine until it returns, but
// nobody waits for it. A question without content is not sent to the
// embedder, whichever it is.
func (c *Cache) embed(ctx context.Context, normalized string, r reading) ([]float32, error) {
	if c.cfg.EmbedTimeout < 0 {
		return nil, errNoSemantic
	}
	if !r.comparable() {
		return nil, errNoFeatures
	}
	if isBuiltin(c.cfg.Embedder) {
		if c.embedDim.Load() == 0 {
			c.embedDim.Store(BuiltinDim)
		}
		// Builtin.Embed of the normalized question, in-process and fast
		// (Normalize is idempotent): the content is analysed once.
		return builtinVector(builtinFeatures(r.content)), nil
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
		c.embedDim.Store(int64(len(v)))
		if !normalizeL2(v) {
			return nil, errZeroVector
		}
		return v, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// tooLong normalizes question and reports whether it is past
// MaxSemanticRunes, so that only the exact tier may serve it.
func (c *Cache) tooLong(question string) (normalized string, long bool) {
	norm := text.Normalize(question)
	max := c.cfg.MaxSemanticRunes
	if max < 0 || len(norm) <= max { // a rune takes at least one byte
		return norm, false
	}
	return norm, utf8.RuneCountInString(norm) > max
}

// nsCounters are the counters of one effective namespace and its place
// in the Cache's statsLRU.
type nsCounters struct {
	NamespaceStats
	el *list.Element
}

// nsStats returns the counters of nsKey, creating them, and marks them
// as just used; creating them past MaxNamespaces drops the least recently
// used namespace's counters. c.mu must be held for writing.
func (c *Cache) nsStats(ns Namespace, nsKey string) *NamespaceStats {
	if s := c.stats[nsKey]; s != nil {
		c.statsLRU.MoveToFront(s.el)
		return &s.NamespaceStats
	}
	name := ns.Namespace
	if name == "" {
		name = DefaultNamespace
	}
	s := &nsCounters{NamespaceStats: NamespaceStats{Namespace: nsKey, Tenant: ns.Tenant, Name: name, Model: ns.Model}}
	s.el = c.statsLRU.PushFront(nsKey)
	c.stats[nsKey] = s
	for c.cfg.MaxNamespaces > 0 && len(c.stats) > c.cfg.MaxNamespaces {
		c.dropStats(c.statsLRU.Back().Value.(string))
	}
	return &s.NamespaceStats
}

// dropStats forgets the counters of nsKey. c.mu must be held for
// writing.
func (c *Cache) dropStats(nsKey string) {
	if s := c.stats[nsKey]; s != nil {
		c.statsLRU.Remove(s.el)
		delete(c.stats, nsKey)
		r := &c.retired
		r.HitsExact += s.HitsExact
		r.HitsSemantic += s.HitsSemantic
		r.Misses += s.Misses
		r.Bypasses += s.Bypasses
		r.Evictions += s.Evictions
	}
}

// Retired returns the sum of the counters that were dropped (past
// MaxNamespaces, or by a purge), so that totals over Stats plus Retired
// never go down. Only its counter fields are set.
func (c *Cache) Retired() NamespaceStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.retired
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
//
// A question longer than MaxSemanticRunes (normalized) is looked up in the
// exact tier only: it is never analysed nor embedded.
//
// The Result carries the generation of the namespace's scope the lookup
// saw (Gen): the answer made for a miss is stored under it, so that it is
// refused when the scope was purged in between (see Store).
func (c *Cache) Lookup(ctx context.Context, ns Namespace, question string) Result {
	d := c.decide(ctx, ns, question, false)
	nsKey := ns.String()
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.nsStats(ns, nsKey)
	gen := c.genOf(ns.scope())
	if d.hit == nil {
		s.Misses++
		return Result{Score: d.score, Gen: gen}
	}
	// The entry may have gone between the read and this write lock.
	if e, ok := c.st.get(d.hit.id); !ok || e != d.hit {
		s.Misses++
		return Result{Gen: gen}
	}
	if d.kind == "exact" {
		s.HitsExact++
	} else {
		s.HitsSemantic++
	}
	d.hit.hits++
	c.st.touch(d.hit)
	chunks := d.hit.answer.Chunks // shared, not copied: see Result.Answer
	return Result{Hit: true, Kind: d.kind, Score: d.score, Answer: Answer{Chunks: chunks[:len(chunks):len(chunks)]}, Gen: gen}
}

func cloneAnswer(a Answer) Answer {
	return Answer{Chunks: append([]string(nil), a.Chunks...)}
}

// Store caches ans as the answer to question in ns. The caller guarantees
// that ans is complete (finish_reason "stop"). The entry id is the exact
// key, so storing the same question again replaces the entry. The vector
// is computed now; if the embedder fails, the entry serves the exact tier
// only, as does a question longer than MaxSemanticRunes (neither analysed
// nor embedded), and one with no content to compare (errNoFeatures). A
// question that normalizes to nothing ("   ", "???") is not stored at all.
// Entries past MaxEntries or MaxBytes are evicted, least
// recently used first; an answer larger than MaxBytes on its own is not
// stored.
//
// An answer computed before a purge of its namespace is not stored after
// it: gen is the generation the lookup of its question saw (Result.Gen, or
// Generation before the answer was computed), and the answer is stored
// only when it is still its scope's current one. Each request carries its
// own, so requests of the same question on both sides of a purge cannot
// take each other's. With a shared change log (Share) the stored entry is
// also appended to the log, for every other instance, with its generation.
func (c *Cache) Store(ctx context.Context, ns Namespace, question string, gen Generation, ans Answer) {
	norm, long := c.tooLong(question)
	if norm == "" {
		return // nothing left to key it on (see decide)
	}
	var vec []float32
	var r reading
	if !long {
		r = readOf(norm)
		vec, _ = c.embed(ctx, norm, r)
	}
	e := c.newEntry(ns, question, norm, r.facets, vec, cloneAnswer(ans), c.cfg.Now())
	c.mu.Lock()
	// gen is refused when it is not the current generation: older (a
	// purge came since), of an earlier life (the log was reset since: its
	// generations mean nothing now), or newer (not this Cache's).
	if gen != c.genOf(ns.scope()) || !c.insertLocked(e, gen.n, e.created) {
		c.mu.Unlock()
		return
	}
	sh := c.share
	c.mu.Unlock()
	if sh != nil {
		sh.queuePut(c, e, vec, gen)
	}
}

// insertLocked stores e, made under generation gen of its scope, and
// evicts what the bounds then require, unless e is larger than MaxBytes on
// its own; it reports whether e was stored. c.mu must be held for writing.
func (c *Cache) insertLocked(e *entry, gen uint64, now time.Time) bool {
	if c.cfg.MaxBytes > 0 && e.size > c.cfg.MaxBytes {
		return false
	}
	e.gen = gen
	c.nsStats(e.ns, e.nsKey)
	c.st.put(e)
	c.evict(now)
	return true
}

// newEntry makes the entry of question in ns from what this instance
// computes itself: the normalized text, the facets (text.Read; nil for a
// long question), the exact key, and the size. vec is the question's unit
// vector or nil.
func (c *Cache) newEntry(ns Namespace, question, norm string, facets []string, vec []float32, ans Answer, created time.Time) *entry {
	e := &entry{
		id:         ExactKey(ns, norm),
		ns:         ns,
		nsKey:      ns.String(),
		question:   question,
		normalized: norm,
		facets:     facets,
		facetKey:   strings.Join(facets, "\x1f"),
		answer:     ans,
		vec:        newVector(vec, !c.denseOnly),
		created:    created,
	}
	if c.cfg.TTL > 0 {
		e.expires = created.Add(c.cfg.TTL)
	}
	e.size = int64(len(question)+len(norm)) + e.vec.bytes() + entryOverhead
	for _, ch := range ans.Chunks {
		e.size += int64(len(ch)) + 16
	}
	return e
}

// evict drops expired entries at the LRU tail, then, until the bounds
// hold, the least recently used entry of the tenant holding the most (with
// one tenant: the least recently used entry), so one tenant's flood of
// entries evicts its own before anyone else's. c.mu must be held for
// writing.
func (c *Cache) evict(now time.Time) {
	for {
		old, ok := c.st.oldest()
		if !ok {
			return
		}
		overEntries := c.cfg.MaxEntries > 0 && c.st.count() > c.cfg.MaxEntries
		overBytes := c.cfg.MaxBytes > 0 && c.st.bytes() > c.cfg.MaxBytes
		if !overEntries && !overBytes && !old.expired(now) {
			return
		}
		if !old.expired(now) {
			old, _ = c.st.largestTenant(overEntries)
		}
		c.st.remove(old.id)
		if s := c.stats[old.nsKey]; s != nil && !old.expired(now) {
			s.Evictions++ // counters dropped past MaxNamespaces are not brought back
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

// Stats returns the counters of every namespace that has them (at most
// MaxNamespaces, the most recently used), sorted by namespace string.
// Entries and Bytes count live and not yet swept entries.
func (c *Cache) Stats() []NamespaceStats {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]NamespaceStats, 0, len(c.stats))
	for k, s := range c.stats {
		v := s.NamespaceStats
		v.Entries, v.Bytes = c.st.nsCount(k)
		out = append(out, v)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace < out[j].Namespace })
	return out
}

// Purge drops every entry of request namespace namespace ("" means
// "default") for tenant, across all models, and their counters, and
// returns how many entries it dropped. It starts a new generation of the
// namespace: an answer whose miss came before the purge is not stored
// after it. With a shared change log (Share) the purge is appended to the
// log, for every other instance.
func (c *Cache) Purge(tenant, namespace string) int {
	scope := Scope{Tenant: tenant, Namespace: namespace}.norm()
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gens[scope]++
	n := c.dropScope(scope, c.gens[scope])
	if c.share != nil {
		// Queued under c.mu: the writer reads the generation and the
		// waiting purges together (see sharing.known).
		c.share.queuePurge(scope)
	}
	return n
}

// dropScope drops the entries of scope made under a generation older than
// below, and the scope's counters, and returns how many entries it
// dropped. c.mu must be held for writing.
func (c *Cache) dropScope(scope Scope, below uint64) int {
	match := func(ns Namespace) bool { return ns.scope() == scope }
	var keys []string
	c.st.namespaces(func(nsKey string, ns Namespace) {
		if match(ns) {
			keys = append(keys, nsKey)
		}
	})
	n := 0
	for _, nsKey := range keys {
		for _, e := range c.st.namespace(nsKey) {
			if e.gen < below {
				c.st.remove(e.id)
				n++
			}
		}
	}
	for nsKey, s := range c.stats {
		if match(Namespace{Tenant: s.Tenant, Namespace: s.Name}) {
			c.dropStats(nsKey)
		}
	}
	return n
}
