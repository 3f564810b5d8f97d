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
// made only of a greeting, thanks, a goodbye or "are you a bot?"
// (domain.ClassifySmallTalk) is answered instead, without retrieval or a
// model, and is no fallback.

// Default replies. A greeting is answered with the agent's welcome message
// when it has one, which is what the widget greets with.
const (
	defaultGreetingReply = "Hi! How can I help you today?"
	thanksReply          = "You're welcome! Is there anything else I can help you with?"
	farewellReply        = "Goodbye, and thanks for getting in touch!"
	// botReply answers "are you a bot?" truthfully; the answer offers a
	// person where the plan has handoff, as visitors who ask often want one.
	botReply = "I'm an AI assistant: I answer from this team's help content. You can ask for a person at any time."
)

// smallTalkReply returns the reply to a small-talk message, or "" for any
// other message, and whether the reply offers a person.
func smallTalkReply(message string, agent *domain.Agent) (string, bool) {
	switch domain.ClassifySmallTalk(message) {
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
		return botReply, true
	}
	return "", false
}
