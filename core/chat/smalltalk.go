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
// without retrieval or a model, and is no fallback. So are "yes" and "ok"
// to a reply that offered a person (they take the offer), and "no" or
// "ok" to any other (domain.ClassifyAcknowledgement). A "yes" to any other
// reply is searched: it may answer a model's question back.
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

// acknowledgementReply returns the reply to an acknowledgement (ack, not
// domain.NoAcknowledgement), "" when it is to be searched as a question,
// and whether the reply offers a person. offered is whether the reply
// before it offered one.
func acknowledgementReply(ack domain.Acknowledgement, offered, handoff bool) (string, bool) {
	switch {
	case offered && ack != domain.SaysNo:
		return personRequestReply(handoff)
	case ack == domain.SaysYes:
		return "", false
	}
	return ackReply, false
}

// offeredPerson tells whether the conversation's last reply (history,
// oldest first) offered a person.
func offeredPerson(history []domain.Message) bool {
	for i := len(history) - 1; i >= 0; i-- {
		switch history[i].Role {
		case domain.RoleAssistant:
			return history[i].OfferHandoff
		case domain.RoleHuman, domain.RoleUser:
			return false
		}
	}
	return false
}
