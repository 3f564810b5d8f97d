package domain

import (
	"strings"
	"time"
)

// SourceType is the kind of knowledge a source holds.
type SourceType string

// Source types available now; files, URLs and websites come with the knowledge pipeline.
const (
	SourceText SourceType = "text"
	SourceQA   SourceType = "qa"
)

// SourceStatus is where a source is in indexing.
type SourceStatus string

// Source statuses.
const (
	SourcePending  SourceStatus = "PENDING"
	SourceIndexing SourceStatus = "INDEXING"
	SourceReady    SourceStatus = "READY"
	SourceFailed   SourceStatus = "FAILED"
)

// Source is one piece of an agent's knowledge.
type Source struct {
	ID          string
	WorkspaceID string
	AgentID     string
	Type        SourceType
	// Name is shown in citations as documentName. For Q&A it defaults to the question.
	Name     string
	Content  string
	Question string
	Answer   string
	Status   SourceStatus
	// StatusReason explains a FAILED status.
	StatusReason string
	ChunkCount   int
	TokenCount   int
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Limits on sources.
const (
	MaxSourceNameLength    = 300
	MaxSourceContentLength = 500_000
	MaxQuestionLength      = 2000
	MaxAnswerLength        = 20000
)

// Validate checks and normalises a source before it is stored.
func (s *Source) Validate() error {
	s.Name = strings.TrimSpace(s.Name)
	switch s.Type {
	case SourceText:
		if s.Name == "" {
			return InvalidField("name", "is required")
		}
		if strings.TrimSpace(s.Content) == "" {
			return InvalidField("content", "is required")
		}
		if len(s.Content) > MaxSourceContentLength {
			return InvalidField("content", "must be at most 500000 bytes")
		}
		s.Question, s.Answer = "", ""
	case SourceQA:
		s.Question = strings.TrimSpace(s.Question)
		s.Answer = strings.TrimSpace(s.Answer)
		if s.Question == "" {
			return InvalidField("question", "is required")
		}
		if s.Answer == "" {
			return InvalidField("answer", "is required")
		}
		if len([]rune(s.Question)) > MaxQuestionLength {
			return InvalidField("question", "must be at most 2000 characters")
		}
		if len([]rune(s.Answer)) > MaxAnswerLength {
			return InvalidField("answer", "must be at most 20000 characters")
		}
		if s.Name == "" {
			s.Name = s.Question
		}
		s.Content = ""
	case "":
		return InvalidField("type", "is required")
	default:
		return InvalidField("type", "must be one of text, qa")
	}
	if len([]rune(s.Name)) > MaxSourceNameLength {
		return InvalidField("name", "must be at most 300 characters")
	}
	return nil
}
