package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// DocumentExtractor turns an uploaded file into text.
type DocumentExtractor interface {
	// Extract returns the text of a file whose format is known from its name's
	// extension (.md, .txt, .html, .htm, .pdf, .docx, .csv). Returns a
	// domain.ValidationError (ErrInvalidInput) naming the problem when the
	// extension is not supported, the body is not that format, it holds no
	// text, or reading it goes over one of the extractor's limits (text,
	// decompressed size, nesting, counts, time), which it checks while it
	// reads; such a file fails the same way on every retry. The text is valid
	// UTF-8 without NULs.
	Extract(ctx context.Context, filename string, body []byte) (domain.Document, error)
}

// Chunker splits a document into pieces within a token budget.
type Chunker interface {
	// Chunk splits doc by its headings into chunks of at most the chunker's
	// token budget, consecutive chunks of one section overlapping. A document
	// without text gives no chunks.
	Chunk(doc domain.Document) []domain.ChunkDraft
}

// WebFetcher reads web pages on a workspace's behalf. Implementations refuse
// private, loopback, link-local and metadata addresses after DNS resolution
// and on every redirect, and cap size and time.
type WebFetcher interface {
	// Fetch downloads one page and extracts its main text. Returns a
	// domain.ValidationError (ErrInvalidInput) for a refused or malformed URL,
	// a 4xx answer, a non-HTML page or an over-size body; an error wrapping
	// domain.ErrUnavailable for network failures, timeouts and 5xx answers,
	// which are worth retrying.
	Fetch(ctx context.Context, url string) (domain.Document, error)
	// Crawl visits a website from a start page, or from a sitemap when start
	// ends in .xml: pages of the start URL's host only, robots.txt and its
	// Crawl-delay respected, within limits. record is called once per page
	// request, in crawl order, with the page's document when the request
	// gave one to index and nil otherwise (a page that failed, is noindex or
	// redirects to a page already read); an error from record stops the crawl
	// and is returned. Pages that fail are skipped; Crawl fails (with the
	// kinds of Fetch) only when the start page or sitemap itself cannot be
	// read, and returns ctx's error as soon as ctx ends, pauses between
	// requests included.
	//
	// resume lists the steps an earlier Crawl of the same start and limits
	// recorded, in order (their Visited flags, not their documents): the
	// crawl continues where that one stopped, without requesting those
	// pages again. Empty resume starts afresh.
	Crawl(ctx context.Context, start string, limits domain.CrawlLimits, resume []CrawlStep, record func(CrawlStep, *domain.Document) error) error
}

// CrawlStep is one page request of a website crawl, as much as the crawl
// needs to continue after it: which URL was asked for, where it led, and
// what it added to the queue.
type CrawlStep struct {
	// URL is the page as requested, in the crawler's normal form.
	URL string
	// FinalURL is where redirects led, "" when nowhere else.
	FinalURL string
	// Depth is the link distance from the start page; sitemap entries are 1.
	Depth int
	// Start marks the first step: the start page or sitemap, whose answer
	// defines the site.
	Start bool
	// Visited says the request gave a page to index.
	Visited bool
	// Links are the URLs the step added to the crawl's queue, in order, each
	// at Depth+1.
	Links []string
}

