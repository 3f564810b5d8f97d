package local

import (
	"math/bits"

	"github.com/conciergehq/concierge/core/domain"
)

// This file decides what a question is about (its focus) and whether the
// knowledge mentions it at all. An on-topic sentence that lacks the thing
// asked about is not an answer: "Acme ships orders within 1 business day"
// does not answer "Do you ship to Canada?". When the knowledge never
// mentions a term the question turns on, the model declines (Content "")
// rather than quote sentences about the rest of the question.

// maxKeywordWords is how many words a message without a question may have
// and still be read as a search ("shipping canada"), every specific term of
// which must be found. A longer message without one tells a story ("I
// tried to log in this morning and can't remember my password"), whose
// words mostly describe the situation rather than name what is asked.
const maxKeywordWords = 4

// questionStarts open a question clause: "how", "can", "does"... A clause is
// the part of a sentence between commas, semicolons or colons.
var questionStarts = makeSet(`
what whats how hows when where wheres which who whom whose why can could do does did is are was
were will would should shall may might have has am cant wont dont doesnt isnt arent
`)

// clauseLeaders are skipped when looking for the word that opens a clause:
// "and can I track it?" is a question clause.
var clauseLeaders = makeSet(`and but or so also then plus`)

// clauseTracker finds, in each sentence, the last clause that asks
// something ("When I run docker login, where does it keep my password?"
// asks where; "When I run docker login" only sets the scene). Its terms
// are what the question turns on.
type clauseTracker struct {
	asked uint64 // the terms of the question clauses found so far
	// questions: a question clause or a question mark was found, even
	// one without content words ("..., what should I do").
	questions bool
	words     int // in the whole message
	// The sentence being read: all its terms, and those of its last
	// question clause.
	sentence, lastQuestion uint64
	hasQuestionClause      bool
	// The clause being read.
	clause                  uint64
	opened, clauseQuestions bool
}

func (c *clauseTracker) startSentence() {
	c.sentence, c.lastQuestion, c.hasQuestionClause = 0, 0, false
	c.clause, c.opened, c.clauseQuestions = 0, false, false
}

func (c *clauseTracker) startClause() {
	c.endClause()
	c.clause, c.opened, c.clauseQuestions = 0, false, false
}

func (c *clauseTracker) endClause() {
	if c.clauseQuestions {
		c.lastQuestion, c.hasQuestionClause = c.clause, true
	}
}

// word sees every word of the sentence, stopwords included.
func (c *clauseTracker) word(raw string) {
	c.words++
	if c.opened || clauseLeaders.hasString(raw) {
		return
	}
	c.opened = true
	c.clauseQuestions = questionStarts.hasString(raw)
}

// term sees the id of every content term of the sentence.
func (c *clauseTracker) term(id int) {
	c.clause |= 1 << id
	c.sentence |= 1 << id
}

// endSentence closes the sentence; question says it ends with '?'. A
// question without a question word ("shipping to canada?") asks with all of
// its words.
func (c *clauseTracker) endSentence(question bool) {
	c.endClause()
	c.questions = c.questions || c.hasQuestionClause || question
	switch {
	case c.hasQuestionClause:
		c.asked |= c.lastQuestion
	case question:
		c.asked |= c.sentence
	}
}

// keyTerms are the terms that must all be found in the knowledge for the
// model to answer: the specific terms of the question clauses, or, for a
// message that asks nothing, all of its specific terms when it is as short
// as a search, and none when it tells a story.
func (c *clauseTracker) keyTerms(specific uint64) uint64 {
	if c.questions {
		return c.asked & specific
	}
	if c.words <= maxKeywordWords {
		return specific
	}
	return 0
}

// ownMask is the mask of the first n term ids.
func ownMask(n int) uint64 {
	if n >= maxTerms {
		return ^uint64(0)
	}
	return 1<<n - 1
}

// Typo matching: a question word within one edit of a knowledge word counts
// as that word. Only words of at least minTypoLen bytes are matched, on both
// sides, since short words are too close to each other ("ship", "shop").
const (
	minTypoLen          = 5
	minTypoQuestionWord = 4
	// longTypoLen: words of this many bytes may be two edits apart.
	longTypoLen = 10
)

// found returns the own terms that appear in knowledge (text, question or
// document name), directly or by synonym.
func (q *query) found(knowledge []domain.Chunk, buf []byte) (uint64, []byte) {
	var mask uint64
	var f sentenceFacts
	for i := range knowledge {
		c := &knowledge[i]
		for _, s := range [...]string{c.DocumentName, c.Question, c.Text} {
			f, buf = q.scan(s, buf)
			mask |= f.mask
		}
	}
	return mask, buf
}

