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

// Generation is the generation of a scope that a Lookup saw, for the
// Store of the answer made after it (Result.Gen). It is opaque: a
// generation of this Cache in one life of its shared log (a reset of the
// log starts another life, see Share). The zero value is generation 0 of
// the first life: an answer stored under it is refused once the scope was
// purged.
type Generation struct {
	life uint64 // Cache.life when it was read
	n    uint64 // the scope's generation
}

// Generation returns the current generation of ns's scope, for an answer
// computed from now on (Lookup returns it too, in Result.Gen).
func (c *Cache) Generation(ns Namespace) Generation {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.genOf(ns.scope())
}

// genOf returns the current generation of scope. c.mu must be held.
func (c *Cache) genOf(scope Scope) Generation {
	return Generation{life: c.life.Load(), n: c.gens[scope]}
}

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
