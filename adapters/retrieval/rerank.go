package retrieval

import (
	"cmp"
	"math"
	"slices"
	"strings"
	"unicode"

	"github.com/conciergehq/concierge/adapters/retrieval/memindex"
	"github.com/conciergehq/concierge/adapters/retrieval/synonyms"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/knowledge"
	"github.com/conciergehq/concierge/ports"
)

// Reranking. Fusion by reciprocal rank orders candidates well enough to
// shortlist them, but its scores say nothing about whether a passage answers
// the question: a rank is a rank on 2 chunks and on 100,000. So every fused
// candidate is scored again on what makes a passage answer a question (does
// it hold the words the question is about, or their synonyms, close
// together, in its heading, as its Q&A question), and the features are
// combined by a logistic model into a relevance in [0, 1]: the estimated
// chance that the passage comes from a page that answers the question. Each
// feature is a share or a score already in [0, 1] that does not grow with
// the size of the knowledge base, so neither does the relevance.
//
// Whether to answer at all is a second decision, made on the best
// candidate and its page: how much of the question the page's passages
// among the first candidates hold, a name the question uses that the
// passage lacks, a quantity asked for that the passage does not hold (a
// price needs an amount of money, "how long" a duration), words the
// knowledge never uses. Its answerability is what an
// agent's threshold is compared with.
//
// Both models were fitted on the tuning halves of the evaluation sets in
// testdata/eval (`EVAL_SPLIT=tuning EVAL_FIT=1 make eval` prints them) and
// are measured on the held-out halves (docs/benchmarks.md).

// rerankDepth is how many fused candidates are scored again.
const rerankDepth = 40

// windowWords is the span, in words, within which a passage must hold the
// question's words to count as saying them together (about two sentences).
const windowWords = 24

// pairDistance is how far apart two neighbouring question words may be in a
// passage to count as the same phrase ("express ... delivery").
const pairDistance = 3

// genericWeight is what a word that is common in any support question
// ("how", "work", "account", "problem") counts for, against 1 for a word
// that says what the question is about.
const genericWeight = 0.3

// contextWeight is what a word of a follow-up's earlier questions counts
// for, against the same word in the question itself.
const contextWeight = 0.5

// genericWords are words of support questions that rarely carry their
// subject. They are not stopwords (a passage may still match them); they
// weigh less in coverage, and their absence never makes a question
// unanswerable.
var genericWords = wordSet(`how what when where why which who can could would should will may might
must do does did done get gets got getting use used using need needs needed want wants wanted know
tell please help hi hello hey thanks thank way ways possible able anyone someone something anything
thing things make makes made work works working try trying tried problem problems issue issues
question questions go going still also just really actually now currently again mean means find see
look looking say said sure like much many often let lets seem seems guys ok okay option options
whats hows wheres im ive id m d s t ll ve re doesn don didn won isn aren couldn wouldn shouldn hasn
haven wasn weren cant dont doesnt wont isnt anymore long take takes soon far big`)

