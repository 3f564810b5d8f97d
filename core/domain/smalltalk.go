package domain

import (
	"strings"
	"unicode"
)

// SmallTalk is what a visitor's message does when it asks nothing of the
// knowledge: a greeting (or a bare "can you help me?"), thanks, a goodbye,
// or asking whether they are talking to a bot. The chat engine answers
// such a message without knowledge (no fallback), and the outcome rules
// skip it when they look for the visitor's last question.
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
	// AskedIfBot: "are you a bot?", "am I talking to a human?". The
	// visitor is owed a straight answer: an AI.
	AskedIfBot
)

// maxSmallTalkWords bounds a small-talk message: a longer one says more
// than hello.
const maxSmallTalkWords = 8

var (
	greetingWords = setOfWords(`hi hello hey hiya heya howdy greetings morning afternoon evening yo`)
	thanksWords   = setOfWords(`thanks thank thx thanx thnx ty tysm thankyou cheers appreciated appreciate`)
	farewellWords = setOfWords(`bye goodbye byebye cya farewell`)
	// helpWords ask for help without saying with what ("can you help
	// me?", "I need assistance"): a greeting in effect.
	helpWords = setOfWords(`help assist assistance support`)
	// botWords name what the visitor wonders they are talking to.
	botWords = setOfWords(`bot robot ai chatbot machine human person computer`)
	// askWords may join help and bot words in such a message.
	askWords = setOfWords(`i me am can could would need please pls what do is are real talking to an with someone`)
	// courtesyWords go with the words above ("thank you so much for the
	// help", "good morning everyone", "hi there") and make no question.
	courtesyWords = setOfWords(`you so much very a lot for the your all this that it help there everyone guys team
again good great nice have day and ok okay many kind really`)
)

// lowerWords splits text into lowercase runs of letters and digits.
func lowerWords(text string) []string {
	return strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// setOfWords is the set of the space-separated words.
func setOfWords(words string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.Fields(words) {
		set[w] = true
	}
	return set
}

// ClassifySmallTalk tells whether message is only small talk, and which:
// every word must be one of the lists above. Thanks or a goodbye win over
// a greeting in the same message ("hi, thanks!"), a goodbye over thanks
// ("thanks, bye"); a bot word with a help word ("I need help from a
// human") asks for a person, which is no small talk.
func ClassifySmallTalk(message string) SmallTalk {
	// An apostrophe joins its word ("what's" is "whats"), as elsewhere
	// in the question's reading.
	words := lowerWords(strings.NewReplacer("'", "", "’", "").Replace(message))
	if len(words) == 0 || len(words) > maxSmallTalkWords {
		return NotSmallTalk
	}
	var greets, thanks, bye, help, bot bool
	for i, w := range words {
		switch {
		case greetingWords[w]:
			greets = true
		case helpWords[w]:
			help = true
		case botWords[w]:
			bot = true
		case askWords[w]:
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
	case bot && !help:
		return AskedIfBot
	case bot:
		return NotSmallTalk // "I need help from a human": a request for a person
	case bye:
		return Farewell
	case thanks:
		return Thanks
	case greets || help:
		return Greeting
	case strings.Join(words, " ") == "what can you do":
		return Greeting
	}
	return NotSmallTalk
}
