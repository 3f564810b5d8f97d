// Package knowledge indexes an agent's sources: it reads a source's text
// (the stored text, an uploaded file, a web page or a whole website), cuts it
// into chunks, embeds them and stores them for retrieval, recording the
// source's status for its owner.
package knowledge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Limits of one indexing.
const (
	// embedBatch texts per Embed call: large enough to amortise a provider's
	// round trip, small enough that a retry repeats little.
	embedBatch = 64
	// maxChunksPerSource stops a source from flooding an agent's index (a
	// 1,000-page site of long pages is about 20,000 chunks).
	maxChunksPerSource = 50_000
	// maxCrawledPageBytes bounds the text kept of one crawled page (the
	// fetcher already caps its HTML at 5 MiB): a support page is a few
	// kilobytes, and a crawl's pages are stored until it ends.
	maxCrawledPageBytes = 1 << 20
)

// Defaults of Options.
const (
	// DefaultCrawlBudget bounds the crawl time of one website indexing,
	// summed over its attempts: 1,000 pages at the polite default pace take
	// about 5 minutes; a site asking for a long Crawl-delay gets what can be
	// read in 30.
	DefaultCrawlBudget = 30 * time.Minute
	// DefaultCrawlSlice is the most crawl time one attempt takes before the
	// job goes back to the queue to continue later, so a long crawl gives
	// other jobs their turn at the index slots and always leaves its attempt
	// (45 minutes) the time to embed what it read.
	DefaultCrawlSlice = 10 * time.Minute
	// DefaultWatchEvery is how often a running job checks that its source
	// still exists at its generation, so deleting the source or its agent,
	// or re-indexing it, stops the job within seconds.
	DefaultWatchEvery = 2 * time.Second
)

// ErrCrawlContinues is returned (wrapped) by Index when a crawl used up its
// slice of time for this attempt but not its budget. Its progress is
// stored: the job should run again soon, and that is no failure.
var ErrCrawlContinues = errors.New("the crawl used its time for this attempt and continues in the next")

// errGone stops a job whose source was deleted (with its agent, perhaps)
// or superseded by a newer request: there is nothing left to do for it.
var errGone = errors.New("the source was deleted or re-indexed meanwhile")

// errTaken stops a job that found another job recording the same crawl (a
// task asynq handed out again while its first worker still ran): that one
// goes on, this one has nothing to add.
var errTaken = errors.New("another job is crawling this source generation")

// Reasons a crawl's context ends before the job's.
var (
	errOutOfTime  = errors.New("the crawl's time budget ran out")
	errSliceIsOut = errors.New("the crawl's time for this attempt ran out")
)

// Indexer runs index jobs.
type Indexer struct {
	store     ports.KnowledgeStore
	crawls    ports.CrawlLog
	extractor ports.DocumentExtractor
	chunker   ports.Chunker
	web       ports.WebFetcher
	embedder  ports.Embedder
	questions *QuestionWriter
	notifier  ports.KnowledgeNotifier
	clock     ports.Clock
	log       *slog.Logger
	opts      Options
}

// Deps are what an Indexer needs.
type Deps struct {
	Store     ports.KnowledgeStore
	Crawls    ports.CrawlLog
	Extractor ports.DocumentExtractor
	Chunker   ports.Chunker
	Web       ports.WebFetcher
	Embedder  ports.Embedder
	// Questions writes the questions each chunk answers; nil writes none.
	// Options.QuestionsPerChunk says how many.
	Questions *QuestionWriter
	Notifier  ports.KnowledgeNotifier
	Clock     ports.Clock
	Log       *slog.Logger
}

