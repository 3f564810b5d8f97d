package v2

import (
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
)

// agentCreate is the body of POST /api/v2/agents.
type agentCreate struct {
	Slug               string   `json:"slug" validate:"required,max=64"`
	Name               string   `json:"name" validate:"required,max=200"`
	SystemPrompt       string   `json:"systemPrompt" validate:"max=20000"`
	WelcomeMessage     string   `json:"welcomeMessage" validate:"max=2000"`
	SuggestedQuestions []string `json:"suggestedQuestions" validate:"max=10,dive,max=300"`
	FallbackMessage    string   `json:"fallbackMessage" validate:"max=2000"`
	Published          *bool    `json:"published"`
	Model              string   `json:"model" validate:"max=100"`
	BlockedTopics      []string `json:"blockedTopics" validate:"max=50,dive,max=100"`
	RetrievalTopK      int      `json:"retrievalTopK" validate:"omitempty,min=1,max=20"`
	RetrievalThreshold *float64 `json:"retrievalThreshold" validate:"omitnil,min=0,max=1"`
	PrimaryColor       string   `json:"primaryColor" validate:"max=32"`
	AvatarURL          string   `json:"avatarUrl" validate:"max=2048"`
	AllowedOrigins     []string `json:"allowedOrigins" validate:"max=20,dive,max=300"`
}

// agentUpdate is the body of PATCH /api/v2/agents/{slug}; absent fields stay.
type agentUpdate struct {
	Name               *string   `json:"name" validate:"omitnil,min=1,max=200"`
	SystemPrompt       *string   `json:"systemPrompt" validate:"omitnil,max=20000"`
	WelcomeMessage     *string   `json:"welcomeMessage" validate:"omitnil,max=2000"`
	SuggestedQuestions *[]string `json:"suggestedQuestions" validate:"omitnil,max=10,dive,max=300"`
	FallbackMessage    *string   `json:"fallbackMessage" validate:"omitnil,max=2000"`
	Published          *bool     `json:"published"`
	Model              *string   `json:"model" validate:"omitnil,max=100"`
	BlockedTopics      *[]string `json:"blockedTopics" validate:"omitnil,max=50,dive,max=100"`
	RetrievalTopK      *int      `json:"retrievalTopK" validate:"omitnil,min=1,max=20"`
	RetrievalThreshold *float64  `json:"retrievalThreshold" validate:"omitnil,min=0,max=1"`
	PrimaryColor       *string   `json:"primaryColor" validate:"omitnil,max=32"`
	AvatarURL          *string   `json:"avatarUrl" validate:"omitnil,max=2048"`
	AllowedOrigins     *[]string `json:"allowedOrigins" validate:"omitnil,max=20,dive,max=300"`
}

type agentDTO struct {
	ID                 string   `json:"id"`
	Slug               string   `json:"slug"`
	Name               string   `json:"name"`
	SystemPrompt       string   `json:"systemPrompt"`
	WelcomeMessage     string   `json:"welcomeMessage"`
	SuggestedQuestions []string `json:"suggestedQuestions"`
	FallbackMessage    string   `json:"fallbackMessage"`
	Published          bool     `json:"published"`
	Model              *string  `json:"model"`
	BlockedTopics      []string `json:"blockedTopics"`
	RetrievalTopK      int      `json:"retrievalTopK"`
	RetrievalThreshold float64  `json:"retrievalThreshold"`
	PrimaryColor       string   `json:"primaryColor"`
	AvatarURL          string   `json:"avatarUrl"`
	AllowedOrigins     []string `json:"allowedOrigins"`
	// WidgetURL is where the agent's chat page lives (read-only).
	WidgetURL string `json:"widgetUrl"`
	CreatedAt string `json:"createdAt"`
	UpdatedAt string `json:"updatedAt"`
}

// toAgentDTO maps an agent; publicURL is the service's public base URL,
// which the widget address hangs off.
func toAgentDTO(publicURL string) func(domain.Agent) agentDTO {
	return func(a domain.Agent) agentDTO { return agentDTOOf(a, publicURL) }
}

