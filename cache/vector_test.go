package cache

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// randomVector returns a unit vector of dimension dim with about nnz
// nonzeros (all of them if nnz >= dim).
func randomVector(r *rand.Rand, dim, nnz int) []float32 {
	v := make([]float32, dim)
	if nnz >= dim {
		for i := range v {
			v[i] = float32(r.NormFloat64())
		}
	} else {
		for range nnz {
			v[r.IntN(dim)] = float32(r.NormFloat64())
		}
	}
	normalizeL2(v)
	return v
}

func TestNewVector(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct {
		dim, nnz int
		sparse   bool
	}{
		{1024, 20, true}, {1024, 256, true}, {1024, 600, false}, {768, 768, false},
		{1536, 40, true}, {7, 1, true}, {7, 2, false}, {1 << 17, 10, false},
	} {
		v := randomVector(r, tc.dim, tc.nnz)
		nnz := 0
		for _, x := range v {
			if x != 0 {
				nnz++
			}
		}
		wantSparse := nnz*4 <= tc.dim && tc.dim <= maxSparseDim
		s := newVector(v, true)
		if s.sparse != wantSparse || (tc.nnz < tc.dim/4 && s.sparse != tc.sparse) {
			t.Errorf("dim %d nnz %d: sparse = %v", tc.dim, nnz, s.sparse)
		}
		want := int64(4 * tc.dim)
		if s.sparse {
			want = int64(6 * nnz)
			for i := 1; i < len(s.idx); i++ {
				if s.idx[i] <= s.idx[i-1] {
					t.Fatalf("dim %d: indices not ascending", tc.dim)
				}
			}
		}
		if s.bytes() != want {
			t.Errorf("dim %d nnz %d: bytes = %d, want %d", tc.dim, nnz, s.bytes(), want)
		}
		if !reflect.DeepEqual(s.dense(), v) {
			t.Errorf("dim %d nnz %d: dense() differs from the input", tc.dim, nnz)
		}
		if d, err := DecodeVector(EncodeVector(s.dense())); err != nil || !reflect.DeepEqual(d, v) {
			t.Errorf("dim %d: EncodeVector round trip failed: %v", tc.dim, err)
		}
		if d := newVector(v, false); d.sparse || d.bytes() != int64(4*tc.dim) {
			t.Errorf("dim %d: newVector(v, false) is not dense", tc.dim)
		}
	}
	if v := newVector(nil, true); v.dim != 0 || v.bytes() != 0 {
		t.Errorf("newVector(nil) = %+v", v)
	}
}

// TestSparseDot compares sparse scoring with the dense reference dot for
// random sparse and dense vectors: within 1e-5, and in fact bit for bit.
func TestSparseDot(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, dim := range []int{1, 3, 4, 7, 64, 768, 1000, 1023, 1024, 1536} {
		for range 200 {
			q := randomVector(r, dim, dim)
			if r.IntN(3) == 0 {
				q = randomVector(r, dim, 1+r.IntN(max(1, dim/4)))
			}
			v := randomVector(r, dim, 1+r.IntN(max(1, dim/4)))
			s := newVector(v, true)
			ref := dot(q, v)
			var got float32
			if s.sparse {
				got = sparseDot(q, s.idx, s.val)
			} else {
				got = dot(q, s.val)
			}
			var exact float64
			for i := range q {
				exact += float64(q[i]) * float64(v[i])
			}
			if math.Abs(float64(got)-exact) > 1e-5 || math.Abs(float64(ref)-exact) > 1e-5 {
				t.Fatalf("dim %d: sparse %v, dense %v, float64 %v", dim, got, ref, exact)
			}
			if math.Float32bits(got) != math.Float32bits(ref) {
				t.Fatalf("dim %d: sparse %v != dense %v bit for bit", dim, got, ref)
			}
		}
	}
}

