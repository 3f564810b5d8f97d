package domain

import (
	"strings"
	"time"
)

// Outcome is how a conversation ended, one per conversation, decided by
// DecideOutcome. docs/outcomes.md explains each to the team; the
// definitions live here only.
type Outcome string

// Outcomes, as the API and reports name them.
const (
	// OutcomeResolvedConfirmed: the agent answered alone and the visitor
	// confirmed it: their latest thumbs was up, or their last message
	// says it helped (SaysItHelped).
	OutcomeResolvedConfirmed Outcome = "RESOLVED_CONFIRMED"
	// OutcomeResolvedUnconfirmed: the agent answered alone, its last
	// answer was no fallback and not rated down, and the visitor did not
	// come back on the same topic.
	OutcomeResolvedUnconfirmed Outcome = "RESOLVED_UNCONFIRMED"
	// OutcomeHandedOff: a person was asked for or took over, and the
	// conversation is not resolved.
	OutcomeHandedOff Outcome = "HANDED_OFF"
	// OutcomeResolvedByPerson: a person took part and the conversation
	// is resolved.
	OutcomeResolvedByPerson Outcome = "RESOLVED_BY_PERSON"
	// OutcomeAbandonedAfterFallback: the agent alone, and the visitor left
	// after its last turn failed: a fallback, no answer at all, or an
	// answer they rated down.
	OutcomeAbandonedAfterFallback Outcome = "ABANDONED_AFTER_FALLBACK"
	// OutcomeRecontact: what would have been RESOLVED_UNCONFIRMED, but the
	// same verified user came back on the same topic (SameTopic) within
	// OutcomeRecontactWindow.
	OutcomeRecontact Outcome = "RECONTACT"
	// OutcomeUndecided is no outcome: only a filter and a report's column
	// use it (a conversation not decided yet); DecideOutcome never does.
	OutcomeUndecided Outcome = "UNDECIDED"
)

// Outcomes lists every outcome, in the order reports show them.
var Outcomes = []Outcome{
	OutcomeResolvedConfirmed, OutcomeResolvedUnconfirmed, OutcomeRecontact,
	OutcomeAbandonedAfterFallback, OutcomeHandedOff, OutcomeResolvedByPerson,
}

// Outcome windows. A conversation is decided once it has been quiet for
// OutcomeQuietWindow: until then its visitor may still come back, a person
// may still answer. An unconfirmed resolution of a verified user may still
// turn into a re-contact until OutcomeRecontactWindow after its last
// activity; it is final then.
const (
	OutcomeQuietWindow     = 24 * time.Hour
	OutcomeRecontactWindow = 7 * 24 * time.Hour
)

// OutcomeSignals are the facts of one conversation DecideOutcome reads.
// Stores gather them; nothing here reads a message twice.
type OutcomeSignals struct {
	// Status is the conversation's state now.
	Status ConversationStatus
	// VerifiedUserID is the conversation's verified user, "" when anonymous:
	// only verified users can be recognised when they come back.
	VerifiedUserID string
	// FirstQuestion is the first USER message's text; "" when the visitor
	// never wrote. LastQuestion is the last USER message that asks
	// something (AsksSomething: "thanks", "bye", "ok", "yes please" say
	// nothing of the answer); "" when the visitor wrote nothing else.
	FirstQuestion string
	LastQuestion  string
	// PersonRequested is whether the conversation was ever handed to
	// people (a HANDOFF_REQUESTED or HUMAN state), PersonReplied whether a
	// person ever wrote to the visitor (a HUMAN message).
	PersonRequested bool
	PersonReplied   bool
	// LastTurnFailed is whether LastQuestion got no ASSISTANT answer or a
	// fallback (its last answer before the visitor's next message).
	LastTurnFailed bool
	// LatestRating is the visitor's most recent thumbs on any answer (by
	// when it was given), "" when none stands.
	LatestRating Rating
	// LastActivityAt is the conversation's last activity.
	LastActivityAt time.Time
	// LaterContacts are the conversations the same verified user started
	// after this one, up to OutcomeRecontactWindow after its last activity.
	LaterContacts []LaterContact
}

// LaterContact is a later conversation of the same verified user.
type LaterContact struct {
	ConversationID string
	CreatedAt      time.Time
	// FirstQuestion is its first USER message's text.
	FirstQuestion string
}

// OutcomeDecision is DecideOutcome's answer at a given time.
type OutcomeDecision struct {
	// Outcome is "" while undecided, and for a conversation whose visitor
	// never asked anything (nothing to resolve).
	Outcome Outcome
	// Final is true when nothing but a later event (a message, a state
	// change, a rating, a new conversation of the same user) can change
	// the decision; NextCheck is then zero. Otherwise NextCheck is the
	// boundary where time alone may change it.
	Final     bool
	NextCheck time.Time
}