func wordSet(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// Feature names, in the order of a feature vector.
const (
	featCoverage = iota
	featWindow
	featTitle
	featPairs
	featQa
	featKeyword
	featVector
	featKeywordRank
	featVectorRank
	featMissingTop
	featMissingKnowledge
	featSynonyms
	featCount
)

// FeatureNames name the features, in vector order, for traces and fitting.
var FeatureNames = [featCount]string{
	"coverage", "window", "title", "pairs", "qa", "keyword", "vector",
	"keywordRank", "vectorRank", "missingTop", "missingKnowledge", "synonyms",
}

// FeatureCount is the length of a feature vector.
const FeatureCount = featCount

// Answerability features, in the order of their vector: taken from the
// best candidate after reranking, its page, and the question itself. They
// are few on purpose: on the tuning halves these five decide as well as
// the nine of the first model did (relevance, coverage, window and the
// heaviest words among them), and fewer weights fitted on 154 questions
// have less room to fit their noise.
const (
	ansPage = iota
	ansTitle
	ansMissingKnowledge
	ansMissingName
	ansNoNumber
	ansCount
)

// AnswerFeatureCount is the length of an answerability feature vector.
const AnswerFeatureCount = ansCount

// AnswerFeatureNames name the answerability features, in vector order.
var AnswerFeatureNames = [ansCount]string{"page", "title", "missingKnowledge", "missingName", "noNumber"}

// RelevanceModel scores candidates and decides answerability. Candidates
// are ordered by Weights·f (a conditional logit: fitted so that the
// passages of the right page come first); Scale and Offset turn that score
// into a calibrated relevance, sigmoid(Scale·score + Offset), the chance
// that the passage is from a page that answers the question. Answerability
// is a second logistic model over the best candidate and the question,
// sigmoid(AnswerBias + AnswerWeights·a): the chance that the knowledge
// answers the question at all.
type RelevanceModel struct {
	Weights       [featCount]float64
	Scale, Offset float64
	AnswerBias    float64
	AnswerWeights [ansCount]float64
}

// DefaultRelevanceModel returns the model agents use.
func DefaultRelevanceModel() RelevanceModel { return defaultModel }

// defaultModel was fitted on the tuning halves of testdata/eval.
var defaultModel = RelevanceModel{
	Weights: [featCount]float64{
		featCoverage:         3.945,
		featWindow:           6.495,
		featTitle:            5.099,
		featPairs:            1.955,
		featQa:               0.000,
		featKeyword:          2.502,
		featVector:           3.673,
		featKeywordRank:      -0.153,
		featVectorRank:       0.775,
		featMissingTop:       1.197,
		featMissingKnowledge: 0.000,
		featSynonyms:         1.931,
	},
	Scale: 0.342, Offset: -4.268,
	AnswerBias: 0.126,
	AnswerWeights: [ansCount]float64{
		ansPage:             2.449,
		ansTitle:            -1.753,
		ansMissingKnowledge: -1.615,
		ansMissingName:      -1.856,
		ansNoNumber:         -1.812,
	},
}

// Score is the candidate's ranking score for a feature vector.
func (m *RelevanceModel) Score(f *[featCount]float64) float64 {
	var z float64
	for i, x := range f {
		z += m.Weights[i] * x
	}
	return z
}

// Relevance is the calibrated relevance of a ranking score.
func (m *RelevanceModel) Relevance(score float64) float64 {
	return sigmoid(m.Scale*score + m.Offset)
}

// Answerability is the chance that the knowledge answers the question.
func (m *RelevanceModel) Answerability(a *[ansCount]float64) float64 {
	z := m.AnswerBias
	for i, x := range a {
		z += m.AnswerWeights[i] * x
	}
	return sigmoid(z)
}

func sigmoid(z float64) float64 { return 1 / (1 + math.Exp(-z)) }

// FocusWord is one content word of the question with what it weighs.
type FocusWord struct {
	memindex.QueryWord
	// Weight is its share of the question's meaning before normalising:
	// its specificity in this knowledge base (idf relative to the rarest
	// possible), 1 for a word no passage holds, times genericWeight for a
	// generic word.
	Weight  float64
	Generic bool
	// Situation says the word tells the asker's situation or manner
	// ("yesterday", "else", "wait", "several"), not the question's
	// subject. It ranks as any word, but the answerability decision
	// weighs it as generic, and its absence is never what is missing.
	Situation bool
	// Name says the question writes it as a name: capitalised inside a
	// sentence, in capitals, or mixed case ("PayPal", "iPhone", "EKS").
	Name bool
	// Context says the word comes from earlier questions, not this one.
	Context bool
	// Synonyms are the terms of the knowledge base that are synonyms of
	// the word (WordNet's, for its commonest senses).
	Synonyms []int32
}

// Judged is one reranked candidate.
type Judged struct {
	Ranked
	Features [featCount]float64
	// Score orders candidates; Relevance is it calibrated into [0, 1].
	Score, Relevance float64
	// Missing are the question's specific words the passage lacks.
	Missing []string
	// chunk is the candidate with its text, read once for scoring and
	// handed on as it is when kept.
	chunk domain.Chunk
	// covered marks the focus words the passage holds.
	covered []bool
	// missingName: a word the question writes as a name is not in the
	// passage; noNumber: the question asks for a quantity and the passage
	// does not hold one: for a count, a number near the question's words;
	// for a kind (money, a size, a duration), a number of that kind
	// anywhere in it, which is read for the best candidate only.
	missingName, noNumber bool
	// question is the chunk's written question nearest the visitor's.
	question string
}

// Judgement is a reranked candidate list with the question's analysis.
type Judgement struct {
	Focus      []FocusWord
	Candidates []Judged // best first
	// Answer are the answerability features and Answerability the chance
	// that the knowledge answers the question (0 without candidates).
	Answer        [ansCount]float64
	Answerability float64
}

// maxSynonyms bounds the synonyms looked for per question word.
const maxSynonyms = 8

// analyseQuery weighs the question's content words and finds their
// synonyms in the knowledge base.
func analyseQuery(ix *memindex.Index, syn *synonyms.Table, text string) []FocusWord {
	words := ix.QueryWords(text)
	names := namesIn(text)
	out := make([]FocusWord, 0, len(words))
	top := ix.IDF(1)
	for _, w := range words {
		if w.Term == memindex.NoTerm && len(w.Word) >= minFillerTypo && syn != nil && !syn.Knows(w.Word) && !names[w.Word] {
			// No passage holds it, no dictionary knows it, and it is not
			// written as a name ("Gmail" is not "email"): a misspelling.
			if fix, ok := misspeltFiller(w.Word); ok {
				// Of a filler word: read as it, nothing for a stopword, a
				// generic word otherwise.
				fixed := ix.QueryWords(fix)
				if len(fixed) == 0 || slices.ContainsFunc(out, func(f FocusWord) bool { return f.Word == fix }) {
					continue
				}
				w = fixed[0]
				w.Typo = true
			} else if near, ok := ix.NearWord(w.Word); ok {
				// Of a word of the knowledge one edit away ("updte",
				// "browsr").
				w = near
			}
		}
		f := FocusWord{QueryWord: w, Weight: 1, Name: names[w.Word]}
		if w.Term != memindex.NoTerm && top > 0 {
			f.Weight = min(1, ix.IDF(w.DF)/top)
		}
		if isGeneric(w.Word) {
			f.Generic = true
			f.Weight *= genericWeight
		} else {
			f.Situation = isSituation(w.Word)
		}
		for _, other := range syn.Of(w.Word) {
			if len(f.Synonyms) == maxSynonyms {
				break
			}
			if t := ix.Term(other); t != memindex.NoTerm && t != w.Term && !slices.Contains(f.Synonyms, t) {
				f.Synonyms = append(f.Synonyms, t)
			}
		}
		out = append(out, f)
	}
	return out
}

// minFillerTypo is the length from which a word may be taken for a
// misspelt filler word, on both sides: shorter words are one edit from
// too many others.
const minFillerTypo = 5

// misspeltFiller returns the stopword or generic word that word, no word
// of the dictionary, misspells ("anyting", "somthing", "insted"), if it is
// one edit (a deletion, insertion, substitution or swap of neighbours)
// from one of minFillerTypo letters or more. Such a word says nothing the
// knowledge could lack.
func misspeltFiller(word string) (string, bool) {
	filler := func(w []byte) (string, bool) {
		s := string(w)
		return s, len(s) >= minFillerTypo && (memindex.IsStopword(s) || isGeneric(s) || fillerWords[s])
	}
	b := []byte(word)
	try := make([]byte, 0, len(b)+1)
	for i := 0; i <= len(b); i++ {
		if i < len(b) {
			// Delete b[i].
			if s, ok := filler(append(append(try[:0], b[:i]...), b[i+1:]...)); ok {
				return s, true
			}
			if i+1 < len(b) {
				// Swap b[i] and b[i+1].
				try = append(try[:0], b...)
				try[i], try[i+1] = try[i+1], try[i]
				if s, ok := filler(try); ok {
					return s, true
				}
			}
		}
		for c := byte('a'); c <= 'z'; c++ {
			// Insert c before b[i].
			if s, ok := filler(append(append(append(try[:0], b[:i]...), c), b[i:]...)); ok {
				return s, true
			}
			if i < len(b) && c != b[i] {
				// Replace b[i] by c.
				try = append(try[:0], b...)
				try[i] = c
				if s, ok := filler(try); ok {
					return s, true
				}
			}
		}
	}
	return "", false
}

// fillerWords are words, neither stopwords nor generic, that a question
// uses around its subject ("instead", "completely") and customers often
// misspell; they are looked for only by misspeltFiller.
var fillerWords = wordSet(`instead anything something everything nothing completely totally entirely
exactly basically probably definitely especially already although whether because`)

// namesIn returns the lowercased words that text writes as names: with a
// capital letter other than at the start of a sentence, or with capitals
// after their first letter.
func namesIn(text string) map[string]bool {
	names := map[string]bool{}
	start := true
	for _, tok := range strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) || r == '"' || r == '(' || r == ')' }) {
		word := strings.TrimFunc(tok, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		if word != "" {
			upper := 0
			for i, r := range word {
				if unicode.IsUpper(r) && (i > 0 || !start) {
					upper++
				}
			}
			if upper > 0 {
				names[strings.ToLower(word)] = true
			}
			start = false
		}
		if strings.ContainsAny(tok[len(tok)-1:], ".?!:") {
			start = true
		}
	}
	return names
}