// TestStoreScanScores fills a memStore with sparse and dense rows, removes
// many (moving rows and compacting the arenas) and checks that scan visits
// exactly the live rows, with the reference scores, bucket by bucket.
func TestStoreScanScores(t *testing.T) {
	const dim = 128
	r := rand.New(rand.NewPCG(5, 6))
	s := newMemStore()
	ref := map[string][]float32{}
	facets := []string{"", "a", "b\x1fc"}
	appended := 0 // sparse elements ever put
	for i := range 3000 {
		nnz := 1 + r.IntN(dim/4)
		if i%5 == 0 {
			nnz = dim
		}
		v := randomVector(r, dim, nnz)
		e := &entry{id: fmt.Sprint(r.IntN(2000)), nsKey: "ns", facetKey: facets[r.IntN(len(facets))], vec: newVector(v, true)}
		appended += len(e.vec.idx)
		s.put(e)
		ref[e.id] = v
		if r.IntN(3) == 0 {
			for id := range ref {
				s.remove(id)
				delete(ref, id)
				break
			}
		}
	}
	// a vector of another dimension is kept out of the index
	s.put(&entry{id: "other", nsKey: "ns", vec: newVector(randomVector(r, dim+1, 3), true)})
	if e, _ := s.get("other"); e.row != -1 {
		t.Error("vector of another dimension indexed")
	}
	ix := s.ns["ns"]
	if len(ix.sidx) >= appended {
		t.Errorf("sparse arena never compacted: %d elements, %d appended", len(ix.sidx), appended)
	}
	if live := len(ix.sidx) - ix.sdead; live > 0 && 4*ix.sdead > len(ix.sidx)+4*compactMin {
		t.Errorf("sparse arena: %d dead of %d", ix.sdead, len(ix.sidx))
	}
	for range 20 {
		q := randomVector(r, dim, dim)
		seen := map[string]bool{}
		for _, fk := range append([]*string{nil}, &facets[0], &facets[1], &facets[2]) {
			s.scan("ns", fk, q, func(e *entry, score float32) bool {
				if fk != nil && e.facetKey != *fk {
					t.Fatalf("bucket %q visited an entry with facets %q", *fk, e.facetKey)
				}
				if want := dot(q, ref[e.id]); score != want {
					t.Fatalf("%s: score %v, want %v", e.id, score, want)
				}
				if fk == nil {
					seen[e.id] = true
				}
				return true
			})
		}
		if len(seen) != len(ref) {
			t.Fatalf("scan visited %d entries, want %d", len(seen), len(ref))
		}
	}
	s.scan("ns", nil, make([]float32, dim+1), func(*entry, float32) bool {
		t.Fatal("scan with a query of another dimension visited a row")
		return false
	})
}

// TestSparseMatchesDensePath checks that a cache storing the builtin
// embedder's vectors sparsely decides exactly like one forced to store
// them densely: same decisions, kinds, scores, candidates and reasons,
// while charging far fewer bytes.
func TestSparseMatchesDensePath(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	cfg := Config{MaxEntries: 700, Now: func() time.Time { return now }}
	sparse, dense := New(cfg), New(cfg)
	dense.denseOnly = true
	ns := Namespace{Namespace: "n", Model: "m"}
	words := []string{"kafka", "postgres", "nginx", "grpc", "tls", "docker", "vault", "helm", "etcd", "minio"}
	r := rand.New(rand.NewPCG(7, 8))
	w := func() string { return words[r.IntN(len(words))] }
	var qs []string
	for i := range 1000 {
		var q string
		switch i % 4 {
		case 0:
			q = fmt.Sprintf("How many units of SKU-%03d are left in zone %c?", r.IntN(50), 'A'+r.IntN(3))
		case 1:
			q = fmt.Sprintf("帮我查一下 %c 区还有多少件 SKU-%03d", 'A'+r.IntN(3), r.IntN(50))
		case 2:
			q = fmt.Sprintf("How do I configure %s with %s and %s?", w(), w(), w())
		default:
			q = fmt.Sprintf("Why does %s fail when %s restarts?", w(), w())
		}
		qs = append(qs, q)
		sparse.Store(ctx, ns, q, sparse.Generation(ns), Answer{Chunks: []string{q}})
		dense.Store(ctx, ns, q, dense.Generation(ns), Answer{Chunks: []string{q}})
	}
	for i := range 300 {
		q := qs[r.IntN(len(qs))]
		switch i % 3 {
		case 0:
			q = "please tell me: " + q
		case 1:
			q = strings.ToUpper(q) + " thanks"
		}
		xs, xd := sparse.Explain(ctx, ns, q), dense.Explain(ctx, ns, q)
		if !reflect.DeepEqual(xs, xd) {
			t.Fatalf("%q: Explain differs:\nsparse %+v\ndense  %+v", q, xs, xd)
		}
		rs, rd := sparse.Lookup(ctx, ns, q), dense.Lookup(ctx, ns, q)
		if !reflect.DeepEqual(rs, rd) {
			t.Fatalf("%q: Lookup differs: sparse %+v, dense %+v", q, rs, rd)
		}
	}
	ss, sd := sparse.Stats()[0], dense.Stats()[0]
	if ss.Entries != sd.Entries || ss.Bytes*4 > sd.Bytes {
		t.Errorf("sparse %d entries / %d bytes, dense %d entries / %d bytes", ss.Entries, ss.Bytes, sd.Entries, sd.Bytes)
	}
	t.Logf("bytes per entry: sparse %d, dense %d", ss.Bytes/int64(ss.Entries), sd.Bytes/int64(sd.Entries))
}
