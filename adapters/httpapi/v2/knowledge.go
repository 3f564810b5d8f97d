package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/domain"
)

// retrieveRequest is the body of POST /api/v2/agents/{slug}/retrieve.
type retrieveRequest struct {
	Query     string   `json:"query"`
	TopK      int      `json:"topK" validate:"omitempty,min=1,max=50"`
	Threshold *float64 `json:"threshold" validate:"omitnil,min=0,max=1"`
}

type retrievedChunkDTO struct {
	ChunkID      string  `json:"chunkId"`
	SourceID     string  `json:"sourceId"`
	SourceType   string  `json:"sourceType"`
	DocumentName string  `json:"documentName"`
	URL          *string `json:"url"`
	Question     *string `json:"question"`
	// Questions were written for the chunk at index time
	// (CONCIERGE_INDEX_QUESTIONS); empty when none.
	Questions []string `json:"questions"`
	Text      string   `json:"text"`
	Score     float64  `json:"score"`
}

type traceCandidateDTO struct {
	ChunkID      string  `json:"chunkId"`
	SourceID     string  `json:"sourceId"`
	DocumentName string  `json:"documentName"`
	KeywordRank  *int    `json:"keywordRank"`
	KeywordScore float64 `json:"keywordScore"`
	VectorRank   *int    `json:"vectorRank"`
	VectorScore  float64 `json:"vectorScore"`
	Score        float64 `json:"score"`
	// Relevance, Features and Missing come from the reranker; absent
	// (null) while PostgreSQL answers for an index that is loading.
	Relevance *float64           `json:"relevance"`
	Features  map[string]float64 `json:"features"`
	Missing   []string           `json:"missing"`
	// MatchedQuestion: see domain.TraceCandidate; null when none.
	MatchedQuestion *string `json:"matchedQuestion"`
	Kept            bool    `json:"kept"`
	Reason          string  `json:"reason"`
}

type focusTermDTO struct {
	Word        string  `json:"word"`
	Weight      float64 `json:"weight"`
	InKnowledge bool    `json:"inKnowledge"`
	Typo        bool    `json:"typo"`
}

type traceDTO struct {
	Question         string         `json:"question"`
	Query            string         `json:"query"`
	QueryNote        *string        `json:"queryNote"`
	Method           string         `json:"method"`
	Note             *string        `json:"note"`
	Embedder         *string        `json:"embedder"`
	KnowledgeVersion int64          `json:"knowledgeVersion"`
	TopK             int            `json:"topK"`
	Threshold        float64        `json:"threshold"`
	Focus            []focusTermDTO `json:"focus"`
	Missing          []string       `json:"missing"`
	Answerability    *float64       `json:"answerability"`
	// AnswerFeatures are what answerability was computed from; null
	// without a reranker, and in traces stored before they were kept.
	AnswerFeatures map[string]float64  `json:"answerFeatures"`
	Verdict        *string             `json:"verdict"`
	Candidates     []traceCandidateDTO `json:"candidates"`
}

type retrieveResponse struct {
	Query   string              `json:"query"`
	Results []retrievedChunkDTO `json:"results"`
	Trace   traceDTO            `json:"trace"`
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func rank(r int) *int {
	if r == 0 {
		return nil
	}
	return &r
}

func toTraceDTO(t domain.RetrievalTrace) traceDTO {
	dto := traceDTO{Question: t.Question, Query: t.Query, QueryNote: wire.OptionalString(t.QueryNote), Method: t.Method, Note: wire.OptionalString(t.Note), Embedder: wire.OptionalString(t.Embedder),
		KnowledgeVersion: t.KnowledgeVersion, TopK: t.TopK, Threshold: t.Threshold,
		Focus: make([]focusTermDTO, len(t.Focus)), Missing: nonNil(t.Missing), Verdict: wire.OptionalString(t.Verdict),
		Candidates: make([]traceCandidateDTO, len(t.Candidates))}
	for i, f := range t.Focus {
		dto.Focus[i] = focusTermDTO(f)
	}
	reranked := t.Verdict != ""
	if reranked {
		dto.Answerability = &t.Answerability
		if len(t.AnswerFeatures) > 0 {
			dto.AnswerFeatures = make(map[string]float64, len(t.AnswerFeatures))
			for k, v := range t.AnswerFeatures {
				if k < len(t.AnswerFeatureNames) {
					dto.AnswerFeatures[t.AnswerFeatureNames[k]] = v
				}
			}
		}
	}
	for i, c := range t.Candidates {
		cd := traceCandidateDTO{ChunkID: c.ChunkID, SourceID: c.SourceID, DocumentName: c.DocumentName,
			KeywordRank: rank(c.KeywordRank), KeywordScore: c.KeywordScore, VectorRank: rank(c.VectorRank), VectorScore: c.VectorScore,
			Score: c.Score, Missing: nonNil(c.Missing), MatchedQuestion: wire.OptionalString(c.MatchedQuestion), Kept: c.Kept, Reason: c.Reason}
		if reranked {
			relevance := c.Relevance
			cd.Relevance = &relevance
			cd.Features = make(map[string]float64, len(c.Features))
			for k, v := range c.Features {
				if k < len(t.FeatureNames) {
					cd.Features[t.FeatureNames[k]] = v
				}
			}
		}
		dto.Candidates[i] = cd
	}
	return dto
}

// Retrieve serves POST /api/v2/agents/{slug}/retrieve: the agent's
// retrieval for a query, for admins tuning top-k, threshold and sources.
func (h *ChatHandlers) Retrieve(c *fiber.Ctx) error {
	var body retrieveRequest
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	p, _ := wire.Principal(c)
	chunks, trace, err := h.retrieval.Retrieve(c.UserContext(), chat.RetrieveRequest{
		WorkspaceID: p.Workspace.ID, AgentSlug: strings.Clone(c.Params("slug")),
		Query: body.Query, TopK: body.TopK, Threshold: body.Threshold,
	})
	if err != nil {
		return err
	}
	out := retrieveResponse{Query: trace.Query, Results: make([]retrievedChunkDTO, len(chunks)), Trace: toTraceDTO(trace)}
	for i, ch := range chunks {
		out.Results[i] = retrievedChunkDTO{ChunkID: ch.ID, SourceID: ch.SourceID, SourceType: string(ch.SourceType),
			DocumentName: ch.DocumentName, URL: wire.OptionalString(ch.URL), Question: wire.OptionalString(ch.Question),
			Questions: nonNil(ch.Questions), Text: ch.Text, Score: ch.Score}
	}
	return c.JSON(out)
}

// MessageTrace serves GET /api/v2/conversations/{id}/messages/{messageId}/trace.
func (h *ConversationHandlers) MessageTrace(c *fiber.Ctx) error {
	t, err := h.conversations.MessageTrace(c.UserContext(), workspaceID(c), strings.Clone(c.Params("id")), strings.Clone(c.Params("messageId")))
	if err != nil {
		return err
	}
	return c.JSON(toTraceDTO(t))
}
