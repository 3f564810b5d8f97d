package domain

import (
	"strings"
	"unicode"
)

// SmallTalk is what a visitor's message does when it asks nothing of the
// knowledge: a greeting (or a bare "can you help me?"), thanks, a goodbye,
// asking whether they are talking to a bot, or asking for a person. The
// chat engine answers such a message without knowledge (no fallback), and
// the outcome rules skip it when they look for the visitor's last
// question.
//
// Acknowledgements ("ok", "yes", "sure", "no thanks") are no small talk on
// purpose: what they answer depends on the reply before them ("Would you
// like to talk to a person?", a model's question back), which
// ClassifyAcknowledgement leaves to the chat engine.
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
	// AskedForPerson: "I want to talk to a human", "agent please", "can I
	// speak to customer service?". Searching the knowledge for it finds
	// nothing worth saying; the visitor wants a person.
	AskedForPerson
)

// maxSmallTalkWords bounds a small-talk message: a longer one says more
// than hello.
const maxSmallTalkWords = 10

var (
	greetingWords = setOfWords(`hi hello hey hiya heya howdy greetings morning afternoon evening yo`)
	thanksWords   = setOfWords(`thanks thank thx thanx thnx ty tysm thankyou cheers appreciated appreciate`)
	farewellWords = setOfWords(`bye goodbye byebye cya farewell`)
	// helpWords ask for help without saying with what ("can you help
	// me?", "I need assistance"): a greeting in effect.
	helpWords = setOfWords(`help assist assistance support`)
	// botWords name what the visitor wonders they are talking to.
	botWords = setOfWords(`bot robot ai chatbot machine computer`)
	// personWords name a person to talk to. "human" asks for one when
	// typed alone and asks what one talks to in "are you human?".
	personWords = setOfWords(`human humans person someone somebody agent agents representative
representatives rep operator staff employee`)
	// requestWords ask to be put through to someone.
	requestWords = setOfWords(`talk talking speak speaking chat chatting connect transfer contact reach call escalate`)
	// askWords may join help, bot and person words in such a message;
	// "real", "live", "actual" qualify a person.
	askWords = setOfWords(`i me am can could would need want please pls what do is are r u real live actual to an
with like from`)
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
// every word must be one of the lists above. Asking what one talks to
// ("are you human?", "is this a bot?") and asking for a person ("can I
// talk to a human?", "I need help from someone", "customer service
// please") win over the rest; a goodbye wins over thanks ("thanks,
// bye"), and thanks over a greeting ("hi, thanks!").
func ClassifySmallTalk(message string) SmallTalk {
	// An apostrophe joins its word ("what's" is "whats"), as elsewhere
	// in the question's reading.
	words := lowerWords(strings.NewReplacer("'", "", "’", "").Replace(message))
	if len(words) == 0 || len(words) > maxSmallTalkWords {
		return NotSmallTalk
	}
	var greets, thanks, bye, help, bot, person, request bool
	for i, w := range words {
		switch {
		case greetingWords[w]:
			greets = true
		case helpWords[w]:
			help = true
		case botWords[w]:
			bot = true
		case personWords[w]:
			person = true
		case w == "customer" && i+1 < len(words) && (words[i+1] == "service" || words[i+1] == "support" || words[i+1] == "care"):
			person = true // "customer service": its second word is read next
		case w == "service" || w == "care":
			if i == 0 || words[i-1] != "customer" {
				return NotSmallTalk
			}
		case requestWords[w]:
			request = true
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
	case (bot || person) && asksWhatItIs(words):
		return AskedIfBot
	case person:
		return AskedForPerson
	case bot && (help || request):
		return NotSmallTalk // "can I talk to the bot?", "need help from AI": unclear
	case bot:
		return AskedIfBot
	case request:
		return NotSmallTalk // "I want to talk": to whom, about what?
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

// asksWhatItIs tells whether words ask what the visitor is talking to:
// "are you", "am I talking", "is this", "is it", "r u".
func asksWhatItIs(words []string) bool {
	for i := 0; i+1 < len(words); i++ {
		switch words[i] + " " + words[i+1] {
		case "are you", "am i", "is this", "is it", "r u", "you are", "you a", "you human", "you real":
			return true
		}
	}
	return false
}

// Acknowledgement is what a visitor's message does when it only says yes,
// no or ok ("yes please", "no thanks", "got it"). It asks nothing; what it
// answers depends on the reply before it, which the chat engine reads.
type Acknowledgement int

// The kinds of acknowledgement; NoAcknowledgement for any message that
// says more.
const (
	NoAcknowledgement Acknowledgement = iota
	SaysYes
	SaysNo
	SaysOK
)

// maxAcknowledgementWords bounds an acknowledgement: "sure, that would be
// great, thanks" is one, a longer message says more.
const maxAcknowledgementWords = 7

var (
	yesWords = setOfWords(`yes yeah yep yup yea sure definitely absolutely certainly please`)
	noWords  = setOfWords(`no nope nah`)
	okWords  = setOfWords(`ok okay k kk alright fine cool noted understood perfect great good awesome got`)
	// ackFiller goes with the words above ("yes please", "no thank you",
	// "got it", "sounds good", "that would be great").
	ackFiller = setOfWords(`thanks thank thx you it that would be do i like to so much very sounds see makes sense
a lot then oh`)
)

// ClassifyAcknowledgement tells whether message only acknowledges, and
// how: every word must be one of the lists above, and one must say yes,
// no or ok. No wins over the others ("ok, no thanks"), yes over ok ("ok
// yes please").
func ClassifyAcknowledgement(message string) Acknowledgement {
	words := lowerWords(strings.NewReplacer("'", "", "’", "").Replace(message))
	if len(words) == 0 || len(words) > maxAcknowledgementWords {
		return NoAcknowledgement
	}
	var yes, no, ok bool
	for _, w := range words {
		switch {
		case noWords[w]:
			no = true
		case yesWords[w]:
			yes = true
		case okWords[w]:
			ok = true
		case !ackFiller[w]:
			return NoAcknowledgement
		}
	}
	switch {
	case no:
		return SaysNo
	case yes:
		return SaysYes
	case ok:
		return SaysOK
	}
	return NoAcknowledgement
}
