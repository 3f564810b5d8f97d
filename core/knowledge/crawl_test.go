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

// scriptedWeb crawls a site of pages /p0, /p1, ...: it records the first
// `pages` pages after those it resumes from, then, if block is set, waits
// for the crawl's context to end and returns its error, as a crawler paused
// on a slow site does. Each call's resume steps are kept.
type scriptedWeb struct {
	t       *testing.T
	pages   int
	block   bool
	blocked chan struct{} // closed when the first call blocks

	mu      sync.Mutex
	calls   int
	resumed [][]ports.CrawlStep
	once    sync.Once
}

func (w *scriptedWeb) Fetch(context.Context, string) (domain.Document, error) {
	return domain.Document{}, errors.New("not a url source")
}

func (w *scriptedWeb) Crawl(ctx context.Context, start string, _ domain.CrawlLimits, resume []ports.CrawlStep, record func(ports.CrawlStep, *domain.Document) error) error {
	w.mu.Lock()
	w.calls++
	w.resumed = append(w.resumed, slices.Clone(resume))
	w.mu.Unlock()
	for i := range w.pages {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := len(resume) + i
		u := fmt.Sprintf("%sp%d", start, n)
		doc := &domain.Document{Title: fmt.Sprintf("Page %d", n), URL: u, Text: fmt.Sprintf("Text of page %d.", n)}
		if err := record(ports.CrawlStep{URL: u, Start: n == 0, Visited: true}, doc); err != nil {
			return err
		}
	}
	if !w.block {
		return nil
	}
	if w.blocked != nil {
		w.once.Do(func() { close(w.blocked) })
	}
	<-ctx.Done()
	return ctx.Err()
}

func (w *scriptedWeb) calledWith() (int, [][]ports.CrawlStep) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.calls, w.resumed
}

func websiteSource() *domain.Source {
	return &domain.Source{ID: "src_1", WorkspaceID: "ws_1", AgentID: "agt_1", Type: domain.SourceWebsite,
		URL: "https://help.example.com/", MaxPages: 100, MaxDepth: 3}
}

// pagesOf returns progress with n recorded pages, as an earlier attempt
// left it.
func pagesOf(n int, spent time.Duration, end ports.CrawlEnd) (ports.CrawlProgress, []*domain.Document) {
	p := ports.CrawlProgress{Spent: spent, End: end}
	var docs []*domain.Document
	for i := range n {
		u := fmt.Sprintf("https://help.example.com/p%d", i)
		p.Steps = append(p.Steps, ports.CrawlStep{URL: u, Start: i == 0, Visited: true})
		docs = append(docs, &domain.Document{Title: fmt.Sprintf("Page %d", i), URL: u, Text: fmt.Sprintf("Text of page %d.", i)})
	}
	return p, docs
}

func newTestIndexer(store *fakeStore, log *fakeCrawlLog, web ports.WebFetcher, opts Options) *Indexer {
	if opts.WatchEvery == 0 {
		opts.WatchEvery = 5 * time.Millisecond
	}
	return NewIndexer(Deps{Store: store, Crawls: log, Extractor: fakeExtractor{}, Chunker: lineChunker{}, Web: web,
		Embedder: &fakeEmbedder{}, Notifier: &fakeNotifier{}, Clock: fixedClock{}, Log: slog.New(slog.DiscardHandler)}, opts)
}

// chunkURLs lists the pages the stored chunks came from.
func chunkURLs(store *fakeStore) []string {
	store.mu.Lock()
	defer store.mu.Unlock()
	var urls []string
	for _, c := range store.chunks {
		urls = append(urls, strings.TrimPrefix(c.URL, "https://help.example.com/"))
	}
	return urls
}

