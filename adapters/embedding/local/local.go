// Package local implements ports.Embedder without a model or a network: a
// deterministic, lexical embedding built by feature hashing. It is the
// embedded default, so a fresh install can retrieve knowledge before anyone
// configures a model provider.
//
// Each text becomes three groups of features:
//
//   - word unigrams: lowercased, Unicode-aware words, reduced by the Snowball
//     English stemmer ("resetting" and "resets" both count as "reset");
//   - word bigrams of consecutive stems, skipping stopwords and not crossing
//     sentence punctuation ("reset my password" gives "reset password");
//   - character 3- and 4-grams of each unstemmed word with word-boundary
//     markers ("<pa", "pas", ..., "rd>"), which is what lets a typo such as
//     "pasword" still land near the right word; with them, one letter-set
//     feature per word of four letters or more (the first letter and the set
//     of letters of its first six), which survives the transpositions and
//     doubled letters that break most n-grams ("refnud" and "refunds" share
//     it).
//
// Every feature is hashed (64-bit FNV-1a, then a mixing step) to one of
// Dimensions buckets, and a bit of the hash picks +1 or -1 so that collisions
// cancel out on average instead of piling up. A feature seen tf times in the
// text weighs 1 + ln(tf), so repetition helps with diminishing returns. There
// is no corpus, so no IDF: instead a small list of English stopwords weighs
// stopWeight of a content word and takes no part in bigrams or n-grams.
//
// Each group is L2-normalised on its own and then mixed by the group weights
// below, so a weight is the group's share of the final vector whatever the
// number of its features (a word has one unigram but about nine n-grams).
// The mix is L2-normalised again. The cosine of two vectors is then roughly
// the three groups' cosines averaged with the squared weights.
//
// Hashing 384 buckets costs precision: two unrelated texts have a cosine of
// about ±0.05 (1/sqrt(384)), so only differences well above that mean
// anything.
//
// A text without any content word (empty, punctuation only, stopwords only)
// gives a zero vector: its cosine with anything is 0, so it matches nothing.
// Callers should not store such vectors for retrieval and should treat a zero
// query vector as "no lexical signal" (rely on full-text search alone).
//
// The embedding catches shared words, word forms and typos; it does not know
// synonyms or paraphrases ("refund" is not near "money back").
package local

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/conciergehq/concierge/ports"
)

// DefaultDimensions is the vector length when Options.Dimensions is zero.
const DefaultDimensions = 384

// Bounds of Options.Dimensions: below minDimensions collisions swamp the
// signal; above maxDimensions vectors only cost storage and scan time.
const (
	minDimensions = 64
	maxDimensions = 4096
)

// version names the feature set in ID. Bump it whenever tokenisation,
// features, hashing or weights change, so vectors stored under the old id
// are re-embedded instead of being compared with incompatible ones.
const version = "v1"

// Group weights, each group's share of the final vector before the last
// normalisation, tuned on the retrieval set in local_test.go (46 support
// questions over 20 passages, a third of them misspelt; small, so read the
// figures as a direction). The n-gram group matches every exact word too and
// rescues typos and word forms the stemmer misses, so it weighs a little more
// than the unigrams: top-1 was 34-35 of 46 at 0.8, 39-40 at 1.0, 41 at 1.2
// and flat above. Bigrams are tie-breakers for phrases ("credit card", "log
// out") and barely move short queries (0.3 or 0.45: within one query).
// lettersWeight scales the letter-set feature within the n-gram group (1: 40,
// 2: 41, 3: 38-39 of 46); stopWeight scales a stopword's unigram.
const (
	weightUnigram = 1.0
	weightBigram  = 0.45
	weightNgram   = 1.2
	lettersWeight = 2.0
	stopWeight    = 0.1
)

// Options configures an Embedder.
type Options struct {
	// Dimensions is the vector length (0: DefaultDimensions). It is part of
	// ID, so changing it re-embeds stored vectors.
	Dimensions int
}

// Embedder is the hashing embedder. It is safe for concurrent use; each
// call borrows scratch space from a pool, so steady use allocates little
// more than the returned vectors.
type Embedder struct {
	dims int
	id   string
	pool sync.Pool // of *scratch
}

var _ ports.Embedder = (*Embedder)(nil)

// New returns an Embedder, or an error when opts.Dimensions is out of range
// (64..4096).
func New(opts Options) (*Embedder, error) {
	dims := opts.Dimensions
	if dims == 0 {
		dims = DefaultDimensions
	}
	if dims < minDimensions || dims > maxDimensions {
		return nil, fmt.Errorf("local embedder: dimensions must be between %d and %d, got %d", minDimensions, maxDimensions, opts.Dimensions)
	}
	e := &Embedder{dims: dims, id: fmt.Sprintf("local-hash-%s-%d", version, dims)}
	e.pool.New = func() any { return newScratch(dims) }
	return e, nil
}

// ID implements ports.Embedder: "local-hash-v1-384" for the default size.
func (e *Embedder) ID() string { return e.id }

// Dimensions implements ports.Embedder.
func (e *Embedder) Dimensions() int { return e.dims }

// Embed implements ports.Embedder. It never fails except when ctx is done,
// which it checks between texts. Texts without content words give zero
// vectors (see the package comment).
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// One backing array for the batch; each vector's capacity is capped so
	// an append by the caller cannot run into its neighbour.
	backing := make([]float32, len(texts)*e.dims)
	out := make([][]float32, len(texts))
	s := e.pool.Get().(*scratch)
	defer e.release(s)
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		v := backing[i*e.dims : (i+1)*e.dims : (i+1)*e.dims]
		s.embed(text, v)
		out[i] = v
	}
	return out, nil
}

// EmbedOne embeds one text, for hot paths such as queries that have no use
// for a context or an error.
func (e *Embedder) EmbedOne(text string) []float32 {
	v := make([]float32, e.dims)
	s := e.pool.Get().(*scratch)
	s.embed(text, v)
	e.release(s)
	return v
}

// maxPooledFeatures bounds the scratch kept for reuse: one huge text should
// not pin megabytes of buffers for the life of the process.
const maxPooledFeatures = 1 << 16

func (e *Embedder) release(s *scratch) {
	if cap(s.feats) > maxPooledFeatures || cap(s.lower) > 16*maxPooledFeatures {
		return
	}
	e.pool.Put(s)
}

// normalize scales v to unit length in place and reports its original
// norm; a zero vector stays zero.
func normalize(v []float32) float64 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return 0
	}
	norm := math.Sqrt(sum)
	inv := 1 / norm
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return norm
}