// Options tune an Indexer; zero fields take the defaults above.
type Options struct {
	// CrawlBudget bounds a website crawl's time over all its attempts.
	// When it runs out the crawl ends and the pages read so far are
	// indexed, the source's statusReason saying so.
	CrawlBudget time.Duration
	// CrawlSlice bounds the crawl time of one attempt.
	CrawlSlice time.Duration
	// WatchEvery is how often a job checks that its source is still there.
	WatchEvery time.Duration
	// QuestionsPerChunk is how many questions Deps.Questions is asked for
	// per chunk, up to MaxQuestionsPerChunk; 0 writes none.
	QuestionsPerChunk int
	// QuestionConcurrency and QuestionBudget bound the writing of one job
	// (DefaultQuestionConcurrency, DefaultQuestionBudget).
	QuestionConcurrency int
	QuestionBudget      time.Duration
}

// NewIndexer returns an Indexer; every dependency is required.
func NewIndexer(d Deps, o Options) *Indexer {
	if d.Store == nil || d.Crawls == nil || d.Extractor == nil || d.Chunker == nil || d.Web == nil || d.Embedder == nil ||
		d.Notifier == nil || d.Clock == nil || d.Log == nil {
		panic("knowledge.NewIndexer: every dependency is required")
	}
	if o.CrawlBudget <= 0 {
		o.CrawlBudget = DefaultCrawlBudget
	}
	if o.CrawlSlice <= 0 {
		o.CrawlSlice = DefaultCrawlSlice
	}
	if o.WatchEvery <= 0 {
		o.WatchEvery = DefaultWatchEvery
	}
	if o.QuestionConcurrency <= 0 {
		o.QuestionConcurrency = DefaultQuestionConcurrency
	}
	if o.QuestionBudget <= 0 {
		o.QuestionBudget = DefaultQuestionBudget
	}
	o.QuestionsPerChunk = min(max(o.QuestionsPerChunk, 0), MaxQuestionsPerChunk)
	return &Indexer{store: d.Store, crawls: d.Crawls, extractor: d.Extractor, chunker: d.Chunker, web: d.Web, embedder: d.Embedder,
		questions: d.Questions, notifier: d.Notifier, clock: d.Clock, log: d.Log, opts: o}
}

// EmbedderID names the embedder new vectors come from.
func (ix *Indexer) EmbedderID() string { return ix.embedder.ID() }

// QuestionsBy names the writer of new chunks' questions, "" when the
// indexer writes none.
func (ix *Indexer) QuestionsBy() string {
	if ix.questions == nil || ix.opts.QuestionsPerChunk == 0 {
		return ""
	}
	return ix.questions.By(ix.opts.QuestionsPerChunk)
}

