// Package retrieval is hybrid retrieval over an agent's knowledge: keyword
// search (BM25F) and an exact vector search in one in-process index per
// agent, fused by reciprocal rank. The index is loaded lazily from
// PostgreSQL, bounded in memory, checked against the agent's knowledge
// version on every query and dropped when another pod announces a change.
// While an agent's index is loading (or does not fit in memory), queries are
// answered by PostgreSQL's full-text search, so retrieval never waits long.
package retrieval

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/conciergehq/concierge/adapters/retrieval/memindex"
	"github.com/conciergehq/concierge/adapters/retrieval/synonyms"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Defaults of Options.
const (
	DefaultBudget     = 512 << 20
	DefaultCandidates = 50
	DefaultLoadWait   = 250 * time.Millisecond
	defaultLimit      = 5
	maxLimit          = 50
	// loadTimeout bounds a background load; it outlives the request that
	// started it.
	loadTimeout = 2 * time.Minute
	// traceCandidates caps the candidates a trace records.
	traceCandidates = 20
)

// Mode picks the legs of a ranking.
type Mode int

// Modes. Hybrid is what agents use; the others exist for evaluation.
const (
	Hybrid Mode = iota
	KeywordOnly
	VectorOnly
)

func (m Mode) String() string {
	switch m {
	case KeywordOnly:
		return "keyword"
	case VectorOnly:
		return "vector"
	default:
		return "hybrid"
	}
}

// Options tune a Retriever; zero fields take the defaults.
type Options struct {
	// Budget caps the bytes of cached indexes (texts included).
	Budget int64
	// Candidates is how many results each leg contributes to the fusion.
	Candidates int
	// LoadWait is how long a query waits for its agent's index to load
	// before answering from PostgreSQL instead.
	LoadWait time.Duration
	// KeywordFromPostgres makes PostgreSQL's full-text search the keyword
	// leg of every query, fused with the in-memory vector search, instead of
	// the in-memory BM25F. It costs a database query per retrieval; see
	// docs/benchmarks.md for what each choice measured.
	KeywordFromPostgres bool
	// Synonyms bridge a question's words and the knowledge's in the
	// reranker; nil reranks without them.
	Synonyms *synonyms.Table
}

// Retriever implements ports.Retriever.
type Retriever struct {
	reader   ports.ChunkReader
	embedder ports.Embedder
	cache    *memindex.Cache[*agentChunks]
	reranker *Reranker
	opts     Options
	log      *slog.Logger
}

var _ ports.Retriever = (*Retriever)(nil)

// New returns a Retriever reading chunks through reader and embedding
// queries with embedder, which must be the one the knowledge was indexed
// with (vectors of other embedders are not loaded).
func New(reader ports.ChunkReader, embedder ports.Embedder, opts Options, log *slog.Logger) *Retriever {
	if opts.Budget <= 0 {
		opts.Budget = DefaultBudget
	}
	if opts.Candidates <= 0 {
		opts.Candidates = DefaultCandidates
	}
	if opts.LoadWait <= 0 {
		opts.LoadWait = DefaultLoadWait
	}
	return &Retriever{reader: reader, embedder: embedder, cache: memindex.NewCache[*agentChunks](opts.Budget),
		reranker: NewReranker(opts.Synonyms), opts: opts, log: log}
}

// Invalidate drops an agent's cached index: version > 0 says its knowledge
// changed to that version (older loads in flight are refused too); 0 says
// the agent itself changed or was deleted.
func (r *Retriever) Invalidate(agentID string, version int64) {
	if version > 0 {
		r.cache.InvalidateBelow(agentID, version)
		return
	}
	r.cache.Invalidate(agentID)
}

// Stats reports the cache's counters.
func (r *Retriever) Stats() memindex.CacheStats { return r.cache.Stats() }

