package knowledge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

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
	// questionPromptVersion is part of QuestionWriter.By: a new prompt
	// writes other questions, so sources are indexed again with it.
	questionPromptVersion = "q1"
)

// Defaults of Options' question writing.
const (
	// DefaultQuestionConcurrency is how many chunks of one index job are
	// with the model at once: a provider's latency, not our CPU, bounds
	// the job, and most providers rate-limit a key well above this.
	DefaultQuestionConcurrency = 4
	// DefaultQuestionBudget bounds the time one index job spends writing
	// questions, leaving the rest of the job's timeout for the rest. A
	// source too big to finish in it is indexed with the questions written
	// so far and says so; indexing it again writes the rest.
	DefaultQuestionBudget = 20 * time.Minute
)

// questionPrompt asks for the questions a passage answers. The passage
// goes to the model as Knowledge, which adapters quote as data, so a
// passage that contains instructions is not obeyed as one.
const questionPrompt = `You help a support assistant find passages. Read the numbered knowledge passage and write up to %d short questions a customer might ask that this passage answers. Write each question on its own line, in the passage's language, without numbering or any other text.`

// QuestionWriter asks a language model, once per chunk at index time,
// which questions the chunk answers, so that they can be stored with the
// chunk and searched along with its heading: customers ask in their own
// words, which a passage often does not use. The Indexer uses it when the
// deployment sets CONCIERGE_INDEX_QUESTIONS (an OpenAI-compatible model is
// required; the embedded model writes no questions).
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

// By names what this writer writes with n questions per chunk: its model,
// n and the prompt's version. Chunks store it with their questions, so
// only the same writer's questions are reused, and sources indexed by
// another writer are indexed again.
func (w *QuestionWriter) By(n int) string {
	model := w.model
	if model == "" {
		model = "default"
	}
	return fmt.Sprintf("%s/%d/%s", model, n, questionPromptVersion)
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

// writeQuestions sets the questions of the chunks that have none yet:
// those the same writer wrote for the same text anywhere in the workspace
// are reused, the others are asked for, a few at a time. A Q&A chunk has
// its question already. Questions are an aid to finding a chunk, never
// what makes it searchable, so the model failing does not fail the job:
// the chunks it did not answer for are stored without questions (and
// without QuestionsBy, so indexing the source again asks for them), and
// the returned note tells the source's owner; complete is false then.
// Only the store's errors and the job's own end are returned.
func (ix *Indexer) writeQuestions(ctx context.Context, src domain.Source, chunks []domain.StoredChunk, by string) (note string, complete bool, err error) {
	var todo []int
	var hashes []string
	for i := range chunks {
		if chunks[i].Question == "" {
			todo = append(todo, i)
			hashes = append(hashes, chunks[i].ContentHash)
		}
	}
	if len(todo) == 0 {
		return "", true, nil
	}
	known, err := ix.store.ReuseQuestions(ctx, src.WorkspaceID, by, hashes)
	if err != nil {
		return "", false, err
	}
	ask := todo[:0:0]
	for _, i := range todo {
		if qs, ok := known[chunks[i].ContentHash]; ok {
			chunks[i].Questions, chunks[i].QuestionsBy = qs, by
			continue
		}
		ask = append(ask, i)
	}
	if len(ask) == 0 {
		return "", true, nil
	}
	// The budget ends the writing, not the job: asking stops and the
	// chunks not reached go without questions. A chunk the model fails
	// for goes without too, so no error stops the others (a plain Group,
	// not WithContext).
	writing, cancel := context.WithTimeout(ctx, ix.opts.QuestionBudget)
	defer cancel()
	var (
		mu      sync.Mutex
		lastErr error
		group   errgroup.Group
	)
	group.SetLimit(ix.opts.QuestionConcurrency)
	for _, i := range ask {
		if writing.Err() != nil {
			break
		}
		group.Go(func() error {
			c := chunks[i]
			qs, err := ix.questions.Questions(writing, domain.Chunk{ID: c.ID, SourceID: src.ID, DocumentName: src.Name, Text: c.Text}, ix.opts.QuestionsPerChunk)
			if err != nil {
				mu.Lock()
				lastErr = err
				mu.Unlock()
				return nil
			}
			// Each call writes only its own chunk's fields.
			chunks[i].Questions, chunks[i].QuestionsBy = qs, by
			return nil
		})
	}
	_ = group.Wait() // the calls return no error
	if err := ctx.Err(); err != nil {
		return "", false, context.Cause(ctx)
	}
	missing := 0
	for _, i := range ask {
		if chunks[i].QuestionsBy == "" {
			missing++
		}
	}
	if missing == 0 {
		return "", true, nil
	}
	why := "the time for writing them ran out"
	if lastErr != nil && writing.Err() == nil {
		// The owner reads the kind of failure, as in failureReason; the
		// provider's own message, which may say more than an owner should
		// see, goes to the log.
		switch {
		case errors.Is(lastErr, domain.ErrRateLimited):
			why = "the model kept refusing requests (rate limited)"
		case errors.Is(lastErr, domain.ErrUnavailable):
			why = "the model could not be reached"
		default:
			why = "the model failed"
		}
		ix.log.WarnContext(ctx, "writing chunk questions", "source_id", src.ID, "chunks", len(ask), "without", missing, "error", lastErr)
	}
	return fmt.Sprintf("questions were written for %d of the %d chunks (%s); they are found by their text alone, and indexing the source again writes the rest",
		len(todo)-missing, len(todo), why), false, nil
}