// Index runs one job: it indexes the source if ref.Generation is still the
// source's generation, and does nothing if the source is gone or a newer
// request superseded the job. A job already running notices within
// Options.WatchEvery that its source was deleted or superseded, stops what
// it is doing (a crawl's pause between requests included) and returns nil,
// having written nothing more.
//
// A website's crawl is recorded as it goes (ports.CrawlLog), so a job that
// died resumes it where it was. It ends when the site has no more pages
// within the source's limits or when Options.CrawlBudget, counted over all
// attempts, runs out; then the pages read are indexed. An attempt crawls
// for at most Options.CrawlSlice (but for the last, which has no next) and
// returns ErrCrawlContinues if the crawl is not over.
//
// A failure that is the source's own (a file that is not what its name says,
// a page that answers 404, no text at all) marks it FAILED with a reason its
// owner can act on and returns nil: retrying would fail the same way. Other
// failures (a site or embedding provider that is down, the database) return
// the error so the job is retried; when lastAttempt is true the source is
// marked FAILED first, so no source stays INDEXING forever.
func (ix *Indexer) Index(ctx context.Context, ref domain.SourceRef, lastAttempt bool) error {
	src, err := ix.store.SourceForIndexing(ctx, ref.WorkspaceID, ref.SourceID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if src.Generation != ref.Generation {
		return nil
	}
	began, err := ix.store.BeginIndexing(ctx, ref, ix.clock.Now())
	if err != nil || !began {
		return err
	}
	ctx, stopWatching := ix.watch(ctx, ref)
	defer stopWatching()
	err = ix.index(ctx, ref, src, lastAttempt)
	if err == nil {
		return nil
	}
	var invalid *domain.ValidationError
	switch {
	case errors.Is(err, errGone) || errors.Is(context.Cause(ctx), errGone):
		ix.log.InfoContext(ctx, "indexing stopped: the source was deleted or re-indexed",
			"workspace_id", ref.WorkspaceID, "source_id", ref.SourceID, "generation", ref.Generation)
		return nil
	case errors.Is(err, errTaken):
		ix.log.WarnContext(ctx, "indexing stopped: another job is crawling the same source",
			"workspace_id", ref.WorkspaceID, "source_id", ref.SourceID, "generation", ref.Generation)
		return nil
	case errors.Is(err, ErrCrawlContinues):
		return err
	case errors.As(err, &invalid):
		return ix.fail(ctx, ref, invalid.Message)
	case errors.Is(err, domain.ErrInvalidInput):
		return ix.fail(ctx, ref, "the source could not be read")
	case lastAttempt:
		if ferr := ix.fail(ctx, ref, failureReason(src, err)); ferr != nil {
			ix.log.ErrorContext(ctx, "recording an indexing failure", "source_id", ref.SourceID, "error", ferr)
		}
	}
	return err
}

func (ix *Indexer) fail(ctx context.Context, ref domain.SourceRef, reason string) error {
	ix.log.InfoContext(ctx, "source indexing failed", "workspace_id", ref.WorkspaceID, "source_id", ref.SourceID, "reason", reason)
	return ix.store.FailIndexing(ctx, ref, reason, ix.clock.Now())
}

// failureReason explains a failure that retries did not cure, without the
// infrastructure's own words.
func failureReason(src domain.Source, err error) string {
	switch {
	case errors.Is(err, domain.ErrRateLimited):
		return "the embedding provider kept refusing requests (rate limited); re-index the source later"
	case src.Type.Web() && errors.Is(err, domain.ErrUnavailable):
		return "the site could not be reached after several attempts; re-index the source later"
	default:
		return "indexing kept failing after several attempts; re-index the source later"
	}
}

// watch returns a context that is cancelled, with cause errGone, once the
// store says ref is no longer current, and a function that stops watching.
// A store that cannot answer is asked again at the next tick: the job's own
// queries meet the same outage and decide.
func (ix *Indexer) watch(ctx context.Context, ref domain.SourceRef) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(ix.opts.WatchEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			current, err := ix.store.IndexingCurrent(ctx, ref)
			if err != nil {
				ix.log.DebugContext(ctx, "checking an index job's source", "source_id", ref.SourceID, "error", err)
				continue
			}
			if !current {
				cancel(errGone)
				return
			}
		}
	})
	return ctx, func() {
		close(stop)
		wg.Wait()
		cancel(nil)
	}
}

