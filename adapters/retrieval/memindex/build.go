package memindex

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
)

// Saturation limits of the counts packed into a posting's extra byte.
const (
	maxTitleCount = 3
	maxBodyCount  = 63
)

// builder accumulates postings document by document; only the finished
// arrays are kept by the Index.
type builder struct {
	words       map[string]uint32 // lowercase word -> surface id
	surface     []string          // by surface id: the word
	surfaceTerm []int32           // by surface id: its term id, -1 for a stopword
	front       []frontSlot       // a power of two long
	dict        map[string]uint32 // stem -> term id
	terms       []string          // by term id
	post        [][]byte          // by term id, grown by append, packed at the end
	last        []uint32          // by term id: the last document appended
	df          []uint32

	// The current document's counts, by term id, and the ids it holds.
	titleTF, bodyTF []uint16
	seen            []uint32
	buf             []byte
}

// frontSlot caches one word's term for builder.termID.
type frontSlot struct {
	word string
	id   int32
}

// termID returns the term id of a lowercase word, or -1 for a stopword.
func (b *builder) termID(w []byte) int32 {
	// A direct-mapped cache of recent words in front of the map: the few
	// thousand commonest words make most of any text, and comparing one
	// slot is several times cheaper than a lookup in a map of the whole
	// vocabulary, which falls out of the CPU caches. FNV-1a picks the slot.
	h := uint32(2166136261)
	for _, c := range w {
		h = (h ^ uint32(c)) * 16777619
	}
	slot := &b.front[h&uint32(len(b.front)-1)]
	if slot.word == string(w) { // words are never empty, unlike free slots
		return slot.id
	}
	sid, ok := b.words[string(w)] // no allocation for the lookup
	if !ok {
		sid = b.addWord(string(w))
	}
	*slot = frontSlot{b.surface[sid], b.surfaceTerm[sid]}
	return slot.id
}

// know records a word of a document's name with its term, if the texts
// have it, or as none; unlike addWord it never adds a term.
func (b *builder) know(w []byte) {
	if _, ok := b.words[string(w)]; ok {
		return
	}
	word := string(w)
	id := int32(-1)
	if t := termOf(word); t != "" {
		if tid, ok := b.dict[t]; ok {
			id = int32(tid)
		}
	}
	b.words[word] = uint32(len(b.surface))
	b.surface = append(b.surface, word)
	b.surfaceTerm = append(b.surfaceTerm, id)
}

// addWord records a new surface word and returns its id.
func (b *builder) addWord(word string) uint32 {
	id := int32(-1)
	if t := termOf(word); t != "" {
		tid, ok := b.dict[t]
		if !ok {
			tid = uint32(len(b.terms))
			b.dict[t] = tid
			b.terms = append(b.terms, t)
			b.post = append(b.post, nil)
			b.last = append(b.last, 0)
			b.df = append(b.df, 0)
			b.titleTF = append(b.titleTF, 0)
			b.bodyTF = append(b.bodyTF, 0)
		}
		id = int32(tid)
	}
	sid := uint32(len(b.surface))
	b.words[word] = sid
	b.surface = append(b.surface, word)
	b.surfaceTerm = append(b.surfaceTerm, id)
	return sid
}