// quantityWords are phrases of questions that ask for a number: a price, a
// limit, a size, a duration or a count. The passage that answers them holds
// one near the question's words.
var quantityWords = []string{"how many", "how much", "how long", "how big", "how large", "how often", "how far",
	"maximum", "minimum", "max ", "limit", "price", "cost", "size", "biggest", "largest", "smallest", "per month", "per year", "per gb"}

// asksForNumber reports whether a question asks for a quantity.
func asksForNumber(text string) bool {
	lower := strings.ToLower(text)
	for _, w := range quantityWords {
		if strings.Contains(lower, w) {
			return true
		}
	}
	return false
}

// A quantity question may ask for a kind of quantity: an amount of money,
// a size or a duration. The passage that answers it holds a number with a
// unit of that kind ("9.50 GBP", "$4", "2 GB", "30 days"); a number of
// another kind (a port, a version, a step) does not answer it.
type quantityKind int

const (
	anyQuantity quantityKind = iota
	moneyQuantity
	sizeQuantity
	durationQuantity
)

// kindWords are phrases of questions that name the kind of quantity asked
// for, in the order they are tried.
var kindWords = []struct {
	kind    quantityKind
	phrases []string
}{
	{moneyQuantity, []string{"cost", "price", "pricing", "how much do i pay", "how much does it pay", "how much is the fee", "fee"}},
	{sizeQuantity, []string{"size", "how big", "how large", "biggest", "largest", "storage", "space", "memory", "bandwidth"}},
	{durationQuantity, []string{"how long"}},
}

