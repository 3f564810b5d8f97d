package memindex

import (
	"math"
	"sort"
	"strings"
)

// NoTerm is the term of a word the index does not hold, or of a stopword.
const NoTerm = -1

// QueryWord is one distinct content word of a query as the index reads it.
type QueryWord struct {
	// Word is the word as typed, lowercased.
	Word string
	// Term is its term in the index, or NoTerm when no document has it.
	Term int32
	// DF is how many documents hold Term (0 for NoTerm).
	DF int
	// Typo is set when the word itself is not in the index but a term one
	// edit away is ("pasword" for "password"): Term is then that term.
	Typo bool
}

// numberWords are numbers written out.
var numberWords = map[string]bool{
	"one": true, "two": true, "three": true, "four": true, "five": true, "six": true, "seven": true,
	"eight": true, "nine": true, "ten": true, "eleven": true, "twelve": true, "fifteen": true,
	"twenty": true, "thirty": true, "forty": true, "fifty": true, "hundred": true, "thousand": true,
	"million": true, "dozen": true, "half": true, "once": true, "twice": true, "unlimited": true,
}

// minTypoBytes is the shortest word matched to a term one edit away:
// shorter words are too often other real words ("chart" is not "chat").
const minTypoBytes = 7

// QueryWords returns the distinct non-stopword words of query, in query
// order, each with its term and document frequency. A word the index does
// not hold, of seven letters or more, is matched to a term one edit away
// when there is one, so a typo does not read as a word the knowledge lacks.
func (ix *Index) QueryWords(query string) []QueryWord {
	var out []QueryWord
	seen := map[string]bool{}
	forEachWord(query, nil, func(w []byte) {
		stem := termOf(string(w))
		if stem == "" || seen[stem] {
			return
		}
		seen[stem] = true
		qw := QueryWord{Word: string(w), Term: NoTerm}
		if id, ok := ix.lookup(w); ok {
			qw.Term = int32(id)
		} else if len(w) >= minTypoBytes {
			if id, ok := ix.nearStem(stem, string(w)); ok {
				qw.Term, qw.Typo = int32(id), true
			}
		}
		if qw.Term != NoTerm {
			qw.DF = int(ix.df[qw.Term])
		}
		out = append(out, qw)
	})
	return out
}

// NearWord returns, for a lowercase word the index does not hold, the term
// one edit away that QueryWords would match for a word of minTypoBytes
// (see nearStem), as a QueryWord with Typo set. QueryWords matches shorter
// words to no term, since many are other real words ("chart" is not
// "chat"); a caller that can tell real words from misspelt ones (a
// dictionary) uses NearWord for the misspelt ones.
func (ix *Index) NearWord(word string) (QueryWord, bool) {
	stem := termOf(word)
	if stem == "" {
		return QueryWord{}, false
	}
	if _, ok := ix.lookup([]byte(word)); ok {
		return QueryWord{}, false
	}
	id, ok := ix.nearStem(stem, word)
	if !ok {
		return QueryWord{}, false
	}
	return QueryWord{Word: word, Term: int32(id), DF: int(ix.df[id]), Typo: true}, true
}

// Term returns the term of a lowercase word (its stem looked up), or NoTerm
// when no document has it or it is a stopword.
func (ix *Index) Term(word string) int32 {
	if id, ok := ix.lookup([]byte(word)); ok {
		return int32(id)
	}
	return NoTerm
}

// IDF is the BM25 inverse document frequency of a term held by df of the
// index's documents (Lucene's form, always positive).
func (ix *Index) IDF(df int) float64 {
	n := float64(ix.n)
	return math.Log(1 + (n-float64(df)+0.5)/(float64(df)+0.5))
}

// IsNumberWord reports whether a lowercase word is a number written out
// ("seven", "thirty", "dozen").
func IsNumberWord(w string) bool { return numberWords[w] }

// EachTerm calls fn with the position (counting words, stopwords included)
// and the term of every word of text; term is NoTerm for stopwords and
// words the index does not hold. number says the word is a number: it
// starts with a digit, or is a number word ("seven", "twelve", "hundred").
// Words of indexed documents are looked up without stemming.
func (ix *Index) EachTerm(text string, buf []byte, fn func(pos int, term int32, number bool)) []byte {
	pos := 0
	return forEachWord(text, buf, func(w []byte) {
		t := int32(NoTerm)
		if id, ok := ix.lookup(w); ok {
			t = int32(id)
		}
		fn(pos, t, w[0] >= '0' && w[0] <= '9' || numberWords[string(w)])
		pos++
	})
}

// nearStem returns a term whose stem is one edit (an insertion, deletion,
// substitution or swap of neighbours) from stem, or whose stem is one edit
// from the unstemmed word, among terms starting with the same letter. It
// prefers the term held by the most documents. Stems are sorted, so only
// the terms sharing the first letter are compared.
func (ix *Index) nearStem(stem, word string) (uint32, bool) {
	if stem == "" {
		return 0, false
	}
	first := stem[:1]
	lo := sort.Search(len(ix.df), func(i int) bool { return ix.stem(uint32(i)) >= first })
	best, found := uint32(0), false
	for i := lo; i < len(ix.df); i++ {
		s := ix.stem(uint32(i))
		if !strings.HasPrefix(s, first) {
			break
		}
		if len(s) < 4 {
			continue
		}
		if oneEdit(s, stem) || oneEdit(s, word) {
			if !found || ix.df[i] > ix.df[best] {
				best, found = uint32(i), true
			}
		}
	}
	return best, found
}

// oneEdit reports whether a and b differ by exactly one insertion, deletion,
// substitution, or swap of two neighbouring bytes.
func oneEdit(a, b string) bool {
	if a == b {
		return false
	}
	la, lb := len(a), len(b)
	if la-lb > 1 || lb-la > 1 {
		return false
	}
	i := 0
	for i < la && i < lb && a[i] == b[i] {
		i++
	}
	switch {
	case la == lb:
		if a[i+1:] == b[i+1:] {
			return true // substitution
		}
		return i+1 < la && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:] // swap
	case la > lb:
		return a[i+1:] == b[i:]
	default:
		return a[i:] == b[i+1:]
	}
}
