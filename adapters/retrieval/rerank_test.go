package retrieval_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/adapters/embedding/local"
	"github.com/conciergehq/concierge/adapters/retrieval"
	"github.com/conciergehq/concierge/adapters/retrieval/memindex"
	"github.com/conciergehq/concierge/adapters/retrieval/synonyms"
	"github.com/conciergehq/concierge/core/domain"
)

// judged builds an index over texts, each a chunk under a heading (its
// first line), runs the hybrid legs and the reranker on question, and
// returns the judgement with the chunks.
func judged(t *testing.T, texts []string, question string) (retrieval.Judgement, []domain.Chunk) {
	t.Helper()
	chunks := make([]domain.Chunk, len(texts))
	for i, text := range texts {
		heading, _, _ := strings.Cut(text, "\n")
		chunks[i] = domain.Chunk{ID: fmt.Sprint("chk_", i), SourceID: fmt.Sprint("src_", i), DocumentName: fmt.Sprint("doc ", i),
			Heading: heading, Text: text}
	}
	return judgedChunks(t, chunks, question), chunks
}

// judgedChunks is judged for chunks as the caller built them.
func judgedChunks(t *testing.T, chunks []domain.Chunk, question string) retrieval.Judgement {
	t.Helper()
	emb, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]memindex.Doc, len(chunks))
	for i, c := range chunks {
		docs[i] = memindex.Doc{Title: retrieval.IndexTitle(c), Text: c.Text, Name: c.DocumentName, Vector: emb.EmbedOne(c.Text)}
	}
	ix, err := memindex.Build(docs, emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	ranked := retrieval.Rank(ix, question, emb.EmbedOne(question), retrieval.Hybrid, retrieval.DefaultCandidates)
	syn, err := synonyms.Load()
	if err != nil {
		t.Fatal(err)
	}
	return retrieval.NewReranker(syn).Rerank(ix, question, "", ranked, func(i int) domain.Chunk { return chunks[i] })
}

const (
	refunds  = "Refund policy\nYou can return any unused item within 30 days of delivery. Refunds are issued to the original payment method within 5 business days."
	shipping = "Shipping\nStandard delivery takes 3-5 business days and costs 4.95 GBP. Express next-day delivery costs 9.50 GBP when ordered before 2pm."
)

// The two examples on a two-chunk knowledge base: the express
// question is answered from Shipping (it was a false fallback under the
// old absolute threshold), the Canada question falls back and says Canada
// is what is missing.
func TestRerankDecidesOnTheQuestionsFocus(t *testing.T) {
	threshold := domain.DefaultRetrievalThreshold
	tests := []struct {
		question    string
		answer      bool
		best        string // chunk id answered from
		wantMissing string
	}{
		{"How much is express delivery?", true, "chk_1", ""},
		{"how long does standard delivery take", true, "chk_1", ""},
		{"Can I get a refund on an unused item?", true, "chk_0", ""},
		{"Do you ship to Canada?", false, "", "canada"},
		{"Can I pay with PayPal?", false, "", "paypal"},
		{"What's the capital of Australia?", false, "", "australia"},
		// Words around the subject that no passage holds ("one more
		// thing", "yesterday", "else") do not make the knowledge miss it;
		// the subject still decides.
		{"One more thing: how long does shipping take?", true, "chk_1", ""},
		{"I ordered yesterday. Is there anything else than express delivery?", true, "chk_1", ""},
		{"Ever since yesterday, several times already: how much is express delivery?", true, "chk_1", ""},
		{"Quick question, I ordered yesterday: do you ship to Canada?", false, "", "canada"},
		{"One more thing: can I pay with PayPal?", false, "", "paypal"},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			j, _ := judged(t, []string{refunds, shipping}, tt.question)
			got := retrieval.Decide(j, 5, threshold)
			if tt.answer != (len(got) > 0) {
				t.Fatalf("answers = %v (answerability %.3f), want %v", len(got) > 0, j.Answerability, tt.answer)
			}
			if tt.answer && got[0].ID != tt.best {
				t.Errorf("best passage = %s, want %s", got[0].ID, tt.best)
			}
			if tt.wantMissing != "" && !slices.Contains(j.Candidates[0].Missing, tt.wantMissing) {
				t.Errorf("missing = %v, want it to name %q", j.Candidates[0].Missing, tt.wantMissing)
			}
			for _, c := range got {
				if !(c.Score >= 0 && c.Score <= 1) {
					t.Errorf("relevance %v is not in [0, 1]", c.Score)
				}
			}
		})
	}
}

