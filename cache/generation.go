package cache

// Scope is what a purge drops: one request namespace of one tenant, across
// all models and contexts. Each scope has a generation, 0 until its first
// purge; every purge starts the next one, and an entry made under an older
// generation than its scope's is never served nor stored again.
type Scope struct {
	Tenant    string
	Namespace string // the request namespace; "" is DefaultNamespace
}

// norm returns s with the default request namespace spelled out.
func (s Scope) norm() Scope {
	if s.Namespace == "" {
		s.Namespace = DefaultNamespace
	}
	return s
}

// scope returns the scope of ns.
func (ns Namespace) scope() Scope {
	return Scope{Tenant: ns.Tenant, Namespace: ns.Namespace}.norm()
}

// maxMisses is how many recent misses remember the generation they saw.
// An answer stored after more misses than this came in between falls back
// to its scope's current generation: a purge between its miss and its store
// is then not noticed on this instance (the shared log still refuses it
// when the purge reached the log first).
const maxMisses = 16384

// missLog remembers the generation each recent miss saw, by exact key: a
// ring of keys, oldest overwritten first, and a map from key to the
// generation and the ring slot that holds it. Callers hold the Cache lock.
type missLog struct {
	ring []string
	next int
	gens map[string]missGen
}

type missGen struct {
	gen  uint64
	slot int
}

func newMissLog(n int) missLog {
	return missLog{ring: make([]string, n), gens: make(map[string]missGen, 64)}
}

// add records that a lookup of key missed under generation gen. A key that
// missed again keeps the oldest generation it saw: the answer being made
// may be the first one's.
func (m *missLog) add(key string, gen uint64) {
	if old, ok := m.gens[key]; ok {
		gen = min(gen, old.gen)
		m.ring[old.slot] = ""
	}
	slot := m.next
	m.next = (m.next + 1) % len(m.ring)
	if k := m.ring[slot]; k != "" {
		delete(m.gens, k)
	}
	m.ring[slot] = key
	m.gens[key] = missGen{gen: gen, slot: slot}
}

// take returns and forgets the generation the last miss of key saw.
func (m *missLog) take(key string) (uint64, bool) {
	g, ok := m.gens[key]
	if !ok {
		return 0, false
	}
	delete(m.gens, key)
	m.ring[g.slot] = ""
	return g.gen, true
}

// missGen returns and forgets the generation the last miss of key saw.
// c.mu must be held for writing.
func (c *Cache) missGen(key string) (uint64, bool) { return c.misses.take(key) }

// bumpGen moves scope to generation gen when that is newer than the one
// this instance knows, and drops the entries made under an older one. It
// returns how many entries it dropped. c.mu must be held for writing.
func (c *Cache) bumpGen(scope Scope, gen uint64) int {
	if gen <= c.gens[scope] {
		return 0
	}
	c.gens[scope] = gen
	return c.dropScope(scope, gen)
}
