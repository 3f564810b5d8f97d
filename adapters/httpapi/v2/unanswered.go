package v2

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/unanswered"
)

// UnansweredTopics are the use cases of /api/v2/agents/{slug}/unanswered-topics.
type UnansweredTopics interface {
	// List returns domain.ErrNotFound for an unknown agent and a
	// ValidationError for a bad order, status or limit.
	List(ctx context.Context, workspaceID string, r unanswered.ListRequest) (domain.TopicPage, error)
	// Get returns domain.ErrNotFound for an unknown agent or topic.
	Get(ctx context.Context, workspaceID, slug, topicID string) (domain.UnansweredTopic, error)
	// Answer returns domain.ErrNotFound for an unknown agent or topic and
	// a ValidationError for a bad question or answer.
	Answer(ctx context.Context, workspaceID, slug, topicID string, a domain.TopicAnswer) (domain.UnansweredTopic, domain.Source, error)
}

// UnansweredHandlers serve an agent's unanswered topics.
type UnansweredHandlers struct {
	topics  UnansweredTopics
	decoder *wire.Decoder
}

// NewUnansweredHandlers returns the unanswered topic handlers.
func NewUnansweredHandlers(topics UnansweredTopics, decoder *wire.Decoder) *UnansweredHandlers {
	return &UnansweredHandlers{topics: topics, decoder: decoder}
}

type unansweredQuestionDTO struct {
	ConversationID string `json:"conversationId"`
	MessageID      string `json:"messageId"`
	Question       string `json:"question"`
	Reason         string `json:"reason"`
	AskedAt        string `json:"askedAt"`
}

type unansweredTopicDTO struct {
	ID          string                  `json:"id"`
	Agent       string                  `json:"agent"`
	Label       string                  `json:"label"`
	Count       int                     `json:"count"`
	Reasons     map[string]int          `json:"reasons"`
	FirstSeenAt string                  `json:"firstSeenAt"`
	LastSeenAt  string                  `json:"lastSeenAt"`
	Status      string                  `json:"status"`
	SourceID    *string                 `json:"sourceId"`
	AddressedAt *string                 `json:"addressedAt"`
	Examples    []unansweredQuestionDTO `json:"examples,omitempty"`
}

func toTopicDTO(slug string) func(domain.UnansweredTopic) unansweredTopicDTO {
	return func(t domain.UnansweredTopic) unansweredTopicDTO {
		d := unansweredTopicDTO{ID: t.ID, Agent: slug, Label: t.Label, Count: t.Count, Reasons: map[string]int{},
			FirstSeenAt: wire.Time(t.FirstSeenAt), LastSeenAt: wire.Time(t.LastSeenAt), Status: string(t.Status),
			SourceID: wire.OptionalString(t.SourceID)}
		for _, r := range domain.UnansweredReasons {
			d.Reasons[string(r)] = t.Reasons[r]
		}
		if !t.AddressedAt.IsZero() {
			at := wire.Time(t.AddressedAt)
			d.AddressedAt = &at
		}
		for _, q := range t.Examples {
			d.Examples = append(d.Examples, unansweredQuestionDTO{ConversationID: q.ConversationID, MessageID: q.MessageID,
				Question: q.Text, Reason: string(q.Reason), AskedAt: wire.Time(q.AskedAt)})
		}
		return d
	}
}

type topicAnswerBody struct {
	Question string `json:"question"`
	Answer   string `json:"answer"`
}

type topicAnswerDTO struct {
	Topic  unansweredTopicDTO `json:"topic"`
	Source sourceDTO          `json:"source"`
}

// List serves GET /api/v2/agents/{slug}/unanswered-topics.
func (h *UnansweredHandlers) List(c *fiber.Ctx) error {
	slug := strings.Clone(c.Params("slug"))
	req, scope, err := wire.TopicListRequest(c, slug)
	if err != nil {
		return err
	}
	page, err := h.topics.List(c.UserContext(), workspaceID(c), req)
	if err != nil {
		return err
	}
	return c.JSON(wire.NewList(wire.TopicPage(req.Order, page), scope, toTopicDTO(slug)))
}

// Get serves GET /api/v2/agents/{slug}/unanswered-topics/{id}.
func (h *UnansweredHandlers) Get(c *fiber.Ctx) error {
	slug := strings.Clone(c.Params("slug"))
	t, err := h.topics.Get(c.UserContext(), workspaceID(c), slug, strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.JSON(toTopicDTO(slug)(t))
}

// Answer serves POST /api/v2/agents/{slug}/unanswered-topics/{id}/answer:
// the answer becomes a Q&A source of the agent and the topic is addressed.
func (h *UnansweredHandlers) Answer(c *fiber.Ctx) error {
	var body topicAnswerBody
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	slug := strings.Clone(c.Params("slug"))
	t, src, err := h.topics.Answer(c.UserContext(), workspaceID(c), slug, strings.Clone(c.Params("id")),
		domain.TopicAnswer{Question: body.Question, Answer: body.Answer})
	if err != nil {
		return err
	}
	c.Location("/api/v2/agents/" + slug + "/sources/" + src.ID)
	return c.Status(fiber.StatusCreated).JSON(topicAnswerDTO{Topic: toTopicDTO(slug)(t), Source: toSourceDTO(slug)(src)})
}
