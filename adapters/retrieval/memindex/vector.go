package memindex

import (
	"math"
	"runtime"
	"sync"
)

// parallelWork is the number of floats (vectors x dimensions) from which a
// search is split across GOMAXPROCS goroutines: about 2,700 vectors of 384
// dimensions, 0.3 ms of scanning on one core. Measured on the 2-core
// machine: at 10k x 384 the split saves a quarter; at 1k x 384 it loses,
// as the second goroutine often waits for a busy core.
const parallelWork = 1 << 20

// Vector returns the k documents whose vectors are most similar to q by
// cosine, best first, ties by document position; Score is the cosine. The
// search is exact: every vector is compared, by GOMAXPROCS goroutines when
// the index is big enough to gain from it. Documents without a vector are
// never returned. Returns nil when k < 1, when len(q) is not the index's
// dimensions, or when q is all zeros or not finite.
func (ix *Index) Vector(q []float32, k int) []Hit {
	rows := ix.Vectors()
	if k < 1 || rows == 0 || len(q) != ix.dims {
		return nil
	}
	norm := norm2(q)
	if !(norm > 0) || math.IsInf(norm, 0) {
		return nil
	}
	k = min(k, rows)
	// Rank by the raw dot product (the stored vectors are unit length) and
	// divide by |q| once at the end.
	sq := sparseOf(q)
	work := ix.dims
	if sq != nil {
		work = len(sq.idx)
	}
	if sq != nil && ix.cols != nil {
		return ix.scanColumns(sq, k, 1/norm)
	}
	workers := min(runtime.GOMAXPROCS(0), rows*work/parallelWork+1)
	if workers < 2 {
		top := newTopK(k, make([]cand, 0, k))
		ix.scan(q, sq, 0, rows, &top)
		return top.hits(1 / norm)
	}
	parts := make([]topK, workers)
	var wg sync.WaitGroup
	per := (rows + workers - 1) / workers
	for w := range workers {
		lo, hi := w*per, min((w+1)*per, rows)
		parts[w] = newTopK(k, make([]cand, 0, k))
		switch {
		case lo >= hi:
		case w == workers-1: // this goroutine takes the last part itself
			ix.scan(q, sq, lo, hi, &parts[w])
		default:
			wg.Go(func() { ix.scan(q, sq, lo, hi, &parts[w]) })
		}
	}
	wg.Wait()
	top := newTopK(k, make([]cand, 0, k))
	for _, p := range parts {
		for _, c := range p.h {
			top.push(c)
		}
	}
	return top.hits(1 / norm)
}

// sparseQuery is a query's nonzero dimensions and their values.
type sparseQuery struct {
	idx []int32
	val []float32
}

// sparseOf returns q's nonzero entries when they are few enough that
// visiting only them beats the dense loop (measured on the 2-core machine:
// a quarter of the dimensions is about break-even), else nil. Queries of
// the embedded hashing embedder touch a few dozen of its 384 dimensions;
// those of neural embedders are dense. The sum skips only zero products,
// so the scores are the dense ones up to rounding.
func sparseOf(q []float32) *sparseQuery {
	nz := 0
	for _, v := range q {
		if v != 0 {
			nz++
		}
	}
	if nz*sparseBreakEven > len(q) {
		return nil
	}
	sq := &sparseQuery{idx: make([]int32, 0, nz), val: make([]float32, 0, nz)}
	for i, v := range q {
		if v != 0 {
			sq.idx = append(sq.idx, int32(i))
			sq.val = append(sq.val, v)
		}
	}
	return sq
}

// sparseBreakEven: a query with at most 1/sparseBreakEven of its entries
// nonzero is scanned sparsely.
const sparseBreakEven = 4

// sparseDot is the dot product of the sparse query with row.
func sparseDot(sq *sparseQuery, row []float32) float32 {
	var s0, s1 float32
	idx, val := sq.idx, sq.val[:len(sq.idx)]
	i := 0
	for ; i+2 <= len(idx); i += 2 {
		s0 += val[i] * row[idx[i]]
		s1 += val[i+1] * row[idx[i+1]]
	}
	if i < len(idx) {
		s0 += val[i] * row[idx[i]]
	}
	return s0 + s1
}

// columnRows is the largest index that keeps its vectors by dimension too
// (Index.cols): 15 MB more at 384 dimensions. A sparse query then costs
// 30 µs instead of 46 over 1,000 rows, 181 µs instead of 397 over 10,000
// (BenchmarkVectorSparse, 48 of 384 dimensions): the row scan gathers its
// few dimensions from every row, the columns are read in order.
const columnRows = 10_000

// scanColumns scores every row against the sparse query one query
// dimension at a time, adding that dimension's column, read in order, to
// the rows' scores; then keeps the best k. mul scales the scores of the
// hits (1/|q|). The sums are the row scan's up to rounding.
func (ix *Index) scanColumns(sq *sparseQuery, k int, mul float64) []Hit {
	rows := ix.Vectors()
	sp, _ := ix.colScores.Get().(*[]float32)
	if sp == nil {
		s := make([]float32, rows)
		sp = &s
	}
	defer ix.colScores.Put(sp)
	scores := (*sp)[:rows]
	clear(scores)
	for j, d := range sq.idx {
		v := sq.val[j]
		col := ix.cols[int(d)*rows : int(d)*rows+rows]
		col = col[:len(scores)] // lets the compiler drop the bounds checks
		r := 0
		for ; r+4 <= len(col); r += 4 {
			s, c := scores[r:r+4:r+4], col[r:r+4:r+4]
			s[0] += v * c[0]
			s[1] += v * c[1]
			s[2] += v * c[2]
			s[3] += v * c[3]
		}
		for ; r < len(col); r++ {
			scores[r] += v * col[r]
		}
	}
	top := newTopK(k, make([]cand, 0, k))
	for r, s := range scores {
		doc := uint32(r)
		if ix.rowDoc != nil {
			doc = ix.rowDoc[r]
		}
		if c := (cand{s, doc}); !top.full() || worse(top.min(), c) {
			top.push(c)
		}
	}
	return top.hits(mul)
}

// scan pushes rows [lo, hi) into top, by the sparse query when there is one.
func (ix *Index) scan(q []float32, sq *sparseQuery, lo, hi int, top *topK) {
	dims := ix.dims
	for r := lo; r < hi; r++ {
		row := ix.vecs[r*dims : (r+1)*dims]
		var s float32
		if sq != nil {
			s = sparseDot(sq, row)
		} else {
			s = dot(q, row)
		}
		doc := uint32(r)
		if ix.rowDoc != nil {
			doc = ix.rowDoc[r]
		}
		if c := (cand{s, doc}); !top.full() || worse(top.min(), c) {
			top.push(c)
		}
	}
}

// dot returns the dot product of a and b[:len(a)]. Four independent
// accumulators let the CPU overlap the additions; the compiler does not
// vectorise, so this is what pure Go gets.
func dot(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		aa, bb := a[i:i+8:i+8], b[i:i+8:i+8]
		s0 += aa[0]*bb[0] + aa[4]*bb[4]
		s1 += aa[1]*bb[1] + aa[5]*bb[5]
		s2 += aa[2]*bb[2] + aa[6]*bb[6]
		s3 += aa[3]*bb[3] + aa[7]*bb[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}
