// Package memindex is an in-process search index over one agent's knowledge
// chunks: BM25F keyword search, exact cosine vector search, reciprocal rank
// fusion of the two, and a byte-bounded LRU cache of indexes with
// single-flight loading.
//
// It does no I/O. An Index is built once from the chunks and is immutable
// afterwards, so any number of goroutines may search it at once. It keeps no
// text: hits name documents by their position in the slice given to Build,
// and the caller keeps the chunks themselves.
package memindex

import (
	"fmt"
	"math"
	"sync"

	"github.com/conciergehq/concierge/core/domain"
)

// Doc is one chunk to index.
type Doc struct {
	// Title is the heading path, document name or Q&A question. Its words
	// count more than the body's (a BM25F field weight, Params.TitleBoost).
	Title string
	// Text is the body.
	Text string
	// Name is the document's name. It is not searched, but its words
	// join the vocabulary: the reranker reads the name of every
	// candidate, and a word the texts never use would otherwise go
	// through the stemmer each time.
	Name string
	// Vector is the chunk's embedding, of the index's dimensions, or nil when
	// the chunk has none. It should be L2-normalised; Build normalises it
	// again so scores are true cosines either way. An all-zero vector counts
	// as none.
	Vector []float32
}

// Hit is one search result.
type Hit struct {
	// Doc is the document's position in the slice given to Build.
	Doc int
	// Score is the BM25F score (keyword) or the cosine similarity (vector).
	Score float64
}

// Params tune keyword scoring.
type Params struct {
	// K1 is BM25's term-frequency saturation (>= 0).
	K1 float64
	// B is BM25's length normalisation, from 0 (none) to 1 (full), applied
	// to each field against that field's average length.
	B float64
	// TitleBoost weighs a title occurrence against a body one (>= 0).
	TitleBoost float64
}

// DefaultParams are the classic BM25 constants with titles weighing double.
func DefaultParams() Params { return Params{K1: 1.2, B: 0.75, TitleBoost: 2} }

// Index is an immutable search index over a slice of documents. Build makes
// it; its methods are safe for concurrent use.
type Index struct {
	n    int
	dims int
	k1   float32

	// Keyword part. Postings of term t are post[off[t]:off[t+1]], in
	// increasing document order, each an unsigned varint of
	// gap<<1|flag where gap is the distance from the previous document of the
	// list (from 0 for the first). flag 0 means "once in the body, not in the
	// title", by far the commonest case; flag 1 is followed by one byte
	// holding the title count (2 bits) and the body count (6 bits), both
	// saturated: BM25 hardly moves past a few occurrences.
	//
	// Term ids follow the stems' byte order: stem t is
	// arena[stemOff[t]:stemOff[t+1]]. words maps every lowercase surface
	// word of the documents and their names to its term, or to noWord for
	// a stopword or a name's word the texts lack, so most words read skip
	// the stemmer, which costs microseconds a word.
	words   map[string]uint32 // keys slice arena, never the callers' texts
	arena   string
	stemOff []uint32
	off     []uint32
	post    []byte
	df      []uint32
	// Per-document field weights, folded with length normalisation:
	// titleW = TitleBoost/(1-B+B*titleLen/avgTitleLen) and likewise bodyW
	// without the boost, so a posting's pseudo-frequency is
	// titleCount*titleW + bodyCount*bodyW (BM25F).
	titleW []float32
	bodyW  []float32

	// Vector part: row r is vecs[r*dims:(r+1)*dims], the unit vector of
	// document rowDoc[r] (or of document r when rowDoc is nil, that is when
	// every document has a vector).
	vecs   []float32
	rowDoc []uint32
	// cols holds the same vectors by dimension, cols[d*rows+r] being
	// vecs[r*dims+d], in an index of at most columnRows rows: a sparse
	// query then reads only its dimensions' columns, each from start to
	// end, instead of a few floats from every row (see scanColumns).
	// colScores are scratch score arrays for it.
	cols      []float32
	colScores sync.Pool // *[]float32

	scratch sync.Pool // *kwScratch
}

// Len returns the number of documents given to Build.
func (ix *Index) Len() int { return ix.n }

// Dims returns the vector dimensions the index was built for.
func (ix *Index) Dims() int { return ix.dims }

// Vectors returns the number of documents that have a vector.
func (ix *Index) Vectors() int {
	if ix.dims == 0 {
		return 0
	}
	return len(ix.vecs) / ix.dims
}

// Terms returns the number of distinct terms in the keyword index.
func (ix *Index) Terms() int { return len(ix.df) }

// mapEntryBytes estimates what one entry of map[string]uint32 costs beyond
// its key's bytes (in the arena): a 24-byte slot plus control bytes, in
// tables kept between 7/16 and 7/8 full. Checked by TestBytesEstimate.
const mapEntryBytes = 40

