package cache

import (
	"container/list"
	"time"
)

// entry is one cached answer.
type entry struct {
	id         string // the exact key: hex SHA-256(namespace 0x00 normalized)
	ns         Namespace
	nsKey      string // ns.String()
	question   string // as first asked
	normalized string
	facets     []string
	facetKey   string // facets joined by 0x1f: the semantic bucket
	answer     Answer
	vec        vector // the vector until put copies it into the namespace arenas; zero when the embedder failed
	created    time.Time
	expires    time.Time // zero: never
	gen        uint64    // the generation of its scope it was made under
	hits       int64
	size       int64
	lru        *list.Element
	tlru       *list.Element // in its tenant's share
	row        int           // index of vec in its namespace's rows, -1 if none
}

// expired reports whether e is past its TTL at now.
func (e *entry) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}

// store is the cache index behind Cache. The in-memory memStore is the
// only implementation today; a Redis-backed one (vectors as little-endian
// float32, see EncodeVector and vector.dense) can slot in behind the same
// methods. The store scores candidates itself, so that it may keep vectors
// in whatever form it scans fastest.
// Callers hold the Cache lock: implementations need no locking of their own.
type store interface {
	// get returns the entry with exact key id.
	get(id string) (*entry, bool)
	// put inserts e, replacing an entry with the same id (returned).
	put(e *entry) (replaced *entry)
	// remove deletes the entry with key id and returns it.
	remove(id string) (*entry, bool)
	// scan calls fn for every entry of namespace nsKey that has a vector
	// of q's dimension, with the dot product of q and that vector (float32
	// sums in the order of dot, so every store scores alike), until fn
	// returns false. When facetKey is not nil, only entries with exactly
	// those facets are visited.
	scan(nsKey string, facetKey *string, q []float32, fn func(e *entry, score float32) bool)
	// namespace returns every entry of namespace nsKey.
	namespace(nsKey string) []*entry
	// namespaces calls fn for every namespace that has entries.
	namespaces(fn func(nsKey string, ns Namespace))
	// oldest returns the least recently used entry.
	oldest() (*entry, bool)
	// largestTenant returns the least recently used entry of the tenant
	// holding the most entries (byCount) or bytes.
	largestTenant(byCount bool) (*entry, bool)
	// touch marks e as just used.
	touch(e *entry)
	// all returns every entry.
	all() []*entry
	// count and bytes return the total entries and bytes.
	count() int
	bytes() int64
	// nsCount returns the entries and bytes of namespace nsKey.
	nsCount(nsKey string) (int, int64)
}

// nsIndex holds the vectors of one namespace in contiguous arenas, so that
// a semantic scan streams through memory. Row r, owned by rows[r].e, is
// sparse (its nonzeros are sidx and sval [off, off+n)) or dense (dim
// elements of dval from off; n is -1). Rows are numbered densely: removing
// one moves the last row descriptor into its place, so scan order is
// insertion order up to those moves. A removed dense row's slot is filled
// by the last dense slot (one row copied, as before sparse rows existed).
// Sparse rows vary in length, so a removed one leaves dead space, and the
// sparse arena is compacted once dead space exceeds a quarter of it: it
// stays within 4/3 of the live nonzeros (plus compactMin) at an amortized
// O(1) copy per removed element.
//
// There is no inverted index (feature -> rows): skipping the rows that
// share no feature with the query would be exact (they score 0), but with
// real questions nearly every row shares some common feature (a question
// form, a frequent concept, or a hash collision among 1024 buckets): in
// BenchmarkSemanticScanAll every one of 100k rows does, so the prefilter
// skips nothing, while it costs memory and upkeep on every put and remove.
type nsIndex struct {
	dim     int
	rows    []row
	sidx    []uint16         // sparse rows' indices
	sval    []float32        // sparse rows' values
	sdead   int              // dead elements of sidx and sval
	dval    []float32        // dense rows, slot k at k*dim, no gaps
	dslot   []int            // dense slot -> row
	buckets map[string][]int // facetKey -> rows with those facets
	entries map[string]*entry
	bytes   int64
}

// row locates one stored vector in its namespace's arenas.
type row struct {
	e   *entry
	off int
	n   int // nonzeros of a sparse row; -1 for a dense row
}