// DecideOutcome decides s's outcome at now. It is the one definition of
// outcomes; the worker applies it and stores its answer, and applies it
// again when a later event or NextCheck comes.
//
// The rules, first match wins:
//
//  1. The visitor never wrote: no outcome, final. (One who wrote only
//     small talk, "hi" and "bye", asked nothing either: no outcome, unless
//     a person took part, rule 3.)
//  2. Quiet for less than OutcomeQuietWindow (now < last activity + 24 h):
//     undecided, look again at that boundary. At exactly 24 h it is quiet.
//  3. A person took part (handoff requested, a member took over, or a
//     HUMAN reply): RESOLVED_BY_PERSON when the state is RESOLVED, else
//     HANDED_OFF. A person's resolution beats anything the agent did
//     before, and a conversation the visitor reopened after a person
//     resolved it is HANDED_OFF until someone resolves it again. The
//     team resolving a conversation no person answered is not a person's
//     resolution: the agent did the work, the rules below apply.
//  4. The visitor's last question says it helped: RESOLVED_CONFIRMED. It
//     beats a fallback after it, which is the agent failing to answer a
//     confirmation it took for a question ("that worked").
//  5. The last turn failed (fallback, or no answer): ABANDONED_AFTER_FALLBACK,
//     even after an earlier thumbs up: the visitor's last question went
//     unanswered. Small talk after it changes nothing: "ok thanks" after
//     a fallback is still a failed question.
//  6. The visitor's latest thumbs: up is RESOLVED_CONFIRMED; down is
//     ABANDONED_AFTER_FALLBACK. A thumbs-down with no handoff is the
//     visitor telling us the answer failed and leaving; counting it as
//     resolved, even unconfirmed, would inflate the resolution rate with
//     answers the visitor rejected, so it counts as a fallback they
//     declared themselves. A later change of the thumbs wins (latest).
//  7. Otherwise the agent resolved it, unconfirmed, unless the same
//     verified user started a conversation on the same topic (SameTopic
//     of the first questions) within OutcomeRecontactWindow of this one's
//     last activity (at exactly 7 days still counts): RECONTACT. A
//     re-contact overrides only the unconfirmed resolution: a thumbs up
//     or "that helped" is the visitor's own word, a shared topic only a
//     guess, and people do come back with a follow-up to an answer that
//     worked. A return on another topic is a new question, not a sign
//     this one failed, so it does not count against the resolution.
//     An unconfirmed resolution of a verified user is not final until
//     the 7 days pass; anonymous visitors cannot be recognised, so theirs
//     is final at once.
func DecideOutcome(s OutcomeSignals, now time.Time) OutcomeDecision {
	if strings.TrimSpace(s.FirstQuestion) == "" {
		return OutcomeDecision{Final: true}
	}
	if quiet := s.LastActivityAt.Add(OutcomeQuietWindow); now.Before(quiet) {
		return OutcomeDecision{NextCheck: quiet}
	}
	final := func(o Outcome) OutcomeDecision { return OutcomeDecision{Outcome: o, Final: true} }
	switch {
	case s.PersonRequested || s.PersonReplied:
		if s.Status == StatusResolved {
			return final(OutcomeResolvedByPerson)
		}
		return final(OutcomeHandedOff)
	case strings.TrimSpace(s.LastQuestion) == "":
		// Only small talk, and no person: nothing was asked.
		return OutcomeDecision{Final: true}
	case SaysItHelped(s.LastQuestion):
		return final(OutcomeResolvedConfirmed)
	case s.LastTurnFailed:
		return final(OutcomeAbandonedAfterFallback)
	case s.LatestRating == RatingUp:
		return final(OutcomeResolvedConfirmed)
	case s.LatestRating == RatingDown:
		return final(OutcomeAbandonedAfterFallback)
	}
	if s.VerifiedUserID == "" {
		return final(OutcomeResolvedUnconfirmed)
	}
	until := s.LastActivityAt.Add(OutcomeRecontactWindow)
	for _, c := range s.LaterContacts {
		if !c.CreatedAt.After(until) && SameTopic(s.FirstQuestion, c.FirstQuestion) {
			return final(OutcomeRecontact)
		}
	}
	if now.Before(until) {
		return OutcomeDecision{Outcome: OutcomeResolvedUnconfirmed, NextCheck: until}
	}
	return final(OutcomeResolvedUnconfirmed)
}

// helpedPhrases are what a visitor writes to say an answer helped, matched
// on words (lowercase, punctuation as spaces). Kept short on purpose: each
// is a confirmation in any context. A bare "thanks" is politeness, not a
// confirmation, so it is not one.
var helpedPhrases = []string{
	"that helped", "this helped", "it helped", "that helps", "this helps", "helped a lot",
	"very helpful", "was helpful", "really helpful", "so helpful",
	"that worked", "this worked", "that works", "it works now", "works now",
	"that fixed it", "that solved it", "fixed it thanks", "problem solved", "issue solved",
	"all sorted", "exactly what i needed", "just what i needed", "what i was looking for",
}

