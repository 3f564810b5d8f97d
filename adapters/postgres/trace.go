package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
)

// traceJSON is the stored shape of domain.RetrievalTrace, spelled out so a
// renamed domain field never silently changes stored traces.
type traceJSON struct {
	Question         string      `json:"question,omitempty"`
	Query            string      `json:"query"`
	QueryNote        string      `json:"queryNote,omitempty"`
	Method           string      `json:"method"`
	Note             string      `json:"note,omitempty"`
	Embedder         string      `json:"embedder,omitempty"`
	KnowledgeVersion int64       `json:"knowledgeVersion"`
	TopK             int         `json:"topK"`
	Threshold        float64     `json:"threshold"`
	Focus            []focusJSON `json:"focus,omitempty"`
	Missing          []string    `json:"missing,omitempty"`
	Answerability    float64     `json:"answerability,omitempty"`
	Verdict          string      `json:"verdict,omitempty"`
	// AnswerFeatureNames and AnswerFeatures: traces stored before them
	// have none.
	AnswerFeatureNames []string        `json:"answerFeatureNames,omitempty"`
	AnswerFeatures     []float64       `json:"answerFeatures,omitempty"`
	FeatureNames       []string        `json:"featureNames,omitempty"`
	Candidates         []candidateJSON `json:"candidates"`
}

type focusJSON struct {
	Word        string  `json:"word"`
	Weight      float64 `json:"weight"`
	InKnowledge bool    `json:"inKnowledge"`
	Typo        bool    `json:"typo,omitempty"`
}

type candidateJSON struct {
	ChunkID      string    `json:"chunkId"`
	SourceID     string    `json:"sourceId"`
	DocumentName string    `json:"documentName"`
	KeywordRank  int       `json:"keywordRank,omitempty"`
	KeywordScore float64   `json:"keywordScore,omitempty"`
	VectorRank   int       `json:"vectorRank,omitempty"`
	VectorScore  float64   `json:"vectorScore,omitempty"`
	Score        float64   `json:"score"`
	Relevance    float64   `json:"relevance,omitempty"`
	Features     []float64 `json:"features,omitempty"`
	Missing      []string  `json:"missing,omitempty"`
	// MatchedQuestion: traces stored before it have none.
	MatchedQuestion string `json:"matchedQuestion,omitempty"`
	Kept            bool   `json:"kept"`
	Reason          string `json:"reason"`
}

