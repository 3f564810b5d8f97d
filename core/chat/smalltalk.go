package chat

import (
	"strings"

	"github.com/conciergehq/concierge/core/domain"
)

// Small talk. A visitor who writes "hi", "thanks!" or "bye" asks nothing
// the knowledge could answer, so searching it finds nothing and the turn
// used to end in the fallback ("Sorry, I don't have an answer to that.
// Would you like to talk to a person?"), counted as an unanswered
// question and, after "thanks", as an abandoned conversation. A message
// made only of a greeting, thanks, a goodbye, "are you a bot?" or a
// request for a person (domain.ClassifySmallTalk) is answered instead,
// without retrieval or a model, and is no fallback. A bare yes, no or ok
// (domain.ClassifyAcknowledgement) is read against the reply before it
// (acknowledge): it takes an offer of a person, answers a question the
// reply asked, or else gets "alright" (a yes is searched).
//
// A request for a person gets an offer, not the handoff itself: taking it
// goes through the handoff request, which asks for a way to reach the
// visitor when no one is online (the widget's form), so nobody waits for
// a reply that cannot reach them.

// Default replies. A greeting is answered with the agent's welcome message
// when it has one, which is what the widget greets with.
const (
	defaultGreetingReply = "Hi! How can I help you today?"
	thanksReply          = "You're welcome! Is there anything else I can help you with?"
	farewellReply        = "Goodbye, and thanks for getting in touch!"
	// botReply answers "are you a bot?" truthfully; the answer offers a
	// person where the plan has handoff, as visitors who ask often want one.
	botReply = "I'm an AI assistant: I answer from this team's help content. You can ask for a person at any time."
	// personReply answers a request for a person on a plan with handoff,
	// with the offer; noPersonReply where there is no one to hand over to.
	personReply   = "Of course, a person from the team can take over this conversation."
	noPersonReply = "I'm sorry, I can't put you in touch with a person here, but I can try to help. What would you like to know?"
	// ackReply answers "ok" or "no thanks": the visitor has what they
	// came for, or does not want what was offered.
	ackReply = "Alright. If there's anything else, just ask."
)

// smallTalkReply returns the reply to a small-talk message, or "" for any
// other message, and whether the reply offers a person (only where
// handoff, the plan's, is available).
func smallTalkReply(message string, agent *domain.Agent, handoff bool) (string, bool) {
	switch domain.ClassifySmallTalk(message) {
	case domain.AskedForPerson:
		return personRequestReply(handoff)
	case domain.Greeting:
		if welcome := strings.TrimSpace(agent.Config.WelcomeMessage); welcome != "" {
			return welcome, false
		}
		return defaultGreetingReply, false
	case domain.Thanks:
		return thanksReply, false
	case domain.Farewell:
		return farewellReply, false
	case domain.AskedIfBot:
		return botReply, handoff
	}
	return "", false
}

// personRequestReply is the reply to a request for a person, and whether
// it offers one.
func personRequestReply(handoff bool) (string, bool) {
	if handoff {
		return personReply, true
	}
	return noPersonReply, false
}

// acknowledgement is what the engine does with a bare yes, no or ok.
type acknowledgement struct {
	// reply is the answer to give without a search, "" for none.
	reply string
	// offer: the reply offers a person.
	offer bool
	// answersQuestion: the reply before asked the visitor something ("Is
	// your order over 50 euros?"), which the acknowledgement answers: it is
	// a follow-up, searched and answered with the conversation.
	answersQuestion bool
}

// acknowledge decides what a bare yes, no or ok (ack, not
// domain.NoAcknowledgement) answers, from the reply before it (last, nil
// in a new conversation): a yes or ok to an offer of a person takes it;
// any of them to a question the reply asked answers that question; any
// other yes is searched (it may be a question of its own to a model's
// reply); any other no or ok gets "alright".
func acknowledge(ack domain.Acknowledgement, last *domain.Message, agent *domain.Agent, handoff bool) acknowledgement {
	switch {
	case last != nil && last.OfferHandoff && ack != domain.SaysNo:
		reply, offer := personRequestReply(handoff)
		return acknowledgement{reply: reply, offer: offer}
	case last != nil && asksBack(*last, agent):
		return acknowledgement{answersQuestion: true}
	case ack == domain.SaysYes:
		return acknowledgement{}
	}
	return acknowledgement{reply: ackReply}
}

// asksBack tells whether reply, an ASSISTANT message, asked the visitor a
// question of its own: it ends with one, and it is neither a fallback nor
// one of the engine's fixed replies ("Is there anything else I can help
// you with?" asks for a new question, which a "no" declines).
func asksBack(reply domain.Message, agent *domain.Agent) bool {
	text := strings.TrimSpace(reply.Content)
	if reply.Role != domain.RoleAssistant || reply.FallbackReason != domain.FallbackNone || !strings.HasSuffix(text, "?") {
		return false
	}
	switch text {
	case defaultGreetingReply, thanksReply, noPersonReply, strings.TrimSpace(agent.Config.WelcomeMessage):
		return false
	}
	return true
}

// lastReply returns the conversation's last reply to the visitor (history,
// oldest first): the last ASSISTANT message, unless a person or the
// visitor wrote after it; nil when there is none.
func lastReply(history []domain.Message) *domain.Message {
	for i := len(history) - 1; i >= 0; i-- {
		switch history[i].Role {
		case domain.RoleAssistant:
			return &history[i]
		case domain.RoleHuman, domain.RoleUser:
			return nil
		}
	}
	return nil
}