// "How much is express delivery?" asks a price though it names none: on a
// knowledge base that says how long express shipping takes and gives no
// price for it (the demo workspace's shipping policy), the decision reads
// that the best passage holds no amount, which the same question asked
// for the duration does not. (The embedded model then declines: see
// TestDevSeedsADemoWorkspaceOnce.)
func TestHowMuchIsNeedsAPrice(t *testing.T) {
	noPrice := "Shipping policy\nStandard shipping takes 3 to 5 business days; express shipping takes 1 to 2 business days."
	noNumber := slices.Index(retrieval.AnswerFeatureNames[:], "noNumber")
	price, _ := judged(t, []string{refunds, noPrice}, "How much is express delivery?")
	duration, _ := judged(t, []string{refunds, noPrice}, "How long does express delivery take?")
	if price.Answer[noNumber] != 1 || duration.Answer[noNumber] != 0 {
		t.Fatalf("noNumber = %v for the price, %v for the duration; want 1 and 0", price.Answer[noNumber], duration.Answer[noNumber])
	}
	if price.Answerability >= duration.Answerability {
		t.Errorf("answerability %.3f for the price, %.3f for the duration", price.Answerability, duration.Answerability)
	}
}

// A text source without headings is one chunk with no heading, named by
// the source: its first line is text, not a title. The examples
// decide the same on the sources as a workspace writes them, and a focus
// word on a headless chunk's first line does not count as a title word (it
// raised the ranking and lowered the answerability, as a heading does),
// while the same line under a heading does.
func TestAChunkWithoutAHeadingHasNoTitle(t *testing.T) {
	express := "Express next-day delivery costs 9.50 GBP when ordered before 2pm.\nStandard delivery takes 3-5 business days and costs 4.95 GBP."
	sources := []domain.Chunk{
		{ID: "refunds", SourceID: "src_refunds", DocumentName: "Refund policy", SourceType: domain.SourceText,
			Text: "You can return any unused item within 30 days of delivery. Refunds are issued to the original payment method within 5 business days."},
		{ID: "shipping", SourceID: "src_shipping", DocumentName: "Shipping", SourceType: domain.SourceText, Text: express},
	}
	tests := []struct {
		question string
		best     string // "" for a fallback
	}{
		{"How much is express delivery?", "shipping"},
		{"how long does standard delivery take", "shipping"},
		{"Can I get a refund on an unused item?", "refunds"},
		{"Do you ship to Canada?", ""},
		{"Can I pay with PayPal?", ""},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			j := judgedChunks(t, sources, tt.question)
			got := retrieval.Decide(j, 5, domain.DefaultRetrievalThreshold)
			switch {
			case tt.best == "" && len(got) > 0:
				t.Fatalf("answers from %s (answerability %.3f), want a fallback", got[0].ID, j.Answerability)
			case tt.best != "" && len(got) == 0:
				t.Fatalf("falls back (answerability %.3f), want an answer from %s", j.Answerability, tt.best)
			case tt.best != "" && got[0].ID != tt.best:
				t.Errorf("best passage = %s, want %s", got[0].ID, tt.best)
			}
		})
	}

	title := slices.Index(retrieval.FeatureNames[:], "title")
	titleOf := func(c domain.Chunk) float64 {
		t.Helper()
		j := judgedChunks(t, []domain.Chunk{sources[0], c}, "How much is express delivery?")
		for _, cand := range j.Candidates {
			if cand.Doc == 1 {
				return cand.Features[title]
			}
		}
		t.Fatalf("%s is not a candidate", c.ID)
		return 0
	}
	if got := titleOf(sources[1]); got != 0 {
		t.Errorf("title feature of a chunk without a heading = %.3f, want 0", got)
	}
	headed := sources[1]
	headed.Heading, headed.Text = "Express delivery", "Express delivery\n"+express
	if got := titleOf(headed); got <= 0 {
		t.Errorf("title feature of the chunk under the heading %q = %.3f, want > 0", headed.Heading, got)
	}
}

