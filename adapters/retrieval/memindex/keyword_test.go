package memindex

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/conciergehq/concierge/core/domain"
)

// docsOf makes title-less documents from bodies.
func docsOf(bodies ...string) []Doc {
	docs := make([]Doc, len(bodies))
	for i, b := range bodies {
		docs[i].Text = b
	}
	return docs
}

func mustBuild(t testing.TB, docs []Doc, dims int) *Index {
	t.Helper()
	ix, err := Build(docs, dims)
	if err != nil {
		t.Fatalf("Build: %v", err)
	}
	return ix
}

func hitDocs(hits []Hit) []int {
	out := make([]int, len(hits))
	for i, h := range hits {
		out[i] = h.Doc
	}
	return out
}

// filler pads a document with words that no query uses, so documents
// compared by a test have equal lengths.
const filler = "lorem ipsum dolor sit amet consectetur adipiscing elit"

func TestKeywordRanking(t *testing.T) {
	tests := []struct {
		name  string
		docs  []Doc
		query string
		k     int
		want  []int // documents, best first; nil for no result
	}{
		{
			name: "rare term outranks common term",
			docs: append(docsOf(
				"password reset "+filler,
				"sso setup "+filler,
			), docsOf(slices.Repeat([]string{"password help " + filler}, 20)...)...),
			query: "password sso",
			k:     2,
			want:  []int{1, 0},
		},
		{
			name: "title boost",
			docs: []Doc{
				{Title: "Shipping", Text: "refund " + filler},
				{Title: "Refund policy", Text: "shipping " + filler},
				{Title: "Other", Text: filler},
			},
			query: "refund",
			k:     10,
			want:  []int{1, 0},
		},
		{
			name:  "stemming: refunds matches refund and refunded",
			docs:  docsOf("how to get a refund", "your order was refunded", "shipping times"),
			query: "Refunds",
			k:     10,
			want:  []int{0, 1},
		},
		{
			name:  "stemming of a form absent from the documents",
			docs:  docsOf("cancel the subscription", "billing"),
			query: "cancelling subscriptions",
			k:     10,
			want:  []int{0},
		},
		{
			name:  "stopword-only query",
			docs:  docsOf("how to do this", "what is it"),
			query: "how to do what it is",
			k:     10,
			want:  nil,
		},
		{
			name:  "unknown terms only",
			docs:  docsOf("alpha beta"),
			query: "gamma delta",
			k:     10,
			want:  nil,
		},
		{
			name:  "empty query",
			docs:  docsOf("alpha beta"),
			query: "  ,.; ",
			k:     10,
			want:  nil,
		},
		{
			name:  "OR semantics: any term matches, both terms rank first",
			docs:  docsOf("alpha "+filler, "beta "+filler, "gamma "+filler, "alpha beta "+filler),
			query: "alpha beta",
			k:     10,
			want:  []int{3, 0, 1},
		},
		{
			name:  "ties by document position",
			docs:  docsOf("invoice", "invoice", "other", "invoice"),
			query: "invoice",
			k:     10,
			want:  []int{0, 1, 3},
		},
		{
			name:  "k cuts the list",
			docs:  docsOf("invoice", "invoice", "invoice"),
			query: "invoice",
			k:     2,
			want:  []int{0, 1},
		},
		{
			name:  "k below 1",
			docs:  docsOf("invoice"),
			query: "invoice",
			k:     0,
			want:  nil,
		},
		{
			name:  "case and Unicode folding",
			docs:  docsOf("Café CRÈME", "Привет мир", "ÜBER uns"),
			query: "café crème ПРИВЕТ über",
			k:     10,
			want:  []int{0, 1, 2},
		},
		{
			name:  "punctuation splits words",
			docs:  docsOf("e-mail: support@example.com", "mail"),
			query: "EXAMPLE.COM",
			k:     10,
			want:  []int{0},
		},
		{
			name:  "over-long words are not indexed",
			docs:  docsOf(strings.Repeat("x", maxWordBytes+1)+" short", strings.Repeat("y", maxWordBytes)),
			query: strings.Repeat("x", maxWordBytes+1) + " " + strings.Repeat("y", maxWordBytes),
			k:     10,
			want:  []int{1},
		},
		{
			name:  "no documents",
			docs:  nil,
			query: "anything",
			k:     10,
			want:  nil,
		},
		{
			name:  "documents without text",
			docs:  []Doc{{}, {Title: "", Text: ""}},
			query: "anything",
			k:     10,
			want:  nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix := mustBuild(t, tt.docs, 0)
			got := ix.Keyword(tt.query, tt.k)
			if !slices.Equal(hitDocs(got), tt.want) {
				t.Fatalf("Keyword(%q) = %v, want docs %v", tt.query, got, tt.want)
			}
			for i := 1; i < len(got); i++ {
				if got[i].Score > got[i-1].Score {
					t.Fatalf("scores not descending: %v", got)
				}
			}
			for _, h := range got {
				if !(h.Score > 0) {
					t.Fatalf("non-positive score: %v", got)
				}
			}
		})
	}
}

