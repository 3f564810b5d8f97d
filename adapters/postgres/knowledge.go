package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var (
	_ ports.KnowledgeStore = (*Store)(nil)
	_ ports.ChunkReader    = (*Store)(nil)
)

// SourceForIndexing returns the source with its uploaded file, if any.
// Returns domain.ErrNotFound when it was deleted.
func (s *Store) SourceForIndexing(ctx context.Context, workspaceID, sourceID string) (domain.Source, error) {
	var row sourceRow
	err := s.db.WithContext(ctx).Where("workspace_id = ? AND id = ?", workspaceID, sourceID).Take(&row).Error
	if err != nil {
		return domain.Source{}, notFoundOr(err, "source", "get source for indexing")
	}
	src, err := row.toDomain()
	if err != nil {
		return domain.Source{}, err
	}
	if src.Type != domain.SourceFile {
		return src, nil
	}
	err = s.pool.QueryRow(ctx, `SELECT body FROM source_files WHERE source_id = $1 AND workspace_id = $2`,
		sourceID, workspaceID).Scan(&src.File)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return domain.Source{}, dbError("get source file", err)
	}
	return src, nil
}

// BeginIndexing marks the source INDEXING if ref.Generation is still current.
func (s *Store) BeginIndexing(ctx context.Context, ref domain.SourceRef, at time.Time) (bool, error) {
	tag, err := s.pool.Exec(ctx, `UPDATE sources SET status = 'INDEXING', status_reason = '', updated_at = $4
WHERE workspace_id = $1 AND id = $2 AND generation = $3`, ref.WorkspaceID, ref.SourceID, ref.Generation, dbTime(at))
	if err != nil {
		return false, dbError("begin indexing", err)
	}
	return tag.RowsAffected() == 1, nil
}