// matchTypos looks for the terms of missing among the words of knowledge
// within one edit ("pasword" for "password", "instal" for "install") and
// adds each word found as an alias that counts as the term itself. It
// returns the terms it found.
func (q *query) matchTypos(knowledge []domain.Chunk, missing uint64, buf []byte) (uint64, []byte) {
	var want uint64
	for m := missing; m != 0; m &= m - 1 {
		if id := bits.TrailingZeros64(m); len(q.raw[id]) >= minTypoQuestionWord {
			want |= 1 << id
		}
	}
	var got uint64
	for i := range knowledge {
		if want&^got == 0 {
			break
		}
		c := &knowledge[i]
		for _, s := range [...]string{c.DocumentName, c.Question, c.Text} {
			for j := 0; ; {
				w, _, end, ok := nextWord(s, j, buf)
				if !ok {
					break
				}
				buf, j = w, end
				if len(w) < minTypoLen || stopwords.has(w) {
					continue
				}
				for m := want &^ got; m != 0; m &= m - 1 {
					id := bits.TrailingZeros64(m)
					st := string(stem(w))
					if !isTypo(q.raw[id], string(w)) && !isTypo(q.terms[id], st) {
						continue
					}
					if len(q.terms) < maxTerms {
						if _, seen := q.index[st]; !seen {
							alias := q.add(st, id)
							q.typo |= 1 << alias
						}
					}
					got |= 1 << id
				}
			}
		}
	}
	return got, buf
}

// misspeltFiller returns the terms of missing (question words the
// knowledge lacks) that are a misspelt filler word: no dictionary word,
// within one edit of a word of fillerSpellings ("anyting" for "anything",
// "insted" for "instead"). Such a word says nothing the knowledge could
// miss. known tells dictionary words (Options.Known), so a real word such
// as "theme", one edit from "these", is never taken for a typo; without it
// no word is.
func (q *query) misspeltFiller(missing uint64, known func(string) bool) uint64 {
	if known == nil {
		return 0
	}
	var out uint64
	for m := missing; m != 0; m &= m - 1 {
		id := bits.TrailingZeros64(m)
		raw := q.raw[id]
		if len(raw) < minTypoLen || known(raw) {
			continue
		}
		for _, w := range fillerSpellings {
			if editDistance(raw, w, 1) <= 1 {
				out |= 1 << id
				break
			}
		}
	}
	return out
}

// isTypo reports whether a question word a may be a typo of the knowledge
// word b.
func isTypo(a, b string) bool {
	if a == b || len(a) < minTypoQuestionWord || len(b) < minTypoLen {
		return false
	}
	k := typoEdits(a, b)
	return editDistance(a, b, k) <= k
}

// typoEdits is how many edits apart a question word and a knowledge word may
// be to count as the same word: one, or two when both are long
// ("authentification" for "authentication").
func typoEdits(a, b string) int {
	if len(a) >= longTypoLen && len(b) >= longTypoLen {
		return 2
	}
	return 1
}

// editDistance is the number of single-byte insertions, deletions,
// substitutions and swaps of neighbouring bytes that turn a into b, or
// limit+1 when that is more than limit (or the words are too long to
// compare).
func editDistance(a, b string, limit int) int {
	if len(a) > len(b) {
		a, b = b, a
	}
	const maxLen = 40
	if len(b)-len(a) > limit || len(b) >= maxLen {
		return limit + 1
	}
	// Three rows of the optimal string alignment table, on the stack.
	var rows [3][maxLen]int
	prev2, prev, cur := &rows[0], &rows[1], &rows[2]
	for j := 0; j <= len(b); j++ {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		best := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d = min(d, prev2[j-2]+1)
			}
			cur[j] = d
			best = min(best, d)
		}
		if best > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit+1)
}

// coreShare: a focus term is part of the core when its weight is at least
// this share of the heaviest focus term's, so that "express" (one sentence
// of the knowledge) and not "delivery" (every sentence) is the core of "How
// much is express delivery?", while both parts of "Do you accept PayPal and
// how long does standard shipping take?" stay in it.
const coreShare = 0.8

// focusCover: a sentence without a core term may still answer when it has
// this share of the weight of the question's focus ("Docker accounts only
// support one verified email address" for "is it possible to have both my
// personal and my work email verified?").
const focusCover = 0.6

// core returns the focus terms found in the knowledge (found, with typos
// resolved) whose weight w is close to the heaviest one's: every sentence of
// an answer must contain one of them, itself or in its section's heading,
// or most of the focus (focusCover).
// It is 0 when the question has no focus (only generic words), and then
// the relevance rules alone decide.
func (q *query) core(w []float64, found uint64) uint64 {
	focus := q.focus & found
	heaviest := 0.0
	for m := focus; m != 0; m &= m - 1 {
		heaviest = max(heaviest, w[bits.TrailingZeros64(m)])
	}
	var core uint64
	for m := focus; m != 0; m &= m - 1 {
		if i := bits.TrailingZeros64(m); w[i] >= coreShare*heaviest {
			core |= 1 << i
		}
	}
	return core
}