// Retrieve returns up to q.Limit chunks whose relevance reaches q.Threshold,
// best first, recording what it considered in q.Trace when set.
func (r *Retriever) Retrieve(ctx context.Context, q ports.RetrievalQuery) ([]domain.Chunk, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = defaultLimit
	}
	limit = min(limit, maxLimit)
	// A follow-up's earlier questions are searched along with it; the
	// reranker tells the question from its context.
	text := q.Text
	if q.Context != "" {
		text = q.Text + "\n" + q.Context
	}
	whole := q
	whole.Text, whole.Context = text, ""
	entry, err := r.index(ctx, q)
	if err != nil {
		return r.fromPostgres(ctx, whole, limit, err)
	}
	var vec []float32
	mode := Hybrid
	vectors, err := r.embedder.Embed(ctx, []string{text})
	if err != nil || len(vectors) != 1 {
		// The keyword leg alone still answers; an embedding provider that is
		// down must not take the agent down.
		r.log.WarnContext(ctx, "embedding a query failed; keyword search only", "agent_id", q.AgentID, "error", err)
		mode = KeywordOnly
	} else {
		vec = vectors[0]
	}
	var ranked []Ranked
	if r.opts.KeywordFromPostgres {
		if ranked, err = r.rankWithPostgres(ctx, whole, entry, vec); err != nil {
			return nil, err
		}
	} else {
		ranked = Rank(entry.Index, text, vec, mode, r.opts.Candidates)
	}
	j := r.reranker.Rerank(entry.Index, q.Text, q.Context, ranked, entry.Value.chunk)
	chunks := Decide(j, limit, q.Threshold)
	if q.Trace != nil {
		*q.Trace = judgementTrace(q, j, entry.Value.meta, limit, mode)
		q.Trace.Embedder = r.embedder.ID()
		q.Trace.KnowledgeVersion = entry.Version
		if mode == KeywordOnly {
			q.Trace.Note = "the query could not be embedded: keyword search only"
		}
	}
	return chunks, nil
}

// rankWithPostgres fuses PostgreSQL's full-text ranking with the in-memory
// vector search. Chunks PostgreSQL returns that the index does not hold (a
// change not loaded yet) are skipped: the index is at the caller's version.
func (r *Retriever) rankWithPostgres(ctx context.Context, q ports.RetrievalQuery, entry *memindex.Entry[*agentChunks], vec []float32) ([]Ranked, error) {
	found, err := r.reader.SearchChunks(ctx, q.WorkspaceID, q.AgentID, q.Text, r.opts.Candidates)
	if err != nil {
		return nil, err
	}
	kw := make([]memindex.Hit, 0, len(found))
	for _, c := range found {
		if pos, ok := entry.Value.position(c.ID); ok {
			kw = append(kw, memindex.Hit{Doc: pos, Score: min(1, c.Score)})
		}
	}
	var vh []memindex.Hit
	if vec != nil {
		vh = entry.Index.Vector(vec, r.opts.Candidates)
	}
	return FuseLegs(kw, vh, r.opts.Candidates), nil
}

// index returns the agent's index at q.KnowledgeVersion or newer, loading it
// if needed and waiting at most LoadWait for the load. LoadWait answers a
// cached index at once, counting one hit or one miss per query.
func (r *Retriever) index(ctx context.Context, q ports.RetrievalQuery) (*memindex.Entry[*agentChunks], error) {
	wait, cancel := context.WithTimeout(ctx, r.opts.LoadWait)
	defer cancel()
	workspaceID, agentID := q.WorkspaceID, q.AgentID
	return r.cache.LoadWait(wait, agentID, q.KnowledgeVersion, func() (*memindex.Index, *agentChunks, error) {
		return r.load(workspaceID, agentID)
	})
}

func (r *Retriever) load(workspaceID, agentID string) (*memindex.Index, *agentChunks, error) {
	ctx, cancel := context.WithTimeout(context.Background(), loadTimeout)
	defer cancel()
	start := time.Now()
	version, stored, err := r.reader.LoadChunks(ctx, workspaceID, agentID, r.embedder.ID())
	if err != nil {
		return nil, nil, err
	}
	docs := make([]memindex.Doc, len(stored))
	value := newAgentChunks(len(stored))
	for i, c := range stored {
		docs[i] = memindex.Doc{Title: IndexTitle(c.Chunk), Text: c.Chunk.Text, Name: c.Chunk.DocumentName, Vector: c.Vector}
		value.add(c.Chunk)
	}
	ix, err := memindex.Build(docs, r.embedder.Dimensions())
	if err != nil {
		return nil, nil, err
	}
	r.log.Info("agent index loaded", "agent_id", agentID, "knowledge_version", version, "chunks", len(stored),
		"bytes", ix.Bytes()+value.bytes, "took", time.Since(start).Round(time.Millisecond))
	return ix, value, nil
}