// ReuseEmbeddings returns stored vectors of the workspace by content hash.
func (s *Store) ReuseEmbeddings(ctx context.Context, workspaceID, embedder string, hashes []string) (map[string][]float32, error) {
	found := make(map[string][]float32)
	if len(hashes) == 0 {
		return found, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (content_hash) content_hash, embedding FROM chunks
WHERE workspace_id = $1 AND embedder = $2 AND content_hash = ANY($3) AND embedding IS NOT NULL`,
		workspaceID, embedder, hashes)
	if err != nil {
		return nil, dbError("reuse embeddings", err)
	}
	defer rows.Close()
	for rows.Next() {
		var hash string
		var raw []byte
		if err := rows.Scan(&hash, &raw); err != nil {
			return nil, dbError("reuse embeddings", err)
		}
		v, err := decodeVector(raw)
		if err != nil {
			return nil, err
		}
		found[hash] = v
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("reuse embeddings", err)
	}
	return found, nil
}

// ReuseQuestions returns questions the writer named by already wrote for
// chunks of the workspace, by content hash.
func (s *Store) ReuseQuestions(ctx context.Context, workspaceID, by string, hashes []string) (map[string][]string, error) {
	found := make(map[string][]string)
	if len(hashes) == 0 || by == "" {
		return found, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT DISTINCT ON (content_hash) content_hash, questions FROM chunks
WHERE workspace_id = $1 AND questions_by = $2 AND content_hash = ANY($3)`, workspaceID, by, hashes)
	if err != nil {
		return nil, dbError("reuse questions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var hash, questions string
		if err := rows.Scan(&hash, &questions); err != nil {
			return nil, dbError("reuse questions", err)
		}
		found[hash] = splitQuestions(questions)
	}
	if err := rows.Err(); err != nil {
		return nil, dbError("reuse questions", err)
	}
	return found, nil
}

// joinQuestions stores a chunk's questions one per line (see migration
// 00028); a question never holds a line break, but one that did would only
// become two lines of search text.
func joinQuestions(qs []string) string { return strings.Join(qs, "\n") }

func splitQuestions(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// CompleteIndexing replaces the source's chunks, marks it READY and bumps the
// agent's knowledge version in one transaction, if ref.Generation is current.
// With result.ChunkCount > 0 and no chunks, the stored chunks are kept (the
// text did not change) and the version is not bumped.
func (s *Store) CompleteIndexing(ctx context.Context, ref domain.SourceRef, result domain.IndexResult, chunks []domain.StoredChunk) (ports.KnowledgeChange, bool, error) {
	change := ports.KnowledgeChange{WorkspaceID: ref.WorkspaceID}
	keep := len(chunks) == 0 && result.ChunkCount > 0
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT agent_id FROM sources WHERE workspace_id = $1 AND id = $2 AND generation = $3 FOR UPDATE`,
			ref.WorkspaceID, ref.SourceID, ref.Generation).Scan(&change.AgentID)
		if err != nil {
			return err
		}
		if !keep {
			if _, err := tx.Exec(ctx, `DELETE FROM chunks WHERE source_id = $1`, ref.SourceID); err != nil {
				return err
			}
			if _, err := tx.CopyFrom(ctx, pgx.Identifier{"chunks"},
				[]string{"id", "workspace_id", "agent_id", "source_id", "ordinal", "heading", "url", "question",
					"content", "token_count", "content_hash", "embedder", "embedding", "questions", "questions_by", "created_at"},
				chunkRows(ref, change.AgentID, result, chunks)); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE sources SET status = 'READY', status_reason = $9,
    chunk_count = $3, token_count = $4, page_count = $5, content_hash = $6, embedder = $7,
    indexed_at = $8, updated_at = $8, questions_by = $10
WHERE workspace_id = $1 AND id = $2`, ref.WorkspaceID, ref.SourceID, result.ChunkCount, result.TokenCount,
			result.PageCount, result.ContentHash, result.Embedder, dbTime(result.At), result.Note, result.QuestionsBy); err != nil {
			return err
		}
		// The crawl's log was only needed until its pages were indexed.
		if _, err := tx.Exec(ctx, `DELETE FROM crawl_progress WHERE source_id = $1`, ref.SourceID); err != nil {
			return err
		}
		bump := 1
		if keep {
			bump = 0
		}
		return tx.QueryRow(ctx, `UPDATE agents SET knowledge_version = knowledge_version + $3
WHERE workspace_id = $1 AND id = $2 RETURNING knowledge_version`, ref.WorkspaceID, change.AgentID, bump).Scan(&change.Version)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return ports.KnowledgeChange{}, false, nil
	}
	if err != nil {
		return ports.KnowledgeChange{}, false, dbError("complete indexing", err)
	}
	return change, true, nil
}

func chunkRows(ref domain.SourceRef, agentID string, result domain.IndexResult, chunks []domain.StoredChunk) pgx.CopyFromSource {
	at := dbTime(result.At)
	return pgx.CopyFromSlice(len(chunks), func(i int) ([]any, error) {
		c := chunks[i]
		var embedding []byte
		if c.Vector != nil {
			embedding = encodeVector(c.Vector)
		}
		return []any{c.ID, ref.WorkspaceID, agentID, ref.SourceID, c.Ordinal, c.Heading, c.URL, c.Question,
			c.Text, c.Tokens, c.ContentHash, result.Embedder, embedding, joinQuestions(c.Questions), c.QuestionsBy, at}, nil
	})
}

// FailIndexing marks the source FAILED if ref.Generation is still current,
// and drops its crawl's log. Chunks of an earlier successful indexing stay
// searchable.
func (s *Store) FailIndexing(ctx context.Context, ref domain.SourceRef, reason string, at time.Time) error {
	_, err := s.pool.Exec(ctx, `WITH failed AS (
    UPDATE sources SET status = 'FAILED', status_reason = $4, updated_at = $5
    WHERE workspace_id = $1 AND id = $2 AND generation = $3
    RETURNING id
)
DELETE FROM crawl_progress WHERE source_id IN (SELECT id FROM failed)`, ref.WorkspaceID, ref.SourceID, ref.Generation, reason, dbTime(at))
	if err != nil {
		return dbError("fail indexing", err)
	}
	return nil
}

