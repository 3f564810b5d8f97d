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
		{"I need help from a human", domain.NotSmallTalk}, // asks for a person
		{"can I talk to a person", domain.NotSmallTalk},
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
		{"hi " + strings.Repeat("thanks ", 8), domain.NotSmallTalk}, // too long to be only that
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
