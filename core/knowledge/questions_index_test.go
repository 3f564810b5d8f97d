package knowledge

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// questionLLM writes questions for a chunk by its text: the text's first
// word turned into "What about <word>?" lines, or the error set for it.
// block makes every call wait for its context (a model too slow for the
// budget). It counts calls and the most it saw at once.
type questionLLM struct {
	mu       sync.Mutex
	errs     map[string]error
	block    bool
	calls    int
	inFlight int
	most     int
}

func (q *questionLLM) Complete(ctx context.Context, req ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	q.mu.Lock()
	q.calls++
	q.inFlight++
	q.most = max(q.most, q.inFlight)
	text := req.Knowledge[0].Text
	err := q.errs[text]
	q.mu.Unlock()
	defer func() {
		q.mu.Lock()
		q.inFlight--
		q.mu.Unlock()
	}()
	if q.block {
		<-ctx.Done()
		return ports.Completion{}, domain.Unavailable("model", ctx.Err())
	}
	time.Sleep(time.Millisecond) // lets the calls overlap
	if err != nil {
		return ports.Completion{}, err
	}
	word := strings.Fields(text)[0]
	content := fmt.Sprintf("What about %s?\nIs %s covered?", word, word)
	_ = onDelta(content)
	return ports.Completion{Content: content}, nil
}

func TestIndexWritesQuestions(t *testing.T) {
	const by = "small/2/q1"
	lines := "Refunds take five days.\nShipping is free.\nReturns are easy."
	text := func() *domain.Source {
		return &domain.Source{ID: "src_1", WorkspaceID: "ws_1", AgentID: "agt_1", Type: domain.SourceText, Name: "Guide", Content: lines}
	}
	written := func(word string) []string { return []string{"What about " + word + "?", "Is " + word + " covered?"} }
	tests := []struct {
		name     string
		src      *domain.Source
		perChunk int
		llm      *questionLLM
		budget   time.Duration
		prepare  func(*fakeStore)

		wantCalls     int
		wantQuestions [][]string // per chunk
		wantBy        []string   // per chunk
		wantSourceBy  string
		wantNote      string
		// wantNoHash: the source records no content hash, so indexing the
		// same text again is not skipped and writes the missing questions.
		wantNoHash bool
	}{
		{name: "every chunk gets its questions", src: text(), perChunk: 2, llm: &questionLLM{},
			wantCalls:     3,
			wantQuestions: [][]string{written("Refunds"), written("Shipping"), written("Returns")},
			wantBy:        []string{by, by, by}, wantSourceBy: by},
		{name: "off writes none and asks nothing", src: text(), perChunk: 0, llm: &questionLLM{},
			wantQuestions: [][]string{nil, nil, nil}, wantBy: []string{"", "", ""}},
		{name: "a Q&A pair has its question already", perChunk: 2, llm: &questionLLM{},
			src:           &domain.Source{ID: "src_1", WorkspaceID: "ws_1", Type: domain.SourceQA, Question: "Refund?", Answer: "Five days."},
			wantQuestions: [][]string{nil}, wantBy: []string{""}, wantSourceBy: by},
		{name: "questions the same writer wrote for the same text are reused", src: text(), perChunk: 2, llm: &questionLLM{},
			prepare: func(f *fakeStore) {
				f.knownQuestions = map[string]map[string][]string{
					by:           {hashText("Refunds take five days."): {"How long is a refund?"}, hashText("Shipping is free."): nil},
					"other/2/q1": {hashText("Returns are easy."): {"Not this writer's?"}},
				}
			},
			wantCalls:     1,
			wantQuestions: [][]string{{"How long is a refund?"}, nil, written("Returns")},
			wantBy:        []string{by, by, by}, wantSourceBy: by},
		{name: "a model that fails leaves the chunk without questions and says so", src: text(), perChunk: 2,
			llm:           &questionLLM{errs: map[string]error{"Shipping is free.": domain.Unavailable("model", fmt.Errorf("503 Service Unavailable"))}},
			wantCalls:     3,
			wantQuestions: [][]string{written("Refunds"), nil, written("Returns")},
			wantBy:        []string{by, "", by}, wantSourceBy: by, wantNoHash: true,
			wantNote: "questions were written for 2 of the 3 chunks (the model could not be reached); " +
				"they are found by their text alone, and indexing the source again writes the rest"},
		{name: "the budget ends the writing, not the job", src: text(), perChunk: 2, llm: &questionLLM{block: true}, budget: 20 * time.Millisecond,
			wantQuestions: [][]string{nil, nil, nil}, wantBy: []string{"", "", ""}, wantSourceBy: by, wantNoHash: true,
			wantNote: "questions were written for 0 of the 3 chunks (the time for writing them ran out); " +
				"they are found by their text alone, and indexing the source again writes the rest"},
		{name: "identical text written by another writer is indexed again", src: text(), perChunk: 2, llm: &questionLLM{},
			prepare: func(f *fakeStore) {
				f.src.Embedder, f.src.ChunkCount, f.src.QuestionsBy = "fake-2", 3, ""
				f.src.ContentHash = contentHash(*f.src, []domain.StoredChunk{
					{ChunkDraft: domain.ChunkDraft{Text: "Refunds take five days.", Tokens: 4}},
					{ChunkDraft: domain.ChunkDraft{Ordinal: 1, Text: "Shipping is free.", Tokens: 3}},
					{ChunkDraft: domain.ChunkDraft{Ordinal: 2, Text: "Returns are easy.", Tokens: 3}},
				})
			},
			wantCalls:     3,
			wantQuestions: [][]string{written("Refunds"), written("Shipping"), written("Returns")},
			wantBy:        []string{by, by, by}, wantSourceBy: by},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{src: tt.src}
			if tt.prepare != nil {
				tt.prepare(store)
			}
			ix := NewIndexer(Deps{Store: store, Crawls: &fakeCrawlLog{}, Extractor: fakeExtractor{}, Chunker: lineChunker{}, Web: fakeWeb{},
				Embedder: &fakeEmbedder{}, Questions: NewQuestionWriter(tt.llm, "small"), Notifier: &fakeNotifier{}, Clock: fixedClock{},
				Log: slog.New(slog.DiscardHandler)}, Options{QuestionsPerChunk: tt.perChunk, QuestionConcurrency: 2, QuestionBudget: tt.budget})
			if err := ix.Index(t.Context(), domain.SourceRef{WorkspaceID: "ws_1", SourceID: "src_1"}, false); err != nil {
				t.Fatal(err)
			}
			status, reason := store.state()
			if status != domain.SourceReady || reason != tt.wantNote {
				t.Fatalf("status %s, reason %q; want READY, %q", status, reason, tt.wantNote)
			}
			if (store.src.ContentHash == "") != tt.wantNoHash {
				t.Errorf("source's content hash = %q, want none: %v", store.src.ContentHash, tt.wantNoHash)
			}
			if store.src.QuestionsBy != tt.wantSourceBy {
				t.Errorf("source's QuestionsBy = %q, want %q", store.src.QuestionsBy, tt.wantSourceBy)
			}
			if len(store.chunks) != len(tt.wantQuestions) {
				t.Fatalf("%d chunks stored, want %d", len(store.chunks), len(tt.wantQuestions))
			}
			for i, c := range store.chunks {
				if !slices.Equal(c.Questions, tt.wantQuestions[i]) || c.QuestionsBy != tt.wantBy[i] {
					t.Errorf("chunk %d: questions %q by %q; want %q by %q", i, c.Questions, c.QuestionsBy, tt.wantQuestions[i], tt.wantBy[i])
				}
			}
			if tt.llm.calls != tt.wantCalls && !tt.llm.block {
				t.Errorf("the model was asked %d times, want %d", tt.llm.calls, tt.wantCalls)
			}
			if tt.llm.most > 2 {
				t.Errorf("%d chunks were with the model at once, more than the concurrency of 2", tt.llm.most)
			}
		})
	}
}

