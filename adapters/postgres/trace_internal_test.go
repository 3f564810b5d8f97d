package postgres

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// traceJSONOf is the stored shape of tr.
func traceJSONOf(tr *domain.RetrievalTrace) traceJSON {
	j := traceJSON{Question: tr.Question, Query: tr.Query, QueryNote: tr.QueryNote, Method: tr.Method, Note: tr.Note, Embedder: tr.Embedder, KnowledgeVersion: tr.KnowledgeVersion,
		TopK: tr.TopK, Threshold: tr.Threshold, Missing: tr.Missing, Answerability: tr.Answerability, Verdict: tr.Verdict,
		AnswerFeatureNames: tr.AnswerFeatureNames, AnswerFeatures: tr.AnswerFeatures,
		FeatureNames: tr.FeatureNames, Candidates: make([]candidateJSON, len(tr.Candidates))}
	for _, f := range tr.Focus {
		j.Focus = append(j.Focus, focusJSON(f))
	}
	for i, c := range tr.Candidates {
		j.Candidates[i] = candidateJSON(c)
	}
	return j
}

// marshalTraceJSON is what encodeTrace must write: traceJSON through
// encoding/json.
func marshalTraceJSON(t *testing.T, tr *domain.RetrievalTrace) []byte {
	t.Helper()
	b, err := json.Marshal(traceJSONOf(tr))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodeTrace(t *testing.T) {
	tests := []struct {
		name  string
		trace domain.RetrievalTrace
	}{
		{"empty", domain.RetrievalTrace{}},
		{"typical", domain.RetrievalTrace{Query: "how do I reset my password", Method: "hybrid", Embedder: "local-hash-384", KnowledgeVersion: 7, TopK: 5, Threshold: 0.2,
			Candidates: []domain.TraceCandidate{
				{ChunkID: "chk_1", SourceID: "src_1", DocumentName: "Passwords", KeywordRank: 1, KeywordScore: 0.8123456789012345, VectorRank: 3, VectorScore: 0.41, Score: 0.032266458495966696, Kept: true, Reason: domain.TraceKept},
				{ChunkID: "chk_2", SourceID: "src_2", DocumentName: "Billing", VectorRank: 1, VectorScore: 0.19, Score: 0.01639344262295082, Reason: domain.TraceBelowThreshold},
			}}},
		{"reranked", domain.RetrievalTrace{Query: "do you ship to canada", Method: "hybrid+rerank", TopK: 5, Threshold: 0.5,
			Focus:   []domain.FocusTerm{{Word: "ship", Weight: 0.4, InKnowledge: true}, {Word: "canada", Weight: 1}, {Word: "pasword", Weight: 0.5, InKnowledge: true, Typo: true}},
			Missing: []string{"canada"}, Answerability: 0.21, Verdict: domain.VerdictNotAnswerable, FeatureNames: []string{"coverage", "window"},
			AnswerFeatureNames: []string{"page", "missingName"}, AnswerFeatures: []float64{0.6666666666666666, 1},
			Candidates: []domain.TraceCandidate{
				{ChunkID: "chk_1", KeywordRank: 1, Score: 3.25, Relevance: 0.4123456789, Features: []float64{0.5, 0.25}, Missing: []string{"canada", "\"x\""}, Reason: domain.TraceNotAnswerable},
				{ChunkID: "chk_2", Score: -1.5, Relevance: 0.01, Features: []float64{0, 1e-9}, MatchedQuestion: "Do you ship \"abroad\"?", Reason: domain.TraceNotAnswerable},
			}}},
		{"follow-up", domain.RetrievalTrace{Question: "and how much is express?", Query: "and how much is express?\nHow long does standard delivery take?",
			QueryNote: "follow-up: the query adds the conversation's previous question", Method: "hybrid", TopK: 5}},
		{"text to escape", domain.RetrievalTrace{Question: "\"quoted\" <b>", QueryNote: "a \\ note\n", Query: "\"quoted\" \\ back <b>&amp;</b>\n\ttab \u2028 ünïcödé 日本 \x00\x7f", Method: "keyword", Note: "the index is loading: keyword search in PostgreSQL only",
			Candidates: []domain.TraceCandidate{{DocumentName: "Q&A: \"returns\" <policy>", Reason: "x"}}}},
		{"numbers at the format edges", domain.RetrievalTrace{Threshold: 1e-7, KnowledgeVersion: -3, TopK: -1,
			Candidates: []domain.TraceCandidate{
				{KeywordScore: 1e21, VectorScore: 123456789.125, Score: -0.000001},
				{KeywordScore: 1e-300, VectorScore: -1e-7, Score: 5e-324},
				{KeywordScore: 1e20, VectorScore: 999999999999999999999.0, Score: math.MaxFloat64},
			}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := encodeTrace(&tt.trace)
			if err != nil {
				t.Fatal(err)
			}
			sameTrace(t, got, marshalTraceJSON(t, &tt.trace))
		})
	}

	// Random traces, floats drawn across magnitudes.
	rng := rand.New(rand.NewPCG(1, 2))
	float := func() float64 {
		switch rng.IntN(4) {
		case 0:
			return 0
		case 1:
			return rng.Float64()
		default:
			return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(60)-30))
		}
	}
	for i := range 2000 {
		tr := domain.RetrievalTrace{Query: "q", Method: "hybrid", Threshold: float(), KnowledgeVersion: rng.Int64(), TopK: rng.IntN(50)}
		for range rng.IntN(3) {
			tr.AnswerFeatureNames, tr.AnswerFeatures = append(tr.AnswerFeatureNames, "f"), append(tr.AnswerFeatures, float())
		}
		for range rng.IntN(25) {
			tr.Candidates = append(tr.Candidates, domain.TraceCandidate{ChunkID: domain.NewID(domain.PrefixChunk), KeywordRank: rng.IntN(3),
				KeywordScore: float(), VectorRank: rng.IntN(3), VectorScore: float(), Score: float(), Kept: rng.IntN(2) == 0, Reason: domain.TraceBeyondTopK})
		}
		got, _ := encodeTrace(&tr)
		if !sameTrace(t, got, marshalTraceJSON(t, &tr)) {
			t.Fatalf("random trace %d", i)
		}
	}
}