// negations void a helped phrase: "that didn't help", "it works now? no".
var negations = map[string]bool{
	"not": true, "no": true, "never": true, "didn": true, "doesn": true, "don": true,
	"isn": true, "wasn": true, "hasn": true, "haven": true, "nope": true, "still": true,
}

// SaysItHelped reports whether text, a visitor's message, says the answer
// helped: it holds one of helpedPhrases and no negation word ("not",
// "didn't", "still", ...). Negation voids the whole message, so "that
// helped but it still fails" is no confirmation.
func SaysItHelped(text string) bool {
	words := lowerWords(text)
	for _, w := range words {
		if negations[w] {
			return false
		}
	}
	joined := " " + strings.Join(words, " ") + " "
	for _, p := range helpedPhrases {
		if strings.Contains(joined, " "+p+" ") {
			return true
		}
	}
	return false
}

// LastQuestion picks the visitor's last question from their recent USER
// messages (recent, latest first, each with whether it got no ASSISTANT
// answer or a fallback before the next one): the latest that asks
// something (AsksSomething), with its failed flag; "" and false when none
// does. Stores read the messages; this decides which one counts.
func LastQuestion(recent []string, failed []bool) (string, bool) {
	for i, q := range recent {
		if AsksSomething(q) {
			return q, i < len(failed) && failed[i]
		}
	}
	return "", false
}

// AsksSomething reports whether text, a visitor's message, is a question
// or says whether an answer helped: it is neither small talk
// (ClassifySmallTalk) nor a bare yes, no or ok (ClassifyAcknowledgement),
// unless it says the answer helped ("perfect, that worked"). "ok" after a
// fallback, or "yes please" to its offer of a person, leaves the failed
// question the last one; "ok" after an answer leaves the answered one.
func AsksSomething(text string) bool {
	if ClassifySmallTalk(text) != NotSmallTalk {
		return false
	}
	return ClassifyAcknowledgement(text) == NoAcknowledgement || SaysItHelped(text)
}

// SameTopicThreshold is the share of the shorter question's topic words
// the other question must hold too for SameTopic.
const SameTopicThreshold = 0.5

// SameTopic reports whether two questions are on the same topic: they share
// at least SameTopicThreshold of the topic words (TopicWords) of the one
// with fewer, and at least one. "How do I reset my password?" and
// "password reset link not working" share {reset, password}: same topic;
// "What are your opening hours?" shares nothing with either. Questions
// with no topic word ("hi") are on no topic.
func SameTopic(a, b string) bool {
	wa, wb := TopicWords(a), TopicWords(b)
	if len(wa) == 0 || len(wb) == 0 {
		return false
	}
	if len(wb) < len(wa) {
		wa, wb = wb, wa
	}
	shared := 0
	for w := range wa {
		if wb[w] {
			shared++
		}
	}
	return shared > 0 && float64(shared) >= SameTopicThreshold*float64(len(wa))
}

// TopicWords are a question's content words: lowercase runs of letters and
// digits of three characters or more, less stopwords, with a plural "s"
// dropped ("passwords" is "password").
func TopicWords(text string) map[string]bool {
	words := map[string]bool{}
	for _, w := range lowerWords(text) {
		if len([]rune(w)) < 3 || stopwords[w] {
			continue
		}
		if len(w) > 4 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
			w = strings.TrimSuffix(w, "s")
		}
		words[w] = true
	}
	return words
}

// stopwords carry no topic: function words and what every support
// question says ("help", "please", "question").
var stopwords = setOfWords(`the and for are but not you your yours all any can cannot could had has have
having her his its our ours out was were what when where which who whom why how this that these those
with from they them then there their here about would should will into just like does did doing done
get gets got want wants need needs please thanks thank hello help question questions some more also
been being than too very yes hey okay why able make made use using much
many one two way know tell let see say said now new still again back anyone someone something`)

// ConversationOutcome is a conversation's stored outcome.
type ConversationOutcome struct {
	ConversationID string
	WorkspaceID    string
	AgentID        string
	// Outcome is "" while undecided.
	Outcome Outcome
	// DecidedAt is when the outcome took its present value; zero while
	// undecided. Deciding the same outcome again keeps it.
	DecidedAt time.Time
	Final     bool
	// NextCheckAt is when the worker looks again; zero when nothing is
	// scheduled (final, and no later event since) or when DueNow: a new
	// conversation, or a later event, waiting for the worker's next sweep.
	NextCheckAt time.Time
	DueNow      bool
}
