package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/handoff"
)

// HandoffHandlers serves the endpoints a helpdesk or an inbox uses to take
// part in conversations: a person's replies and state changes.
type HandoffHandlers struct {
	handoff HumanReplies
	decoder *wire.Decoder
}

// NewHandoffHandlers returns the handoff handlers.
func NewHandoffHandlers(svc HumanReplies, decoder *wire.Decoder) *HandoffHandlers {
	return &HandoffHandlers{handoff: svc, decoder: decoder}
}

// humanMessageCreate is the body of POST /api/v2/conversations/{id}/messages.
// The use case checks the fields, so each gets the documented message.
type humanMessageCreate struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	AuthorName string `json:"authorName"`
}

// PostMessage serves POST /api/v2/conversations/{id}/messages: a person's
// reply (role HUMAN) or an internal note (role NOTE). An API key is no
// member, so what it writes has no authorId; authorName says who wrote it.
func (h *HandoffHandlers) PostMessage(c *fiber.Ctx) error {
	var body humanMessageCreate
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	p, _ := wire.Principal(c)
	msg, err := h.handoff.PostHumanMessage(c.UserContext(), &p.Workspace, strings.Clone(c.Params("id")), handoff.HumanMessage{
		Role: body.Role, Content: body.Content, AuthorName: body.AuthorName,
	})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(toMessageDTO(msg))
}

// statusChange is the body of POST /api/v2/conversations/{id}/status.
type statusChange struct {
	Status string `json:"status"`
}

// SetStatus serves POST /api/v2/conversations/{id}/status.
func (h *HandoffHandlers) SetStatus(c *fiber.Ctx) error {
	var body statusChange
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	p, _ := wire.Principal(c)
	conv, err := h.handoff.SetStatus(c.UserContext(), &p.Workspace, strings.Clone(c.Params("id")), domain.ConversationStatus(body.Status))
	if err != nil {
		return err
	}
	return c.JSON(toConversationDTO(conv))
}
