package memindex

import "slices"

// cand is a scored document while selecting the top k.
type cand struct {
	score float32
	doc   uint32
}

// worse orders candidates: lower score first, and on equal scores the later
// document, so that ties go to the earlier document.
func worse(a, b cand) bool {
	return a.score < b.score || (a.score == b.score && a.doc > b.doc)
}

// topK keeps the k best candidates in a min-heap whose root is the worst
// kept, so a new candidate costs one comparison unless it gets in.
type topK struct {
	k int
	h []cand
}

func newTopK(k int, h []cand) topK { return topK{k: k, h: h[:0]} }

// full reports whether a candidate must beat the root to get in.
func (t *topK) full() bool { return len(t.h) == t.k }

// min returns the worst kept candidate; only valid when full.
func (t *topK) min() cand { return t.h[0] }

func (t *topK) push(c cand) {
	if len(t.h) < t.k {
		t.h = append(t.h, c)
		t.up(len(t.h) - 1)
		return
	}
	if !worse(t.h[0], c) {
		return
	}
	t.h[0] = c
	t.down(0)
}

func (t *topK) up(i int) {
	h := t.h
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (t *topK) down(i int) {
	h := t.h
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// hits returns the kept candidates best first, scores scaled by mul.
func (t *topK) hits(mul float64) []Hit {
	if len(t.h) == 0 {
		return nil
	}
	slices.SortFunc(t.h, func(a, b cand) int {
		switch {
		case worse(b, a):
			return -1
		case worse(a, b):
			return 1
		}
		return 0
	})
	out := make([]Hit, len(t.h))
	for i, c := range t.h {
		out[i] = Hit{Doc: int(c.doc), Score: float64(c.score) * mul}
	}
	return out
}
