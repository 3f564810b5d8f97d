package knowledge

import (
	"context"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Limits of QuestionWriter (issue 14, round 5, part b). A chunk is asked for
// a handful of questions: more would drown the chunk's own words in the
// keyword leg, and each one costs output tokens at index time.
const (
	// MaxQuestionsPerChunk bounds QuestionWriter.Questions.
	MaxQuestionsPerChunk = 10
	// maxQuestionRunes drops a line longer than this: a model that writes
	// prose instead of questions should not fill the index with it.
	maxQuestionRunes = 200
	// questionTokens caps the model's answer; ten short questions fit.
	questionTokens = 400
)

// questionPrompt asks for the questions a passage answers. The passage
// goes to the model as Knowledge, which adapters quote as data, so a
// passage that contains instructions is not obeyed as one.
const questionPrompt = `You help a support assistant find passages. Read the numbered knowledge passage and write up to %d short questions a customer might ask that this passage answers. Write each question on its own line, in the passage's language, without numbering or any other text.`

// QuestionWriter asks a language model, once per chunk at index time,
// which questions the chunk answers, so that they can be stored with the
// chunk and searched along with its text. It is off unless an
// OpenAI-compatible model is configured and the deployment opts in.
//
// Not wired yet: nothing stores or searches the questions (see
// docs/benchmarks.md, issue 14 round 5).
type QuestionWriter struct {
	llm ports.LLM
	// model overrides the adapter's model name; "" keeps it.
	model string
}

// NewQuestionWriter returns a writer that asks llm. model may name a
// cheaper model than the one answering customers; "" uses the adapter's.
func NewQuestionWriter(llm ports.LLM, model string) *QuestionWriter {
	return &QuestionWriter{llm: llm, model: model}
}

// Questions returns at most n distinct questions chunk answers, in the
// model's order, each one line ending in "?". It returns none, and no
// error, when the model declines or writes no question. Returns a
// domain.ValidationError when n is outside 1..MaxQuestionsPerChunk or the
// chunk has no text, and the LLM's errors (domain.ErrUnavailable,
// domain.ErrRateLimited, domain.ErrInvalidInput) as they are.
func (w *QuestionWriter) Questions(ctx context.Context, chunk domain.Chunk, n int) ([]string, error) {
	if n < 1 || n > MaxQuestionsPerChunk {
		return nil, &domain.ValidationError{
			Message: fmt.Sprintf("questions per chunk must be between 1 and %d, got %d", MaxQuestionsPerChunk, n),
			Fields:  map[string]string{"questions": "out of range"},
		}
	}
	if strings.TrimSpace(chunk.Text) == "" {
		return nil, &domain.ValidationError{
			Message: "a chunk without text answers no question",
			Fields:  map[string]string{"text": "empty"},
		}
	}
	res, err := w.llm.Complete(ctx, ports.CompletionRequest{
		Model:     w.model,
		System:    fmt.Sprintf(questionPrompt, n),
		Messages:  []ports.LLMMessage{{Role: "user", Content: "Which questions does passage [1] answer?"}},
		Knowledge: []domain.Chunk{chunk},
		MaxTokens: questionTokens,
	}, func(string) error { return nil })
	if err != nil {
		return nil, fmt.Errorf("writing the questions chunk %s answers: %w", chunk.ID, err)
	}
	if res.Declined {
		return nil, nil
	}
	return parseQuestions(res.Content, n), nil
}

// parseQuestions keeps the lines of s that are questions, without list
// markers, case-insensitively distinct, at most n. Models number their
// lists whatever the prompt says, and some add a sentence before them.
func parseQuestions(s string, n int) []string {
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(s, "\n") {
		q := strings.TrimSpace(strings.TrimLeftFunc(line, func(r rune) bool {
			return unicode.IsDigit(r) || unicode.IsSpace(r) || strings.ContainsRune("-*•.)", r)
		}))
		if !strings.HasSuffix(q, "?") || utf8.RuneCountInString(q) < 4 || utf8.RuneCountInString(q) > maxQuestionRunes {
			continue
		}
		key := strings.ToLower(q)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, q)
		if len(out) == n {
			break
		}
	}
	return out
}
