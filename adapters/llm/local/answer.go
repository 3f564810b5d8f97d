package local

import (
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/conciergehq/concierge/core/domain"
)

// Tuning of the answerer. They are constants, not options, so every
// deployment answers the same question from the same knowledge the same way.
const (
	// maxTerms caps the distinct content terms of a question (they are
	// tracked as bits of a uint64); later terms are ignored.
	maxTerms = 64
	// genericWeight is the weight of a generic word ("take", "need").
	genericWeight = 0.5
	// qaMatch is the minimum weighted F1 overlap between the user's question
	// and a Q&A source's question for that answer to be used whole.
	qaMatch = 0.65
	// minRelevance is the share of the question's weight (that of its
	// relevanceTerms heaviest asked terms) a sentence must cover, counting
	// its own words whole and words found only in its context by half.
	minRelevance = 0.3
	// contextWeight is what a question term counts for when it appears only
	// in the sentence's context (document name, Q&A question, heading, a
	// preceding question sentence) and not in the sentence itself.
	contextWeight = 0.5
	// contextRelevance is the share of the question a context must cover to
	// make a sentence eligible by context alone.
	contextRelevance = 0.5
	// pairWeight scales the bonus of a question bigram found in a sentence.
	pairWeight = 0.5
	// typeBonus is added, as a share of the question's weight, to a sentence
	// of the kind the question asks for: a duration or time for "how long"
	// and "when", an amount for "how much" and "cost". It is large because a
	// sentence without a figure cannot answer "how much", however many of
	// the question's words it repeats.
	typeBonus = 0.5
	// topicBoost adds this share of a term's weight when the term is both in
	// the sentence and in its context: a sentence about shipping in a
	// document about shipping is more likely the answer than one in passing.
	topicBoost = 0.25
	// shortPenalty multiplies the score of sentences under four words and of
	// title lines, which seldom answer anything on their own.
	shortPenalty = 0.6
	// coveredWeight is what a term already covered by a chosen sentence is
	// worth to the next one.
	coveredWeight = 0.5
	// adjacentBonus, as a share of the first sentence's score, favours the
	// neighbours of a chosen sentence, which usually continue its thought.
	adjacentBonus = 0.15
	// relevanceTerms is how many of the question's heaviest terms the
	// relevance of a sentence is measured against.
	relevanceTerms = 4
	// followShare is the share of the first sentence's score a further
	// sentence must reach to join the answer.
	followShare = 0.6
	// relevancePower: a sentence's score is multiplied by its passage's
	// Score relative to the best passage's, to this power, so a passage
	// retrieval found half as relevant counts a quarter. Retrieval has
	// weighed the whole passage, its heading and its page, which one
	// sentence's words cannot; on the tuning halves the evidence was in
	// the first passage for most questions whose answer quoted another.
	relevancePower = 2
	// continued is how many sentences after the first chosen one, in the
	// same paragraph, may join the answer without words of the question,
	// when they open by referring back to it ("However", "This", "If"):
	// "If you're on a monthly plan, you can switch to a yearly plan at any
	// time. However, switching from a yearly to a monthly cycle isn't
	// supported."
	continued = 1
	// echoShare: a first sentence whose own words hold at least this share
	// of what the message says around its question (and at least two of
	// those words) says again what the customer told us ("you may see a
	// warning about weak cryptographic parameters" for "FreeOTP shows a
	// warning about weak cryptographic parameters when I scan the code. Is
	// that a problem?"). What answers it is what the page says next ("...
	// we recommend ignoring this message"). The same holds for a sentence
	// that announces what follows ("The following example shows how
	// to ...", a line ending in a colon). Up to echoContinued following
	// sentences of the paragraph then join the answer, whether or not they
	// open by referring back. Measured on the tuning halves; see
	// docs/benchmarks.md, "Session 22".
	echoShare     = 0.4
	echoContinued = 2
	// trustedAnswerability is the retrieval answerability
	// (CompletionRequest.Answerability) from which the model answers even
	// though a word the question turns on is in none of the passages. On
	// the tuning halves no unanswerable question with such a word reached
	// 0.72, while answerable ones did (paraphrases).
	trustedAnswerability = 0.75
	// togetherShare is the share of the question's key words (those found
	// in the knowledge) that the passage an answer quotes may lack, unless
	// retrieval is confident (trustedAnswerability): "Do 2FA recovery codes
	// expire?" is not answered from a passage about recovery codes when
	// "expire" is only in another one. Rounded down: up to four key words,
	// the passage needs them all.
	togetherShare = 0.2
)

