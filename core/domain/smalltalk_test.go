package domain_test

import (
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

func TestClassifySmallTalk(t *testing.T) {
	tests := []struct {
		message string
		want    domain.SmallTalk
	}{
		{"hi", domain.Greeting},
		{"Hello!", domain.Greeting},
		{"hey there :)", domain.Greeting},
		{"Good morning, team", domain.Greeting},
		{"Thanks!", domain.Thanks},
		{"thank you so much for the help", domain.Thanks},
		{"ok thanks", domain.Thanks},
		{"great, thx", domain.Thanks},
		{"cheers", domain.Thanks},
		{"hi, thanks", domain.Thanks},
		{"Bye", domain.Farewell},
		{"thanks, bye!", domain.Farewell},
		{"see you later", domain.Farewell},
		{"see ya", domain.Farewell},
		{"THANK YOU!!!", domain.Thanks},
		// Asking for help without a subject is a greeting: the welcome
		// message says what the agent knows about.
		{"can you help me?", domain.Greeting},
		{"I need help", domain.Greeting},
		{"help", domain.Greeting},
		{"What can you do?", domain.Greeting},
		// Asking what one talks to.
		{"are you a bot?", domain.AskedIfBot},
		{"Am I talking to a real person?", domain.AskedIfBot},
		{"is this a human", domain.AskedIfBot},
		{"are you human?", domain.AskedIfBot},
		{"r u a bot", domain.AskedIfBot},
		{"bot?", domain.AskedIfBot},
		// Asking for a person.
		{"I need help from a human", domain.AskedForPerson},
		{"can I talk to a person", domain.AskedForPerson},
		{"I want to speak to a real person please", domain.AskedForPerson},
		{"Hello, can I talk to someone?", domain.AskedForPerson},
		{"human", domain.AskedForPerson},
		{"agent please", domain.AskedForPerson},
		{"live agent", domain.AskedForPerson},
		{"Is there a human I can talk to?", domain.AskedForPerson},
		{"connect me to customer service", domain.AskedForPerson},
		{"Are you a bot? I want a human", domain.AskedIfBot}, // the reply offers a person
		// With a subject, or without a person, it is a question.
		{"can I talk to someone about my refund?", domain.NotSmallTalk},
		{"how do I add an agent?", domain.NotSmallTalk},
		{"I don't want to talk to a human", domain.NotSmallTalk},
		{"no human", domain.NotSmallTalk},
		{"can I talk to you", domain.NotSmallTalk},
		{"is the service down?", domain.NotSmallTalk},
		{"customer", domain.NotSmallTalk},
		{"can you help me with my order?", domain.NotSmallTalk},
		// Questions, with or without small talk around them.
		{"hi, how long does shipping take?", domain.NotSmallTalk},
		{"thanks, and what about returns?", domain.NotSmallTalk},
		{"Thank you for the refund policy, but where is my order?", domain.NotSmallTalk},
		// Acknowledgements answer the fallback's "would you like to talk to
		// a person?": they are no small talk.
		{"ok", domain.NotSmallTalk},
		{"yes", domain.NotSmallTalk},
		{"no thanks", domain.NotSmallTalk},
		{"sure", domain.NotSmallTalk},
		{"good", domain.NotSmallTalk},
		// Not a greeting by one word alone.
		{"how are you", domain.NotSmallTalk},
		{"hi " + strings.Repeat("thanks ", 10), domain.NotSmallTalk}, // too long to be only that
		{"", domain.NotSmallTalk},
		{"?!", domain.NotSmallTalk},
		{"hola", domain.NotSmallTalk},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			if got := domain.ClassifySmallTalk(tt.message); got != tt.want {
				t.Errorf("domain.ClassifySmallTalk(%q) = %d, want %d", tt.message, got, tt.want)
			}
		})
	}
}

func TestClassifyAcknowledgement(t *testing.T) {
	tests := []struct {
		message string
		want    domain.Acknowledgement
	}{
		{"yes", domain.SaysYes},
		{"Yes please!", domain.SaysYes},
		{"sure, that would be great", domain.SaysYes},
		{"yeah thanks", domain.SaysYes},
		{"ok yes please", domain.SaysYes},
		{"no", domain.SaysNo},
		{"No thank you", domain.SaysNo},
		{"ok, no thanks", domain.SaysNo},
		{"nope", domain.SaysNo},
		{"ok", domain.SaysOK},
		{"Got it", domain.SaysOK},
		{"sounds good", domain.SaysOK},
		{"perfect", domain.SaysOK},
		{"oh I see", domain.NoAcknowledgement}, // neither yes, no nor ok
		{"thanks", domain.NoAcknowledgement},   // small talk: thanks
		{"yes, how long does shipping take?", domain.NoAcknowledgement},
		{"no, it still doesn't work", domain.NoAcknowledgement},
		{"ok " + strings.Repeat("yes ", 7), domain.NoAcknowledgement},
		{"", domain.NoAcknowledgement},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			if got := domain.ClassifyAcknowledgement(tt.message); got != tt.want {
				t.Errorf("domain.ClassifyAcknowledgement(%q) = %d, want %d", tt.message, got, tt.want)
			}
		})
	}
}