// encodeTrace writes t as traceJSON, without reflection and with its
// scores to 6 significant digits, which is more than anyone reading a trace
// needs: every answer stores one, and encoding/json's shortest float
// formatting of its 60 scores cost more Go time than the rest of storing
// the answer (18.5 µs against 6.7 µs here, BenchmarkEncodeTrace).
// TestEncodeTrace holds it to traceJSON. Scores that are not finite (never
// produced) are written as 0, where encoding/json would fail the answer.
func encodeTrace(t *domain.RetrievalTrace) ([]byte, error) {
	if t == nil {
		return nil, nil
	}
	b := make([]byte, 0, 512+320*len(t.Candidates))
	b = append(b, '{')
	if t.Question != "" {
		b = append(b, `"question":`...)
		b = appendJSONString(b, t.Question)
		b = append(b, ',')
	}
	b = append(b, `"query":`...)
	b = appendJSONString(b, t.Query)
	if t.QueryNote != "" {
		b = append(b, `,"queryNote":`...)
		b = appendJSONString(b, t.QueryNote)
	}
	b = append(b, `,"method":`...)
	b = appendJSONString(b, t.Method)
	if t.Note != "" {
		b = append(b, `,"note":`...)
		b = appendJSONString(b, t.Note)
	}
	if t.Embedder != "" {
		b = append(b, `,"embedder":`...)
		b = appendJSONString(b, t.Embedder)
	}
	b = append(b, `,"knowledgeVersion":`...)
	b = strconv.AppendInt(b, t.KnowledgeVersion, 10)
	b = append(b, `,"topK":`...)
	b = strconv.AppendInt(b, int64(t.TopK), 10)
	b = append(b, `,"threshold":`...)
	b = appendJSONFloat(b, t.Threshold)
	if len(t.Focus) > 0 {
		b = append(b, `,"focus":[`...)
		for i, f := range t.Focus {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"word":`...)
			b = appendJSONString(b, f.Word)
			b = append(b, `,"weight":`...)
			b = appendJSONFloat(b, f.Weight)
			b = append(b, `,"inKnowledge":`...)
			b = strconv.AppendBool(b, f.InKnowledge)
			if f.Typo {
				b = append(b, `,"typo":true`...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = appendJSONStrings(b, "missing", t.Missing)
	if t.Answerability != 0 {
		b = append(b, `,"answerability":`...)
		b = appendJSONFloat(b, t.Answerability)
	}
	if t.Verdict != "" {
		b = append(b, `,"verdict":`...)
		b = appendJSONString(b, t.Verdict)
	}
	b = appendJSONStrings(b, "answerFeatureNames", t.AnswerFeatureNames)
	b = appendJSONFloats(b, "answerFeatures", t.AnswerFeatures)
	b = appendJSONStrings(b, "featureNames", t.FeatureNames)
	b = append(b, `,"candidates":[`...)
	for i, c := range t.Candidates {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"chunkId":`...)
		b = appendJSONString(b, c.ChunkID)
		b = append(b, `,"sourceId":`...)
		b = appendJSONString(b, c.SourceID)
		b = append(b, `,"documentName":`...)
		b = appendJSONString(b, c.DocumentName)
		if c.KeywordRank != 0 {
			b = append(b, `,"keywordRank":`...)
			b = strconv.AppendInt(b, int64(c.KeywordRank), 10)
		}
		if c.KeywordScore != 0 {
			b = append(b, `,"keywordScore":`...)
			b = appendJSONFloat(b, c.KeywordScore)
		}
		if c.VectorRank != 0 {
			b = append(b, `,"vectorRank":`...)
			b = strconv.AppendInt(b, int64(c.VectorRank), 10)
		}
		if c.VectorScore != 0 {
			b = append(b, `,"vectorScore":`...)
			b = appendJSONFloat(b, c.VectorScore)
		}
		b = append(b, `,"score":`...)
		b = appendJSONFloat(b, c.Score)
		if c.Relevance != 0 {
			b = append(b, `,"relevance":`...)
			b = appendJSONFloat(b, c.Relevance)
		}
		b = appendJSONFloats(b, "features", c.Features)
		b = appendJSONStrings(b, "missing", c.Missing)
		if c.MatchedQuestion != "" {
			b = append(b, `,"matchedQuestion":`...)
			b = appendJSONString(b, c.MatchedQuestion)
		}
		b = append(b, `,"kept":`...)
		b = strconv.AppendBool(b, c.Kept)
		b = append(b, `,"reason":`...)
		b = appendJSONString(b, c.Reason)
		b = append(b, '}')
	}
	return append(b, "]}"...), nil
}

// appendJSONString appends s as a JSON string: as it is when it is plain
// printable ASCII without quotes or backslashes (ids, methods, most names),
// else as encoding/json escapes it.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			quoted, _ := json.Marshal(s) // a string always marshals
			return append(b, quoted...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendJSONStrings appends `,"name":[...]` for a non-empty list.
func appendJSONStrings(b []byte, name string, list []string) []byte {
	if len(list) == 0 {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":[`...)
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, s)
	}
	return append(b, ']')
}

// appendJSONFloats appends a field holding list, as appendJSONFloat writes
// each number, and nothing when list is empty.
func appendJSONFloats(b []byte, name string, list []float64) []byte {
	if len(list) == 0 {
		return b
	}
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":[`...)
	for i, f := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONFloat(b, f)
	}
	return append(b, ']')
}

// appendJSONFloat appends f as a JSON number of 6 significant digits (an
// exponent when it is very large or small); not finite values as 0.
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	return strconv.AppendFloat(b, f, 'g', 6, 64)
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
	// Traces stored before questions were kept searched the question as
	// asked.
	if j.Question == "" {
		j.Question = j.Query
	}
	t := domain.RetrievalTrace{Question: j.Question, Query: j.Query, QueryNote: j.QueryNote, Method: j.Method, Note: j.Note, Embedder: j.Embedder, KnowledgeVersion: j.KnowledgeVersion,
		TopK: j.TopK, Threshold: j.Threshold, Missing: j.Missing, Answerability: j.Answerability, Verdict: j.Verdict,
		AnswerFeatureNames: j.AnswerFeatureNames, AnswerFeatures: j.AnswerFeatures,
		FeatureNames: j.FeatureNames, Candidates: make([]domain.TraceCandidate, len(j.Candidates))}
	for _, f := range j.Focus {
		t.Focus = append(t.Focus, domain.FocusTerm(f))
	}
	for i, c := range j.Candidates {
		t.Candidates[i] = domain.TraceCandidate(c)
	}
	return t, nil
}
