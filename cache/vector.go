package cache

// maxSparseDim is the largest dimension a sparse vector can have: its
// indices are uint16.
const maxSparseDim = 1 << 16

// vector is a stored embedding, kept sparse or dense, whichever is
// smaller: sparse (idx, ascending, and val hold the nonzeros) when
// nnz*4 <= dim <= maxSparseDim, so 6 bytes per nonzero never exceed the 4
// bytes per element of the dense form; dense (val holds all dim elements,
// idx is nil) otherwise. The builtin embedder's vectors (a few dozen
// features among 1024 buckets) are sparse; those of model embedders are
// dense. The zero vector{} means "no vector".
type vector struct {
	dim    int
	sparse bool
	idx    []uint16
	val    []float32
}

// newVector returns the stored form of v, sparse if allowed and smaller.
// It copies what it keeps: v may be reused. The zero vector is no vector
// (it is similar to nothing, see errZeroVector): the entry is exact-only.
func newVector(v []float32, allowSparse bool) vector {
	nnz := 0
	for _, x := range v {
		if x != 0 {
			nnz++
		}
	}
	if nnz == 0 {
		return vector{}
	}
	if !allowSparse || nnz*4 > len(v) || len(v) > maxSparseDim {
		return vector{dim: len(v), val: append([]float32(nil), v...)}
	}
	out := vector{dim: len(v), sparse: true, idx: make([]uint16, 0, nnz), val: make([]float32, 0, nnz)}
	for i, x := range v {
		if x != 0 {
			out.idx = append(out.idx, uint16(i))
			out.val = append(out.val, x)
		}
	}
	return out
}

// bytes returns the size of the stored form: 6 bytes per nonzero if
// sparse, 4 per element if dense.
func (v vector) bytes() int64 {
	if v.sparse {
		return int64(6 * len(v.idx))
	}
	return int64(4 * len(v.val))
}

// dense returns v as a dense []float32 of length dim, e.g. for EncodeVector.
func (v vector) dense() []float32 {
	if !v.sparse {
		return append([]float32(nil), v.val...)
	}
	out := make([]float32, v.dim)
	for i, j := range v.idx {
		out[j] = v.val[i]
	}
	return out
}

// sparseDot returns the dot product of the dense query q with the sparse
// row (idx ascending, val), in O(len(idx)). dim is len(q).
//
// It adds the products in the order and into the four partial sums that
// dot uses for the dense form of the row (element i into sum i%4, the
// elements past the last multiple of 4 into sum 0), and the zeros that a
// sparse row skips add nothing exactly, so the result is bit-identical to
// dot(q, row.dense()): storing a vector sparsely never changes a score.
func sparseDot(q []float32, idx []uint16, val []float32) float32 {
	var s [4]float32
	val = val[:len(idx)]
	tail := len(q) &^ 3 // the elements dot adds into s[0] after its loop
	if tail == len(q) {
		for i, j := range idx {
			s[j&3] += q[j] * val[i]
		}
	} else {
		for i, j := range idx {
			k := j & 3
			if int(j) >= tail {
				k = 0
			}
			s[k] += q[j] * val[i]
		}
	}
	return s[0] + s[1] + s[2] + s[3]
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