// compactMin is the arena length below which dead space is not reclaimed.
const compactMin = 4096

// memStore is the in-memory store.
type memStore struct {
	byID  map[string]*entry
	ns    map[string]*nsIndex
	lru   *list.List // front: most recently used
	total int64
	// tenants are each tenant's entries: few (one per API key).
	tenants map[string]*tenantShare
}

// tenantShare is one tenant's entries, most recently used first.
type tenantShare struct {
	lru   list.List
	bytes int64
}

func newMemStore() *memStore {
	return &memStore{byID: map[string]*entry{}, ns: map[string]*nsIndex{}, lru: list.New(), tenants: map[string]*tenantShare{}}
}

var _ store = (*memStore)(nil)

func (s *memStore) get(id string) (*entry, bool) {
	e, ok := s.byID[id]
	return e, ok
}

func (s *memStore) put(e *entry) *entry {
	old, _ := s.remove(e.id)
	s.byID[e.id] = e
	e.lru = s.lru.PushFront(e)
	s.total += e.size
	share := s.tenants[e.ns.Tenant]
	if share == nil {
		share = &tenantShare{}
		s.tenants[e.ns.Tenant] = share
	}
	e.tlru = share.lru.PushFront(e)
	share.bytes += e.size
	ix := s.ns[e.nsKey]
	if ix == nil {
		ix = &nsIndex{buckets: map[string][]int{}, entries: map[string]*entry{}}
		s.ns[e.nsKey] = ix
	}
	ix.entries[e.id] = e
	ix.bytes += e.size
	e.row = -1
	if e.vec.dim != 0 {
		if ix.dim == 0 {
			ix.dim = e.vec.dim
		}
		if e.vec.dim == ix.dim {
			ix.addRow(e)
		}
	}
	return old
}

// addRow appends e's vector to the arenas and releases e.vec.
func (ix *nsIndex) addRow(e *entry) {
	e.row = len(ix.rows)
	if e.vec.sparse {
		ix.rows = append(ix.rows, row{e: e, off: len(ix.sidx), n: len(e.vec.idx)})
		ix.sidx = append(ix.sidx, e.vec.idx...)
		ix.sval = append(ix.sval, e.vec.val...)
	} else {
		ix.rows = append(ix.rows, row{e: e, off: len(ix.dval), n: -1})
		ix.dval = append(ix.dval, e.vec.val...)
		ix.dslot = append(ix.dslot, e.row)
	}
	e.vec = vector{}
	ix.buckets[e.facetKey] = append(ix.buckets[e.facetKey], e.row)
}

func (s *memStore) remove(id string) (*entry, bool) {
	e, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	delete(s.byID, id)
	s.lru.Remove(e.lru)
	s.total -= e.size
	share := s.tenants[e.ns.Tenant]
	share.lru.Remove(e.tlru)
	share.bytes -= e.size
	if share.lru.Len() == 0 {
		delete(s.tenants, e.ns.Tenant)
	}
	ix := s.ns[e.nsKey]
	delete(ix.entries, id)
	ix.bytes -= e.size
	if e.row >= 0 {
		ix.dropRow(e)
	}
	if len(ix.entries) == 0 {
		delete(s.ns, e.nsKey)
	}
	return e, true
}

// dropRow removes e's row by moving the last row into its place, and
// reclaims its vector's space.
func (ix *nsIndex) dropRow(e *entry) {
	r, last := e.row, len(ix.rows)-1
	ix.buckets[e.facetKey] = removeInt(ix.buckets[e.facetKey], r)
	if len(ix.buckets[e.facetKey]) == 0 {
		delete(ix.buckets, e.facetKey)
	}
	if w := ix.rows[r]; w.n >= 0 {
		ix.sdead += w.n
	} else {
		ix.dropDense(w.off / ix.dim)
	}
	if r != last {
		m := ix.rows[last]
		ix.rows[r] = m
		b := ix.buckets[m.e.facetKey]
		for i, x := range b {
			if x == last {
				b[i] = r
			}
		}
		if m.n < 0 {
			ix.dslot[m.off/ix.dim] = r
		}
		m.e.row = r
	}
	ix.rows[last] = row{}
	ix.rows = ix.rows[:last]
	e.row = -1
	if ix.sdead > compactMin && 4*ix.sdead > len(ix.sidx) {
		ix.compact()
	}
}