// reference is a straightforward BM25F over the same analysis, in float64,
// with the same count saturation as the postings.
type reference struct {
	p                    Params
	title, body          []map[string]int
	titleLen, bodyLen    []float64
	avgTitle, avgBody, n float64
	df                   map[string]int
}

func newReference(docs []Doc, p Params) *reference {
	r := &reference{p: p, df: map[string]int{}, n: float64(len(docs))}
	count := func(s string) (map[string]int, float64) {
		m := map[string]int{}
		var l float64
		forEachWord(s, nil, func(w []byte) {
			if t := termOf(string(w)); t != "" {
				m[t]++
				l++
			}
		})
		return m, l
	}
	for _, d := range docs {
		tm, tl := count(d.Title)
		bm, bl := count(d.Text)
		r.title, r.body = append(r.title, tm), append(r.body, bm)
		r.titleLen, r.bodyLen = append(r.titleLen, tl), append(r.bodyLen, bl)
		r.avgTitle += tl / r.n
		r.avgBody += bl / r.n
		seen := map[string]bool{}
		for t := range tm {
			seen[t] = true
		}
		for t := range bm {
			seen[t] = true
		}
		for t := range seen {
			r.df[t]++
		}
	}
	return r
}

func (r *reference) scores(query string) map[int]float64 {
	var terms []string
	forEachWord(query, nil, func(w []byte) {
		if t := termOf(string(w)); t != "" && !slices.Contains(terms, t) {
			terms = append(terms, t)
		}
	})
	out := map[int]float64{}
	b, k1 := r.p.B, r.p.K1
	for _, t := range terms {
		df := float64(r.df[t])
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (r.n-df+0.5)/(df+0.5))
		for d := range r.body {
			tt, tb := min(r.title[d][t], maxTitleCount), min(r.body[d][t], maxBodyCount)
			if tt == 0 && tb == 0 {
				continue
			}
			var tf float64
			if tt > 0 {
				tf += r.p.TitleBoost * float64(tt) / (1 - b + b*r.titleLen[d]/r.avgTitle)
			}
			if tb > 0 {
				tf += float64(tb) / (1 - b + b*r.bodyLen[d]/r.avgBody)
			}
			out[d] += idf * (k1 + 1) * tf / (tf + k1)
		}
	}
	return out
}

// TestKeywordMatchesReference checks every score against the plain
// formula on random corpora, for rare-term queries (the tracked path) and
// common-term ones (the full scan), and with repeated words in titles and
// bodies (the packed counts).
func TestKeywordMatchesReference(t *testing.T) {
	params := []Params{DefaultParams(), {K1: 0.9, B: 0.4, TitleBoost: 3}, {K1: 2, B: 1, TitleBoost: 0.5}, {K1: 1.2, B: 0, TitleBoost: 1}}
	for pi, p := range params {
		c := newCorpus(uint64(7+pi), 2_000)
		docs := c.docs(600, 0)
		// Some documents repeat a word many times, past the saturation.
		for i := 0; i < len(docs); i += 37 {
			docs[i].Text += strings.Repeat(" zorbly", 70)
			docs[i].Title += " zorbly zorbly zorbly zorbly zorbly"
		}
		ix, err := BuildWith(docs, 0, p)
		if err != nil {
			t.Fatal(err)
		}
		ref := newReference(docs, p)
		queries := append(c.queries(40), "zorbly", "zorbly the of and", c.vocab[0]+" "+c.vocab[200]+" "+c.vocab[1500])
		for _, q := range queries {
			want := ref.scores(q)
			got := ix.Keyword(q, len(docs))
			if len(got) != len(want) {
				t.Fatalf("params %d query %q: %d hits, reference %d", pi, q, len(got), len(want))
			}
			for i, h := range got {
				w, ok := want[h.Doc]
				if !ok || math.Abs(h.Score-w) > 1e-4*math.Max(1, w) {
					t.Fatalf("params %d query %q: doc %d score %v, reference %v (present %v)", pi, q, h.Doc, h.Score, w, ok)
				}
				if i > 0 && (got[i-1].Score < h.Score || got[i-1].Score == h.Score && got[i-1].Doc > h.Doc) {
					t.Fatalf("params %d query %q: order broken at %d: %v", pi, q, i, got[i-1:i+1])
				}
			}
		}
	}
}