func agentDTOOf(a domain.Agent, publicURL string) agentDTO {
	questions := a.Config.SuggestedQuestions
	if questions == nil {
		questions = []string{}
	}
	topics := a.Config.BlockedTopics
	if topics == nil {
		topics = []string{}
	}
	origins := a.Config.AllowedOrigins
	if origins == nil {
		origins = []string{}
	}
	return agentDTO{
		ID:                 a.ID,
		Slug:               a.Slug,
		Name:               a.Name,
		SystemPrompt:       a.Config.SystemPrompt,
		WelcomeMessage:     a.Config.WelcomeMessage,
		SuggestedQuestions: questions,
		FallbackMessage:    a.Config.EffectiveFallbackMessage(),
		Published:          a.Config.Published,
		Model:              wire.OptionalString(a.Config.Model),
		BlockedTopics:      topics,
		RetrievalTopK:      a.Config.RetrievalTopK,
		RetrievalThreshold: a.Config.RetrievalThreshold,
		PrimaryColor:       a.Config.EffectivePrimaryColor(),
		AvatarURL:          a.Config.AvatarURL,
		AllowedOrigins:     origins,
		WidgetURL:          publicURL + "/chat/" + a.WidgetAddress(),
		CreatedAt:          wire.Time(a.CreatedAt),
		UpdatedAt:          wire.Time(a.UpdatedAt),
	}
}

// sourceCreate is the body of POST /api/v2/agents/{slug}/sources. The type
// decides which of the other fields are required; the domain checks that.
type sourceCreate struct {
	Type     string `json:"type" validate:"required,oneof=text qa file url website"`
	Name     string `json:"name" validate:"max=300"`
	Content  string `json:"content"`
	Question string `json:"question" validate:"max=2000"`
	Answer   string `json:"answer" validate:"max=20000"`
	URL      string `json:"url" validate:"max=2048"`
	MaxPages int    `json:"maxPages" validate:"min=0"`
	MaxDepth int    `json:"maxDepth" validate:"min=0"`
}

type sourceDTO struct {
	ID           string  `json:"id"`
	Agent        string  `json:"agent"`
	Type         string  `json:"type"`
	Name         string  `json:"name"`
	Content      *string `json:"content,omitempty"`
	Question     *string `json:"question,omitempty"`
	Answer       *string `json:"answer,omitempty"`
	Status       string  `json:"status"`
	StatusReason *string `json:"statusReason"`
	ChunkCount   int     `json:"chunkCount"`
	TokenCount   int     `json:"tokenCount"`
	URL          *string `json:"url,omitempty"`
	Filename     *string `json:"filename,omitempty"`
	MaxPages     *int    `json:"maxPages,omitempty"`
	MaxDepth     *int    `json:"maxDepth,omitempty"`
	PageCount    *int    `json:"pageCount,omitempty"`
	IndexedAt    *string `json:"indexedAt"`
	CreatedAt    string  `json:"createdAt"`
	UpdatedAt    string  `json:"updatedAt"`
}

func toSourceDTO(agentSlug string) func(domain.Source) sourceDTO {
	return func(s domain.Source) sourceDTO {
		dto := sourceDTO{
			ID:           s.ID,
			Agent:        agentSlug,
			Type:         string(s.Type),
			Name:         s.Name,
			Status:       string(s.Status),
			StatusReason: wire.OptionalString(s.StatusReason),
			ChunkCount:   s.ChunkCount,
			TokenCount:   s.TokenCount,
			CreatedAt:    wire.Time(s.CreatedAt),
			UpdatedAt:    wire.Time(s.UpdatedAt),
		}
		if !s.IndexedAt.IsZero() {
			at := wire.Time(s.IndexedAt)
			dto.IndexedAt = &at
		}
		switch s.Type {
		case domain.SourceQA:
			dto.Question, dto.Answer = &s.Question, &s.Answer
		case domain.SourceText:
			dto.Content = &s.Content
		case domain.SourceFile:
			dto.Filename = &s.Filename
		case domain.SourceURL:
			dto.URL, dto.PageCount = &s.URL, &s.PageCount
		case domain.SourceWebsite:
			dto.URL, dto.PageCount, dto.MaxPages, dto.MaxDepth = &s.URL, &s.PageCount, &s.MaxPages, &s.MaxDepth
		}
		return dto
	}
}

