package chat

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
)

// maxRetrieveTopK caps how many chunks an admin may ask Retrieve for.
const maxRetrieveTopK = 50

// RetrieveRequest asks for an agent's knowledge about a query, as an admin
// tuning the agent would.
type RetrieveRequest struct {
	WorkspaceID string
	AgentSlug   string
	Query       string
	// TopK and Threshold override the agent's settings when set.
	TopK      int
	Threshold *float64
}

// Retrieve runs the agent's retrieval on a query and returns the chunks an
// answer would use, best first, with the trace of what was considered. It
// does not need the agent to be published. Returns domain.ErrNotFound for an
// unknown agent and domain.ErrInvalidInput for a blank or oversized query or
// settings out of range.
func (s *Service) Retrieve(ctx context.Context, req RetrieveRequest) ([]domain.Chunk, domain.RetrievalTrace, error) {
	query := strings.TrimSpace(req.Query)
	if query == "" {
		return nil, domain.RetrievalTrace{}, domain.InvalidField("query", "is required")
	}
	if utf8.RuneCountInString(query) > s.limits.MaxMessageChars {
		return nil, domain.RetrievalTrace{}, domain.InvalidField("query", "is too long")
	}
	if req.TopK < 0 || req.TopK > maxRetrieveTopK {
		return nil, domain.RetrievalTrace{}, domain.InvalidField("topK", "must be between 1 and 50")
	}
	if t := req.Threshold; t != nil && !(*t >= 0 && *t <= 1) {
		return nil, domain.RetrievalTrace{}, domain.InvalidField("threshold", "must be between 0 and 1")
	}
	agent, err := s.agents.GetAgentBySlug(ctx, req.WorkspaceID, req.AgentSlug)
	if err != nil {
		return nil, domain.RetrievalTrace{}, err
	}
	q := s.retrievalQuery(&agent, query)
	if req.TopK > 0 {
		q.Limit = req.TopK
	}
	if req.Threshold != nil {
		q.Threshold = *req.Threshold
	}
	var trace domain.RetrievalTrace
	q.Trace = &trace
	chunks, err := s.retriever.Retrieve(ctx, q)
	if err != nil {
		return nil, domain.RetrievalTrace{}, err
	}
	trace.Question = query
	return chunks, trace, nil
}