// sameTrace reports (and fails the test) whether got, as encodeTrace wrote
// it, decodes to what want, from encoding/json, does: the same text and
// fields, and the same scores to 6 significant digits.
func sameTrace(t *testing.T, got, want []byte) bool {
	t.Helper()
	var g, w traceJSON
	if err := json.Unmarshal(got, &g); err != nil {
		t.Errorf("%s is not JSON: %v", got, err)
		return false
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	near := func(a, b float64) bool { return a == b || math.Abs(a-b) <= 5e-6*math.Abs(b) }
	ok := len(g.Candidates) == len(w.Candidates) && near(g.Threshold, w.Threshold)
	for i := 0; ok && i < len(g.Candidates); i++ {
		gc, wc := g.Candidates[i], w.Candidates[i]
		ok = near(gc.KeywordScore, wc.KeywordScore) && near(gc.VectorScore, wc.VectorScore) && near(gc.Score, wc.Score) &&
			near(gc.Relevance, wc.Relevance) && len(gc.Features) == len(wc.Features)
		for k := 0; ok && k < len(gc.Features); k++ {
			ok = near(gc.Features[k], wc.Features[k])
		}
		gc.KeywordScore, gc.VectorScore, gc.Score, gc.Relevance, gc.Features = wc.KeywordScore, wc.VectorScore, wc.Score, wc.Relevance, wc.Features
		ok = ok && reflect.DeepEqual(gc, wc)
	}
	for k := 0; ok && k < len(g.Focus) && k < len(w.Focus); k++ {
		ok = near(g.Focus[k].Weight, w.Focus[k].Weight)
		g.Focus[k].Weight = w.Focus[k].Weight
	}
	ok = ok && near(g.Answerability, w.Answerability) && len(g.AnswerFeatures) == len(w.AnswerFeatures)
	for k := 0; ok && k < len(g.AnswerFeatures); k++ {
		ok = near(g.AnswerFeatures[k], w.AnswerFeatures[k])
	}
	g.Threshold, g.Answerability, g.AnswerFeatures, g.Candidates, w.Candidates = w.Threshold, w.Answerability, w.AnswerFeatures, nil, nil
	if !ok || !reflect.DeepEqual(g, w) {
		t.Errorf("encodeTrace wrote\n%s\nencoding/json writes\n%s", got, want)
		return false
	}
	return true
}

// A score that is not finite cannot fail an answer's storage.
func TestEncodeTraceWritesNonFiniteScoresAsZero(t *testing.T) {
	tr := domain.RetrievalTrace{Threshold: math.NaN(), Candidates: []domain.TraceCandidate{{Score: math.Inf(1), VectorScore: math.Inf(-1)}}}
	b, err := encodeTrace(&tr)
	if err != nil {
		t.Fatal(err)
	}
	var j traceJSON
	if err := json.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s is not JSON: %v", b, err)
	}
	if j.Threshold != 0 || j.Candidates[0].Score != 0 || j.Candidates[0].VectorScore != 0 {
		t.Errorf("decoded %+v", j)
	}
}

func BenchmarkEncodeTrace(b *testing.B) {
	tr := domain.RetrievalTrace{Query: "how do I reset my password", Method: "hybrid", Embedder: "local-hash-384", KnowledgeVersion: 7, TopK: 5, Threshold: 0.2}
	for i := range 20 {
		tr.Candidates = append(tr.Candidates, domain.TraceCandidate{ChunkID: domain.NewID(domain.PrefixChunk), SourceID: domain.NewID(domain.PrefixSource),
			DocumentName: "Resetting your password", KeywordRank: i + 1, KeywordScore: 1 / float64(i+3), VectorRank: i + 2, VectorScore: 1 / float64(i+7),
			Score: 1/float64(61+i) + 1/float64(62+i), Kept: i < 5, Reason: domain.TraceBeyondTopK})
	}
	b.Run("encodeTrace", func(b *testing.B) {
		for b.Loop() {
			_, _ = encodeTrace(&tr)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(traceJSONOf(&tr))
		}
	})
}
