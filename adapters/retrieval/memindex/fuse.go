package memindex

import (
	"cmp"
	"slices"
)

// DefaultRRFK is the usual reciprocal rank fusion constant (Cormack et al.
// 2009): large enough that the first few ranks of one list do not drown the
// agreement of the others.
const DefaultRRFK = 60

// Fused is one document of a fused ranking.
type Fused struct {
	// Doc is the document's position, as in Hit.
	Doc int
	// Score is the sum over the lists of 1/(rrfK + rank).
	Score float64
	// Ranks holds the document's rank in each list, from 1, in the order the
	// lists were given; 0 where a list does not have it.
	Ranks []int
}

// Fuse combines ranked lists by reciprocal rank fusion and returns the k
// best documents: score = sum of 1/(rrfK + rank) over the lists that hold
// the document, rank counted from 1. Ties go to the document ranked better
// in the earliest list that tells them apart (a listed document beats an
// absent one), then to the lower position. Only a document's first
// occurrence in a list counts. rrfK below 0 counts as 0. Returns nil when
// k < 1 or the lists are empty.
func Fuse(k, rrfK int, lists ...[]Hit) []Fused {
	if k < 1 {
		return nil
	}
	rrfK = max(rrfK, 0)
	total := 0
	for _, l := range lists {
		total += len(l)
	}
	if total == 0 {
		return nil
	}
	out := make([]Fused, 0, total)
	ranks := make([]int, total*len(lists)) // one backing array for all Ranks
	at := make(map[int]int, total)         // Doc -> index in out
	for li, l := range lists {
		for r, h := range l {
			i, ok := at[h.Doc]
			if !ok {
				i = len(out)
				at[h.Doc] = i
				base := i * len(lists)
				out = append(out, Fused{Doc: h.Doc, Ranks: ranks[base : base+len(lists) : base+len(lists)]})
			}
			f := &out[i]
			if f.Ranks[li] != 0 {
				continue
			}
			f.Ranks[li] = r + 1
			f.Score += 1 / float64(rrfK+r+1)
		}
	}
	slices.SortFunc(out, func(a, b Fused) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		for li := range a.Ranks {
			ra, rb := a.Ranks[li], b.Ranks[li]
			switch {
			case ra == rb:
				continue
			case ra == 0:
				return 1
			case rb == 0:
				return -1
			}
			return cmp.Compare(ra, rb)
		}
		return cmp.Compare(a.Doc, b.Doc)
	})
	return out[:min(k, len(out)):min(k, len(out))]
}