// The relevance of the same passage for the same question must not drift
// with the size of the knowledge base: the two chunks alone, and the same
// two among 5,000 unrelated ones.
func TestRelevanceDoesNotDriftWithKnowledgeSize(t *testing.T) {
	filler := make([]string, 0, 5002)
	filler = append(filler, refunds, shipping)
	topics := []string{"password", "invoice", "account", "printer", "warranty", "garden", "battery", "screen", "keyboard", "router"}
	for i := range 5000 {
		filler = append(filler, fmt.Sprintf("Article %d\nThe %s guide explains settings for %s and %s, step %d of the setup.",
			i, topics[i%len(topics)], topics[(i/3)%len(topics)], topics[(i/7)%len(topics)], i%13))
	}
	for _, q := range []string{"How much is express delivery?", "Do you ship to Canada?", "Can I get a refund on an unused item?"} {
		small, _ := judged(t, filler[:2], q)
		large, _ := judged(t, filler, q)
		if d := math.Abs(small.Answerability - large.Answerability); d > 0.15 {
			t.Errorf("%q: answerability %.3f on 2 chunks, %.3f on %d: drifts by %.3f", q, small.Answerability, large.Answerability, len(filler), d)
		}
		if (small.Answerability >= domain.DefaultRetrievalThreshold) != (large.Answerability >= domain.DefaultRetrievalThreshold) {
			t.Errorf("%q: the decision changes with the knowledge base's size (%.3f against %.3f)", q, small.Answerability, large.Answerability)
		}
	}
}

// A typo does not make a question's word read as missing from the
// knowledge; a short word one letter from another is not taken for it.
func TestRerankForgivesTypos(t *testing.T) {
	j, _ := judged(t, []string{"Passwords\nYour password must be at least 9 characters long.", shipping}, "whats the minimum pasword length")
	var found bool
	for _, f := range j.Focus {
		if f.Word == "pasword" {
			found = true
			if !f.Typo || f.Term == memindex.NoTerm {
				t.Errorf("pasword = %+v, want a typo of password", f)
			}
		}
	}
	if !found {
		t.Fatalf("focus = %+v", j.Focus)
	}
	j, _ = judged(t, []string{"Chat\nOpen the chat from the menu."}, "chart")
	if f := j.Focus[0]; f.Typo {
		t.Errorf("chart was taken for chat: %+v", f)
	}
}

// The features of every candidate are in [0, 1] and named.
func TestRerankFeaturesAreBounded(t *testing.T) {
	j, _ := judged(t, []string{refunds, shipping, "Q\nExpress express express delivery delivery costs."}, "express delivery costs refund")
	if len(retrieval.FeatureNames) != retrieval.FeatureCount {
		t.Fatalf("%d names for %d features", len(retrieval.FeatureNames), retrieval.FeatureCount)
	}
	for _, c := range j.Candidates {
		for k, f := range c.Features {
			if !(f >= 0 && f <= 1) {
				t.Errorf("candidate %d: %s = %v, not in [0, 1]", c.Doc, retrieval.FeatureNames[k], f)
			}
		}
		if !(c.Relevance >= 0 && c.Relevance <= 1) {
			t.Errorf("relevance %v", c.Relevance)
		}
	}
	if !(j.Answerability >= 0 && j.Answerability <= 1) {
		t.Errorf("answerability %v", j.Answerability)
	}
}

