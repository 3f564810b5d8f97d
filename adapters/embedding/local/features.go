package local

import (
	"math"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Feature groups: the three vectors mixed by the group weights.
const (
	groupUnigram = iota
	groupBigram
	groupNgram
	numGroups
)

// Feature kinds. A feature's key keeps its kind in the low three bits, so one
// table counts them all; each kind lands in one group.
const (
	kindUnigram = iota
	kindBigram
	kindNgram
	kindStop    // a stopword's unigram: in the unigram group, weighed down
	kindLetters // a word's letter set: in the n-gram group
	kindMask    = 7
)

// Hash seeds, one per kind of hashed thing, so that the word "ing", the stem
// "ing" and the n-gram "ing" are different features.
const (
	seedWord    uint64 = 0xcbf29ce484222325 // FNV-1a offset basis
	seedStem    uint64 = 0x9e3779b97f4a7c15
	seedNgram   uint64 = 0xc2b2ae3d27d4eb4f
	seedLetters uint64 = 0x165667b19e3779f9
	fnvPrime    uint64 = 0x100000001b3
)

// Limits of the per-word work.
const (
	// maxStemBytes: longer ASCII words (identifiers, URLs run together) are
	// not worth the stemmer's time and are used as they are.
	maxStemBytes = 32
	// maxNgramRunes: a longer token is most likely a hash, a blob or an
	// unsegmented run of script; its n-grams would flood the n-gram group
	// with features no query shares, so it only counts as a unigram.
	maxNgramRunes = 48
	// stemCacheSize bounds each scratch's memo of stems (about 16 bytes an
	// entry); when full it starts over.
	stemCacheSize = 1 << 14
)

// token is one word of the text, as a range of scratch.lower.
type token struct {
	start, end int32
	ascii      bool // ASCII letters and apostrophes only: the stemmer applies
	letter     bool // has a letter: n-grams apply
	brk        bool // sentence punctuation since the previous token
}

// word is one distinct word of the text.
type word struct {
	start, end int32
	count      float32
	stem       uint64 // hash of the stem
	stop       bool
	letter     bool
}

// feature is one distinct feature and how often it occurs.
type feature struct {
	key   uint64
	count float32
}

// scratch is one goroutine's working memory, reused across texts.
type scratch struct {
	lower  []byte
	tokens []token
	offs   []int

	wordIdx table // word hash -> index in words
	words   []word

	featIdx table     // feature key -> index in feats
	feats   []feature // in first-seen order, so sums are deterministic

	stems map[uint64]uint64 // word hash -> stem hash, kept across texts

	groups [numGroups][]float32
}

func newScratch(dims int) *scratch {
	s := &scratch{
		wordIdx: newTable(512),
		featIdx: newTable(1024),
		stems:   make(map[uint64]uint64, 1024),
	}
	for g := range s.groups {
		s.groups[g] = make([]float32, dims)
	}
	return s
}

// embed writes text's unit vector, or zeros, into out.
func (s *scratch) embed(text string, out []float32) {
	clear(out)
	s.tokenize(text)
	if !s.count() {
		return
	}
	for g := range s.groups {
		clear(s.groups[g])
	}
	dims := uint64(len(out))
	for _, f := range s.feats {
		var g int
		w := float32(1) // most features occur once; spare them the log
		if f.count != 1 {
			w = float32(1 + math.Log(float64(f.count)))
		}
		switch f.key & kindMask {
		case kindUnigram:
			g = groupUnigram
		case kindBigram:
			g = groupBigram
		case kindNgram:
			g = groupNgram
		case kindStop:
			g, w = groupUnigram, w*stopWeight
		case kindLetters:
			g, w = groupNgram, w*lettersWeight
		}
		// Bits 3..34 pick the bucket (multiply-shift, no modulo bias worth
		// the name), bit 63 the sign.
		b := (((f.key >> 3) & 0xffffffff) * dims) >> 32
		if f.key>>63 != 0 {
			w = -w
		}
		s.groups[g][b] += w
	}
	weights := [numGroups]float32{weightUnigram, weightBigram, weightNgram}
	for g := range s.groups {
		norm := normalize(s.groups[g])
		if norm == 0 {
			continue
		}
		w := weights[g]
		for i, x := range s.groups[g] {
			out[i] += w * x
		}
	}
	normalize(out)
}

// tokenize splits text into lowercased words: runs of letters, digits and
// combining marks, with apostrophes inside a word kept (as ASCII ').
func (s *scratch) tokenize(text string) {
	s.lower, s.tokens = s.lower[:0], s.tokens[:0]
	start := -1
	ascii, letter, brk := true, false, false
	for i := 0; i < len(text); {
		c := text[i]
		r, size := rune(c), 1
		if c >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		switch {
		case 'a' <= r && r <= 'z':
			if start < 0 {
				start, ascii, letter = len(s.lower), true, false
			}
			s.lower = append(s.lower, byte(r))
			letter = true
		case 'A' <= r && r <= 'Z':
			if start < 0 {
				start, ascii, letter = len(s.lower), true, false
			}
			s.lower = append(s.lower, byte(r+'a'-'A'))
			letter = true
		case '0' <= r && r <= '9':
			if start < 0 {
				start, ascii, letter = len(s.lower), true, false
			}
			s.lower = append(s.lower, byte(r))
			ascii = false
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)):
			if start < 0 {
				start, ascii, letter = len(s.lower), true, false
			}
			s.lower = utf8.AppendRune(s.lower, unicode.ToLower(r))
			ascii = false
			letter = letter || unicode.IsLetter(r)
		case (r == '\'' || r == '\u2019') && start >= 0 && letterAt(text, i):
			s.lower = append(s.lower, '\'')
		default:
			if start >= 0 {
				s.tokens = append(s.tokens, token{start: int32(start), end: int32(len(s.lower)), ascii: ascii, letter: letter, brk: brk})
				start, brk = -1, false
			}
			switch r {
			case '.', '!', '?', ';', ':', '\n', '|':
				brk = true
			}
		}
	}
	if start >= 0 {
		s.tokens = append(s.tokens, token{start: int32(start), end: int32(len(s.lower)), ascii: ascii, letter: letter, brk: brk})
	}
}

