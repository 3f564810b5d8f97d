package knowledge

import (
	"context"
	"errors"
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

// fakeStore keeps one source and records what indexing did to it. A job's
// watcher reads it from another goroutine, hence the lock.
type fakeStore struct {
	mu        sync.Mutex
	src       *domain.Source
	status    domain.SourceStatus
	reason    string
	chunks    []domain.StoredChunk
	completed int
	known     map[string][]float32
	// knownQuestions are questions stored by writer, then content hash.
	knownQuestions map[string]map[string][]string
}

func (f *fakeStore) SourceForIndexing(_ context.Context, _, id string) (domain.Source, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.src == nil || f.src.ID != id {
		return domain.Source{}, domain.NotFound("source")
	}
	return *f.src, nil
}

func (f *fakeStore) BeginIndexing(_ context.Context, ref domain.SourceRef, _ time.Time) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.src == nil || f.src.Generation != ref.Generation {
		return false, nil
	}
	f.status = domain.SourceIndexing
	return true, nil
}

func (f *fakeStore) ReuseEmbeddings(_ context.Context, _, _ string, hashes []string) (map[string][]float32, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]float32{}
	for _, h := range hashes {
		if v, ok := f.known[h]; ok {
			out[h] = v
		}
	}
	return out, nil
}

func (f *fakeStore) ReuseQuestions(_ context.Context, _, by string, hashes []string) (map[string][]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string][]string{}
	for _, h := range hashes {
		if qs, ok := f.knownQuestions[by][h]; ok {
			out[h] = qs
		}
	}
	return out, nil
}

func (f *fakeStore) CompleteIndexing(_ context.Context, ref domain.SourceRef, result domain.IndexResult, chunks []domain.StoredChunk) (ports.KnowledgeChange, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.completed++
	f.status, f.reason = domain.SourceReady, result.Note
	if chunks != nil {
		f.chunks = chunks
	}
	for _, c := range chunks {
		if c.QuestionsBy != "" {
			if f.knownQuestions == nil {
				f.knownQuestions = map[string]map[string][]string{}
			}
			if f.knownQuestions[c.QuestionsBy] == nil {
				f.knownQuestions[c.QuestionsBy] = map[string][]string{}
			}
			f.knownQuestions[c.QuestionsBy][c.ContentHash] = c.Questions
		}
	}
	f.src.ContentHash, f.src.Embedder, f.src.ChunkCount = result.ContentHash, result.Embedder, result.ChunkCount
	f.src.QuestionsBy = result.QuestionsBy
	return ports.KnowledgeChange{WorkspaceID: ref.WorkspaceID, AgentID: "agt_1", Version: int64(f.completed)}, true, nil
}

func (f *fakeStore) FailIndexing(_ context.Context, _ domain.SourceRef, reason string, _ time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.status, f.reason = domain.SourceFailed, reason
	return nil
}

func (f *fakeStore) StalledSources(context.Context, time.Time, int) ([]domain.SourceRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return nil, nil
}

func (f *fakeStore) SourcesIndexedOtherwise(context.Context, string, string, time.Time, int) ([]domain.SourceRef, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return nil, nil
}

func (f *fakeStore) IndexingCurrent(_ context.Context, ref domain.SourceRef) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.src != nil && f.src.ID == ref.SourceID && f.src.Generation == ref.Generation, nil
}

// set changes the stored source as another request would.
func (f *fakeStore) set(change func(f *fakeStore)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	change(f)
}

// state returns the status and reason indexing left.
func (f *fakeStore) state() (domain.SourceStatus, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.status, f.reason
}

// fakeCrawlLog keeps one crawl in memory, refusing writes once gone is set
// (the source deleted or superseded).
type fakeCrawlLog struct {
	mu       sync.Mutex
	progress ports.CrawlProgress
	pages    []*domain.Document
	gone     bool
	opened   int
}

func (l *fakeCrawlLog) OpenCrawl(context.Context, domain.SourceRef) (ports.CrawlProgress, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone {
		return ports.CrawlProgress{}, domain.NotFound("source")
	}
	l.opened++
	p := l.progress
	p.Steps = slices.Clone(p.Steps)
	return p, nil
}

func (l *fakeCrawlLog) AppendCrawlStep(_ context.Context, _ domain.SourceRef, seq int, step ports.CrawlStep, page *domain.Document, spent time.Duration) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case l.gone || l.progress.End != ports.CrawlRunning:
		return domain.NotFound("crawl")
	case seq != len(l.progress.Steps):
		return domain.Conflict("step %d, have %d", seq, len(l.progress.Steps))
	}
	l.progress.Steps = append(l.progress.Steps, step)
	l.pages = append(l.pages, page)
	l.progress.Spent = spent
	return nil
}