func (ix *Indexer) index(ctx context.Context, ref domain.SourceRef, src domain.Source, lastAttempt bool) error {
	drafts, pages, end, err := ix.read(ctx, ref, src, lastAttempt)
	if err != nil {
		return err
	}
	if len(drafts) == 0 {
		if end == ports.CrawlOutOfTime {
			return domain.Invalid("the crawl's time budget of %s ran out before a page with text was read", shortDuration(ix.opts.CrawlBudget))
		}
		if src.Type.Web() {
			return domain.Invalid("no readable text was found on the page(s)")
		}
		return domain.Invalid("the source has no text to index")
	}
	if len(drafts) > maxChunksPerSource {
		return domain.Invalid("the source is too large: %d chunks, at most %d", len(drafts), maxChunksPerSource)
	}
	result := domain.IndexResult{
		ContentHash: contentHash(src, drafts),
		Embedder:    ix.embedder.ID(),
		QuestionsBy: ix.QuestionsBy(),
		ChunkCount:  len(drafts),
		PageCount:   pages,
		At:          ix.clock.Now(),
	}
	if end == ports.CrawlOutOfTime {
		result.Note = fmt.Sprintf("the crawl stopped when its time budget of %s ran out, after %d pages; pages it had not reached are not indexed",
			shortDuration(ix.opts.CrawlBudget), pages)
	}
	for _, d := range drafts {
		result.TokenCount += d.Tokens
	}
	if result.ContentHash == src.ContentHash && result.Embedder == src.Embedder && result.QuestionsBy == src.QuestionsBy &&
		src.ChunkCount > 0 {
		// Identical text, same embedder and question writer: what is
		// stored is what we would store.
		_, _, err := ix.store.CompleteIndexing(ctx, ref, result, nil)
		return err
	}
	chunks, err := ix.embed(ctx, src, drafts)
	if err != nil {
		return err
	}
	if result.QuestionsBy != "" {
		note, complete, err := ix.writeQuestions(ctx, src, chunks, result.QuestionsBy)
		if err != nil {
			return err
		}
		result.Note = strings.TrimSpace(result.Note + " " + note)
		if !complete {
			// Some chunks have no questions yet: recording no content
			// hash keeps the next indexing of the same text from being
			// skipped, so it writes them (reusing the others').
			result.ContentHash = ""
		}
	}
	change, ok, err := ix.store.CompleteIndexing(ctx, ref, result, chunks)
	if err != nil || !ok {
		return err
	}
	if err := ix.notifier.KnowledgeChanged(ctx, change); err != nil {
		// Pods also compare versions on every agent lookup, so this only
		// delays other pods' refresh.
		ix.log.WarnContext(ctx, "announcing a knowledge change", "agent_id", change.AgentID, "error", err)
	}
	return nil
}

// read returns the source's chunks, how many pages a web source read, and
// how a website's crawl ended.
func (ix *Indexer) read(ctx context.Context, ref domain.SourceRef, src domain.Source, lastAttempt bool) ([]domain.StoredChunk, int, ports.CrawlEnd, error) {
	var docs []domain.Document
	end := ports.CrawlComplete
	switch src.Type {
	case domain.SourceQA:
		text := src.Answer
		return []domain.StoredChunk{{
			ChunkDraft: domain.ChunkDraft{Text: text, Tokens: approxTokens(src.Question) + approxTokens(text)},
			Question:   src.Question,
		}}, 0, end, nil
	case domain.SourceText:
		docs = []domain.Document{{Title: src.Name, Text: src.Content}}
	case domain.SourceFile:
		doc, err := ix.extractor.Extract(ctx, src.Filename, src.File)
		if err != nil {
			return nil, 0, "", err
		}
		docs = []domain.Document{doc}
	case domain.SourceURL:
		doc, err := ix.web.Fetch(ctx, src.URL)
		if err != nil {
			return nil, 0, "", err
		}
		docs = []domain.Document{doc}
	case domain.SourceWebsite:
		var err error
		if docs, end, err = ix.crawl(ctx, ref, src, lastAttempt); err != nil {
			return nil, 0, "", err
		}
	default:
		return nil, 0, "", domain.Invalid("sources of type %q cannot be indexed", src.Type)
	}
	var chunks []domain.StoredChunk
	for _, doc := range docs {
		for _, d := range ix.chunker.Chunk(doc) {
			d.Ordinal = len(chunks)
			chunks = append(chunks, domain.StoredChunk{ChunkDraft: d})
		}
	}
	pages := 0
	if src.Type.Web() {
		pages = len(docs)
	}
	return chunks, pages, end, nil
}

// crawl returns the pages of the website's crawl for ref and how it ended,
// crawling first unless an earlier attempt ended the crawl.
func (ix *Indexer) crawl(ctx context.Context, ref domain.SourceRef, src domain.Source, lastAttempt bool) ([]domain.Document, ports.CrawlEnd, error) {
	progress, err := ix.crawls.OpenCrawl(ctx, ref)
	if err != nil {
		return nil, "", goneIfNotFound(err)
	}
	end := progress.End
	if end == ports.CrawlRunning {
		if end, err = ix.continueCrawl(ctx, ref, src, progress, lastAttempt); err != nil {
			return nil, "", err
		}
	}
	pages, err := ix.crawls.CrawledPages(ctx, ref)
	if err != nil {
		return nil, "", err
	}
	return pages, end, nil
}

