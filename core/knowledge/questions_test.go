package knowledge

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// scriptedLLM answers every Complete with one scripted completion or error
// and keeps the requests it was given.
type scriptedLLM struct {
	res  ports.Completion
	err  error
	reqs []ports.CompletionRequest
}

func (s *scriptedLLM) Complete(_ context.Context, req ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	s.reqs = append(s.reqs, req)
	if s.err != nil {
		return ports.Completion{}, s.err
	}
	if err := onDelta(s.res.Content); err != nil {
		return ports.Completion{}, err
	}
	return s.res, nil
}

func TestQuestionWriter(t *testing.T) {
	chunk := domain.Chunk{ID: "c1", Text: "Reset your password from Settings > Security."}
	tests := []struct {
		name    string
		chunk   domain.Chunk
		n       int
		res     ports.Completion
		llmErr  error
		want    []string
		wantErr error
		asked   bool
	}{
		{
			name:  "numbered list with a preamble and a duplicate",
			chunk: chunk, n: 5,
			res:   ports.Completion{Content: "Here are questions:\n1. How do I reset my password?\n2) Where are security settings?\n- how do i reset my password?\n\n* Can I change my password?"},
			want:  []string{"How do I reset my password?", "Where are security settings?", "Can I change my password?"},
			asked: true,
		},
		{
			name:  "cut at n",
			chunk: chunk, n: 1,
			res:   ports.Completion{Content: "How do I reset my password?\nWhere are security settings?"},
			want:  []string{"How do I reset my password?"},
			asked: true,
		},
		{
			name:  "prose only gives none",
			chunk: chunk, n: 3,
			res:   ports.Completion{Content: "This passage explains password resets."},
			asked: true,
		},
		{
			name:  "declined gives none",
			chunk: chunk, n: 3,
			res:   ports.Completion{Content: "How?", Declined: true},
			asked: true,
		},
		{
			name:  "provider failure is passed on",
			chunk: chunk, n: 3,
			llmErr: domain.ErrUnavailable, wantErr: domain.ErrUnavailable,
			asked: true,
		},
		{name: "zero questions is refused", chunk: chunk, n: 0, wantErr: domain.ErrInvalidInput},
		{name: "too many questions is refused", chunk: chunk, n: MaxQuestionsPerChunk + 1, wantErr: domain.ErrInvalidInput},
		{name: "empty chunk is refused", chunk: domain.Chunk{ID: "c2", Text: "  "}, n: 3, wantErr: domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			llm := &scriptedLLM{res: tt.res, err: tt.llmErr}
			got, err := NewQuestionWriter(llm, "small-model").Questions(context.Background(), tt.chunk, tt.n)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Fatalf("error = %v, want %v", err, tt.wantErr)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("questions = %q, want %q", got, tt.want)
			}
			if asked := len(llm.reqs) == 1; asked != tt.asked {
				t.Fatalf("model asked = %v, want %v", asked, tt.asked)
			}
			if !tt.asked {
				return
			}
			// The passage goes as quoted knowledge, never inside the prompt.
			req := llm.reqs[0]
			if len(req.Knowledge) != 1 || req.Knowledge[0].ID != tt.chunk.ID || req.Model != "small-model" || req.MaxTokens == 0 {
				t.Errorf("request = %+v, want the chunk as knowledge, the model override and a token cap", req)
			}
		})
	}
}