// StalledSources returns sources PENDING or INDEXING since before.
func (s *Store) StalledSources(ctx context.Context, before time.Time, limit int) ([]domain.SourceRef, error) {
	rows, err := s.pool.Query(ctx, `SELECT workspace_id, id, generation FROM sources
WHERE status IN ('PENDING', 'INDEXING') AND updated_at < $1 ORDER BY updated_at LIMIT $2`, dbTime(before), limit)
	if err != nil {
		return nil, dbError("stalled sources", err)
	}
	return pgx.CollectRows(rows, scanSourceRef)
}

// SourcesIndexedOtherwise moves READY sources indexed by another embedder or
// question writer back to PENDING with a new generation and returns them.
func (s *Store) SourcesIndexedOtherwise(ctx context.Context, embedder, questionsBy string, at time.Time, limit int) ([]domain.SourceRef, error) {
	rows, err := s.pool.Query(ctx, `UPDATE sources SET status = 'PENDING', generation = generation + 1, updated_at = $2
WHERE id IN (
    SELECT id FROM sources WHERE status = 'READY' AND (embedder <> $1 OR questions_by <> $4) AND chunk_count > 0
    ORDER BY updated_at LIMIT $3 FOR UPDATE SKIP LOCKED
)
RETURNING workspace_id, id, generation`, embedder, dbTime(at), limit, questionsBy)
	if err != nil {
		return nil, dbError("sources to re-embed", err)
	}
	return pgx.CollectRows(rows, scanSourceRef)
}

func scanSourceRef(row pgx.CollectableRow) (domain.SourceRef, error) {
	var ref domain.SourceRef
	err := row.Scan(&ref.WorkspaceID, &ref.SourceID, &ref.Generation)
	return ref, err
}

// LoadChunks reads every chunk of the agent and its knowledge version in one
// snapshot (a repeatable-read transaction), so the version names exactly the
// chunks returned.
func (s *Store) LoadChunks(ctx context.Context, workspaceID, agentID, embedder string) (int64, []ports.IndexedChunk, error) {
	var version int64
	var chunks []ports.IndexedChunk
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `SELECT knowledge_version FROM agents WHERE workspace_id = $1 AND id = $2`,
			workspaceID, agentID).Scan(&version)
		if err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT c.id, c.source_id, s.type, s.name, c.url, c.heading, c.question, c.content,
    CASE WHEN c.embedder = $3 THEN c.embedding END, c.questions
FROM chunks AS c JOIN sources AS s ON s.id = c.source_id
WHERE c.workspace_id = $1 AND c.agent_id = $2
ORDER BY c.source_id, c.ordinal`, workspaceID, agentID, embedder)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var c ports.IndexedChunk
			var typ string
			var raw []byte
			var questions string
			if err := rows.Scan(&c.Chunk.ID, &c.Chunk.SourceID, &typ, &c.Chunk.DocumentName, &c.Chunk.URL,
				&c.Chunk.Heading, &c.Chunk.Question, &c.Chunk.Text, &raw, &questions); err != nil {
				return err
			}
			c.Chunk.Questions = splitQuestions(questions)
			c.Chunk.SourceType = domain.SourceType(typ)
			if raw != nil {
				if c.Vector, err = decodeVector(raw); err != nil {
					return err
				}
			}
			chunks = append(chunks, c)
		}
		return rows.Err()
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil, domain.NotFound("agent")
	}
	if err != nil {
		return 0, nil, dbError("load chunks", err)
	}
	return version, chunks, nil
}

// encodeVector stores a vector as little-endian float32s.
func encodeVector(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func decodeVector(b []byte) ([]float32, error) {
	if len(b)%4 != 0 {
		return nil, fmt.Errorf("postgres: stored vector of %d bytes is not float32s", len(b))
	}
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v, nil
}