// unitKinds are the units that make a number a quantity of a kind.
var unitKinds = map[string]quantityKind{
	"usd": moneyQuantity, "eur": moneyQuantity, "gbp": moneyQuantity, "dollar": moneyQuantity, "dollars": moneyQuantity,
	"euro": moneyQuantity, "euros": moneyQuantity, "cent": moneyQuantity, "cents": moneyQuantity,
	"b": sizeQuantity, "kb": sizeQuantity, "mb": sizeQuantity, "gb": sizeQuantity, "tb": sizeQuantity, "kib": sizeQuantity,
	"mib": sizeQuantity, "gib": sizeQuantity, "tib": sizeQuantity, "byte": sizeQuantity, "bytes": sizeQuantity,
	"kilobytes": sizeQuantity, "megabytes": sizeQuantity, "gigabytes": sizeQuantity, "terabytes": sizeQuantity,
	"second": durationQuantity, "seconds": durationQuantity, "minute": durationQuantity, "minutes": durationQuantity,
	"hour": durationQuantity, "hours": durationQuantity, "day": durationQuantity, "days": durationQuantity,
	"week": durationQuantity, "weeks": durationQuantity, "month": durationQuantity, "months": durationQuantity,
	"year": durationQuantity, "years": durationQuantity,
}

// askedKind returns the kind of quantity a quantity question asks for. The
// phrases are matched as whole words, a plural "s" allowed, so "workspace"
// is not taken for "space" nor "feedback" for "fee".
func askedKind(text string) quantityKind {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	padded := " " + strings.Join(words, " ") + " "
	for _, k := range kindWords {
		for _, p := range k.phrases {
			if strings.Contains(padded, " "+p+" ") || strings.Contains(padded, " "+p+"s ") {
				return k.kind
			}
		}
	}
	// "How much is express delivery?" names no kind, but "how much is" a
	// service or a thing asks its price, unless it names an amount of
	// something else ("How much is the upload limit?").
	for _, p := range howMuchIs {
		if strings.Contains(padded, p) {
			for _, w := range words {
				if amountNouns[w] {
					return anyQuantity
				}
			}
			return moneyQuantity
		}
	}
	return anyQuantity
}

// howMuchIs are the openings of a "how much is ...?" question, as askedKind
// pads its words ("how much's" is "how much s").
var howMuchIs = []string{" how much is ", " how much are ", " how much s ", " how much was ", " how much were ",
	" how much would ", " how much will "}

// amountNouns name amounts that are no money: "how much is" one of them
// asks for a number of any kind.
var amountNouns = map[string]bool{"limit": true, "limits": true, "quota": true, "time": true, "data": true,
	"ram": true, "disk": true, "cpu": true, "battery": true, "traffic": true, "usage": true, "left": true}

// holdsQuantity reports whether text holds a number (in digits or written
// out) with a unit of kind: a currency sign before it, a unit glued to it
// ("2gb"), right before it ("USD 9"), or one or two words after it ("30
// days", "5 business days", "seven year warranty").
func holdsQuantity(text string, kind quantityKind) bool {
	words := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '.' && r != ',' && !unicode.Is(unicode.Sc, r)
	})
	isNumber := func(w string) bool {
		w = strings.TrimLeftFunc(w, func(r rune) bool { return unicode.Is(unicode.Sc, r) })
		return w != "" && (w[0] >= '0' && w[0] <= '9' || memindex.IsNumberWord(w))
	}
	for i, w := range words {
		w = strings.Trim(w, ".,")
		if kind == moneyQuantity && strings.IndexFunc(w, func(r rune) bool { return unicode.Is(unicode.Sc, r) }) >= 0 &&
			strings.IndexFunc(w, unicode.IsDigit) >= 0 {
			return true
		}
		if !isNumber(w) {
			continue
		}
		// A unit glued to the number: "2gb", "100mb".
		if unit := strings.TrimLeftFunc(w, func(r rune) bool { return unicode.IsDigit(r) || r == '.' || r == ',' }); unit != "" && unitKinds[unit] == kind {
			return true
		}
		for _, j := range []int{i - 1, i + 1, i + 2} {
			if j >= 0 && j < len(words) {
				if k, ok := unitKinds[strings.Trim(words[j], ".,")]; ok && k == kind {
					return true
				}
			}
		}
	}
	return false
}

// Reranker scores fused candidates and decides answerability.
type Reranker struct {
	// Model is the relevance model; Synonyms the table that bridges a
	// question's words and the knowledge's (nil: none).
	Model    RelevanceModel
	Synonyms *synonyms.Table
}

// NewReranker returns a reranker with the default model.
func NewReranker(syn *synonyms.Table) *Reranker {
	return &Reranker{Model: defaultModel, Synonyms: syn}
}

