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
	"time"

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
)

// Indexer runs index jobs.
type Indexer struct {
	store     ports.KnowledgeStore
	extractor ports.DocumentExtractor
	chunker   ports.Chunker
	web       ports.WebFetcher
	embedder  ports.Embedder
	notifier  ports.KnowledgeNotifier
	clock     ports.Clock
	log       *slog.Logger
}

// Deps are what an Indexer needs.
type Deps struct {
	Store     ports.KnowledgeStore
	Extractor ports.DocumentExtractor
	Chunker   ports.Chunker
	Web       ports.WebFetcher
	Embedder  ports.Embedder
	Notifier  ports.KnowledgeNotifier
	Clock     ports.Clock
	Log       *slog.Logger
}

// NewIndexer returns an Indexer; every dependency is required.
func NewIndexer(d Deps) *Indexer {
	if d.Store == nil || d.Extractor == nil || d.Chunker == nil || d.Web == nil || d.Embedder == nil ||
		d.Notifier == nil || d.Clock == nil || d.Log == nil {
		panic("knowledge.NewIndexer: every dependency is required")
	}
	return &Indexer{store: d.Store, extractor: d.Extractor, chunker: d.Chunker, web: d.Web, embedder: d.Embedder,
		notifier: d.Notifier, clock: d.Clock, log: d.Log}
}

// EmbedderID names the embedder new vectors come from.
func (ix *Indexer) EmbedderID() string { return ix.embedder.ID() }

// Index runs one job: it indexes the source if ref.Generation is still the
// source's generation, and does nothing if the source is gone or a newer
// request superseded the job.
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
	err = ix.index(ctx, ref, src)
	if err == nil {
		return nil
	}
	var invalid *domain.ValidationError
	switch {
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

func (ix *Indexer) index(ctx context.Context, ref domain.SourceRef, src domain.Source) error {
	drafts, pages, err := ix.read(ctx, src)
	if err != nil {
		return err
	}
	if len(drafts) == 0 {
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
		ChunkCount:  len(drafts),
		PageCount:   pages,
		At:          ix.clock.Now(),
	}
	for _, d := range drafts {
		result.TokenCount += d.Tokens
	}
	if result.ContentHash == src.ContentHash && result.Embedder == src.Embedder && src.ChunkCount > 0 {
		// Identical text, same embedder: what is stored is what we would store.
		_, _, err := ix.store.CompleteIndexing(ctx, ref, result, nil)
		return err
	}
	chunks, err := ix.embed(ctx, src, drafts)
	if err != nil {
		return err
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

// read returns the source's chunks and how many pages a web source read.
func (ix *Indexer) read(ctx context.Context, src domain.Source) ([]domain.StoredChunk, int, error) {
	var docs []domain.Document
	switch src.Type {
	case domain.SourceQA:
		text := src.Answer
		return []domain.StoredChunk{{
			ChunkDraft: domain.ChunkDraft{Text: text, Tokens: approxTokens(src.Question) + approxTokens(text)},
			Question:   src.Question,
		}}, 0, nil
	case domain.SourceText:
		docs = []domain.Document{{Title: src.Name, Text: src.Content}}
	case domain.SourceFile:
		doc, err := ix.extractor.Extract(ctx, src.Filename, src.File)
		if err != nil {
			return nil, 0, err
		}
		docs = []domain.Document{doc}
	case domain.SourceURL:
		doc, err := ix.web.Fetch(ctx, src.URL)
		if err != nil {
			return nil, 0, err
		}
		docs = []domain.Document{doc}
	case domain.SourceWebsite:
		limits := domain.CrawlLimits{MaxPages: src.MaxPages, MaxDepth: src.MaxDepth}
		err := ix.web.Crawl(ctx, src.URL, limits, func(doc domain.Document) error {
			docs = append(docs, doc)
			return nil
		})
		if err != nil {
			return nil, 0, err
		}
	default:
		return nil, 0, domain.Invalid("sources of type %q cannot be indexed", src.Type)
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
	return chunks, pages, nil
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
// vectors came from another embedder than the current one.
type Requeuer struct {
	store    ports.KnowledgeStore
	jobs     ports.IndexJobs
	embedder string
	clock    ports.Clock
}

// NewRequeuer returns a Requeuer for the given current embedder id.
func NewRequeuer(store ports.KnowledgeStore, jobs ports.IndexJobs, embedderID string, clock ports.Clock) *Requeuer {
	return &Requeuer{store: store, jobs: jobs, embedder: embedderID, clock: clock}
}

// RequeueStale enqueues the jobs of stalled sources and of sources to
// re-embed, and returns how many it enqueued.
func (r *Requeuer) RequeueStale(ctx context.Context) (int, error) {
	now := r.clock.Now()
	stalled, err := r.store.StalledSources(ctx, now.Add(-StalledAfter), 500)
	if err != nil {
		return 0, err
	}
	reembed, err := r.store.SourcesEmbeddedOtherwise(ctx, r.embedder, now, 500)
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