func (ix *Index) buildKeyword(docs []Doc, p Params) {
	b := &builder{
		words: make(map[string]uint32, 1024),
		dict:  make(map[string]uint32, 1024),
		// Up to 16k slots (384 KiB, within L2), fewer for small indexes.
		front: make([]frontSlot, 1<<min(14, max(8, bits.Len(uint(len(docs))*16)))),
	}
	titleLen := make([]uint32, len(docs))
	bodyLen := make([]uint32, len(docs))
	var sumTitle, sumBody float64
	for d := range docs {
		titleLen[d] = b.add(docs[d].Title, true)
		bodyLen[d] = b.add(docs[d].Text, false)
		b.flush(uint32(d))
		sumTitle += float64(titleLen[d])
		sumBody += float64(bodyLen[d])
	}
	// Names join the vocabulary once every term is known, so that they
	// neither add terms nor count as text.
	for d := range docs {
		b.buf = forEachWord(docs[d].Name, b.buf, b.know)
	}

	// Number the terms in stem order, so that a stem is found by binary
	// search in one arena string rather than through a second map.
	order := make([]uint32, len(b.terms)) // new id -> builder id
	for i := range order {
		order[i] = uint32(i)
	}
	slices.SortFunc(order, func(x, y uint32) int { return strings.Compare(b.terms[x], b.terms[y]) })
	newID := make([]uint32, len(order))
	for id, old := range order {
		newID[old] = uint32(id)
	}

	// Pack the postings into one slab.
	total := 0
	for _, l := range b.post {
		total += len(l)
	}
	ix.post = make([]byte, 0, total)
	ix.off = make([]uint32, len(order)+1)
	ix.df = make([]uint32, len(order))
	for id, old := range order {
		ix.post = append(ix.post, b.post[old]...)
		b.post[old] = nil
		ix.off[id+1] = uint32(len(ix.post))
		ix.df[id] = b.df[old]
	}

	// One arena string holds the stems, in order, then the surface words
	// that differ from their stem. The words map's keys slice it, so the
	// index holds no pointer into a caller's text and makes two allocations
	// instead of one per term.
	type word struct {
		w  string
		id uint32
	}
	surface := make([]word, 0, len(b.words))
	size := 0
	for _, t := range b.terms {
		size += len(t)
	}
	for sid, w := range b.surface {
		id := b.surfaceTerm[sid]
		if id < 0 {
			// A stopword, or a name's word the texts do not use: found
			// as no term without the stemmer.
			surface = append(surface, word{w, noWord})
			size += len(w)
			continue
		}
		surface = append(surface, word{w, newID[id]})
		if w != b.terms[id] {
			size += len(w)
		}
	}
	var sb strings.Builder
	sb.Grow(size)
	ix.stemOff = make([]uint32, len(order)+1)
	for id, old := range order {
		sb.WriteString(b.terms[old])
		ix.stemOff[id+1] = uint32(sb.Len())
	}
	wordAt := make([]uint32, len(surface)) // arena offset of each surface word that differs
	for i, sw := range surface {
		if sw.id == noWord || sw.w != b.terms[order[sw.id]] {
			wordAt[i] = uint32(sb.Len())
			sb.WriteString(sw.w)
		}
	}
	ix.arena = sb.String()
	ix.words = make(map[string]uint32, len(surface))
	for i, sw := range surface {
		if sw.id != noWord && sw.w == b.terms[order[sw.id]] {
			ix.words[ix.stem(sw.id)] = sw.id
		} else {
			ix.words[ix.arena[wordAt[i]:wordAt[i]+uint32(len(sw.w))]] = sw.id
		}
	}

	n := float64(len(docs))
	ix.titleW = fieldWeights(titleLen, sumTitle/n, p.B, p.TitleBoost)
	ix.bodyW = fieldWeights(bodyLen, sumBody/n, p.B, 1)
}

// add counts the words of one field of the current document and returns the
// number of indexed (non-stopword) words in it.
func (b *builder) add(s string, title bool) uint32 {
	var n uint32
	b.buf = forEachWord(s, b.buf, func(w []byte) {
		id := b.termID(w)
		if id < 0 {
			return
		}
		n++
		if b.titleTF[id] == 0 && b.bodyTF[id] == 0 {
			b.seen = append(b.seen, uint32(id))
		}
		tf := &b.bodyTF[id]
		if title {
			tf = &b.titleTF[id]
		}
		if *tf < ^uint16(0) {
			*tf++
		}
	})
	return n
}

// flush appends the current document to the postings of its terms.
func (b *builder) flush(doc uint32) {
	for _, id := range b.seen {
		tt, tb := min(b.titleTF[id], maxTitleCount), min(b.bodyTF[id], maxBodyCount)
		b.titleTF[id], b.bodyTF[id] = 0, 0
		gap := uint64(doc - b.last[id])
		b.last[id] = doc
		b.df[id]++
		if tt == 0 && tb == 1 {
			b.post[id] = binary.AppendUvarint(b.post[id], gap<<1)
			continue
		}
		b.post[id] = binary.AppendUvarint(b.post[id], gap<<1|1)
		b.post[id] = append(b.post[id], byte(tt<<6|tb))
	}
	b.seen = b.seen[:0]
}

// fieldWeights folds BM25's length normalisation and the field's boost into
// one weight per document: boost / (1 - b + b*len/avg).
func fieldWeights(lens []uint32, avg, b, boost float64) []float32 {
	w := make([]float32, len(lens))
	for d, l := range lens {
		if l == 0 {
			// No occurrences to weigh; and with b=1 the norm would be 0.
			continue
		}
		w[d] = float32(boost / (1 - b + b*float64(l)/avg))
	}
	return w
}