// letterAt reports whether text[i:] starts with a letter.
func letterAt(text string, i int) bool {
	if i >= len(text) {
		return false
	}
	if c := text[i]; c < utf8.RuneSelf {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
	}
	r, _ := utf8.DecodeRuneInString(text[i:])
	return unicode.IsLetter(r)
}

// count fills feats from tokens and reports whether the text had a content
// word.
func (s *scratch) count() bool {
	s.wordIdx.reset()
	s.featIdx.reset()
	s.words, s.feats = s.words[:0], s.feats[:0]
	content := false
	var prev uint64
	havePrev := false
	for _, t := range s.tokens {
		w := s.lower[t.start:t.end]
		wh := mix(fnv1a(seedWord, w))
		ref, ok := s.wordIdx.lookup(wh)
		if !ok {
			*ref = int32(len(s.words))
			stop := isStopword(w)
			s.words = append(s.words, word{start: t.start, end: t.end, stem: s.stem(wh, w, t.ascii && !stop), stop: stop, letter: t.letter})
		}
		e := &s.words[*ref]
		e.count++
		if t.brk {
			havePrev = false
		}
		if e.stop {
			continue
		}
		content = true
		if havePrev {
			s.add(mix(prev*fnvPrime^e.stem), kindBigram, 1)
		}
		prev, havePrev = e.stem, true
	}
	if !content {
		return false
	}
	for i := range s.words {
		e := &s.words[i]
		if e.stop {
			s.add(e.stem, kindStop, e.count)
			continue
		}
		s.add(e.stem, kindUnigram, e.count)
		if !e.letter {
			continue
		}
		w := s.lower[e.start:e.end]
		s.ngrams(w, e.count)
		if key, ok := letterKey(w); ok {
			s.add(key, kindLetters, e.count)
		}
	}
	return true
}

// stem returns the hash of w's stem, memoised: the stemmer costs about
// 1.5 µs a word, the memo a map lookup.
func (s *scratch) stem(wh uint64, w []byte, stemmable bool) uint64 {
	if h, ok := s.stems[wh]; ok {
		return h
	}
	var h uint64
	if stemmable && len(w) <= maxStemBytes {
		h = mix(fnvString(seedStem, english.Stem(string(w), false)))
	} else {
		h = mix(fnv1a(seedStem, w))
	}
	if len(s.stems) >= stemCacheSize {
		clear(s.stems)
	}
	s.stems[wh] = h
	return h
}

// letterKey returns a feature for w that typos within a word's first six
// letters leave alone: its first letter, the length of the prefix and the
// set of the prefix's letters, where the prefix is the first six letters
// after a plural "s" is dropped. "refnud", "refunds" and "refund" share it,
// as do "cancle" and "cancel" or "adress" and "address". ok is false for
// words of fewer than four letters (too many anagrams) or with anything but
// a-z.
func letterKey(w []byte) (key uint64, ok bool) {
	if n := len(w); n >= 5 && w[n-1] == 's' && w[n-2] != 's' {
		w = w[:n-1]
	}
	if len(w) < 4 {
		return 0, false
	}
	w = w[:min(len(w), 6)]
	var set uint64
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return 0, false
		}
		set |= 1 << (c - 'a')
	}
	return mix(seedLetters ^ (set<<16 | uint64(len(w))<<8 | uint64(w[0]))), true
}

// ngrams adds the character 3- and 4-grams of w framed by boundary markers
// (\x01 before, \x02 after; neither can occur inside a word), each counted
// tf times.
func (s *scratch) ngrams(w []byte, tf float32) {
	offs := s.offs[:0]
	for i := range string(w) {
		offs = append(offs, i)
	}
	offs = append(offs, len(w))
	s.offs = offs
	m := len(offs) - 1 // runes in w
	if m > maxNgramRunes {
		return
	}
	// Position p of the framed word is the start marker for p == 0, the end
	// marker for p == m+1 and rune p-1 of w otherwise.
	for n := 3; n <= 4; n++ {
		for i := 0; i+n <= m+2; i++ {
			h := seedNgram
			from, to := i, i+n
			if from == 0 {
				h = (h ^ 1) * fnvPrime
				from = 1
			}
			end := min(to, m+1)
			if end > from {
				h = fnv1a(h, w[offs[from-1]:offs[end-1]])
			}
			if to == m+2 {
				h = (h ^ 2) * fnvPrime
			}
			s.add(mix(h), kindNgram, tf)
		}
	}
}

// add counts n occurrences of the feature hashed h of kind k.
func (s *scratch) add(h uint64, k uint64, n float32) {
	key := h&^kindMask | k
	ref, ok := s.featIdx.lookup(key)
	if ok {
		s.feats[*ref].count += n
		return
	}
	*ref = int32(len(s.feats))
	s.feats = append(s.feats, feature{key: key, count: n})
}

// fnv1a is 64-bit FNV-1a over b, continuing from h.
func fnv1a(h uint64, b []byte) uint64 {
	for _, c := range b {
		h = (h ^ uint64(c)) * fnvPrime
	}
	return h
}

func fnvString(h uint64, s string) uint64 {
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * fnvPrime
	}
	return h
}

// mix is MurmurHash3's 64-bit finaliser: FNV's low and high bits are weak,
// and the bucket and the sign are taken from them.
func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