// dropDense frees dense slot k by moving the last dense slot into it.
func (ix *nsIndex) dropDense(k int) {
	last := len(ix.dslot) - 1
	if k != last {
		copy(ix.dval[k*ix.dim:(k+1)*ix.dim], ix.dval[last*ix.dim:])
		m := ix.dslot[last]
		ix.dslot[k] = m
		ix.rows[m].off = k * ix.dim
	}
	ix.dslot = ix.dslot[:last]
	ix.dval = ix.dval[:last*ix.dim]
}

// compact copies the live sparse rows into new arenas, in row order.
func (ix *nsIndex) compact() {
	n := len(ix.sidx) - ix.sdead
	sidx, sval := make([]uint16, 0, n+n/8), make([]float32, 0, n+n/8)
	for r := range ix.rows {
		if w := &ix.rows[r]; w.n >= 0 {
			off := len(sidx)
			sidx = append(sidx, ix.sidx[w.off:w.off+w.n]...)
			sval = append(sval, ix.sval[w.off:w.off+w.n]...)
			w.off = off
		}
	}
	ix.sidx, ix.sval, ix.sdead = sidx, sval, 0
}

func removeInt(s []int, v int) []int {
	for i, x := range s {
		if x == v {
			s[i] = s[len(s)-1]
			return s[:len(s)-1]
		}
	}
	return s
}

// score returns the dot product of the query q (len(q) == ix.dim) with
// row r: O(nnz) for a sparse row, O(dim) for a dense one.
func (ix *nsIndex) score(r int, q []float32) float32 {
	w := &ix.rows[r]
	if w.n >= 0 {
		return sparseDot(q, ix.sidx[w.off:w.off+w.n], ix.sval[w.off:w.off+w.n])
	}
	return dot(q, ix.dval[w.off:w.off+ix.dim])
}

func (s *memStore) scan(nsKey string, facetKey *string, q []float32, fn func(*entry, float32) bool) {
	ix := s.ns[nsKey]
	if ix == nil || len(q) != ix.dim {
		return
	}
	if facetKey != nil {
		for _, r := range ix.buckets[*facetKey] {
			if !fn(ix.rows[r].e, ix.score(r, q)) {
				return
			}
		}
		return
	}
	for r := range ix.rows {
		if !fn(ix.rows[r].e, ix.score(r, q)) {
			return
		}
	}
}

func (s *memStore) namespace(nsKey string) []*entry {
	ix := s.ns[nsKey]
	if ix == nil {
		return nil
	}
	out := make([]*entry, 0, len(ix.entries))
	for _, e := range ix.entries {
		out = append(out, e)
	}
	return out
}

func (s *memStore) namespaces(fn func(nsKey string, ns Namespace)) {
	for nsKey, ix := range s.ns {
		for _, e := range ix.entries { // any entry: they share ns
			fn(nsKey, e.ns)
			break
		}
	}
}

func (s *memStore) oldest() (*entry, bool) {
	el := s.lru.Back()
	if el == nil {
		return nil, false
	}
	return el.Value.(*entry), true
}

func (s *memStore) largestTenant(byCount bool) (*entry, bool) {
	var top *tenantShare
	for _, sh := range s.tenants {
		if top == nil || byCount && sh.lru.Len() > top.lru.Len() || !byCount && sh.bytes > top.bytes {
			top = sh
		}
	}
	if top == nil {
		return nil, false
	}
	return top.lru.Back().Value.(*entry), true
}

func (s *memStore) touch(e *entry) {
	s.lru.MoveToFront(e.lru)
	s.tenants[e.ns.Tenant].lru.MoveToFront(e.tlru)
}

func (s *memStore) all() []*entry {
	out := make([]*entry, 0, len(s.byID))
	for _, e := range s.byID {
		out = append(out, e)
	}
	return out
}

func (s *memStore) count() int   { return len(s.byID) }
func (s *memStore) bytes() int64 { return s.total }
func (s *memStore) nsCount(nsKey string) (int, int64) {
	if ix := s.ns[nsKey]; ix != nil {
		return len(ix.entries), ix.bytes
	}
	return 0, 0
}