// A follow-up's earlier question is context: it helps find the passage but
// a word of it the knowledge lacks ("Germany") does not make the new
// question unanswerable.
func TestRerankTakesContextForWhatItIs(t *testing.T) {
	tests := []struct {
		question, context, best string
	}{
		{"what about returns?", "Do you ship to Germany?", "chk_0"},
		{"and how much is express?", "How long does standard delivery take?", "chk_1"},
	}
	emb, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	syn, err := synonyms.Load()
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{refunds, shipping}
	docs := make([]memindex.Doc, len(texts))
	chunks := make([]domain.Chunk, len(texts))
	for i, text := range texts {
		docs[i] = memindex.Doc{Text: text, Vector: emb.EmbedOne(text)}
		chunks[i] = domain.Chunk{ID: fmt.Sprint("chk_", i), Text: text}
	}
	ix, err := memindex.Build(docs, emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		whole := tt.question + "\n" + tt.context
		ranked := retrieval.Rank(ix, whole, emb.EmbedOne(whole), retrieval.Hybrid, retrieval.DefaultCandidates)
		j := retrieval.NewReranker(syn).Rerank(ix, tt.question, tt.context, ranked, func(i int) domain.Chunk { return chunks[i] })
		got := retrieval.Decide(j, 5, domain.DefaultRetrievalThreshold)
		if len(got) == 0 || got[0].ID != tt.best {
			t.Errorf("%q after %q: answered from %v (answerability %.3f, missing %v), want %s", tt.question, tt.context, got, j.Answerability, j.Candidates[0].Missing, tt.best)
		}
		if slices.Contains(j.Candidates[0].Missing, "germany") {
			t.Errorf("a word of the context is reported missing: %v", j.Candidates[0].Missing)
		}
	}
}

// The answerability's page feature: an answer split over two chunks of one
// page counts the words of both; the same two chunks as two pages count
// only the best one's; and odd questions (empty, only stopwords, a script
// the knowledge does not use) give a page coverage of 0 without failing.
func TestAnswerabilityReadsTheBestPage(t *testing.T) {
	page := slices.Index(retrieval.AnswerFeatureNames[:], "page")
	if page < 0 {
		t.Fatalf("no page feature in %v", retrieval.AnswerFeatureNames)
	}
	texts := []string{
		"Express delivery\nOrders placed before 2pm arrive the next working day.",
		"Express delivery\nThe surcharge is 9.50 GBP per parcel.",
		refunds,
	}
	tests := []struct {
		name     string
		question string
		onePage  bool // the two express chunks are one document
		wantPage func(float64) bool
		wantText string
	}{
		{"split answer, one page", "When does express delivery arrive and what is the surcharge?", true, func(p float64) bool { return p > 0.99 }, "> 0.99"},
		{"split answer, two pages", "When does express delivery arrive and what is the surcharge?", false, func(p float64) bool { return p > 0.3 && p < 0.99 }, "in (0.3, 0.99)"},
		{"empty question", "", true, func(p float64) bool { return p == 0 }, "0"},
		{"only stopwords", "and the of it is", true, func(p float64) bool { return p == 0 }, "0"},
		{"non-Latin text", "速達配送の料金はいくらですか", true, func(p float64) bool { return p == 0 }, "0"},
	}
	emb, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	syn, err := synonyms.Load()
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]memindex.Doc, len(texts))
	for i, text := range texts {
		docs[i] = memindex.Doc{Text: text, Vector: emb.EmbedOne(text)}
	}
	ix, err := memindex.Build(docs, emb.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := make([]domain.Chunk, len(texts))
			for i, text := range texts {
				chunks[i] = domain.Chunk{ID: fmt.Sprint("chk_", i), SourceID: fmt.Sprint("src_", i), DocumentName: fmt.Sprint("doc ", i), Text: text}
			}
			if tt.onePage {
				chunks[1].SourceID, chunks[1].DocumentName = chunks[0].SourceID, chunks[0].DocumentName
			}
			ranked := retrieval.Rank(ix, tt.question, emb.EmbedOne(tt.question), retrieval.Hybrid, retrieval.DefaultCandidates)
			j := retrieval.NewReranker(syn).Rerank(ix, tt.question, "", ranked, func(i int) domain.Chunk { return chunks[i] })
			if got := j.Answer[page]; !tt.wantPage(got) {
				t.Errorf("page coverage = %.3f, want %s", got, tt.wantText)
			}
			if !(j.Answerability >= 0 && j.Answerability <= 1) {
				t.Errorf("answerability %v not in [0, 1]", j.Answerability)
			}
		})
	}
}

