package memindex

import (
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
)

// corpus generates text with a Zipfian vocabulary, so posting lists have
// the length spread of real text: a few huge (common words), most tiny.
type corpus struct {
	vocab []string
	cdf   []float64
	rng   *rand.Rand
}

// commonWords are English's commonest words, most frequent first: the top
// ranks of the Zipf distribution, about half of all running words as in
// real text. Most are stopwords.
var commonWords = strings.Fields(`the of and to a in is you that it for on was with
as are be this have from or by at not your can will an but if all they we
there which do their been has more when what so about up out them how then
its into some than other our only these could would any new use may like
also time just over most after should because each those where before such
why through our these between both under again further off once here few own
same very until while below above during against`)

// newCorpus returns a generator over a vocabulary of size words: the common
// words, then made-up words of two to four syllables, some carrying English
// suffixes so that stemming merges forms ("plarnex", "plarnexes").
func newCorpus(seed uint64, size int) *corpus {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	seen := make(map[string]bool, size)
	vocab := make([]string, 0, size)
	for _, w := range commonWords {
		if !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	onsets := strings.Fields("b c d f g h k l m n p r s t v w z br cl dr pl st tr sh ch th")
	vowels := strings.Fields("a e i o u a e i o u ai ea ou")
	codas := []string{"", "", "", "", "n", "r", "s", "t", "l", "m", "x", "nd"}
	suffixes := []string{"", "", "", "", "", "", "s", "s", "es", "ing", "ed", "ly", "tion", "ment", "er"}
	for len(vocab) < size {
		var b strings.Builder
		for range 1 + rng.IntN(2) {
			b.WriteString(onsets[rng.IntN(len(onsets))])
			b.WriteString(vowels[rng.IntN(len(vowels))])
			b.WriteString(codas[rng.IntN(len(codas))])
		}
		if len(vocab) > len(commonWords)+50 { // keep the top content words plain
			b.WriteString(suffixes[rng.IntN(len(suffixes))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	// Zipf with s = 1: P(rank r) ~ 1/r.
	cdf := make([]float64, size)
	var sum float64
	for r := range size {
		sum += 1 / float64(r+1)
		cdf[r] = sum
	}
	for r := range cdf {
		cdf[r] /= sum
	}
	return &corpus{vocab: vocab, cdf: cdf, rng: rng}
}

func (c *corpus) word() string {
	r := sort.SearchFloat64s(c.cdf, c.rng.Float64())
	return c.vocab[min(r, len(c.vocab)-1)]
}

// text returns about words running words in sentences.
func (c *corpus) text(words int) string {
	var b strings.Builder
	b.Grow(words * 7)
	for i := range words {
		w := c.word()
		if i%12 == 0 {
			if i > 0 {
				b.WriteString(". ")
			}
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	b.WriteByte('.')
	return b.String()
}

// title returns a heading path such as "Word word > Word".
func (c *corpus) title() string {
	parts := make([]string, 1+c.rng.IntN(2))
	for i := range parts {
		parts[i] = c.text(2 + c.rng.IntN(3))
		parts[i] = strings.TrimSuffix(parts[i], ".")
	}
	return strings.Join(parts, " > ")
}

// vector returns a random unit vector.
func (c *corpus) vector(dims int) []float32 {
	v := make([]float32, dims)
	var s float64
	for i := range v {
		x := c.rng.NormFloat64()
		v[i] = float32(x)
		s += x * x
	}
	inv := 1 / math.Sqrt(s)
	for i := range v {
		v[i] = float32(float64(v[i]) * inv)
	}
	return v
}

// docs returns n documents of about 200 words (about 1,200 bytes) each, with
// a vector of dims dimensions (none when dims is 0).
func (c *corpus) docs(n, dims int) []Doc {
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{Title: c.title(), Text: c.text(150 + c.rng.IntN(101))}
		if dims > 0 {
			docs[i].Vector = c.vector(dims)
		}
	}
	return docs
}

// queries returns n support-style queries of 3 to 8 words drawn from the
// same distribution: stopwords, common terms and some rare ones.
func (c *corpus) queries(n int) []string {
	qs := make([]string, n)
	for i := range qs {
		qs[i] = c.text(3 + c.rng.IntN(6))
	}
	return qs
}

// fixture is a built corpus shared by the benchmarks of one size.
type fixture struct {
	docs    []Doc
	ix      *Index
	queries []string
	vectors [][]float32
	common  string // the five commonest words that are not stopwords
}

// Dimensions of the synthetic embeddings: the local embedder's.
const benchDims = 384

var (
	fixturesMu sync.Mutex
	fixtures   = map[int]*fixture{}
)

// sharedFixture builds (once per size and test binary) n documents with
// vectors, their index and 200 queries.
func sharedFixture(n int) *fixture {
	fixturesMu.Lock()
	defer fixturesMu.Unlock()
	if f := fixtures[n]; f != nil {
		return f
	}
	c := newCorpus(uint64(n), 30_000)
	f := &fixture{docs: c.docs(n, benchDims), queries: c.queries(200)}
	for range f.queries {
		f.vectors = append(f.vectors, c.vector(benchDims))
	}
	ix, err := Build(f.docs, benchDims)
	if err != nil {
		panic(err)
	}
	f.ix = ix
	var common []string
	for _, w := range c.vocab {
		if termOf(w) != "" && len(common) < 5 {
			common = append(common, w)
		}
	}
	f.common = strings.Join(common, " ")
	fixtures[n] = f
	return f
}