// Embedder turns text into vectors.
type Embedder interface {
	// ID names the embedder, its model and its dimensions, as stored with
	// every vector ("local-hash-v1-384", "openai:text-embedding-3-small:1536").
	// Vectors of different ids are never compared.
	ID() string
	// Dimensions is the length of every vector.
	Dimensions() int
	// Embed returns one L2-normalised vector per text, in order. Returns an
	// error wrapping domain.ErrUnavailable when the provider cannot be reached
	// or keeps failing, domain.ErrRateLimited when it throttles after
	// retries, and domain.ErrInvalidInput when it refuses the input.
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// IndexJobs schedules indexing work.
type IndexJobs interface {
	// EnqueueIndexSource schedules (re)indexing of a source for a generation.
	// Enqueueing the same generation twice is allowed: the job is idempotent.
	EnqueueIndexSource(ctx context.Context, ref domain.SourceRef) error
}

// KnowledgeStore is what indexing needs from storage.
type KnowledgeStore interface {
	// SourceForIndexing returns the source with its uploaded file, if any.
	// Returns domain.ErrNotFound when it was deleted.
	SourceForIndexing(ctx context.Context, workspaceID, sourceID string) (domain.Source, error)
	// BeginIndexing marks the source INDEXING if ref.Generation is still its
	// generation, and reports whether it did: false means a newer request
	// superseded this job, or the source is gone.
	BeginIndexing(ctx context.Context, ref domain.SourceRef, at time.Time) (bool, error)
	// ReuseEmbeddings returns the vectors already stored in the workspace for
	// texts of the given content hashes embedded by embedder, keyed by hash.
	ReuseEmbeddings(ctx context.Context, workspaceID, embedder string, hashes []string) (map[string][]float32, error)
	// ReuseQuestions returns the questions already written in the workspace
	// for texts of the given content hashes by the writer named by, keyed by
	// hash; a text the writer found no question for maps to none.
	ReuseQuestions(ctx context.Context, workspaceID, by string, hashes []string) (map[string][]string, error)
	// CompleteIndexing replaces the source's chunks, marks it READY with the
	// result and bumps its agent's knowledge version, atomically, if
	// ref.Generation is still current. Returns the new knowledge version and
	// the agent's id, or ok false when the job was superseded.
	CompleteIndexing(ctx context.Context, ref domain.SourceRef, result domain.IndexResult, chunks []domain.StoredChunk) (change KnowledgeChange, ok bool, err error)
	// FailIndexing marks the source FAILED with a reason for its owner, if
	// ref.Generation is still current.
	FailIndexing(ctx context.Context, ref domain.SourceRef, reason string, at time.Time) error
	// StalledSources returns sources PENDING or INDEXING and not updated since
	// before, oldest first, so a sweeper can re-enqueue what a crash lost.
	StalledSources(ctx context.Context, before time.Time, limit int) ([]domain.SourceRef, error)
	// SourcesIndexedOtherwise returns READY sources whose vectors came from
	// an embedder other than embedder, or whose questions from a writer
	// other than questionsBy ("" for none), so they can be indexed again.
	// Each is moved to PENDING with a new generation, which the returned
	// refs carry.
	SourcesIndexedOtherwise(ctx context.Context, embedder, questionsBy string, at time.Time, limit int) ([]domain.SourceRef, error)
	// IndexingCurrent reports whether ref.Generation is still the generation
	// of an existing source: false when the source (or its agent) was
	// deleted or a newer request superseded the job. It is cheap, for a job
	// to ask every few seconds.
	IndexingCurrent(ctx context.Context, ref domain.SourceRef) (bool, error)
}

// CrawlLog keeps a website crawl's progress in storage as it goes, per
// source generation, so a crawl whose worker died continues where it was:
// its steps (with the pages' text), the crawl time spent, and whether it
// ended. A generation's log is dropped when the generation completes,
// fails or is superseded, and with its source.
type CrawlLog interface {
	// OpenCrawl returns the progress of ref's crawl, steps in order without
	// their pages, and starts an empty log when there is none for
	// ref.Generation (dropping another generation's). Returns
	// domain.ErrNotFound when the source is gone or ref.Generation is no
	// longer current.
	OpenCrawl(ctx context.Context, ref domain.SourceRef) (CrawlProgress, error)
	// AppendCrawlStep records step number seq (counted from 0) of ref's
	// crawl, with its page when it gave one, and the crawl time spent so
	// far. Returns domain.ErrNotFound when the source is gone, superseded or
	// its crawl ended, and domain.ErrConflict when step seq is recorded
	// already (another worker runs the same crawl).
	AppendCrawlStep(ctx context.Context, ref domain.SourceRef, seq int, step CrawlStep, page *domain.Document, spent time.Duration) error
	// UpdateCrawl records the crawl time spent and, unless end is
	// CrawlRunning, that the crawl ended and how; an ended crawl is not
	// continued. Returns domain.ErrNotFound like AppendCrawlStep.
	UpdateCrawl(ctx context.Context, ref domain.SourceRef, spent time.Duration, end CrawlEnd) error
	// CrawledPages returns the pages of ref's crawl in crawl order.
	CrawledPages(ctx context.Context, ref domain.SourceRef) ([]domain.Document, error)
}

// CrawlProgress is where a crawl is.
type CrawlProgress struct {
	Steps []CrawlStep
	// Spent is the crawl time of every attempt so far, against the crawl's
	// time budget; waiting between attempts does not count.
	Spent time.Duration
	End   CrawlEnd
}

// CrawlEnd says whether and how a crawl ended.
type CrawlEnd string

// How a crawl ends.
const (
	// CrawlRunning: the crawl has not ended.
	CrawlRunning CrawlEnd = ""
	// CrawlComplete: the crawl ran out of pages to visit, or reached its
	// page limits.
	CrawlComplete CrawlEnd = "complete"
	// CrawlOutOfTime: the crawl's time budget ran out first.
	CrawlOutOfTime CrawlEnd = "out_of_time"
)

// KnowledgeChange says an agent's knowledge changed.
type KnowledgeChange struct {
	WorkspaceID string
	AgentID     string
	Version     int64
}

// KnowledgeNotifier tells every pod that an agent or its knowledge changed,
// so each drops its cached copies.
type KnowledgeNotifier interface {
	// AgentChanged announces that an agent's configuration changed or that
	// it was deleted. Best effort, like KnowledgeChanged.
	AgentChanged(ctx context.Context, workspaceID, agentID string) error
	// KnowledgeChanged announces the change. Delivery is best effort: pods
	// also compare versions, so a lost message delays a refresh but never
	// serves stale knowledge past the next agent lookup.
	KnowledgeChanged(ctx context.Context, change KnowledgeChange) error
}

// IndexedChunk is a chunk as retrieval indexes it in memory.
type IndexedChunk struct {
	Chunk domain.Chunk
	// Vector is nil when the chunk has none from the requested embedder.
	Vector []float32
}

// ChunkReader is what retrieval reads from storage.
type ChunkReader interface {
	// LoadChunks returns every chunk of the agent's READY sources, with the
	// vectors of the given embedder (nil for chunks embedded otherwise), and
	// the agent's knowledge version in the same snapshot. Returns
	// domain.ErrNotFound when the agent does not exist.
	LoadChunks(ctx context.Context, workspaceID, agentID, embedder string) (version int64, chunks []IndexedChunk, err error)
	// SearchChunks ranks the agent's READY chunks by PostgreSQL full-text
	// search (an OR query), best first, at most limit. Text without a
	// searchable word finds nothing, which is not an error.
	SearchChunks(ctx context.Context, workspaceID, agentID, text string, limit int) ([]domain.Chunk, error)
}