// Rerank scores the first rerankDepth candidates of ranked (best first by
// fusion) against text and returns them best first by relevance. doc
// returns the chunk at a document position, with its text.
//
// context is earlier text the question leans on (a follow-up's previous
// questions), or "": its words count for less, never as names and never as
// missing, so the decision stays about what the question itself asks.
func (rr *Reranker) Rerank(ix *memindex.Index, text, context string, ranked []Ranked, doc func(int) domain.Chunk) Judgement {
	m := &rr.Model
	focus := analyseQuery(ix, rr.Synonyms, text)
	if context != "" {
		for _, f := range analyseQuery(ix, rr.Synonyms, context) {
			if slices.ContainsFunc(focus, func(g FocusWord) bool { return g.Word == f.Word || (g.Term != memindex.NoTerm && g.Term == f.Term) }) {
				continue
			}
			f.Weight *= contextWeight
			f.Name, f.Context = false, true
			focus = append(focus, f)
		}
	}
	j := Judgement{Focus: focus}
	if len(ranked) == 0 {
		return j
	}
	ranked = ranked[:min(len(ranked), rerankDepth)]
	wantsNumber := asksForNumber(text)
	kind := anyQuantity
	if wantsNumber {
		kind = askedKind(text)
	}
	var total, heaviest float64
	for _, f := range focus {
		total += f.Weight
		heaviest = max(heaviest, f.Weight)
	}
	unknown := unknownShare(focus)
	s := newPassageScan(len(focus))
	j.Candidates = make([]Judged, len(ranked))
	for i, r := range ranked {
		c := doc(r.Doc)
		jd := Judged{Ranked: r, chunk: c}
		f := &jd.Features
		f[featKeyword] = r.KeywordScore
		f[featVector] = max(0, r.VectorScore)
		if r.KeywordRank > 0 {
			f[featKeywordRank] = 1 / float64(r.KeywordRank)
		}
		if r.VectorRank > 0 {
			f[featVectorRank] = 1 / float64(r.VectorRank)
		}
		if total > 0 {
			s.read(ix, focus, c)
			var covered, bySynonym, inTitle, missingTop float64
			jd.covered = make([]bool, len(focus))
			for k, fw := range focus {
				switch {
				case s.body[k] || s.title[k]:
					jd.covered[k] = true
					covered += fw.Weight
				case s.synonym[k]:
					jd.covered[k] = true
					bySynonym += fw.Weight
					missingTop = max(missingTop, fw.Weight/2)
				default:
					if !fw.Context {
						missingTop = max(missingTop, fw.Weight)
					}
					if !fw.Generic && !fw.Situation && !fw.Context && fw.Weight >= 0.5*heaviest {
						jd.Missing = append(jd.Missing, fw.Word)
					}
					jd.missingName = jd.missingName || fw.Name
				}
				if s.title[k] {
					inTitle += fw.Weight
				}
			}
			f[featCoverage] = covered / total
			f[featSynonyms] = bySynonym / total
			f[featTitle] = inTitle / total
			f[featWindow] = s.window(focus) / total
			f[featPairs] = s.pairs(len(focus))
			f[featQa] = s.qa
			jd.question = s.question
			f[featMissingTop] = missingTop / heaviest
			f[featMissingKnowledge] = unknown
			jd.noNumber = wantsNumber && kind == anyQuantity && !s.numberNear()
		}
		jd.Score = m.Score(f)
		jd.Relevance = m.Relevance(jd.Score)
		j.Candidates[i] = jd
	}
	j.Candidates = byScore(j.Candidates)
	best := &j.Candidates[0]
	if wantsNumber && kind != anyQuantity && total > 0 {
		// Read for the best candidate only: the decision reads no other.
		best.noNumber = !holdsQuantity(best.chunk.Text, kind)
	}
	decided := decisionFocus(focus)
	j.Answer = [ansCount]float64{
		ansPage:             pageCoverage(decided, j.Candidates),
		ansTitle:            best.Features[featTitle],
		ansMissingKnowledge: unknownShare(decided),
		ansMissingName:      b2f(best.missingName),
		ansNoNumber:         b2f(best.noNumber),
	}
	j.Answerability = m.Answerability(&j.Answer)
	return j
}

// unknownShare is the share of the focus's weight in words no passage
// holds, counting by half those with synonyms (the knowledge may say them
// in other words). Words of earlier questions do not count.
func unknownShare(focus []FocusWord) float64 {
	var total, unknown float64
	for _, f := range focus {
		total += f.Weight
		switch {
		case f.Term != memindex.NoTerm || f.Context:
		case len(f.Synonyms) > 0:
			unknown += f.Weight / 2
		default:
			unknown += f.Weight
		}
	}
	if total == 0 {
		return 0
	}
	return unknown / total
}

