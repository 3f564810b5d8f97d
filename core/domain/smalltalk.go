package domain

import (
	"strings"
	"unicode"
)

// SmallTalk is what a visitor's message does when it asks nothing: a
// greeting, thanks or a goodbye. The chat engine answers such a message
// politely without knowledge (no fallback), and the outcome rules skip it
// when they look for the visitor's last question.
//
// Acknowledgements ("ok", "yes", "sure", "no thanks") are no small talk on
// purpose: after the fallback's "Would you like to talk to a person?" they
// answer it.
type SmallTalk int

// The kinds of small talk; NotSmallTalk for any message that says more.
const (
	NotSmallTalk SmallTalk = iota
	Greeting
	Thanks
	Farewell
)

// maxSmallTalkWords bounds a small-talk message: a longer one says more
// than hello.
const maxSmallTalkWords = 8

var (
	greetingWords = setOfWords(`hi hello hey hiya heya howdy greetings morning afternoon evening yo`)
	thanksWords   = setOfWords(`thanks thank thx thanx thnx ty tysm thankyou cheers appreciated appreciate`)
	farewellWords = setOfWords(`bye goodbye byebye cya farewell`)
	// courtesyWords go with the words above ("thank you so much for the
	// help", "good morning everyone", "hi there") and make no question.
	courtesyWords = setOfWords(`you so much very a lot for the your all this that it help there everyone guys team
again good great nice have day and ok okay many kind really`)
)

func setOfWords(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// ClassifySmallTalk tells whether message is only a greeting, thanks or a
// goodbye, and which. Thanks or a goodbye win over a greeting in the same
// message ("hi, thanks!"), a goodbye over thanks ("thanks, bye").
func ClassifySmallTalk(message string) SmallTalk {
	words := strings.FieldsFunc(strings.ToLower(strings.ReplaceAll(message, "'", "")), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	if len(words) == 0 || len(words) > maxSmallTalkWords {
		return NotSmallTalk
	}
	var greets, thanks, bye bool
	for i, w := range words {
		switch {
		case greetingWords[w]:
			greets = true
		case thanksWords[w]:
			thanks = true
		case farewellWords[w]:
			bye = true
		case w == "see" && i+1 < len(words) && (words[i+1] == "you" || words[i+1] == "ya"):
			bye = true // "see you", "see you later"
		case courtesyWords[w]:
		case (w == "later" || w == "soon" || w == "ya") && i > 0 && (words[i-1] == "you" || words[i-1] == "see"):
		default:
			return NotSmallTalk
		}
	}
	switch {
	case bye:
		return Farewell
	case thanks:
		return Thanks
	case greets:
		return Greeting
	}
	return NotSmallTalk
}