func (l *fakeCrawlLog) UpdateCrawl(_ context.Context, _ domain.SourceRef, spent time.Duration, end ports.CrawlEnd) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.gone || l.progress.End != ports.CrawlRunning {
		return domain.NotFound("crawl")
	}
	l.progress.Spent, l.progress.End = spent, end
	return nil
}

func (l *fakeCrawlLog) CrawledPages(context.Context, domain.SourceRef) ([]domain.Document, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	var docs []domain.Document
	for _, p := range l.pages {
		if p != nil {
			docs = append(docs, *p)
		}
	}
	return docs, nil
}

func (l *fakeCrawlLog) snapshot() (ports.CrawlProgress, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.progress, len(l.pages)
}

type fakeExtractor struct{ err error }

func (f fakeExtractor) Extract(_ context.Context, name string, body []byte) (domain.Document, error) {
	return domain.Document{Title: name, Text: string(body)}, f.err
}

// lineChunker makes one chunk per non-empty line.
type lineChunker struct{}

func (lineChunker) Chunk(doc domain.Document) []domain.ChunkDraft {
	var out []domain.ChunkDraft
	for _, l := range strings.Split(doc.Text, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, domain.ChunkDraft{Text: l, Tokens: len(strings.Fields(l)), URL: doc.URL})
		}
	}
	return out
}

type fakeWeb struct{ err error }

func (f fakeWeb) Fetch(_ context.Context, url string) (domain.Document, error) {
	return domain.Document{URL: url, Text: "page text"}, f.err
}

func (f fakeWeb) Crawl(_ context.Context, start string, _ domain.CrawlLimits, _ []ports.CrawlStep, record func(ports.CrawlStep, *domain.Document) error) error {
	if f.err != nil {
		return f.err
	}
	for i, p := range []string{"/a", "/b"} {
		if err := record(ports.CrawlStep{URL: start + p, Start: i == 0, Visited: true}, &domain.Document{URL: start + p, Text: "text of " + p}); err != nil {
			return err
		}
	}
	return nil
}

// fakeEmbedder embeds "stopwords" as a zero vector and counts texts.
type fakeEmbedder struct {
	texts int
	err   error
}

func (f *fakeEmbedder) ID() string      { return "fake-2" }
func (f *fakeEmbedder) Dimensions() int { return 2 }
func (f *fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.texts += len(texts)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		if t == "stopwords" {
			out[i] = []float32{0, 0}
			continue
		}
		out[i] = []float32{0.6, 0.8}
	}
	return out, nil
}

type fakeNotifier struct{ changes []ports.KnowledgeChange }

func (f *fakeNotifier) KnowledgeChanged(_ context.Context, c ports.KnowledgeChange) error {
	f.changes = append(f.changes, c)
	return nil
}
func (f *fakeNotifier) AgentChanged(context.Context, string, string) error { return nil }

type fixedClock struct{}

func (fixedClock) Now() time.Time { return time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) }

