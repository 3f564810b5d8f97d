package chat

import (
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

func TestIsFollowUp(t *testing.T) {
	tests := []struct {
		message string
		want    bool
	}{
		// Openers.
		{"and how much is express?", true},
		{"And if I order after 2pm?", true},
		{"what about returns?", true},
		{"How about Germany?", true},
		{"What if it arrives damaged?", true},
		{"Also, is there a fee?", true},
		{"same for express?", true},
		{"ok, and the price?", true},
		{"Thanks! What about Canada?", true},
		// Leaning on a pronoun without a subject of its own.
		{"Does it cost extra?", true},
		{"is that free?", true},
		{"Can they be returned?", true},
		{"Can I return it?", true},
		{"Is there a fee for that?", true},
		// Too short to name a subject.
		{"Germany?", true},
		{"the price?", true},
		{"How much?", true},
		{"why?", true},
		{"and?", true},
		// Stand-alone: a subject of its own, however short.
		{"Do you ship to Canada?", false},
		{"How do I reset my password?", false},
		{"How long does standard delivery take?", false},
		{"Express delivery?", false},
		// Short only because most of it is function words: it still names
		// two things.
		{"Is there any way that I could have it sent to a different address?", false},
		{"Where is the nearest store to me?", false},
		// A pronoun in a question that names its subject.
		{"Is it possible to change my delivery address?", false},
		{"Does it matter which courier delivers parcels to Norway?", false},
		// Long questions carry their own subject, however they open.
		{"And can I get a refund to my credit card if the parcel arrives damaged after the return window?", false},
		{"What about the warranty on refurbished laptops bought from a reseller abroad?", false},
		// Small talk has nothing to search for.
		{"Thanks!", false},
		{"ok great, thank you", false},
		{"hi", false},
		// Nothing at all.
		{"", false},
		{"?!", false},
	}
	for _, tt := range tests {
		if got := isFollowUp(tt.message); got != tt.want {
			t.Errorf("isFollowUp(%q) = %v, want %v", tt.message, got, tt.want)
		}
	}
}

func TestFollowUpQuery(t *testing.T) {
	user := func(s string) domain.Message { return domain.Message{Role: domain.RoleUser, Content: s} }
	assistant := func(s string) domain.Message { return domain.Message{Role: domain.RoleAssistant, Content: s} }
	long := strings.Repeat("delivery ", 100)
	tests := []struct {
		name      string
		message   string
		history   []domain.Message
		want      string
		wantTurns int
	}{
		{"the previous question, not the answer", "and how much is express?",
			[]domain.Message{user("How long does standard delivery take?"), assistant("Standard delivery takes 3-5 business days [1].")},
			"and how much is express?\nHow long does standard delivery take?", 1},
		{"only the latest question when it names its subject", "what about returns?",
			[]domain.Message{user("How do I reset my password?"), assistant("Click Forgot password."), user("Do you ship to Germany?"), assistant("Yes.")},
			"what about returns?\nDo you ship to Germany?", 1},
		{"two questions when the latest was a follow-up itself", "and to Germany?",
			[]domain.Message{user("How long does standard delivery take?"), assistant("3-5 days."), user("and express?"), assistant("Next day.")},
			"and to Germany?\nand express?\nHow long does standard delivery take?", 2},
		{"never more than two", "and on Sunday?",
			[]domain.Message{user("Standard delivery?"), user("and express?"), user("and to Germany?")},
			"and on Sunday?\nand to Germany?\nand express?", 2},
		{"small talk is skipped", "and express?",
			[]domain.Message{user("How long does standard delivery take?"), assistant("3-5 days."), user("thanks!"), assistant("You're welcome.")},
			"and express?\nHow long does standard delivery take?", 1},
		{"a person's and the system's messages are not questions", "and express?",
			[]domain.Message{user("Standard delivery time?"), {Role: domain.RoleHuman, Content: "Hi, Sam here. Tracking numbers come by email."}, {Role: domain.RoleSystem, Content: "Sam joined"}},
			"and express?\nStandard delivery time?", 1},
		{"no earlier question", "and express?", []domain.Message{assistant("Hello! How can I help?")}, "and express?", 0},
		{"only small talk before", "and express?", []domain.Message{user("hi"), assistant("Hello!")}, "and express?", 0},
		{"the subject is looked for three questions back at most", "and express?",
			[]domain.Message{user("Standard delivery time?"), user("thanks"), user("ok"), user("hi")},
			"and express?", 0},
		{"a long earlier question is cut", "and express?", []domain.Message{user(long)},
			"and express?\n" + long[:earlierRunes], 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, turns := followUpQuery(tt.message, tt.history)
			if got != tt.want || turns != tt.wantTurns {
				t.Errorf("followUpQuery = %q, %d; want %q, %d", got, turns, tt.want, tt.wantTurns)
			}
		})
	}
}

func TestWordsOf(t *testing.T) {
	got := strings.Join(wordsOf("What's the ÉTA for Zürich… (parcel #42)?"), " ")
	if want := "whats the éta for zürich parcel 42"; got != want {
		t.Errorf("wordsOf = %q, want %q", got, want)
	}
}
