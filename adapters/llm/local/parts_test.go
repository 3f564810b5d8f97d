package local

import (
	"slices"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

func TestSplitQuestion(t *testing.T) {
	tests := []struct {
		message string
		want    []string
	}{
		{"How long does shipping take and how do I return an item?",
			[]string{"How long does shipping take", "and how do I return an item?"}},
		{"Which cards do you accept? Can I pay by bank transfer?",
			[]string{"Which cards do you accept?", "Can I pay by bank transfer?"}},
		{"What does express cost; when does my parcel arrive, and how do I track my order?",
			[]string{"What does express cost;", "when does my parcel arrive,", "and how do I track my order?"}},
		{"On my Mac, what does the cloud icon mean?", nil}, // a comma alone starts no question
		// A question that leans on the one before is part of it.
		{"Who actually makes Tor? Is it some company?", nil},
		{"What is a bridge relay and how is it different from a normal relay?", nil},
		{"Is shipping free? And do you ship to Canada?",
			[]string{"Is shipping free?", "And do you ship to Canada?"}},
		// One question.
		{"How long does shipping take?", nil},
		{"How do I sign in and can't reset my password", nil}, // "and can't" continues it
		{"What is the difference between how and why?", nil},
		{"Shipping and returns", nil},
		{"how and why?", nil},
		{"Do you ship to Canada and the US?", nil},
		{"", nil},
	}
	for _, tt := range tests {
		if got := splitQuestion(tt.message); !slices.Equal(got, tt.want) {
			t.Errorf("splitQuestion(%q) = %q, want %q", tt.message, got, tt.want)
		}
	}
}

// TestAnswerTwoQuestions: a message asking two questions gets both
// answered, each from its own passage, cited; a part the knowledge does
// not answer adds nothing, and a message turning on a word no passage
// holds ("Canada") is declined as before.
func TestAnswerTwoQuestions(t *testing.T) {
	knowledge := []domain.Chunk{
		{ID: "c1", DocumentName: "Returns and refunds", Text: "You can return any unused item within 30 days of delivery. Start a return from the Orders page of your account and print the prepaid label."},
		{ID: "c2", DocumentName: "Shipping policy", Text: "Acme ships orders within 1 business day. Standard shipping takes 3 to 5 business days; express shipping takes 1 to 2 business days."},
	}
	text, ids := answer("How long does shipping take and how do I return an item?", knowledge, "", 600, 0, nil, nil, 0.5)
	if !strings.Contains(text, "3 to 5 business days") || !strings.Contains(text, "return any unused item") {
		t.Errorf("answer %q, want the shipping times and the returns", text)
	}
	if !slices.Contains(ids, "c1") || !slices.Contains(ids, "c2") {
		t.Errorf("cited %v, want both passages", ids)
	}
	if text, _ := answer("How long does shipping take to Canada and how do I return an item?", knowledge, "", 600, 0, nil, nil, 0.5); text != "" {
		t.Errorf("answer %q, want a decline: Canada is in no passage", text)
	}
	// A Q&A answer to one part that holds the answer to the other is said
	// once.
	reset := domain.Chunk{ID: "c3", DocumentName: "How do I reset my password?", Question: "How do I reset my password?",
		Text: "Click \"Forgot password\" on the sign-in page and follow the link we email you. The link is valid for one hour."}
	text, ids = answer("How do I reset my password and how long is the link valid?", []domain.Chunk{reset}, "", 600, 0, nil, nil, 0.5)
	if text != reset.Text || !slices.Equal(ids, []string{"c3"}) {
		t.Errorf("answer %q citing %v, want the Q&A answer once", text, ids)
	}
}