func TestIndex(t *testing.T) {
	text := func() *domain.Source {
		return &domain.Source{ID: "src_1", WorkspaceID: "ws_1", AgentID: "agt_1", Type: domain.SourceText, Name: "Guide", Content: "Refunds take five days.\nstopwords"}
	}
	unavailable := fmt.Errorf("provider: %w", domain.ErrUnavailable)
	tests := []struct {
		name        string
		src         *domain.Source
		generation  int
		lastAttempt bool
		extractErr  error
		webErr      error
		embedErr    error
		known       map[string][]float32
		prepare     func(*fakeStore)

		wantErr      bool
		wantStatus   domain.SourceStatus
		wantReason   string
		wantChunks   int
		wantEmbedded int
		wantNotified int
	}{
		{name: "text source", src: text(), wantStatus: domain.SourceReady, wantChunks: 2, wantEmbedded: 2, wantNotified: 1},
		{name: "Q&A source is one chunk", src: &domain.Source{ID: "src_1", WorkspaceID: "ws_1", Type: domain.SourceQA, Question: "Refund?", Answer: "Five days."},
			wantStatus: domain.SourceReady, wantChunks: 1, wantEmbedded: 1, wantNotified: 1},
		{name: "website pages", src: &domain.Source{ID: "src_1", WorkspaceID: "ws_1", Type: domain.SourceWebsite, URL: "https://example.com", MaxPages: 5, MaxDepth: 2},
			wantStatus: domain.SourceReady, wantChunks: 2, wantEmbedded: 2, wantNotified: 1},
		{name: "a file that is not what it says fails without retry", src: &domain.Source{ID: "src_1", WorkspaceID: "ws_1", Type: domain.SourceFile, Filename: "a.pdf", File: []byte("x")},
			extractErr: domain.InvalidField("file", "the PDF is damaged"), wantStatus: domain.SourceFailed, wantReason: "file: the PDF is damaged"},
		{name: "a page that is gone fails without retry", src: &domain.Source{ID: "src_1", WorkspaceID: "ws_1", Type: domain.SourceURL, URL: "https://example.com/x"},
			webErr: domain.InvalidField("url", "the server answered 404 Not Found"), wantStatus: domain.SourceFailed, wantReason: "url: the server answered 404 Not Found"},
		{name: "a site that is down is retried", src: &domain.Source{ID: "src_1", WorkspaceID: "ws_1", Type: domain.SourceURL, URL: "https://example.com/x"},
			webErr: unavailable, wantErr: true, wantStatus: domain.SourceIndexing},
		{name: "the last attempt records the failure", src: &domain.Source{ID: "src_1", WorkspaceID: "ws_1", Type: domain.SourceURL, URL: "https://example.com/x"},
			webErr: unavailable, lastAttempt: true, wantErr: true, wantStatus: domain.SourceFailed,
			wantReason: "the site could not be reached after several attempts; re-index the source later"},
		{name: "an embedding provider that is down is retried", src: text(), embedErr: unavailable, wantErr: true, wantStatus: domain.SourceIndexing},
		{name: "a source without text fails", src: &domain.Source{ID: "src_1", WorkspaceID: "ws_1", Type: domain.SourceText, Name: "n", Content: "\n\n"},
			wantStatus: domain.SourceFailed, wantReason: "the source has no text to index"},
		{name: "a superseded job does nothing", src: text(), generation: 7, wantStatus: ""},
		{name: "a deleted source does nothing", src: nil, wantStatus: ""},
		{name: "identical text is not indexed twice", src: text(), prepare: func(f *fakeStore) {
			f.src.Embedder = "fake-2"
			f.src.ChunkCount = 2
			f.src.ContentHash = contentHash(*f.src, []domain.StoredChunk{
				{ChunkDraft: domain.ChunkDraft{Text: "Refunds take five days.", Tokens: 4}},
				{ChunkDraft: domain.ChunkDraft{Ordinal: 1, Text: "stopwords", Tokens: 1}},
			})
		}, wantStatus: domain.SourceReady, wantChunks: 0, wantEmbedded: 0, wantNotified: 0},
		{name: "vectors the workspace has are reused", src: text(), known: map[string][]float32{hashText("Refunds take five days."): {1, 0}},
			wantStatus: domain.SourceReady, wantChunks: 2, wantEmbedded: 1, wantNotified: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &fakeStore{src: tt.src, known: tt.known}
			if tt.prepare != nil {
				tt.prepare(store)
			}
			emb := &fakeEmbedder{err: tt.embedErr}
			notifier := &fakeNotifier{}
			ix := NewIndexer(Deps{Store: store, Crawls: &fakeCrawlLog{}, Extractor: fakeExtractor{err: tt.extractErr}, Chunker: lineChunker{}, Web: fakeWeb{err: tt.webErr},
				Embedder: emb, Notifier: notifier, Clock: fixedClock{}, Log: slog.New(slog.DiscardHandler)}, Options{})
			err := ix.Index(t.Context(), domain.SourceRef{WorkspaceID: "ws_1", SourceID: "src_1", Generation: tt.generation}, tt.lastAttempt)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("err = %v, want the transient kind kept for the retry mapping", err)
			}
			if store.status != tt.wantStatus || store.reason != tt.wantReason {
				t.Fatalf("status %q %q, want %q %q", store.status, store.reason, tt.wantStatus, tt.wantReason)
			}
			if len(store.chunks) != tt.wantChunks || emb.texts != tt.wantEmbedded || len(notifier.changes) != tt.wantNotified {
				t.Fatalf("chunks %d, embedded %d, notified %d; want %d, %d, %d",
					len(store.chunks), emb.texts, len(notifier.changes), tt.wantChunks, tt.wantEmbedded, tt.wantNotified)
			}
			for i, c := range store.chunks {
				if c.Ordinal != i || !domain.ValidID(domain.PrefixChunk, c.ID) || c.ContentHash == "" {
					t.Errorf("chunk %d = %+v", i, c)
				}
				if (c.Text == "stopwords") != (c.Vector == nil) {
					t.Errorf("chunk %q vector %v: zero vectors must be stored as none", c.Text, c.Vector)
				}
			}
		})
	}
}
