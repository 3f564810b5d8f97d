package chat

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/conciergehq/concierge/core/domain"
)

// A follow-up in a continued conversation ("and how much is express?",
// "what about returns?", "does it cost extra?") names no subject of its
// own: searched alone it finds the wrong passage or none. Its retrieval
// query is widened with the conversation's previous question, after the
// message, so the message stays the main subject. Everything else is
// searched as asked: widening a question that has its own subject ("Do
// you ship to Canada?") would drag the previous subject into it.

// Limits of the follow-up rules, in content words: words left once
// function words and question filler ("how long does it take") are gone.
const (
	// maxFollowUpWords: a message with more content words carries its own
	// subject, however it opens.
	maxFollowUpWords = 4
	// maxPronounWords: a pronoun ("does it", "can they") stands for an
	// earlier subject only in a message naming little else; in longer ones
	// it is mostly the "it" of "is it possible to change my address".
	maxPronounWords = 2
	// maxBareWords: a message with no opener and no pronoun is a follow-up
	// only when it names at most one thing ("Germany?", "the price?"). Most
	// stand-alone questions have two to four ("reset password", "ship
	// Canada"), so the bound cannot be higher.
	maxBareWords = 1
	// earlierQuestions bounds how many earlier questions widen a query,
	// and earlierRunes how much of each: enough for a subject, not a
	// pasted document.
	earlierQuestions = 2
	earlierRunes     = 400
	// userTurnsBack bounds how far back the subject is looked for.
	userTurnsBack = 3
)

// isFollowUp reports whether message, sent in a conversation that has
// history, leans on it: it opens like a follow-up ("and", "what about"),
// leans on a pronoun without a subject of its own ("is that free?"), or is
// too short to name one ("and the price?"). Small talk ("thanks!") is not a
// follow-up: it has nothing to search for.
func isFollowUp(message string) bool {
	words := wordsOf(message)
	content := contentWords(words)
	if content > maxFollowUpWords {
		return false
	}
	rest := skipInterjections(words)
	switch {
	case len(rest) == 0:
		return false
	case opensLikeFollowUp(rest):
		return true
	case len(rest) < len(words) && content == 0:
		return false // "ok great, thank you"
	case leansOnPronoun(rest):
		return content <= maxPronounWords
	default:
		return content <= maxBareWords
	}
}

// followUpQuery is the text to search for a follow-up: the message, then
// the previous question that names a subject (and the one before it when
// that question was a follow-up itself: "standard delivery?", "and
// express?", "and to Germany?"). Only the user's questions count: the
// assistant's answers would pull their own vocabulary into the search.
// history is the conversation's recent messages, oldest first, without
// message. It returns message unchanged, and 0, when no earlier question
// names anything.
func followUpQuery(message string, history []domain.Message) (query string, earlier int) {
	var b strings.Builder
	b.WriteString(message)
	turns := 0
	for i := len(history) - 1; i >= 0 && turns < userTurnsBack && earlier < earlierQuestions; i-- {
		m := history[i]
		if m.Role != domain.RoleUser {
			continue
		}
		turns++
		if contentWords(wordsOf(m.Content)) == 0 {
			continue // "thanks!", "hi": no subject to carry
		}
		b.WriteString("\n")
		b.WriteString(firstRunes(strings.TrimSpace(m.Content), earlierRunes))
		earlier++
		if !isFollowUp(m.Content) {
			break // it named its subject: nothing older is needed
		}
	}
	return b.String(), earlier
}

// followUpNote tells an admin reading the trace why the query is not the
// question.
func followUpNote(earlier int) string {
	if earlier == 1 {
		return "follow-up: the query adds the conversation's previous question"
	}
	return fmt.Sprintf("follow-up: the query adds the conversation's %d previous questions", earlier)
}

// wordsOf splits text into lowercase words of letters and digits;
// apostrophes join ("what's" is "whats").
func wordsOf(text string) []string {
	var (
		words []string
		b     strings.Builder
	)
	for _, r := range text {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(unicode.ToLower(r))
		case r == '\'' || r == '’':
		default:
			if b.Len() > 0 {
				words = append(words, b.String())
				b.Reset()
			}
		}
	}
	if b.Len() > 0 {
		words = append(words, b.String())
	}
	return words
}

// contentWords counts the words that can name a subject.
func contentWords(words []string) int {
	n := 0
	for _, w := range words {
		if !functionWords[w] && !fillerWords[w] && !smallTalk[w] && (len(w) > 1 || unicode.IsDigit(rune(w[0]))) {
			n++
		}
	}
	return n
}

// skipInterjections drops what a reply may start with before its question
// ("ok, and the price?").
func skipInterjections(words []string) []string {
	for len(words) > 0 && (smallTalk[words[0]] || words[0] == "so" || words[0] == "oh" || words[0] == "right" || words[0] == "well") {
		words = words[1:]
	}
	return words
}

// followUpOpeners are how a question continues the previous one.
var followUpOpeners = [][]string{
	{"and"}, {"also"}, {"or"}, {"but"}, {"plus"},
	{"what", "about"}, {"how", "about"}, {"what", "if"}, {"same", "for"}, {"same", "with"},
	{"the", "same", "for"}, {"what", "else"},
}

func opensLikeFollowUp(words []string) bool {
	for _, o := range followUpOpeners {
		if len(words) >= len(o) && equalWords(words[:len(o)], o) {
			return true
		}
	}
	return false
}

func equalWords(a, b []string) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// leansOnPronoun reports an auxiliary followed by a pronoun ("does it",
// "is that", "can they") or a pronoun as the object at the end ("can I
// return it?").
func leansOnPronoun(words []string) bool {
	for i, w := range words {
		if !pronouns[w] {
			continue
		}
		if i > 0 && auxiliaries[words[i-1]] || i == len(words)-1 && w != "they" {
			return true
		}
	}
	return false
}

func firstRunes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}

func setOf(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

var pronouns = setOf("it that this they them those these")

var auxiliaries = setOf(`is are was were be does do did can could will would should shall may might
must has have had isnt arent doesnt dont didnt cant wont`)

// functionWords name nothing ("how", "the", "does").
var functionWords = setOf(`a about above after again against all also am an and any are as at be
because been before being below between both but by can cannot cant could did didnt do does doesnt
doing dont down during each either else few for from further had has have having he her here hers
him his how i if im in into is isnt it its itself ive just me more most my myself no nor not now of
off on once only or other our ours out over own same she should so some such than that thats the
their theirs them themselves then there theres these they this those through to too under until up
us very was wasnt we were what whats when where which while who whom whose why will with wont would
you your yours youre yourself plus either whether there's per via instead`)

// fillerWords are content words a question is phrased with rather than
// about ("how long does it take", "can I get").
var fillerWords = setOf(`get gets got take takes taking long much many need needs want wants know
tell let lets help like possible able way thing things please mean means work works go goes`)

// smallTalk are greetings, thanks and acknowledgements.
var smallTalk = setOf(`hi hello hey thanks thank thx ty ok okay great cool perfect nice good
awesome bye goodbye cheers yes yeah yep no nope sure understood alright`)
