package local

import (
	"strings"
)

// A message may ask two questions at once: "How long does shipping take
// and how do I return an item?", "Which cards do you accept? Can I pay by
// bank transfer?". Answered as one question, the sentences of one topic
// outscore the other's and half the message goes unanswered. splitQuestion
// finds where a new question starts: a question word right after "and",
// "also", a semicolon or a question mark. Not after a comma alone: "On my
// Mac, what does the cloud icon mean?" is one question.

// maxParts bounds how many questions one message is split into, and
// minPartWords how many words each must have: "how and why" is no two
// questions.
const (
	maxParts     = 3
	minPartWords = 3
)

// openers start a question of their own. Auxiliaries ("do", "is", "can")
// count only after a question mark or a semicolon: after "and" they more
// often continue the first question ("how do I sign in and can't reset
// my password").
var (
	questionOpeners = makeSet("how what when where which who why")
	yesNoOpeners    = makeSet("can could do does did is are will would should may")
	joiners         = makeSet("and also plus")
)

// splitQuestion returns the questions message asks, or nil when it asks
// one. The parts keep their own words; each is later read as a question
// of its own.
func splitQuestion(message string) []string {
	words := strings.Fields(message)
	var parts []string
	start := 0
	for i := 1; i < len(words) && len(parts) < maxParts-1; i++ {
		prev, w := words[i-1], bareWord(words[i])
		strong := strings.HasSuffix(prev, "?") || strings.HasSuffix(prev, ";")
		cut := i
		switch {
		case strong && (questionOpeners.hasString(w) || yesNoOpeners.hasString(w)):
		case strong && joiners.hasString(w) && i+1 < len(words) &&
			(questionOpeners.hasString(bareWord(words[i+1])) || yesNoOpeners.hasString(bareWord(words[i+1]))):
		case joiners.hasString(w) && i+1 < len(words) && questionOpeners.hasString(bareWord(words[i+1])):
		default:
			continue
		}
		if cut-start < minPartWords || len(words)-cut < minPartWords || leansBack(words[cut:]) {
			continue
		}
		parts = append(parts, strings.Join(words[start:cut], " "))
		start = cut
	}
	if len(parts) == 0 {
		return nil
	}
	return append(parts, strings.Join(words[start:], " "))
}

// backPronouns stand for the subject of the question before.
var backPronouns = makeSet("it its that this they them these those")

// leansBack tells whether a question starting at words leans on the
// question before it for its subject ("Is it some company?", "and how is
// it different?"): a pronoun among its first words, after any joiner. Such
// a question is no question of its own.
func leansBack(words []string) bool {
	if len(words) > 0 && joiners.hasString(bareWord(words[0])) {
		words = words[1:]
	}
	for _, w := range words[:min(3, len(words))] {
		if backPronouns.hasString(bareWord(w)) {
			return true
		}
	}
	return false
}

// bareWord is w lowercased without the punctuation around it.
func bareWord(w string) string {
	return strings.ToLower(strings.Trim(w, ".,;:!?\"'()"))
}