// TestIndexingAgainWritesTheMissingQuestions: after the model failed for a
// chunk, indexing the same text again is not skipped and asks only for that
// chunk, reusing the others' questions.
func TestIndexingAgainWritesTheMissingQuestions(t *testing.T) {
	store := &fakeStore{src: &domain.Source{ID: "src_1", WorkspaceID: "ws_1", AgentID: "agt_1", Type: domain.SourceText, Name: "Guide",
		Content: "Refunds take five days.\nShipping is free."}}
	llm := &questionLLM{errs: map[string]error{"Shipping is free.": domain.Unavailable("model", fmt.Errorf("503"))}}
	ix := NewIndexer(Deps{Store: store, Crawls: &fakeCrawlLog{}, Extractor: fakeExtractor{}, Chunker: lineChunker{}, Web: fakeWeb{},
		Embedder: &fakeEmbedder{}, Questions: NewQuestionWriter(llm, "small"), Notifier: &fakeNotifier{}, Clock: fixedClock{},
		Log: slog.New(slog.DiscardHandler)}, Options{QuestionsPerChunk: 2})
	ref := domain.SourceRef{WorkspaceID: "ws_1", SourceID: "src_1"}
	if err := ix.Index(t.Context(), ref, false); err != nil {
		t.Fatal(err)
	}
	if _, reason := store.state(); !strings.HasPrefix(reason, "questions were written for 1 of the 2 chunks") {
		t.Fatalf("first indexing's reason = %q", reason)
	}
	llm.mu.Lock()
	llm.errs = nil
	llm.mu.Unlock()
	if err := ix.Index(t.Context(), ref, false); err != nil {
		t.Fatal(err)
	}
	if status, reason := store.state(); status != domain.SourceReady || reason != "" || store.src.ContentHash == "" {
		t.Fatalf("second indexing: %s %q, content hash %q; want READY without a note, with its hash", status, reason, store.src.ContentHash)
	}
	if llm.calls != 3 {
		t.Fatalf("the model was asked %d times in all, want 3 (two chunks, then only the one it failed for)", llm.calls)
	}
	for _, c := range store.chunks {
		if len(c.Questions) != 2 || c.QuestionsBy != "small/2/q1" {
			t.Errorf("chunk %q: questions %q by %q", c.Text, c.Questions, c.QuestionsBy)
		}
	}
}

func TestQuestionWriterBy(t *testing.T) {
	tests := []struct {
		model string
		n     int
		want  string
	}{
		{"gpt-4o-mini", 5, "gpt-4o-mini/5/q1"},
		{"gpt-4o-mini", 3, "gpt-4o-mini/3/q1"},
		{"", 5, "default/5/q1"},
	}
	for _, tt := range tests {
		if got := NewQuestionWriter(&scriptedLLM{}, tt.model).By(tt.n); got != tt.want {
			t.Errorf("By(%q, %d) = %q, want %q", tt.model, tt.n, got, tt.want)
		}
	}
}