// Bytes estimates the index's resident size: everything it allocated,
// including one set of per-query scratch buffers. Use it for cache budgets.
func (ix *Index) Bytes() int64 {
	const structBytes = 256
	b := int64(structBytes)
	b += int64(len(ix.words))*mapEntryBytes + int64(len(ix.arena))
	b += int64(len(ix.stemOff)+len(ix.off))*4 + int64(len(ix.post)) + int64(len(ix.df))*4
	b += int64(len(ix.titleW)+len(ix.bodyW)) * 4
	b += int64(len(ix.vecs)+len(ix.rowDoc)+len(ix.cols)) * 4
	if ix.cols != nil {
		b += int64(ix.Vectors()) * 4 // one score scratch
	}
	// One keyword scratch: the accumulator plus, at most, an eighth of the
	// documents in its touched list (see Keyword).
	b += int64(ix.n)*4 + int64(ix.n/8+1)*4
	return b
}

// Build indexes docs with DefaultParams. dims is the length of every
// non-nil Doc.Vector; it may be 0 when no document has one. The index keeps
// neither the texts nor the given vectors: it copies what it needs.
//
// Returns a domain.ValidationError (ErrInvalidInput) when dims is negative
// or a vector has the wrong length or a non-finite value.
func Build(docs []Doc, dims int) (*Index, error) {
	return BuildWith(docs, dims, DefaultParams())
}

// BuildWith is Build with explicit keyword-scoring parameters. It also
// returns a ValidationError for parameters out of range.
func BuildWith(docs []Doc, dims int, p Params) (*Index, error) {
	if err := p.validate(); err != nil {
		return nil, err
	}
	if dims < 0 {
		return nil, domain.InvalidField("dims", "must not be negative")
	}
	if len(docs) > math.MaxInt32 {
		return nil, domain.InvalidField("docs", "too many documents")
	}
	ix := &Index{n: len(docs), dims: dims, k1: float32(p.K1)}
	if err := ix.buildVectors(docs); err != nil {
		return nil, err
	}
	ix.buildKeyword(docs, p)
	ix.scratch.New = func() any { return &kwScratch{acc: make([]float32, ix.n)} }
	return ix, nil
}

func (p Params) validate() error {
	switch {
	case !(p.K1 >= 0) || math.IsInf(p.K1, 0):
		return domain.InvalidField("K1", "must be a finite number >= 0")
	case !(p.B >= 0 && p.B <= 1):
		return domain.InvalidField("B", "must be between 0 and 1")
	case !(p.TitleBoost >= 0) || math.IsInf(p.TitleBoost, 0):
		return domain.InvalidField("TitleBoost", "must be a finite number >= 0")
	}
	return nil
}

// buildVectors copies the documents' vectors into one slab, unit length.
// One allocation of rows*dims floats instead of a slice per document keeps
// the heap small and the scan sequential.
func (ix *Index) buildVectors(docs []Doc) error {
	rows := 0
	for i := range docs {
		v := docs[i].Vector
		if v == nil {
			continue
		}
		if len(v) != ix.dims {
			return domain.InvalidField(fmt.Sprintf("docs[%d].Vector", i),
				fmt.Sprintf("has %d dimensions, want %d", len(v), ix.dims))
		}
		norm := norm2(v)
		if math.IsNaN(norm) || math.IsInf(norm, 0) {
			return domain.InvalidField(fmt.Sprintf("docs[%d].Vector", i), "has a non-finite value")
		}
		if norm > 0 {
			rows++
		}
	}
	if rows == 0 {
		return nil
	}
	ix.vecs = make([]float32, 0, rows*ix.dims)
	if rows < len(docs) {
		ix.rowDoc = make([]uint32, 0, rows)
	}
	for i := range docs {
		v := docs[i].Vector
		if v == nil {
			continue
		}
		norm := norm2(v)
		if norm == 0 {
			continue
		}
		start := len(ix.vecs)
		ix.vecs = append(ix.vecs, v...)
		// Callers send unit vectors; rescale only when they are off by more
		// than float32 rounding, so those are copied bit for bit.
		if math.Abs(norm-1) > 1e-6 {
			inv := 1 / norm
			row := ix.vecs[start:]
			for j := range row {
				row[j] = float32(float64(row[j]) * inv)
			}
		}
		if ix.rowDoc != nil {
			ix.rowDoc = append(ix.rowDoc, uint32(i))
		}
	}
	if rows <= columnRows {
		ix.cols = make([]float32, rows*ix.dims)
		for r := range rows {
			for d, x := range ix.vecs[r*ix.dims : (r+1)*ix.dims] {
				ix.cols[d*rows+r] = x
			}
		}
	}
	return nil
}

// norm2 returns the Euclidean length of v, in float64 so that large
// components neither overflow nor lose the small ones.
func norm2(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}
