package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
)

// traceJSON is the stored shape of domain.RetrievalTrace, spelled out so a
// renamed domain field never silently changes stored traces.
type traceJSON struct {
	Query            string          `json:"query"`
	Method           string          `json:"method"`
	Note             string          `json:"note,omitempty"`
	Embedder         string          `json:"embedder,omitempty"`
	KnowledgeVersion int64           `json:"knowledgeVersion"`
	TopK             int             `json:"topK"`
	Threshold        float64         `json:"threshold"`
	Candidates       []candidateJSON `json:"candidates"`
}

type candidateJSON struct {
	ChunkID      string  `json:"chunkId"`
	SourceID     string  `json:"sourceId"`
	DocumentName string  `json:"documentName"`
	KeywordRank  int     `json:"keywordRank,omitempty"`
	KeywordScore float64 `json:"keywordScore,omitempty"`
	VectorRank   int     `json:"vectorRank,omitempty"`
	VectorScore  float64 `json:"vectorScore,omitempty"`
	Score        float64 `json:"score"`
	Kept         bool    `json:"kept"`
	Reason       string  `json:"reason"`
}

func encodeTrace(t *domain.RetrievalTrace) ([]byte, error) {
	if t == nil {
		return nil, nil
	}
	j := traceJSON{Query: t.Query, Method: t.Method, Note: t.Note, Embedder: t.Embedder, KnowledgeVersion: t.KnowledgeVersion,
		TopK: t.TopK, Threshold: t.Threshold, Candidates: make([]candidateJSON, len(t.Candidates))}
	for i, c := range t.Candidates {
		j.Candidates[i] = candidateJSON(c)
	}
	b, err := json.Marshal(j)
	if err != nil {
		return nil, fmt.Errorf("postgres: encode retrieval trace: %w", err)
	}
	return b, nil
}

// MessageTrace returns the retrieval trace stored with a message. Returns
// domain.ErrNotFound unless the message belongs to the conversation and
// workspace and has a trace.
func (s *Store) MessageTrace(ctx context.Context, workspaceID, conversationID, messageID string) (domain.RetrievalTrace, error) {
	var raw []byte
	err := s.pool.QueryRow(ctx, `SELECT trace FROM messages WHERE workspace_id = $1 AND conversation_id = $2 AND id = $3`,
		workspaceID, conversationID, messageID).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.RetrievalTrace{}, domain.NotFound("message")
	}
	if err != nil {
		return domain.RetrievalTrace{}, dbError("message trace", err)
	}
	if raw == nil {
		return domain.RetrievalTrace{}, domain.NotFound("retrieval trace")
	}
	var j traceJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return domain.RetrievalTrace{}, fmt.Errorf("postgres: decode trace of message %s: %w", messageID, err)
	}
	t := domain.RetrievalTrace{Query: j.Query, Method: j.Method, Note: j.Note, Embedder: j.Embedder, KnowledgeVersion: j.KnowledgeVersion,
		TopK: j.TopK, Threshold: j.Threshold, Candidates: make([]domain.TraceCandidate, len(j.Candidates))}
	for i, c := range j.Candidates {
		t.Candidates[i] = domain.TraceCandidate(c)
	}
	return t, nil
}