// continueCrawl crawls on from progress for what is left of the budget, at
// most one slice, recording each step as it is taken, and returns how the
// crawl ended, or ErrCrawlContinues when the slice ran out first. The last
// attempt has no next one to continue in, so it crawls to the end.
func (ix *Indexer) continueCrawl(ctx context.Context, ref domain.SourceRef, src domain.Source, progress ports.CrawlProgress, lastAttempt bool) (ports.CrawlEnd, error) {
	left := ix.opts.CrawlBudget - progress.Spent
	if left <= 0 {
		return ports.CrawlOutOfTime, goneIfNotFound(ix.crawls.UpdateCrawl(ctx, ref, progress.Spent, ports.CrawlOutOfTime))
	}
	limit, cause := left, errOutOfTime
	if ix.opts.CrawlSlice < left && !lastAttempt {
		limit, cause = ix.opts.CrawlSlice, errSliceIsOut
	}
	// Crawl time is measured on the monotonic clock, like the deadline, and
	// from before the deadline is set: a crawl stopped by its deadline has
	// then spent at least its limit, never a hair less (which would leave
	// a sliver of budget for an attempt that can do nothing with it).
	began := time.Now()
	crawlCtx, cancel := context.WithTimeoutCause(ctx, limit, cause)
	defer cancel()
	spent := func() time.Duration { return progress.Spent + time.Since(began) }
	seq := len(progress.Steps)
	limits := domain.CrawlLimits{MaxPages: src.MaxPages, MaxDepth: src.MaxDepth}
	// Steps are written under the job's context, not the crawl's, so a
	// step taken as the budget runs out is still recorded.
	err := ix.web.Crawl(crawlCtx, src.URL, limits, progress.Steps, func(step ports.CrawlStep, page *domain.Document) error {
		if page != nil {
			page.Text = truncateUTF8(page.Text, maxCrawledPageBytes)
		}
		err := ix.crawls.AppendCrawlStep(ctx, ref, seq, step, page, spent())
		if errors.Is(err, domain.ErrConflict) {
			return fmt.Errorf("%w: %w", errTaken, err)
		}
		if err != nil {
			return goneIfNotFound(err)
		}
		seq++
		return nil
	})
	end := ports.CrawlComplete
	if err != nil {
		// Only the crawl's own deadline is handled here; the job's end
		// (shutdown, timeout, the source gone) and real failures go up.
		if ctx.Err() != nil || crawlCtx.Err() == nil {
			return "", err
		}
		if errors.Is(context.Cause(crawlCtx), errSliceIsOut) {
			if err := ix.crawls.UpdateCrawl(ctx, ref, spent(), ports.CrawlRunning); err != nil {
				return "", goneIfNotFound(err)
			}
			ix.log.InfoContext(ctx, "crawl paused; it continues in the next attempt", "source_id", ref.SourceID, "steps", seq)
			return "", fmt.Errorf("source %s: %w", ref.SourceID, ErrCrawlContinues)
		}
		end = ports.CrawlOutOfTime
	}
	if err := ix.crawls.UpdateCrawl(ctx, ref, spent(), end); err != nil {
		return "", goneIfNotFound(err)
	}
	return end, nil
}

