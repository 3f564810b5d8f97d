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
// made only of a greeting, thanks or a goodbye (domain.ClassifySmallTalk)
// is answered politely instead, without retrieval or a model, and is no
// fallback.

// Default replies. A greeting is answered with the agent's welcome message
// when it has one, which is what the widget greets with.
const (
	defaultGreetingReply = "Hi! How can I help you today?"
	thanksReply          = "You're welcome! Is there anything else I can help you with?"
	farewellReply        = "Goodbye, and thanks for getting in touch!"
)

// smallTalkReply returns the reply to a small-talk message, or "" for any
// other message.
func smallTalkReply(message string, agent *domain.Agent) string {
	switch domain.ClassifySmallTalk(message) {
	case domain.Greeting:
		if welcome := strings.TrimSpace(agent.Config.WelcomeMessage); welcome != "" {
			return welcome
		}
		return defaultGreetingReply
	case domain.Thanks:
		return thanksReply
	case domain.Farewell:
		return farewellReply
	}
	return ""
}