// decisionFocus is the focus as the answerability decision weighs it:
// situation words as generic ones. The ranking keeps their full weight
// (they tell passages apart: "wait" finds the passage about waiting), but
// whether the knowledge answers turns on the subject ("Tor Browser keeps
// crashing since the last update": "since" and "last" are no subject).
func decisionFocus(focus []FocusWord) []FocusWord {
	if !slices.ContainsFunc(focus, func(f FocusWord) bool { return f.Situation }) {
		return focus
	}
	out := slices.Clone(focus)
	for k := range out {
		if out[k].Situation {
			out[k].Weight *= genericWeight
		}
	}
	return out
}

// byScore returns the candidates best first, ties in their fused order. A
// Judged is several hundred bytes, so their order is sorted, not them, and
// each is copied once.
func byScore(cands []Judged) []Judged {
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(cands[b].Score, cands[a].Score) })
	out := make([]Judged, len(cands))
	for i, k := range order {
		out[i] = cands[k]
	}
	return out
}

// pageDepth is how many of the best candidates may lend their words to
// the best one's page.
const pageDepth = 5

// pageCoverage is the share of the question's words (by weight, synonyms
// included) that the best candidate's page holds in its passages among the
// first pageDepth candidates. An answer often spans two chunks of one page
// (the heading's words in one, the detail in the next); a near miss lacks
// the detail on every chunk of the page it lands on.
func pageCoverage(focus []FocusWord, cands []Judged) float64 {
	if len(cands) == 0 || len(cands[0].covered) != len(focus) {
		return 0
	}
	var have, total float64
	for k, f := range focus {
		total += f.Weight
		for i, c := range cands[:min(len(cands), pageDepth)] {
			if (i == 0 || samePage(c.chunk, cands[0].chunk)) && c.covered[k] {
				have += f.Weight
				break
			}
		}
	}
	if total == 0 {
		return 0
	}
	return have / total
}

// samePage reports whether two chunks come from one document of one
// source; chunks that do not say where they come from are their own page.
func samePage(a, b domain.Chunk) bool {
	return a.SourceID != "" && a.SourceID == b.SourceID && a.DocumentName == b.DocumentName
}

// passageScan finds a question's words in one passage; its buffers are
// reused from passage to passage.
type passageScan struct {
	body, title []bool
	// synonym marks the words the passage holds only in other words.
	synonym []bool
	// hits are the positions of question words in the body, in order;
	// numbers those of words that start with a digit.
	hits    []hit
	numbers []int
	qa      float64
	// question is the written question that gave qa, "" for none.
	question string
	buf      []byte
	// seen is questionOverlap's set of a question's terms, reused: a chunk
	// may carry several written questions, read for every candidate.
	seen   map[int32]bool
	byTerm map[int32]int
	// names are the question words each document name holds (readName);
	// marks is readTitle's buffer.
	names map[string][]titleMark
	marks []titleMark
	// bySynonym maps the terms of synonyms to their question word.
	bySynonym map[int32]int
}

type hit struct {
	pos  int
	word int // index into the focus
}

func newPassageScan(n int) *passageScan {
	return &passageScan{body: make([]bool, n), title: make([]bool, n), synonym: make([]bool, n),
		byTerm: make(map[int32]int, n), bySynonym: make(map[int32]int, n), seen: make(map[int32]bool),
		names: make(map[string][]titleMark)}
}

func (s *passageScan) read(ix *memindex.Index, focus []FocusWord, c domain.Chunk) {
	clear(s.body)
	clear(s.title)
	clear(s.synonym)
	clear(s.byTerm)
	clear(s.bySynonym)
	s.hits = s.hits[:0]
	s.numbers = s.numbers[:0]
	s.qa = 0
	for k, f := range focus {
		if f.Term != memindex.NoTerm {
			s.byTerm[f.Term] = k
		}
		for _, t := range f.Synonyms {
			if _, own := s.byTerm[t]; !own {
				s.bySynonym[t] = k
			}
		}
	}
	// A chunk's first line repeats its heading path, when it has one, so
	// its words are title words as well as body words: it is read once, as
	// both. A chunk without a heading starts with its text, which is no
	// title however short its first line.
	heading, rest := "", c.Text
	if c.Heading != "" {
		heading, rest = c.Text, ""
		if nl := strings.IndexByte(c.Text, '\n'); nl >= 0 {
			heading, rest = c.Text[:nl], c.Text[nl:]
		}
	}
	offset, inHeading := 0, true
	mark := func(pos int, t int32, number bool) {
		pos += offset
		if number {
			s.numbers = append(s.numbers, pos)
		}
		if t == memindex.NoTerm {
			return
		}
		if k, ok := s.byTerm[t]; ok {
			s.body[k] = true
			s.title[k] = s.title[k] || inHeading
			s.hits = append(s.hits, hit{pos, k})
		} else if k, ok := s.bySynonym[t]; ok {
			s.synonym[k] = true
			s.hits = append(s.hits, hit{pos, k})
		}
	}
	words := 0
	s.buf = ix.EachTerm(heading, s.buf, func(pos int, t int32, number bool) {
		mark(pos, t, number)
		words = pos + 1
	})
	offset, inHeading = words, false
	s.buf = ix.EachTerm(rest, s.buf, mark)
	// The document's name, a Q&A pair's question and the questions written
	// for the chunk at index time are titles too. Candidates of one
	// document share its name, which is read once per question.
	s.readName(ix, c.DocumentName)
	s.readTitle(ix, c.Question)
	for _, q := range c.Questions {
		s.readTitle(ix, q)
	}
	if c.Question != "" {
		s.qa = s.questionOverlap(ix, focus, c.Question)
	}
	s.question = ""
	best := 0.0
	for _, q := range c.Questions {
		if o := s.questionOverlap(ix, focus, q); o > best {
			best, s.question = o, q
		}
	}
	s.qa = max(s.qa, best)
}