// A misspelt filler word ("somthing", "anyting", "insted") is read as the
// word it misspells: it is no focus word, and the question is judged as
// answerable as when spelt right. A real word the knowledge lacks, even
// one edit from a filler word ("theme", "these"), stays in the focus.
func TestMisspeltFillerWordsAreNoFocus(t *testing.T) {
	focusWords := func(j retrieval.Judgement) []string {
		var out []string
		for _, f := range j.Focus {
			out = append(out, f.Word)
		}
		return out
	}
	tests := []struct {
		misspelt, spelt string
	}{
		{"Is there somthing like express delivery?", "Is there something like express delivery?"},
		{"Is there anyting faster than express delivery?", "Is there anything faster than express delivery?"},
		{"Can I get express delivery insted?", "Can I get express delivery instead?"},
	}
	for _, tt := range tests {
		t.Run(tt.misspelt, func(t *testing.T) {
			got, _ := judged(t, []string{refunds, shipping}, tt.misspelt)
			want, _ := judged(t, []string{refunds, shipping}, tt.spelt)
			if !slices.Equal(focusWords(got), focusWords(want)) {
				t.Errorf("focus = %q, want %q as spelt right", focusWords(got), focusWords(want))
			}
			if math.Abs(got.Answerability-want.Answerability) > 1e-9 {
				t.Errorf("answerability = %.3f, want %.3f as spelt right", got.Answerability, want.Answerability)
			}
			// The corrected word, and it alone, says it was read from a
			// misspelling.
			var typos []string
			for _, f := range got.Focus {
				if f.Typo {
					typos = append(typos, f.Word)
				}
			}
			if len(typos) != 1 || strings.Contains(tt.misspelt, typos[0]) {
				t.Errorf("focus words read from a misspelling = %q, want the one corrected word", typos)
			}
		})
	}
	for _, question := range []string{"Is there a theme for express delivery?", "Is there a voucher for express delivery?"} {
		t.Run(question, func(t *testing.T) {
			j, _ := judged(t, []string{refunds, shipping}, question)
			word := strings.Fields(question)[3]
			if !slices.Contains(focusWords(j), word) {
				t.Errorf("focus = %q, want it to keep %q", focusWords(j), word)
			}
		})
	}
}

// A short misspelt word of the knowledge ("updte", five letters) is read
// as the word it misspells when no dictionary knows it; a real word or a
// name one edit from a word of the knowledge is not ("Gmail" is not
// "email", "chart" is not "chat").
func TestShortMisspeltWordsFindTheKnowledge(t *testing.T) {
	updates := "Updates\nAfter an update, restart the app. You can chat with support by email."
	tests := []struct {
		question, word string
		found          bool
	}{
		{"The app crashes after the last updte, what now?", "updte", true},
		{"Can I sign in with my Gmail address?", "gmail", false},
		{"Is there a chart of the versions?", "chart", false},
	}
	for _, tt := range tests {
		t.Run(tt.question, func(t *testing.T) {
			j, _ := judged(t, []string{updates}, tt.question)
			i := slices.IndexFunc(j.Focus, func(f retrieval.FocusWord) bool { return f.Word == tt.word })
			if i < 0 {
				t.Fatalf("focus %v has no %q", j.Focus, tt.word)
			}
			if found := j.Focus[i].Term != memindex.NoTerm; found != tt.found {
				t.Errorf("%q found in the knowledge = %v, want %v", tt.word, found, tt.found)
			}
		})
	}
}

// Situation words tell the asker's situation, not the subject: they rank
// as any word but the decision weighs them as generic. A number with a
// unit is one; a number in a name is the subject.
func TestSituationWords(t *testing.T) {
	j, _ := judged(t, []string{refunds, shipping}, "Since yesterday my 5gb parcel with 2fa stickers waits for express delivery, why?")
	want := map[string]bool{"yesterday": true, "5gb": true, "waits": false, "2fa": false, "express": false, "parcel": false}
	for _, f := range j.Focus {
		if situation, ok := want[f.Word]; ok {
			if f.Situation != situation {
				t.Errorf("%q: Situation = %v, want %v", f.Word, f.Situation, situation)
			}
			delete(want, f.Word)
		}
	}
	if len(want) > 0 {
		t.Errorf("not in the focus: %v", want)
	}
}