type conversationDTO struct {
	ID             string  `json:"id"`
	Agent          string  `json:"agent"`
	Channel        string  `json:"channel"`
	Status         string  `json:"status"`
	LastMessage    string  `json:"lastMessage"`
	MessageCount   int     `json:"messageCount"`
	VerifiedUserID *string `json:"verifiedUserId"`
	// ContactName, ContactEmail and ContactNote are what the visitor gave
	// when asking for a person; null until then.
	ContactName  *string `json:"contactName"`
	ContactEmail *string `json:"contactEmail"`
	ContactNote  *string `json:"contactNote"`
	// AssigneeID is the member who owns the conversation; null when
	// nobody does.
	AssigneeID *string `json:"assigneeId"`
	// HandoffRequestedAt is when the conversation last asked for a person
	// (RFC 3339); null when it never did. It stays after a person takes
	// over or resolves it, and moves to the new request when it asks again.
	HandoffRequestedAt *string `json:"handoffRequestedAt"`
	LastActivityAt     string  `json:"lastActivityAt"`
	CreatedAt          string  `json:"createdAt"`
	// Outcome is how the conversation ended (docs/outcomes.md), as the
	// worker decided it; null while undecided.
	Outcome *string `json:"outcome"`
}

func toConversationDTO(c domain.Conversation) conversationDTO {
	return conversationDTO{
		ID:                 c.ID,
		Agent:              c.AgentSlug,
		Channel:            string(c.Channel),
		Status:             string(c.Status),
		LastMessage:        c.LastMessage,
		MessageCount:       c.MessageCount,
		VerifiedUserID:     wire.OptionalString(c.VerifiedUserID),
		ContactName:        wire.OptionalString(c.ContactName),
		ContactEmail:       wire.OptionalString(c.ContactEmail),
		ContactNote:        wire.OptionalString(c.ContactNote),
		AssigneeID:         wire.OptionalString(c.AssigneeID),
		HandoffRequestedAt: optionalTime(c.HandoffRequestedAt),
		LastActivityAt:     wire.Time(c.LastActivityAt),
		CreatedAt:          wire.Time(c.CreatedAt),
		Outcome:            wire.OptionalString(string(c.Outcome)),
	}
}

// optionalTime is an optional time as the API writes it: null for the zero
// time.
func optionalTime(t time.Time) *string {
	if t.IsZero() {
		return nil
	}
	v := wire.Time(t)
	return &v
}

type conversationWithMessagesDTO struct {
	conversationDTO
	Messages wire.List[messageDTO] `json:"messages"`
}

// messageDTO is a message as v2 shows it to the team: the one message
// shape, with the member who wrote a HUMAN reply or a NOTE from the
// console. Only v2 shows authorId: the widget and v1 serve visitors, who
// have no use for a member's user id.
type messageDTO struct {
	wire.MessageDTO
	AuthorID string `json:"authorId,omitempty"`
}

func toMessageDTO(m domain.Message) messageDTO {
	return messageDTO{MessageDTO: wire.Message(m), AuthorID: m.AuthorID}
}

// ratedAnswerDTO is one item of GET /api/v2/feedback.
type ratedAnswerDTO struct {
	MessageID      string `json:"messageId"`
	ConversationID string `json:"conversationId"`
	Agent          string `json:"agent"`
	Rating         string `json:"rating"`
	Comment        string `json:"comment"`
	Content        string `json:"content"`
	UpdatedAt      string `json:"updatedAt"`
}

func toRatedAnswerDTO(a domain.RatedAnswer) ratedAnswerDTO {
	return ratedAnswerDTO{
		MessageID: a.MessageID, ConversationID: a.ConversationID, Agent: a.AgentSlug,
		Rating: string(a.Feedback.Rating), Comment: a.Feedback.Comment, Content: a.Content,
		UpdatedAt: wire.Time(a.Feedback.UpdatedAt),
	}
}