// titleMark is a question word a title holds: as itself (a title word)
// or through a synonym.
type titleMark struct {
	word    int
	synonym bool
}

// titleMarks appends the question words title holds to marks.
func (s *passageScan) titleMarks(ix *memindex.Index, title string, marks []titleMark) []titleMark {
	s.buf = ix.EachTerm(title, s.buf, func(_ int, t int32, _ bool) {
		if t == memindex.NoTerm {
			return
		}
		if k, ok := s.byTerm[t]; ok {
			marks = append(marks, titleMark{word: k})
		} else if k, ok := s.bySynonym[t]; ok {
			marks = append(marks, titleMark{word: k, synonym: true})
		}
	})
	return marks
}

// mark records what titleMarks found.
func (s *passageScan) mark(marks []titleMark) {
	for _, m := range marks {
		if m.synonym {
			s.synonym[m.word] = true
		} else {
			s.title[m.word] = true
		}
	}
}

// readTitle marks the question words (or their synonyms) a title holds.
func (s *passageScan) readTitle(ix *memindex.Index, title string) {
	if title == "" {
		return
	}
	s.marks = s.titleMarks(ix, title, s.marks[:0])
	s.mark(s.marks)
}

// readName is readTitle for a document's name, remembered for the
// question being scored: candidates of one document share it.
func (s *passageScan) readName(ix *memindex.Index, name string) {
	if name == "" {
		return
	}
	marks, ok := s.names[name]
	if !ok {
		marks = s.titleMarks(ix, name, nil)
		s.names[name] = marks
	}
	s.mark(marks)
}

// questionOverlap is the F1 of the question's content words against a Q&A
// pair's question: how nearly the visitor asked the stored question.
func (s *passageScan) questionOverlap(ix *memindex.Index, focus []FocusWord, question string) float64 {
	var theirs, shared int
	seen := s.seen
	clear(seen)
	s.buf = ix.EachTerm(question, s.buf, func(_ int, t int32, _ bool) {
		if t == memindex.NoTerm || seen[t] {
			return
		}
		seen[t] = true
		theirs++
		if _, ok := s.byTerm[t]; ok {
			shared++
		}
	})
	if shared == 0 {
		return 0
	}
	p, r := float64(shared)/float64(theirs), float64(shared)/float64(len(focus))
	return 2 * p * r / (p + r)
}

// numberNear reports whether a number stands within windowWords/2 words
// of a question word in the body.
func (s *passageScan) numberNear() bool {
	i := 0
	for _, h := range s.hits {
		for i < len(s.numbers) && s.numbers[i] < h.pos-windowWords/2 {
			i++
		}
		if i < len(s.numbers) && s.numbers[i] <= h.pos+windowWords/2 {
			return true
		}
	}
	return false
}

// window returns the largest weight of distinct question words found within
// windowWords of each other in the body.
func (s *passageScan) window(focus []FocusWord) float64 {
	counts := make([]int, len(focus))
	var best, cur float64
	lo := 0
	for _, h := range s.hits {
		if counts[h.word] == 0 {
			cur += focus[h.word].Weight
		}
		counts[h.word]++
		for s.hits[lo].pos <= h.pos-windowWords {
			w := s.hits[lo].word
			counts[w]--
			if counts[w] == 0 {
				cur -= focus[w].Weight
			}
			lo++
		}
		best = max(best, cur)
	}
	return best
}

// pairs returns the share of neighbouring question words (in the
// question's order) that the body holds within pairDistance of each other,
// in either order. A one-word question has no pairs: its word found counts
// as its phrase found.
func (s *passageScan) pairs(n int) float64 {
	if n < 2 {
		if n == 1 && s.body[0] {
			return 1
		}
		return 0
	}
	found := 0
	for k := 0; k+1 < n; k++ {
		if s.near(k, k+1) {
			found++
		}
	}
	return float64(found) / float64(n-1)
}