// goneIfNotFound reads a crawl log's ErrNotFound: the source is gone or
// superseded.
func goneIfNotFound(err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return fmt.Errorf("%w: %w", errGone, err)
	}
	return err
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// shortDuration writes d as people do: 30m, 1h, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	if d < time.Second {
		return d.String()
	}
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// embed fills in ids, hashes and vectors, reusing the vectors the workspace
// already has for identical text.
func (ix *Indexer) embed(ctx context.Context, src domain.Source, chunks []domain.StoredChunk) ([]domain.StoredChunk, error) {
	hashes := make([]string, len(chunks))
	for i := range chunks {
		chunks[i].ID = domain.NewID(domain.PrefixChunk)
		chunks[i].ContentHash = hashText(embedText(chunks[i]))
		hashes[i] = chunks[i].ContentHash
	}
	known, err := ix.store.ReuseEmbeddings(ctx, src.WorkspaceID, ix.embedder.ID(), hashes)
	if err != nil {
		return nil, err
	}
	var todo []int
	for i := range chunks {
		if v, ok := known[chunks[i].ContentHash]; ok {
			chunks[i].Vector = v
			continue
		}
		todo = append(todo, i)
	}
	for start := 0; start < len(todo); start += embedBatch {
		batch := todo[start:min(start+embedBatch, len(todo))]
		texts := make([]string, len(batch))
		for j, i := range batch {
			texts[j] = embedText(chunks[i])
		}
		vectors, err := ix.embedder.Embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		if len(vectors) != len(batch) {
			return nil, fmt.Errorf("knowledge: embedder returned %d vectors for %d texts", len(vectors), len(batch))
		}
		for j, i := range batch {
			if !zero(vectors[j]) {
				chunks[i].Vector = vectors[j]
			}
		}
	}
	return chunks, nil
}

// embedText is what a chunk's vector stands for: a Q&A chunk is found by
// its question as much as by its answer.
func embedText(c domain.StoredChunk) string {
	if c.Question != "" {
		return c.Question + "\n" + c.Text
	}
	return c.Text
}

func hashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// contentHash identifies everything an index of the source depends on
// besides the embedder: the chunks' text, headings and pages, in order.
func contentHash(src domain.Source, chunks []domain.StoredChunk) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00", src.Type, src.Question)
	for _, c := range chunks {
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", c.Heading, c.URL, c.Text)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func zero(v []float32) bool {
	for _, f := range v {
		if f != 0 {
			return false
		}
	}
	return true
}

// approxTokens estimates tokens for Q&A chunks, which skip the chunker: about
// four characters per token in English.
func approxTokens(s string) int {
	return (len(s) + 3) / 4
}

// StalledAfter is how long a source may wait PENDING, or sit INDEXING without
// progress, before the sweeper enqueues its job again. Jobs are deduplicated
// by source and generation, so a job still running is not run twice.
const StalledAfter = 2 * time.Minute

// Requeuer re-enqueues index jobs that were lost, and those of sources whose
// vectors came from another embedder than the current one, or whose
// questions from another writer.
type Requeuer struct {
	store       ports.KnowledgeStore
	jobs        ports.IndexJobs
	embedder    string
	questionsBy string
	clock       ports.Clock
}

// NewRequeuer returns a Requeuer for the current embedder id and question
// writer (Indexer.QuestionsBy, "" when none).
func NewRequeuer(store ports.KnowledgeStore, jobs ports.IndexJobs, embedderID, questionsBy string, clock ports.Clock) *Requeuer {
	return &Requeuer{store: store, jobs: jobs, embedder: embedderID, questionsBy: questionsBy, clock: clock}
}

// RequeueStale enqueues the jobs of stalled sources and of sources to
// re-embed, and returns how many it enqueued.
func (r *Requeuer) RequeueStale(ctx context.Context) (int, error) {
	now := r.clock.Now()
	stalled, err := r.store.StalledSources(ctx, now.Add(-StalledAfter), 500)
	if err != nil {
		return 0, err
	}
	reembed, err := r.store.SourcesIndexedOtherwise(ctx, r.embedder, r.questionsBy, now, 500)
	if err != nil {
		return 0, err
	}
	refs := append(stalled, reembed...)
	for i, ref := range refs {
		if err := r.jobs.EnqueueIndexSource(ctx, ref); err != nil {
			return i, err
		}
	}
	return len(refs), nil
}