// candidate is a sentence that may be quoted.
type candidate struct {
	chunk, ord int
	start, end int
	mask, syn  uint64 // the question's terms in the sentence (see sentenceFacts)
	ctx        uint64 // the question's terms in the sentence's context
	// section: the part of ctx owed to the sentence's own section (its
	// heading, the question before it, a Q&A source's question), not to the
	// document's name.
	section   uint64
	pairs     uint64
	short     bool
	typed     bool
	score     float64
	typeScore float64 // the part of score owed to typeBonus
	excluded  bool
	// bare: neither the sentence nor its context holds a word of the
	// question; it is quoted only to continue the sentence before it.
	bare bool
	// block counts the headings, titles and question sentences before the
	// sentence in its chunk: sentences of one block are one paragraph of
	// thought.
	block int
}

// guard rejects text that must never be output: prompt-injection phrases and
// anything overlapping the system prompt. It normalises the system prompt on
// first use only, since most calls check a sentence or two, or none.
type guard struct {
	raw         string
	ready       bool
	system      string
	systemLines []string
}

func (g *guard) init() {
	g.ready = true
	g.system = normalizeForCompare(g.raw)
	for line := range strings.SplitSeq(g.raw, "\n") {
		if l := normalizeForCompare(line); len(l) >= 24 {
			g.systemLines = append(g.systemLines, l)
		}
	}
}

// allows reports whether text (lowercased, whitespace collapsed) may be
// output.
func (g *guard) allows(norm string) bool {
	if looksLikeInjection(norm) {
		return false
	}
	if g.raw == "" {
		return true
	}
	if !g.ready {
		g.init()
	}
	if len(norm) >= 20 && strings.Contains(g.system, norm) {
		return false
	}
	if len(g.system) >= 20 && strings.Contains(norm, g.system) {
		return false
	}
	for _, l := range g.systemLines {
		if strings.Contains(norm, l) {
			return false
		}
	}
	return true
}

// answer composes the reply to question from knowledge: a matching Q&A
// answer whole (cut at qaMaxChars when that is positive), or up to three
// sentences in at most maxChars bytes. It returns "" when nothing in
// knowledge is relevant enough.
func answer(question string, knowledge []domain.Chunk, system string, maxChars, qaMaxChars int, related func(string) []string, known func(string) bool, answerability float64) (string, []string) {
	if len(knowledge) == 0 || maxChars <= 0 {
		return "", nil
	}
	buf := make([]byte, 0, 64)
	q, buf := parseQuery(question, buf, related)
	text, ids := q.answer(knowledge, buf, system, maxChars, qaMaxChars, known, answerability)
	if text == "" {
		return text, ids
	}
	if parts := splitQuestion(question); len(parts) > 1 {
		text, ids = answerMissedParts(parts, text, ids, knowledge, system, maxChars, related, known)
	}
	return text, ids
}