// A crawl's time budget counts every attempt: when it runs out the crawl
// ends, and the pages read, in this attempt or earlier ones, are indexed
// with a statusReason saying the crawl was cut short; with no page at all
// the source fails saying why.
func TestCrawlTimeBudget(t *testing.T) {
	t.Parallel()
	const budget = 200 * time.Millisecond
	tests := []struct {
		name      string
		budget    time.Duration
		before    func() (ports.CrawlProgress, []*domain.Document)
		web       *scriptedWeb
		wantCalls int
		wantPages []string
		wantState domain.SourceStatus
		reason    string
	}{
		{
			name: "it runs out during the crawl", budget: budget,
			web: &scriptedWeb{pages: 2, block: true}, wantCalls: 1,
			wantPages: []string{"p0", "p1"}, wantState: domain.SourceReady,
			reason: "the crawl stopped when its time budget of 200ms ran out, after 2 pages; pages it had not reached are not indexed",
		},
		{
			// Were earlier attempts not counted, this crawl would block
			// for an hour.
			name: "earlier attempts spent most of it", budget: time.Hour,
			before: func() (ports.CrawlProgress, []*domain.Document) {
				return pagesOf(1, time.Hour-100*time.Millisecond, ports.CrawlRunning)
			},
			web: &scriptedWeb{pages: 1, block: true}, wantCalls: 1,
			wantPages: []string{"p0", "p1"}, wantState: domain.SourceReady,
			reason: "the crawl stopped when its time budget of 1h ran out, after 2 pages; pages it had not reached are not indexed",
		},
		{
			name: "earlier attempts spent all of it", budget: 30 * time.Minute,
			before: func() (ports.CrawlProgress, []*domain.Document) {
				return pagesOf(3, 30*time.Minute, ports.CrawlRunning)
			},
			web: &scriptedWeb{}, wantCalls: 0,
			wantPages: []string{"p0", "p1", "p2"}, wantState: domain.SourceReady,
			reason: "the crawl stopped when its time budget of 30m ran out, after 3 pages; pages it had not reached are not indexed",
		},
		{
			name: "no page was read in time", budget: budget,
			web: &scriptedWeb{block: true}, wantCalls: 1,
			wantState: domain.SourceFailed,
			reason:    "the crawl's time budget of 200ms ran out before a page with text was read",
		},
		{
			name: "a crawl that ended is indexed without crawling", budget: budget,
			before: func() (ports.CrawlProgress, []*domain.Document) { return pagesOf(2, time.Second, ports.CrawlComplete) },
			web:    &scriptedWeb{}, wantCalls: 0,
			wantPages: []string{"p0", "p1"}, wantState: domain.SourceReady,
		},
		{
			name: "a crawl that finishes in time", budget: time.Hour,
			web: &scriptedWeb{pages: 3}, wantCalls: 1,
			wantPages: []string{"p0", "p1", "p2"}, wantState: domain.SourceReady,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &fakeStore{src: websiteSource()}
			log := &fakeCrawlLog{}
			if tt.before != nil {
				log.progress, log.pages = tt.before()
			}
			ix := newTestIndexer(store, log, tt.web, Options{CrawlBudget: tt.budget})
			// A guard, not a measure: a budget that is not applied shows
			// as this deadline's error.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			if err := ix.Index(ctx, domain.SourceRef{WorkspaceID: "ws_1", SourceID: "src_1"}, false); err != nil {
				t.Fatalf("Index: %v", err)
			}
			if calls, _ := tt.web.calledWith(); calls != tt.wantCalls {
				t.Errorf("Crawl called %d times, want %d", calls, tt.wantCalls)
			}
			if status, reason := store.state(); status != tt.wantState || reason != tt.reason {
				t.Fatalf("source %s %q, want %s %q", status, reason, tt.wantState, tt.reason)
			}
			if got := chunkURLs(store); !slices.Equal(got, tt.wantPages) {
				t.Errorf("indexed pages %q, want %q", got, tt.wantPages)
			}
			progress, _ := log.snapshot()
			if progress.End == ports.CrawlRunning {
				t.Errorf("the crawl log was not ended: %+v", progress)
			}
			if strings.Contains(tt.reason, "budget") && (progress.End != ports.CrawlOutOfTime || progress.Spent < tt.budget) {
				t.Errorf("crawl log %s after %s, want out of time after at least %s", progress.End, progress.Spent, tt.budget)
			}
		})
	}
}

// An attempt crawls for at most one slice; the job then comes back (no
// failure) and the next attempt continues from the recorded steps.
func TestCrawlContinuesInTheNextAttempt(t *testing.T) {
	t.Parallel()
	store := &fakeStore{src: websiteSource()}
	log := &fakeCrawlLog{}
	ref := domain.SourceRef{WorkspaceID: "ws_1", SourceID: "src_1"}
	first := &scriptedWeb{pages: 2, block: true}
	ix := newTestIndexer(store, log, first, Options{CrawlBudget: time.Hour, CrawlSlice: 50 * time.Millisecond})
	err := ix.Index(t.Context(), ref, false)
	if !errors.Is(err, ErrCrawlContinues) {
		t.Fatalf("first attempt: %v, want ErrCrawlContinues", err)
	}
	if status, reason := store.state(); status != domain.SourceIndexing {
		t.Fatalf("after the first slice the source is %s %q, want INDEXING", status, reason)
	}
	progress, pages := log.snapshot()
	if len(progress.Steps) != 2 || pages != 2 || progress.End != ports.CrawlRunning || progress.Spent < 50*time.Millisecond {
		t.Fatalf("after the first slice: %+v, %d pages", progress, pages)
	}

	// The last attempt has no next one: it crawls to the end (here, of the
	// site) in one go.
	second := &scriptedWeb{pages: 2}
	ix = newTestIndexer(store, log, second, Options{CrawlBudget: time.Hour, CrawlSlice: time.Nanosecond})
	if err := ix.Index(t.Context(), ref, true); err != nil {
		t.Fatalf("second attempt: %v", err)
	}
	_, resumed := second.calledWith()
	if len(resumed) != 1 || len(resumed[0]) != 2 || resumed[0][1].URL != "https://help.example.com/p1" {
		t.Fatalf("the second attempt resumed from %+v, want the two recorded steps", resumed)
	}
	if status, reason := store.state(); status != domain.SourceReady || reason != "" {
		t.Fatalf("source %s %q", status, reason)
	}
	if got, want := chunkURLs(store), []string{"p0", "p1", "p2", "p3"}; !slices.Equal(got, want) {
		t.Fatalf("indexed pages %q, want %q", got, want)
	}
}