func TestBuildInvalid(t *testing.T) {
	tests := []struct {
		name string
		docs []Doc
		dims int
		p    Params
	}{
		{"negative dims", nil, -1, DefaultParams()},
		{"vector of wrong length", []Doc{{Vector: []float32{1, 0}}}, 3, DefaultParams()},
		{"vector without dims", []Doc{{Vector: []float32{1}}}, 0, DefaultParams()},
		{"NaN in vector", []Doc{{Vector: []float32{float32(math.NaN()), 0}}}, 2, DefaultParams()},
		{"Inf in vector", []Doc{{Vector: []float32{float32(math.Inf(1)), 0}}}, 2, DefaultParams()},
		{"negative K1", nil, 0, Params{K1: -1, B: 0.75, TitleBoost: 1}},
		{"B above 1", nil, 0, Params{K1: 1, B: 1.5, TitleBoost: 1}},
		{"NaN B", nil, 0, Params{K1: 1, B: math.NaN(), TitleBoost: 1}},
		{"negative TitleBoost", nil, 0, Params{K1: 1, B: 0.5, TitleBoost: -2}},
		{"infinite K1", nil, 0, Params{K1: math.Inf(1), B: 0.5, TitleBoost: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := BuildWith(tt.docs, tt.dims, tt.p)
			if ix != nil || !errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("BuildWith = %v, %v; want a validation error", ix, err)
			}
			var ve *domain.ValidationError
			if !errors.As(err, &ve) || ve.Message == "" {
				t.Fatalf("error %v is not a ValidationError with a message", err)
			}
		})
	}
}

func TestRepeatedQueryTermCountsOnce(t *testing.T) {
	ix := mustBuild(t, docsOf("refund refund", "refund", "order refund"), 0)
	once, thrice := ix.Keyword("refund", 10), ix.Keyword("refund Refunds refund", 10)
	if len(once) != 3 || !slices.Equal(once, thrice) {
		t.Fatalf("Keyword(refund) = %v, with the word repeated = %v; want the same 3 hits", once, thrice)
	}
}

func TestLongQueryKeepsRarestTerms(t *testing.T) {
	var common []string
	for i := range maxQueryTerms + 8 {
		common = append(common, fmt.Sprintf("word%d", i))
	}
	// Every document has the common words; only the last has the rare one.
	docs := docsOf(strings.Join(common, " "), strings.Join(common, " "), strings.Join(common, " ")+" zebra")
	ix := mustBuild(t, docs, 0)
	got := ix.Keyword(strings.Join(common, " ")+" zebra", 10)
	if len(got) != 3 || got[0].Doc != 2 {
		t.Fatalf("Keyword(long query) = %v, want doc 2 first of 3", got)
	}
}

func TestTitleBoostZeroIgnoresTitles(t *testing.T) {
	docs := []Doc{{Title: "refund", Text: "other words"}, {Title: "refund", Text: "refund here"}, {Text: "refund"}}
	ix, err := BuildWith(docs, 0, Params{K1: 1.2, B: 0.75, TitleBoost: 0})
	if err != nil {
		t.Fatal(err)
	}
	got := hitDocs(ix.Keyword("refund", 10))
	slices.Sort(got)
	if !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("got docs %v, want [1 2]: a title-only match must not count", got)
	}
}