// answerMissedParts completes the answer to a message that asks several
// questions ("How long does shipping take and how do I return an item?"):
// answered as one question, the sentences of one topic outscore the
// other's, and half the message goes unanswered. A part whose subject
// words the answer does not hold yet is answered on its own, and what that
// adds is appended, within maxChars, citing its passages too. A part the
// knowledge cannot answer adds nothing.
func answerMissedParts(parts []string, text string, ids []string, knowledge []domain.Chunk, system string, maxChars int, related func(string) []string, known func(string) bool) (string, []string) {
	buf := make([]byte, 0, 64)
	for _, part := range parts {
		room := maxChars - len(text) - 1
		if room <= 0 {
			break
		}
		var q query
		q, buf = parseQuery(part, buf, related)
		var f sentenceFacts
		f, buf = q.scan(text, buf)
		// A synonym in the answer does not answer the part: "delivery" in
		// "30 days of delivery" says nothing of how long shipping takes.
		if q.focus == 0 || q.focus&^(f.mask&^f.syn) == 0 {
			continue // nothing of its own to ask, or answered already
		}
		// Retrieval judged the whole message, not this part: the part's
		// own key words must be in the passage it is answered from.
		more, cited := q.answer(knowledge, buf, system, room, room, known, 0)
		switch {
		case more == "" || strings.Contains(text, more):
			continue
		case strings.Contains(more, text):
			text = more // a Q&A answer whole, which holds the first answer
		default:
			text += " " + more
		}
		for _, id := range cited {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	return text, ids
}

// answer answers the parsed question as one question (see the function
// answer); buf is scratch space for reading words.
func (q query) answer(knowledge []domain.Chunk, buf []byte, system string, maxChars, qaMaxChars int, known func(string) bool, answerability float64) (string, []string) {
	if len(q.terms) == 0 {
		return "", nil
	}
	// A question turning on something the knowledge never mentions
	// ("Canada", "Podman") is not answered with sentences about the rest
	// of it. Typos are forgiven first. When retrieval is confident that
	// the passages answer, the missing word is more likely said otherwise
	// ("evict" for "revoke") than absent.
	trusted := answerability >= trustedAnswerability && answerability <= 1
	found, buf := q.found(knowledge, buf)
	if missing := q.focus &^ found; missing != 0 {
		var typos uint64
		typos, buf = q.matchTypos(knowledge, missing, buf)
		found |= typos
		q.key &^= q.misspeltFiller(missing&^typos, known)
		if q.key&^found != 0 && !trusted {
			return "", nil
		}
	}
	g := guard{raw: system}
	if text, id, ok := q.matchQA(knowledge, &g, buf); ok {
		if qaMaxChars > 0 {
			text = truncateWords(text, qaMaxChars)
		}
		return text, citedIDs(id)
	}
	return q.extract(knowledge, found, &g, buf, maxChars, trusted)
}

func citedIDs(id string) []string {
	if id == "" {
		return nil
	}
	return []string{id}
}

// matchQA finds the Q&A chunk whose question best matches the user's, by
// weighted F1 over content terms (generic words count half). It returns that
// chunk's answer when the match reaches qaMatch; ties go to the better-ranked
// chunk.
func (q *query) matchQA(knowledge []domain.Chunk, g *guard, buf []byte) (string, string, bool) {
	best, bestF1 := -1, 0.0
	for ci := range knowledge {
		c := &knowledge[ci]
		if c.Question == "" || strings.TrimSpace(c.Text) == "" {
			continue
		}
		var f1 float64
		f1, buf = q.questionF1(c.Question, buf)
		if f1 >= qaMatch && f1 > bestF1 {
			if !g.allows(normalizeForCompare(c.Text)) {
				continue
			}
			best, bestF1 = ci, f1
		}
	}
	if best < 0 {
		return "", "", false
	}
	return strings.TrimSpace(knowledge[best].Text), knowledge[best].ID, true
}

// extract scores every sentence of knowledge against the question and
// quotes the best ones. Unless trusted (retrieval is confident the
// passages answer), a sentence may be quoted only from a passage that
// holds the question's key words together (see togetherShare).
func (q *query) extract(knowledge []domain.Chunk, found uint64, g *guard, buf []byte, maxChars int, trusted bool) (string, []string) {
	cands := make([]candidate, 0, 4*len(knowledge))
	spans := make([]span, 0, 32)
	sentences := 0
	// The best question sentence of a FAQ written as text ("Can I change my
	// address?\nYes, ..."), answered like a Q&A source.
	inlineF1, inlineText, inlineID := 0.0, "", ""
	for ci := range knowledge {
		c := &knowledge[ci]
		var nameCtx, qaCtx uint64
		var f sentenceFacts
		f, buf = q.scan(c.DocumentName, buf)
		nameCtx = f.mask
		f, buf = q.scan(c.Question, buf)
		qaCtx = f.mask
		var headingCtx, questionCtx uint64
		// underHeading: the span before was a heading, so this heading
		// (or a title line) continues it ("Minimum System Requirements",
		// then "Tor VPN ... requires:") rather than replacing it.
		underHeading := false
		spans = splitSentences(c.Text, spans[:0])
		ord, block := 0, 0
		for si, sp := range spans {
			f, buf = q.scan(c.Text[sp.start:sp.end], buf)
			if sp.question && f.mask&^q.generic != 0 {
				var f1 float64
				f1, buf = q.questionF1(c.Text[sp.start:sp.end], buf)
				if f1 >= qaMatch && f1 > inlineF1 {
					if text := inlineAnswer(c.Text, spans[si+1:], g, maxChars); text != "" {
						inlineF1, inlineText, inlineID = f1, text, c.ID
					}
				}
			}
			section := qaCtx | headingCtx | questionCtx
			ctx := nameCtx | section
			heading := f.mask
			if underHeading {
				heading |= headingCtx
			}
			underHeading = sp.heading
			switch {
			case sp.heading:
				headingCtx, questionCtx = heading, 0
				block++
				continue
			case sp.question:
				questionCtx = f.mask
				block++
				continue
			case sp.title:
				headingCtx, questionCtx = heading, 0
				block++
			}
			sentences++
			ord++
			bare := f.mask == 0 && ctx == 0
			if bare {
				// Kept only to continue the sentences before it, up to
				// echoContinued of them after one that may be quoted.
				if n := len(cands); n == 0 || bareRun(cands) >= echoContinued || cands[n-1].chunk != ci || cands[n-1].block != block || cands[n-1].ord != ord-1 {
					continue
				}
			}
			cands = append(cands, candidate{
				bare: bare, block: block,
				chunk: ci, ord: ord, start: sp.start, end: sp.end,
				mask: f.mask, syn: f.syn, ctx: ctx, section: section, pairs: f.pairs,
				short: f.words < 4 || sp.title,
				typed: f.typed,
			})
		}
	}
	if inlineText != "" {
		return inlineText, citedIDs(inlineID)
	}
	if len(cands) == 0 {
		return "", nil
	}

	// IDF over the sentences: a term found in every sentence tells them
	// apart less than one found in a single sentence. A term found in none
	// weighs like one found once: it still counts against relevance (a
	// question about something the knowledge never mentions is hard to pass
	// off as answered) without drowning the words that did match. Synonyms do
	// not count in df: it measures how telling the user's own word is.
	var df [maxTerms]int
	for i := range cands {
		if cands[i].bare {
			continue
		}
		for m := cands[i].mask &^ cands[i].syn; m != 0; m &= m - 1 {
			df[bits.TrailingZeros64(m)]++
		}
	}
	w := make([]float64, q.originals)
	for i := range w {
		w[i] = q.base[i] * math.Log(1+float64(sentences+1)/float64(max(df[i], 1)+1))
	}
	// Relevance is measured against the heaviest few terms of what is asked,
	// so a long message (a story, then the question) can still be answered
	// by a sentence that matches its core.
	// Words that only describe the situation ("right away") and that the
	// knowledge never uses do not count against it.
	measured := q.asked &^ (^found &^ q.focus)
	if measured&ownMask(q.originals) == 0 {
		measured = q.asked // "How do we combine them?": only such words
	}
	top := make([]float64, 0, len(w))
	for i, x := range w {
		if measured&(1<<i) != 0 {
			top = append(top, x)
		}
	}
	slices.Sort(top)
	total := 0.0
	for _, x := range top[max(0, len(top)-relevanceTerms):] {
		total += x
	}
	pairW := make([]float64, len(q.pairs))
	for i, p := range q.pairs {
		pairW[i] = pairWeight * min(w[p[0]], w[p[1]])
	}

	core := q.core(w, found)
	focus := q.focus & found
	focusTotal := sumWeights(focus, w)
	// What each passage holds of the question, in its sentences and their
	// context: the key words found in the knowledge must be found together
	// in the passage an answer quotes, all but togetherShare of them.
	var held []uint64
	key := q.key & found
	allowed := int(togetherShare * float64(bits.OnesCount64(key)))
	if !trusted && key != 0 {
		held = make([]uint64, len(knowledge))
		for i := range cands {
			held[cands[i].chunk] |= cands[i].mask | cands[i].ctx
		}
	}
	apart := func(ci int) bool { return held != nil && bits.OnesCount64(key&^held[ci]) > allowed }
	first := -1
	// together: some eligible sentence is in a passage that holds the key
	// words together; the answer then starts with one of those.
	together := false
	for i := range cands {
		c := &cands[i]
		if c.bare {
			c.excluded = true
			continue
		}
		// For "how do I return an item?" an instruction naming the action
		// is on focus too: the step may not repeat the object ("Start a
		// return from the Orders page").
		onFocus := core == 0 || (c.mask|c.section)&core != 0 ||
			credit(c.mask&focus, c.syn&focus, w) >= focusCover*focusTotal ||
			(q.wantSteps && c.typed && c.mask&^c.syn&q.action&focus != 0)
		if !onFocus || ((q.asksPrice || q.wantNumber) && !c.typed) {
			// On topic, perhaps, but without what is asked about, or
			// without a price or a count when one is asked for ("How many
			// SMS codes can you send me?" is not answered by how codes
			// are sent).
			c.excluded = true
			continue
		}
		own := credit(c.mask, c.syn, w)
		ctxOnly := sumWeights(c.ctx&^c.mask, w)
		typed := c.typed
		strong := c.mask&^q.generic != 0
		byContext := c.ctx&^q.generic != 0 && (typed || (own+ctxOnly)/total >= contextRelevance)
		if !(strong || byContext) || (own+contextWeight*ctxOnly)/total < minRelevance {
			c.excluded = true
			continue
		}
		c.score = own + contextWeight*ctxOnly + topicBoost*sumWeights(c.ctx&c.mask, w)
		for m := c.pairs; m != 0; m &= m - 1 {
			c.score += pairW[bits.TrailingZeros64(m)]
		}
		if typed {
			c.typeScore = typeBonus * total
		}
		if c.short {
			c.score *= shortPenalty
			c.typeScore *= shortPenalty
		}
		c.score += c.typeScore
		rank := rankWeight(knowledge, c.chunk)
		c.score *= rank
		c.typeScore *= rank
		if first < 0 || better(c, &cands[first]) {
			first = i
		}
		if !apart(c.chunk) {
			together = true
		}
	}
	if first < 0 {
		return "", nil
	}

	// Greedy choice: the best sentence, then up to two more that add terms
	// the answer does not cover yet, or continue a chosen sentence.
	picked := make([]int, 0, 3)
	texts := make([]string, 0, 3)
	used := 0
	var covered, coveredPairs uint64
	typedCovered := false
	firstScore := 0.0
	for len(picked) < 3 {
		bestI, bestGain := -1, 0.0
		for i := range cands {
			c := &cands[i]
			if c.excluded {
				continue
			}
			gain := c.score
			if len(picked) == 0 && together && apart(c.chunk) {
				continue
			}
			if len(picked) > 0 {
				gain = followGain(c, w, pairW, covered, coveredPairs, typedCovered, total)
				for _, p := range picked {
					pc := &cands[p]
					if pc.chunk == c.chunk && (pc.ord == c.ord+1 || pc.ord == c.ord-1) && (pc.mask|pc.ctx)&(c.mask|c.ctx) != 0 {
						gain += adjacentBonus * firstScore
						break
					}
				}
				if gain <= followShare*firstScore {
					continue
				}
			}
			if bestI < 0 || gain > bestGain || (gain == bestGain && before(c, &cands[bestI])) {
				bestI, bestGain = i, gain
			}
		}
		if bestI < 0 {
			break
		}
		c := &cands[bestI]
		c.excluded = true
		text := cleanSentence(knowledge[c.chunk].Text[c.start:c.end])
		norm := normalizeForCompare(text)
		if !g.allows(norm) || duplicate(texts, text) {
			continue
		}
		if len(picked) == 0 {
			text = truncateWords(text, maxChars)
		} else if used+1+len(text) > maxChars {
			continue
		}
		if len(picked) == 0 {
			// Further sentences are measured against what the first one
			// matched, not against its figure: a question with two parts
			// keeps its second part when the first carries a duration.
			firstScore = c.score - c.typeScore
		}
		picked = append(picked, bestI)
		texts = append(texts, text)
		used += len(text) + 1
		covered |= c.mask | c.ctx
		coveredPairs |= c.pairs
		typedCovered = typedCovered || c.typed
		if len(picked) == 1 {
			leadsOn := q.echoes(c, w) || announces(text)
			picked, texts, used = continueFirst(knowledge, cands, g, picked, texts, used, maxChars, leadsOn)
			for _, p := range picked[1:] {
				covered |= cands[p].mask | cands[p].ctx
			}
		}
	}
	if len(picked) == 0 {
		return "", nil
	}
	if held != nil {
		// A question in two parts ("Do you accept PayPal and how long does
		// shipping take?") is answered from two passages that hold its
		// key words between them.
		var all uint64
		for _, p := range picked {
			all |= held[cands[p].chunk]
		}
		if bits.OnesCount64(key&^all) > allowed {
			return "", nil
		}
	}
	return compose(knowledge, cands, picked, texts)
}

// continueFirst adds to the answer the sentences that follow its first one
// in the same paragraph and refer back to it, up to continued of them,
// stopping at a heading, a title, a short line, a sentence that does not
// refer back, one the guard rejects or the size cap. When the first
// sentence leads on (it echoes the message or announces what follows, see
// echoShare), up to echoContinued follow it, referring back or not.
// Candidates are in text order, so the next sentence is the next
// candidate.
func continueFirst(knowledge []domain.Chunk, cands []candidate, g *guard, picked []int, texts []string, used, maxChars int, leadsOn bool) ([]int, []string, int) {
	last := picked[0]
	limit := continued
	if leadsOn {
		limit = echoContinued
	}
	for next := last + 1; next < len(cands) && len(picked) <= limit; next++ {
		c, prev := &cands[next], &cands[last]
		if c.chunk != prev.chunk || c.block != prev.block || c.ord != prev.ord+1 || c.short {
			break
		}
		text := cleanSentence(knowledge[c.chunk].Text[c.start:c.end])
		if !g.allows(normalizeForCompare(text)) || duplicate(texts, text) || used+1+len(text) > maxChars {
			break
		}
		if !leadsOn && !refersBack(text) {
			break
		}
		c.excluded = true
		picked = append(picked, next)
		texts = append(texts, text)
		used += len(text) + 1
		last = next
	}
	return picked, texts, used
}

// bareRun counts the bare candidates at the end of cands: each was kept
// only next to the one before it, so they are consecutive sentences.
func bareRun(cands []candidate) int {
	n := 0
	for i := len(cands) - 1; i >= 0 && cands[i].bare; i-- {
		n++
	}
	return n
}

// echoes reports whether candidate c says again what the message says
// around its question: at least two of those words, not generic and its
// own (not synonyms), and echoShare of their weight. A message that is
// all question has nothing to echo.
func (q *query) echoes(c *candidate, w []float64) bool {
	situation := ownMask(q.originals) &^ q.asked
	return bits.OnesCount64(c.mask&^c.syn&situation&^q.generic) >= 2 &&
		credit(c.mask&situation, c.syn&situation, w) >= echoShare*sumWeights(situation, w)
}

// announces reports whether a sentence announces what follows it ("The
// following example shows how to ...", "Run these commands:"), so it
// does not answer anything without the sentences after it.
func announces(text string) bool {
	t := strings.ToLower(strings.TrimSpace(text))
	return strings.HasSuffix(t, ":") || strings.Contains(t, "the following") || strings.Contains(t, "as follows")
}

// backWords open a sentence that continues the one before it: a contrast,
// a condition, a consequence or a pronoun standing for what it named.
var backWords = makeSet(`
however but instead this that these those it its they them then otherwise also so note if once
after when there here either neither both such alternatively additionally
`)

// refersBack reports whether a sentence opens with one of backWords.
func refersBack(text string) bool {
	var buf [16]byte
	w, _, _, ok := nextWord(text, 0, buf[:0])
	return ok && backWords.has(w)
}

// rankWeight is what the score of a sentence of knowledge[ci] is
// multiplied by: the passage's Score relative to the best passage's, to
// relevancePower. Scores that are not positive finite numbers count 0, and
// when no passage has one every passage counts 1: the model then relies on
// its own reading and on the order of the passages.
func rankWeight(knowledge []domain.Chunk, ci int) float64 {
	best := 0.0
	for i := range knowledge {
		if s := knowledge[i].Score; s > best && !math.IsInf(s, 1) {
			best = s
		}
	}
	if best == 0 {
		return 1
	}
	s := knowledge[ci].Score
	if !(s > 0) || math.IsInf(s, 1) {
		return 0
	}
	return math.Pow(s/best, relevancePower)
}

// inlineAnswer is the answer that follows a question sentence in a text:
// the sentences up to the next question, heading or title, within maxChars.
// It is "" when there is none or when the guard rejects any of it.
func inlineAnswer(text string, after []span, g *guard, maxChars int) string {
	var sb strings.Builder
	for _, sp := range after {
		if sp.question || sp.heading || sp.title {
			break
		}
		s := cleanSentence(text[sp.start:sp.end])
		if !g.allows(normalizeForCompare(s)) {
			return ""
		}
		if sb.Len() == 0 {
			sb.WriteString(truncateWords(s, maxChars))
			continue
		}
		if sb.Len()+1+len(s) > maxChars {
			break
		}
		sb.WriteByte(' ')
		sb.WriteString(s)
	}
	return sb.String()
}

// followGain is what a further sentence adds to the answer chosen so far.
func followGain(c *candidate, w, pairW []float64, covered, coveredPairs uint64, typedCovered bool, total float64) float64 {
	gain := credit(c.mask&^covered, c.syn&^covered, w) + coveredWeight*credit(c.mask&covered, c.syn&covered, w)
	gain += contextWeight * sumWeights(c.ctx&^c.mask&^covered, w)
	for m := c.pairs &^ coveredPairs; m != 0; m &= m - 1 {
		gain += pairW[bits.TrailingZeros64(m)]
	}
	if c.typed && !typedCovered {
		gain += typeBonus * total
	}
	if c.short {
		gain *= shortPenalty
	}
	return gain
}

// better orders candidates by score, then by the chunk's rank, then by
// position in the chunk, so equal inputs always give equal answers.
func better(a, b *candidate) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return before(a, b)
}

func before(a, b *candidate) bool {
	if a.chunk != b.chunk {
		return a.chunk < b.chunk
	}
	return a.ord < b.ord
}

func duplicate(texts []string, t string) bool {
	for _, s := range texts {
		if strings.EqualFold(s, t) {
			return true
		}
	}
	return false
}

// compose orders the chosen sentences: chunks in the order their first
// sentence was chosen, sentences in their order within the chunk. Cited
// follows the same order.
func compose(knowledge []domain.Chunk, cands []candidate, picked []int, texts []string) (string, []string) {
	order := make([]int, 0, len(picked)) // indexes into picked
	chunkSeen := make([]int, 0, len(picked))
	for _, p := range picked {
		ch := cands[p].chunk
		if containsInt(chunkSeen, ch) {
			continue
		}
		chunkSeen = append(chunkSeen, ch)
		start := len(order)
		for k, p2 := range picked {
			if cands[p2].chunk == ch {
				order = append(order, k)
			}
		}
		group := order[start:]
		for a := 1; a < len(group); a++ {
			for b := a; b > 0 && cands[picked[group[b]]].ord < cands[picked[group[b-1]]].ord; b-- {
				group[b], group[b-1] = group[b-1], group[b]
			}
		}
	}
	var sb strings.Builder
	for i, k := range order {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(texts[k])
	}
	cited := make([]string, 0, len(chunkSeen))
	for _, ch := range chunkSeen {
		id := knowledge[ch].ID
		if id != "" && !containsString(cited, id) {
			cited = append(cited, id)
		}
	}
	return sb.String(), cited
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func containsString(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
