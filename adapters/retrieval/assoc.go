package retrieval

import (
	"cmp"
	"math"
	"slices"
	"strings"

	"github.com/conciergehq/concierge/adapters/retrieval/memindex"
	"github.com/conciergehq/concierge/core/domain"
)

// Associations are an agent's own term associations, learned once when its
// index is built: for a term that titles passages (a heading, a document's
// name, a Q&A pair's question), the body terms those passages use far more
// often than the rest of the knowledge does. A visitor asks in the words of
// the titles ("reset my password") and the answer is written in the words of
// the bodies ("sign-in link", "email"); WordNet does not know that a
// product's pages pair those words, the agent's own sources do.
type Associations struct {
	of map[int32][]int32
}

// Association limits. maxAssociated bounds the terms kept per title term,
// so the table costs at most a few int32 per distinct title term;
// minCooccur drops pairs seen once (an accident of one passage); minLift
// keeps a body term only when a title term's passages use it at least that
// many times more often than the knowledge as a whole.
const (
	maxAssociated = 3
	minCooccur    = 2
	minLift       = 4.0
)

// BuildAssociations learns the associations of the chunks indexed in ix, in
// the same order. A chunk's title terms are those of its first line (the
// heading path the chunker repeats there), its document's name and its Q&A
// question; its body terms are those of the rest of its text.
func BuildAssociations(ix *memindex.Index, chunks []domain.Chunk) *Associations {
	n := len(chunks)
	if n == 0 {
		return &Associations{}
	}
	type pair struct{ title, body int32 }
	titleDF := map[int32]int{}
	bodyDF := map[int32]int{}
	co := map[pair]int{}
	var buf []byte
	title := map[int32]bool{}
	body := map[int32]bool{}
	for _, c := range chunks {
		clear(title)
		clear(body)
		head, rest := c.Text, ""
		if nl := strings.IndexByte(head, '\n'); nl >= 0 {
			head, rest = head[:nl], head[nl+1:]
		}
		for _, s := range []string{head, c.DocumentName, c.Question} {
			buf = ix.EachTerm(s, buf, func(_ int, t int32, number bool) {
				if t != memindex.NoTerm && !number {
					title[t] = true
				}
			})
		}
		buf = ix.EachTerm(rest, buf, func(_ int, t int32, number bool) {
			if t != memindex.NoTerm && !number && !title[t] {
				body[t] = true
			}
		})
		for t := range title {
			titleDF[t]++
		}
		for b := range body {
			bodyDF[b]++
			for t := range title {
				co[pair{t, b}]++
			}
		}
	}
	type scored struct {
		body  int32
		score float64
	}
	cands := map[int32][]scored{}
	for p, k := range co {
		if k < minCooccur {
			continue
		}
		// Lift: how much more often the title term's passages use the body
		// term than all passages do.
		pb := float64(k) / float64(titleDF[p.title])
		lift := pb / (float64(bodyDF[p.body]) / float64(n))
		if lift < minLift {
			continue
		}
		cands[p.title] = append(cands[p.title], scored{p.body, pb * math.Log(lift)})
	}
	a := &Associations{of: make(map[int32][]int32, len(cands))}
	for t, list := range cands {
		slices.SortFunc(list, func(x, y scored) int {
			if c := cmp.Compare(y.score, x.score); c != 0 {
				return c
			}
			return cmp.Compare(x.body, y.body)
		})
		list = list[:min(len(list), maxAssociated)]
		out := make([]int32, len(list))
		for i, s := range list {
			out[i] = s.body
		}
		a.of[t] = out
	}
	return a
}

// Of returns the body terms associated with a title term; nil for none or a
// nil table.
func (a *Associations) Of(t int32) []int32 {
	if a == nil {
		return nil
	}
	return a.of[t]
}

// Len is the number of title terms with associations.
func (a *Associations) Len() int {
	if a == nil {
		return 0
	}
	return len(a.of)
}

// Bytes estimates the table's resident size, for the index cache's budget.
func (a *Associations) Bytes() int64 {
	if a == nil {
		return 0
	}
	var b int64
	for _, l := range a.of {
		b += mapEntryBytes + 24 + 4*int64(cap(l))
	}
	return b
}

// mapEntryBytes is what one entry of a small-keyed map costs, roughly.
const mapEntryBytes = 40