// IndexTitle is the title the in-memory index gives a chunk: its heading
// path, or a Q&A pair's question, and the questions written for it at
// index time, which weigh like its heading. The evaluation indexes its
// sets with it too, so it measures the index the agents get.
func IndexTitle(c domain.Chunk) string {
	title := c.Heading
	if c.Question != "" {
		title = c.Question
	}
	if len(c.Questions) > 0 {
		title += "\n" + strings.Join(c.Questions, "\n")
	}
	return title
}

// fromPostgres answers with PostgreSQL's full-text search while the index is
// not available; why is the reason, recorded in the trace.
func (r *Retriever) fromPostgres(ctx context.Context, q ports.RetrievalQuery, limit int, why error) ([]domain.Chunk, error) {
	found, err := r.reader.SearchChunks(ctx, q.WorkspaceID, q.AgentID, q.Text, limit)
	if err != nil {
		return nil, err
	}
	kept := found[:0:0]
	for i := range found {
		// ts_rank_cd scaled by the share of query words, plus a Q&A match
		// bonus: a relevance on about the same [0, 1] scale.
		found[i].Score = min(1, found[i].Score)
		if found[i].Score >= q.Threshold {
			kept = append(kept, found[i])
		}
	}
	if q.Trace != nil {
		*q.Trace = domain.RetrievalTrace{Query: q.Text, Method: "keyword", TopK: limit, Threshold: q.Threshold,
			KnowledgeVersion: q.KnowledgeVersion,
			Note:             "the agent's in-memory index was not ready (" + why.Error() + "): PostgreSQL full-text search only"}
		for i, c := range found {
			tc := domain.TraceCandidate{ChunkID: c.ID, SourceID: c.SourceID, DocumentName: c.DocumentName,
				KeywordRank: i + 1, KeywordScore: c.Score, Score: c.Score, Kept: c.Score >= q.Threshold, Reason: domain.TraceKept}
			if !tc.Kept {
				tc.Reason = domain.TraceBelowThreshold
			}
			q.Trace.Candidates = append(q.Trace.Candidates, tc)
		}
	}
	return kept, nil
}

// Ranked is one fused candidate with the scores of each leg.
type Ranked struct {
	Doc          int
	Fused        float64
	KeywordRank  int
	KeywordScore float64 // BM25F divided by the query's ceiling, in [0, 1)
	VectorRank   int
	VectorScore  float64 // cosine similarity
}

// Rank runs the legs of mode over ix and fuses them by reciprocal rank, best
// first. vec may be nil (no vector leg).
func Rank(ix *memindex.Index, text string, vec []float32, mode Mode, candidates int) []Ranked {
	var kw, vh []memindex.Hit
	if mode != VectorOnly {
		kw = ix.Keyword(text, candidates)
		ceiling := ix.KeywordCeiling(text)
		for i := range kw {
			if ceiling > 0 {
				kw[i].Score /= ceiling
			} else {
				kw[i].Score = 0
			}
		}
	}
	if mode != KeywordOnly && vec != nil {
		vh = ix.Vector(vec, candidates)
	}
	return FuseLegs(kw, vh, candidates)
}

// FuseLegs fuses a keyword list (scores normalised into [0, 1]) and a vector
// list (cosines) by reciprocal rank, best first. Either may be empty.
func FuseLegs(kw, vh []memindex.Hit, candidates int) []Ranked {
	var lists [][]memindex.Hit
	kwList, vecList := -1, -1
	if len(kw) > 0 {
		kwList = len(lists)
		lists = append(lists, kw)
	}
	if len(vh) > 0 {
		vecList = len(lists)
		lists = append(lists, vh)
	}
	if len(lists) == 0 {
		return nil
	}
	fused := memindex.Fuse(candidates, memindex.DefaultRRFK, lists...)
	out := make([]Ranked, len(fused))
	for i, f := range fused {
		// A rank is a position in its list, from 1: the list has the score.
		r := Ranked{Doc: f.Doc, Fused: f.Score}
		if kwList >= 0 {
			if r.KeywordRank = f.Ranks[kwList]; r.KeywordRank > 0 {
				r.KeywordScore = kw[r.KeywordRank-1].Score
			}
		}
		if vecList >= 0 {
			if r.VectorRank = f.Ranks[vecList]; r.VectorRank > 0 {
				r.VectorScore = vh[r.VectorRank-1].Score
			}
		}
		out[i] = r
	}
	return out
}