// TestIndexKeepsNoText checks that no dictionary key points into a
// document's text: an index must not pin its caller's chunks in memory.
func TestIndexKeepsNoText(t *testing.T) {
	docs := []Doc{{Title: "Refund policy", Text: "refunds take five days; refund the order"}, {Text: "ship orders"}}
	ix := mustBuild(t, docs, 0)
	arena := uintptr(unsafe.Pointer(unsafe.StringData(ix.arena)))
	for w := range ix.words {
		p := uintptr(unsafe.Pointer(unsafe.StringData(w)))
		if p < arena || p+uintptr(len(w)) > arena+uintptr(len(ix.arena)) {
			t.Fatalf("key %q lies outside the index's arena", w)
		}
	}
	if len(ix.words) == 0 {
		t.Fatal("no words indexed")
	}
}

func TestForEachWord(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", "world"}},
		{"don't stop-me now", []string{"don", "t", "stop", "me", "now"}},
		{"v2.1 404 error", []string{"v2", "1", "404", "error"}},
		{"naïve Ünïcödé ΣΊΣΥΦΟΣ", []string{"naïve", "ünïcödé", "σίσυφοσ"}},
		{"日本語のテキスト", []string{"日本語のテキスト"}},
		{"", nil},
		{"   \t\n", nil},
		{strings.Repeat("a", maxWordBytes) + " " + strings.Repeat("b", maxWordBytes+1) + " c", []string{strings.Repeat("a", maxWordBytes), "c"}},
	}
	for _, tt := range tests {
		var got []string
		forEachWord(tt.in, nil, func(w []byte) { got = append(got, string(w)) })
		if !slices.Equal(got, tt.want) {
			t.Errorf("forEachWord(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestTermOf(t *testing.T) {
	tests := map[string]string{
		"refunds":   "refund",
		"refunding": "refund",
		"refunded":  "refund",
		"running":   "run",
		"the":       "",
		"how":       "",
		"2024":      "2024",
	}
	for in, want := range tests {
		if got := termOf(in); got != want {
			t.Errorf("termOf(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestKeywordConcurrent runs many searches at once (under -race in CI)
// and checks each against the sequential answer.
func TestKeywordConcurrent(t *testing.T) {
	c := newCorpus(3, 3_000)
	docs := c.docs(1_500, 8)
	ix := mustBuild(t, docs, 8)
	queries := c.queries(30)
	vecs := make([][]float32, len(queries))
	wantKW := make([][]Hit, len(queries))
	wantVec := make([][]Hit, len(queries))
	for i, q := range queries {
		vecs[i] = c.vector(8)
		wantKW[i] = ix.Keyword(q, 10)
		wantVec[i] = ix.Vector(vecs[i], 10)
	}
	errs := make(chan string, 8)
	done := make(chan struct{})
	for g := range 8 {
		go func() {
			defer func() { done <- struct{}{} }()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for range 200 {
				i := rng.IntN(len(queries))
				if got := ix.Keyword(queries[i], 10); !slices.Equal(got, wantKW[i]) {
					errs <- "keyword " + queries[i]
					return
				}
				if got := ix.Vector(vecs[i], 10); !slices.Equal(got, wantVec[i]) {
					errs <- "vector"
					return
				}
			}
		}()
	}
	for range 8 {
		<-done
	}
	close(errs)
	for e := range errs {
		t.Errorf("concurrent result differs: %s", e)
	}
}

func TestKeywordCeiling(t *testing.T) {
	c := newCorpus(5, 3_000)
	docs := c.docs(500, 0)
	ix := mustBuild(t, docs, 0)
	for _, q := range c.queries(30) {
		ceiling := ix.KeywordCeiling(q)
		for _, h := range ix.Keyword(q, 5) {
			if h.Score >= ceiling {
				t.Fatalf("query %q: score %v reaches the ceiling %v", q, h.Score, ceiling)
			}
		}
	}
	if got := ix.KeywordCeiling("how to do it"); got != 0 {
		t.Fatalf("stopword-only ceiling = %v, want 0", got)
	}
	known := ix.KeywordCeiling(c.vocab[len(commonWords)])
	unknown := ix.KeywordCeiling("qqqzzzxv")
	if !(unknown > known && known > 0) {
		t.Fatalf("ceilings: unknown word %v, common word %v; want unknown > common > 0", unknown, known)
	}
}
