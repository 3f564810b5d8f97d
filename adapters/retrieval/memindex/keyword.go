package memindex

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strings"
)

// maxQueryTerms bounds the distinct terms a keyword query scores.
const maxQueryTerms = 32

// kwScratch holds one keyword query's buffers. They are pooled per Index
// because the accumulator has one slot per document.
type kwScratch struct {
	acc     []float32 // score by document; all zero between queries
	touched []uint32  // documents with a non-zero acc, when tracked
	terms   []uint32
	buf     []byte
	heap    []cand
}

// Keyword returns the k documents that best match query by BM25F, best
// first, ties by document position. A document matches when it has any of
// the query's terms (OR semantics). Words are lowercased, split on anything
// but letters, digits and marks, stopwords dropped and the rest reduced to
// their Snowball English stems, exactly as at Build. A query of more than
// 32 distinct terms is scored by its 32 rarest. Returns nil when k < 1 or
// no document matches, e.g. for a query of stopwords only.
func (ix *Index) Keyword(query string, k int) []Hit {
	if k < 1 || ix.n == 0 || len(ix.df) == 0 {
		return nil
	}
	s := ix.scratch.Get().(*kwScratch)
	defer ix.scratch.Put(s)

	s.terms = ix.queryTerms(query, s)
	if len(s.terms) == 0 {
		return nil
	}
	if len(s.terms) > maxQueryTerms {
		// A pasted page as a query: keep its rarest terms, which decide the
		// ranking anyway, so the cost stays bounded.
		slices.SortStableFunc(s.terms, func(a, b uint32) int { return cmp.Compare(ix.df[a], ix.df[b]) })
		s.terms = s.terms[:maxQueryTerms]
	}
	// Term-at-a-time into a dense accumulator. When the terms' postings
	// reach few documents, remember which ones so that selecting and
	// clearing cost as little as the postings did; otherwise scanning the
	// whole accumulator is cheaper than the bookkeeping.
	var postings uint64
	for _, t := range s.terms {
		postings += uint64(ix.df[t])
	}
	track := postings <= uint64(ix.n/8)
	if track && cap(s.touched) < int(postings) {
		s.touched = make([]uint32, 0, postings)
	}
	for _, t := range s.terms {
		// Lucene's BM25 idf is always positive, so a matching document's
		// score is never 0 and acc[d] != 0 tells "matched".
		idf := ix.IDF(int(ix.df[t]))
		s.touched = ix.accumulate(t, float32(idf*(float64(ix.k1)+1)), s.acc, s.touched, track)
	}

	top := newTopK(min(k, ix.n), s.heap)
	acc := s.acc
	if track {
		for _, d := range s.touched {
			if c := (cand{acc[d], d}); !top.full() || worse(top.min(), c) {
				top.push(c)
			}
			acc[d] = 0
		}
		s.touched = s.touched[:0]
	} else {
		for d, sc := range acc {
			if sc == 0 {
				continue
			}
			if c := (cand{sc, uint32(d)}); !top.full() || worse(top.min(), c) {
				top.push(c)
			}
		}
		clear(acc)
	}
	s.heap = top.h
	return top.hits(1)
}

// accumulate adds term t's contribution, w*tf/(tf+k1), to every document of
// its postings.
func (ix *Index) accumulate(t uint32, w float32, acc []float32, touched []uint32, track bool) []uint32 {
	p := ix.post[ix.off[t]:ix.off[t+1]]
	k1 := ix.k1
	titleW, bodyW := ix.titleW, ix.bodyW
	var doc uint32
	for i := 0; i < len(p); {
		v := uint32(p[i])
		i++
		if v >= 0x80 { // varint continuation; gaps fit in 32 bits
			v &= 0x7f
			for shift := 7; ; shift += 7 {
				c := p[i]
				i++
				v |= uint32(c&0x7f) << shift
				if c < 0x80 {
					break
				}
			}
		}
		doc += v >> 1
		var tf float32
		if v&1 == 0 {
			tf = bodyW[doc]
		} else {
			x := p[i]
			i++
			tf = float32(x>>6)*titleW[doc] + float32(x&maxBodyCount)*bodyW[doc]
		}
		inc := w * tf / (tf + k1)
		if inc == 0 { // a title-only occurrence with TitleBoost 0: no match
			continue
		}
		if track && acc[doc] == 0 {
			touched = append(touched, doc)
		}
		acc[doc] += inc
	}
	return touched
}

// queryTerms returns the distinct known terms of query, in query order.
func (ix *Index) queryTerms(query string, s *kwScratch) []uint32 {
	terms := s.terms[:0]
	s.buf = forEachWord(query, s.buf, func(w []byte) {
		id, ok := ix.lookup(w)
		if !ok || slices.Contains(terms, id) {
			return
		}
		terms = append(terms, id)
	})
	return terms
}

// noWord is the words map's value for a word known to have no term.
const noWord = math.MaxUint32

// lookup returns the term of a lowercase word, if the index has it.
func (ix *Index) lookup(w []byte) (uint32, bool) {
	if id, ok := ix.words[string(w)]; ok { // no allocation for the lookup
		return id, id != noWord
	}
	// A form the documents do not use ("refunds" where they say "refund")
	// or a stopword: stem it and look the stem up.
	t := termOf(string(w))
	if t == "" {
		return 0, false
	}
	return ix.findStem(t)
}

// findStem returns the term of stem t, if the index has it.
func (ix *Index) findStem(t string) (uint32, bool) {
	i, found := sort.Find(len(ix.df), func(i int) int { return strings.Compare(t, ix.stem(uint32(i))) })
	return uint32(i), found
}

// stem returns term t's stem.
func (ix *Index) stem(t uint32) string { return ix.arena[ix.stemOff[t]:ix.stemOff[t+1]] }
