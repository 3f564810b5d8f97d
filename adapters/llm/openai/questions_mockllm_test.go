package openai

import (
	"context"
	"reflect"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/knowledge"
)

// The index-time question writer (issue 14, round 5, part b) through this
// adapter and a real OpenAI-compatible server: the passage reaches the model
// as quoted knowledge and the numbered list it answers becomes questions.
// mock-llm's answer is scripted, so this checks the plumbing, not whether
// a real model's questions help retrieval.
func TestMockLLMQuestionWriter(t *testing.T) {
	mock := startMockLLM(t)
	// The rule answers only a request that carries the passage's text
	// somewhere in its messages; anything else gets the echo, which holds no
	// question and would give none.
	mock.configure(t, echoRule(), rule("contains(to_string(body.messages), 'Settings > Security')", 200,
		reply("Here you go:\n1. How do I reset my password?\n2. Where do I find security settings?\n3. How do I reset my password?")))
	before := mock.completions()
	w := knowledge.NewQuestionWriter(mock.model(t, Options{}), "")
	got, err := w.Questions(context.Background(), domain.Chunk{ID: "chk_pw", DocumentName: "Account", Text: "Reset your password from Settings > Security."}, 5)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"How do I reset my password?", "Where do I find security settings?"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("questions = %q, want %q", got, want)
	}
	mock.expectCompletions(t, before, 1)
}
