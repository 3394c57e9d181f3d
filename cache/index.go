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
	vec        []float32 // the vector until put copies it into the namespace matrix; nil when the embedder failed
	created    time.Time
	expires    time.Time // zero: never
	hits       int64
	size       int64
	lru        *list.Element
	row        int // index of vec in its namespace's matrix, -1 if none
}

// expired reports whether e is past its TTL at now.
func (e *entry) expired(now time.Time) bool {
	return !e.expires.IsZero() && !now.Before(e.expires)
}

// store is the cache index behind Cache. The in-memory memStore is the
// only implementation today; a Redis-backed one (vectors as little-endian
// float32, see EncodeVector) can slot in behind the same methods.
// Callers hold the Cache lock: implementations need no locking of their own.
type store interface {
	// get returns the entry with exact key id.
	get(id string) (*entry, bool)
	// put inserts e, replacing an entry with the same id (returned).
	put(e *entry) (replaced *entry)
	// remove deletes the entry with key id and returns it.
	remove(id string) (*entry, bool)
	// scan calls fn for every entry of namespace nsKey that has a vector,
	// with that vector, until fn returns false. When facetKey is not nil,
	// only entries with exactly those facets are visited.
	scan(nsKey string, facetKey *string, fn func(e *entry, vec []float32) bool)
	// namespace returns every entry of namespace nsKey.
	namespace(nsKey string) []*entry
	// oldest returns the least recently used entry.
	oldest() (*entry, bool)
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

// nsIndex holds the vectors of one namespace in one contiguous matrix, so
// that a semantic scan streams through memory: row r is
// vecs[r*dim : (r+1)*dim], owned by rows[r].
type nsIndex struct {
	dim     int
	vecs    []float32
	rows    []*entry
	buckets map[string][]int // facetKey -> rows with those facets
	entries map[string]*entry
	bytes   int64
}

// memStore is the in-memory store.
type memStore struct {
	byID  map[string]*entry
	ns    map[string]*nsIndex
	lru   *list.List // front: most recently used
	total int64
}

func newMemStore() *memStore {
	return &memStore{byID: map[string]*entry{}, ns: map[string]*nsIndex{}, lru: list.New()}
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
	ix := s.ns[e.nsKey]
	if ix == nil {
		ix = &nsIndex{buckets: map[string][]int{}, entries: map[string]*entry{}}
		s.ns[e.nsKey] = ix
	}
	ix.entries[e.id] = e
	ix.bytes += e.size
	e.row = -1
	if e.vec != nil {
		if ix.dim == 0 {
			ix.dim = len(e.vec)
		}
		if len(e.vec) == ix.dim {
			e.row = len(ix.rows)
			ix.rows = append(ix.rows, e)
			ix.vecs = append(ix.vecs, e.vec...)
			e.vec = nil
			ix.buckets[e.facetKey] = append(ix.buckets[e.facetKey], e.row)
		}
	}
	return old
}

func (s *memStore) remove(id string) (*entry, bool) {
	e, ok := s.byID[id]
	if !ok {
		return nil, false
	}
	delete(s.byID, id)
	s.lru.Remove(e.lru)
	s.total -= e.size
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

// dropRow removes e's row by moving the last row into its place.
func (ix *nsIndex) dropRow(e *entry) {
	r, last := e.row, len(ix.rows)-1
	ix.buckets[e.facetKey] = removeInt(ix.buckets[e.facetKey], r)
	if len(ix.buckets[e.facetKey]) == 0 {
		delete(ix.buckets, e.facetKey)
	}
	if r != last {
		m := ix.rows[last]
		copy(ix.vecs[r*ix.dim:(r+1)*ix.dim], ix.vecs[last*ix.dim:(last+1)*ix.dim])
		ix.rows[r] = m
		b := ix.buckets[m.facetKey]
		for i, x := range b {
			if x == last {
				b[i] = r
			}
		}
		m.row = r
	}
	ix.rows = ix.rows[:last]
	ix.vecs = ix.vecs[:last*ix.dim]
	e.row = -1
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

func (s *memStore) scan(nsKey string, facetKey *string, fn func(*entry, []float32) bool) {
	ix := s.ns[nsKey]
	if ix == nil {
		return
	}
	if facetKey != nil {
		for _, r := range ix.buckets[*facetKey] {
			if !fn(ix.rows[r], ix.vecs[r*ix.dim:(r+1)*ix.dim]) {
				return
			}
		}
		return
	}
	for r, e := range ix.rows {
		if !fn(e, ix.vecs[r*ix.dim:(r+1)*ix.dim]) {
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

func (s *memStore) oldest() (*entry, bool) {
	el := s.lru.Back()
	if el == nil {
		return nil, false
	}
	return el.Value.(*entry), true
}

func (s *memStore) touch(e *entry) { s.lru.MoveToFront(e.lru) }

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

// dot returns the dot product of two vectors of equal length: with unit
// vectors, their cosine similarity.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return s0 + s1 + s2 + s3
}