func (s *passageScan) near(a, b int) bool {
	for i, h := range s.hits {
		if h.word != a && h.word != b {
			continue
		}
		for _, o := range s.hits[i+1:] {
			if o.pos-h.pos > pairDistance {
				break
			}
			if (h.word == a && o.word == b) || (h.word == b && o.word == a) {
				return true
			}
		}
	}
	return false
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func isGeneric(w string) bool { return genericWords[w] }

// isSituation reports whether a word that is not generic tells the
// asker's situation or manner rather than the question's subject (see
// FocusWord.Situation): a word of situationWords, a number or a measure
// ("5gb", but not "2fa"), or a word of one or two letters ("pc", "ok").
func isSituation(w string) bool {
	return situationWords[w] || len(w) <= 2 || isMeasure(w)
}

// isMeasure reports whether a word is a number, alone or with a unit
// ("5gb", "24h", "1080p", "10am"); a number that is part of a name ("2fa",
// "1password") is none.
func isMeasure(w string) bool {
	i := 0
	for i < len(w) && ('0' <= w[i] && w[i] <= '9' || (i > 0 && (w[i] == '.' || w[i] == ','))) {
		i++
	}
	return i > 0 && (i == len(w) || measureUnits[w[i:]])
}

// measureUnits are the units a number is written with in one word.
var measureUnits = wordSet(`b kb mb gb tb pb kib mib gib tib k m g h hr hrs min mins s sec secs ms d
w mo y yr yrs x p px am pm st nd rd th gbp usd eur`)

// situationWords are knowledge.SituationWords as typed (the embedded model
// stems the same list).
var situationWords = wordSet(knowledge.SituationWords)

// keepRatio drops, from an answer's passages, those far less relevant than
// the best: they add noise to the answer, not evidence.
const keepRatio = 0.25

// reasons is the answerability decision, separate from the ranking, and
// what it means for each candidate: when the answerability reaches
// threshold, the first limit candidates are kept, except those under
// keepRatio of the best one's relevance; otherwise none is, and the agent
// falls back. Decide and the trace both read it, so they cannot disagree.
func (j *Judgement) reasons(limit int, threshold float64) (answers bool, why []string) {
	answers = len(j.Candidates) > 0 && j.Answerability >= threshold
	why = make([]string, len(j.Candidates))
	kept := 0
	for i, c := range j.Candidates {
		switch {
		case !answers:
			why[i] = domain.TraceNotAnswerable
		case c.Relevance < j.Candidates[0].Relevance*keepRatio:
			why[i] = domain.TraceFarBelowBest
		case kept == limit:
			why[i] = domain.TraceBeyondTopK
		default:
			why[i] = domain.TraceKept
			kept++
		}
	}
	return answers, why
}

// Decide returns the passages an answer uses, best first, each scored with
// its relevance: none when the knowledge does not answer the question.
func Decide(j Judgement, limit int, threshold float64) []domain.Chunk {
	_, why := j.reasons(limit, threshold)
	var out []domain.Chunk
	for i, c := range j.Candidates {
		if why[i] == domain.TraceKept {
			ch := c.chunk
			ch.Score = c.Relevance
			out = append(out, ch)
		}
	}
	return out
}

// judgementTrace records what the retrieval considered and why it decided.
func judgementTrace(q ports.RetrievalQuery, j Judgement, meta func(int) domain.Chunk, limit int, mode Mode) domain.RetrievalTrace {
	query := q.Text
	if q.Context != "" {
		query += "\n" + q.Context
	}
	t := domain.RetrievalTrace{Query: query, Method: mode.String(), TopK: limit, Threshold: q.Threshold,
		Answerability: j.Answerability, FeatureNames: FeatureNames[:],
		Candidates: make([]domain.TraceCandidate, 0, min(len(j.Candidates), traceCandidates))}
	for _, f := range j.Focus {
		t.Focus = append(t.Focus, domain.FocusTerm{Word: f.Word, Weight: f.Weight, InKnowledge: f.Term != memindex.NoTerm, Typo: f.Typo})
	}
	answers, why := j.reasons(limit, q.Threshold)
	if len(j.Candidates) > 0 {
		t.Missing = j.Candidates[0].Missing
		t.AnswerFeatureNames, t.AnswerFeatures = AnswerFeatureNames[:], slices.Clone(j.Answer[:])
	}
	switch {
	case len(j.Candidates) == 0:
		t.Verdict = domain.VerdictNothingFound
	case answers:
		t.Verdict = domain.VerdictAnswer
	default:
		t.Verdict = domain.VerdictNotAnswerable
	}
	for i, c := range j.Candidates[:min(len(j.Candidates), traceCandidates)] {
		m := meta(c.Doc)
		t.Candidates = append(t.Candidates, domain.TraceCandidate{ChunkID: m.ID, SourceID: m.SourceID, DocumentName: m.DocumentName,
			KeywordRank: c.KeywordRank, KeywordScore: c.KeywordScore, VectorRank: c.VectorRank, VectorScore: c.VectorScore,
			Score: c.Score, Relevance: c.Relevance, Missing: c.Missing, Features: slices.Clone(c.Features[:]),
			MatchedQuestion: c.question, Kept: why[i] == domain.TraceKept, Reason: why[i]})
	}
	return t
}