// A running job whose source is deleted (alone or with its agent) or
// re-indexed stops within a few watch intervals, its crawl cancelled in
// the middle of a pause, and records nothing: no status, no chunks, no
// further crawl step.
func TestJobStopsWhenItsSourceGoes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		change func(f *fakeStore)
	}{
		{"source or agent deleted", func(f *fakeStore) { f.src = nil }},
		{"re-indexed", func(f *fakeStore) { f.src.Generation++ }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			store := &fakeStore{src: websiteSource()}
			log := &fakeCrawlLog{}
			web := &scriptedWeb{pages: 1, block: true, blocked: make(chan struct{})}
			ix := newTestIndexer(store, log, web, Options{})
			done := make(chan error, 1)
			go func() {
				done <- ix.Index(context.Background(), domain.SourceRef{WorkspaceID: "ws_1", SourceID: "src_1"}, true)
			}()
			<-web.blocked
			store.set(tt.change)
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("Index = %v, want nil: nothing is left to do", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("the job did not stop after its source went")
			}
			if status, reason := store.state(); status != domain.SourceIndexing || reason != "" {
				t.Fatalf("the stopped job set the source %s %q", status, reason)
			}
			if progress, _ := log.snapshot(); len(progress.Steps) != 1 || progress.End != ports.CrawlRunning {
				t.Fatalf("crawl log %+v, want the one step taken before, not ended", progress)
			}
			if chunks := chunkURLs(store); len(chunks) != 0 {
				t.Fatalf("chunks stored: %q", chunks)
			}
		})
	}
}

// A crawl log that refuses a step stops the job without a failure: the
// source was deleted before the watcher looked, or another job (a task
// handed out twice) records the same crawl and goes on.
func TestJobStopsWhenItsCrawlLogRefusesAStep(t *testing.T) {
	t.Parallel()
	for _, refusal := range []error{domain.NotFound("crawl"), domain.Conflict("step 1 is recorded already")} {
		t.Run(refusal.Error(), func(t *testing.T) {
			t.Parallel()
			store := &fakeStore{src: websiteSource()}
			log := &goneAfter{fakeCrawlLog: &fakeCrawlLog{}, n: 1, refusal: refusal}
			ix := newTestIndexer(store, log.fakeCrawlLog, &scriptedWeb{pages: 3}, Options{WatchEvery: time.Hour})
			ix.crawls = log
			if err := ix.Index(t.Context(), domain.SourceRef{WorkspaceID: "ws_1", SourceID: "src_1"}, true); err != nil {
				t.Fatalf("Index = %v, want nil", err)
			}
			if status, reason := store.state(); status != domain.SourceIndexing || log.recorded != 1 {
				t.Fatalf("source %s %q after %d recorded steps, want INDEXING after 1", status, reason, log.recorded)
			}
		})
	}
}

// goneAfter is a crawl log that refuses every step after n.
type goneAfter struct {
	*fakeCrawlLog
	n        int
	refusal  error
	recorded int
}

func (g *goneAfter) AppendCrawlStep(ctx context.Context, ref domain.SourceRef, seq int, step ports.CrawlStep, page *domain.Document, spent time.Duration) error {
	if g.recorded == g.n {
		return g.refusal
	}
	err := g.fakeCrawlLog.AppendCrawlStep(ctx, ref, seq, step, page, spent)
	if err == nil {
		g.recorded++
	}
	return err
}

func TestTruncateUTF8(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly", 7, "exactly"},
		{"abcdef", 3, "abc"},
		{"aé", 2, "a"}, // é is two bytes: not split
		{"日本", 4, "日"}, // three bytes each
		{"日本", 2, ""},
	}
	for _, tt := range tests {
		if got := truncateUTF8(tt.in, tt.n); got != tt.want {
			t.Errorf("truncateUTF8(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func TestShortDuration(t *testing.T) {
	t.Parallel()
	for d, want := range map[time.Duration]string{
		30 * time.Minute: "30m", time.Hour: "1h", 90 * time.Minute: "1h30m", 45 * time.Second: "45s",
		200 * time.Millisecond: "200ms", 2*time.Hour + 30*time.Second: "2h0m30s",
	} {
		if got := shortDuration(d); got != want {
			t.Errorf("shortDuration(%s) = %q, want %q", d, got, want)
		}
	}
}
