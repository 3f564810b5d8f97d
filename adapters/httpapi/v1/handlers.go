// Package v1 serves the stable v1 API: sessions, and widget-compatible chat
// messages whose capability is the session id. Its handlers are listed,
// with their paths, in adapters/httpapi/routes.go.
package v1

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Handlers serves POST /api/v1/sessions and the session's message,
// handoff and poll routes under /api/chat.
type Handlers struct {
	sessions Sessions
	engine   Chat
	handoff  Handoffs
	decoder  *wire.Decoder
	clock    ports.Clock
}

// NewHandlers returns the v1 handlers.
func NewHandlers(sessions Sessions, engine Chat, handoffs Handoffs, decoder *wire.Decoder, clock ports.Clock) *Handlers {
	return &Handlers{sessions: sessions, engine: engine, handoff: handoffs, decoder: decoder, clock: clock}
}

type sessionCreate struct {
	Slug string `json:"slug" validate:"max=64"`
}

type sessionDTO struct {
	SessionID string `json:"sessionId"`
}

// CreateSession serves POST /api/v1/sessions (API key).
func (h *Handlers) CreateSession(c *fiber.Ctx) error {
	var body sessionCreate
	if err := h.decoder.Decode(c, &body, true); err != nil {
		return err
	}
	p, _ := wire.Principal(c)
	identity, err := domain.VerifyIdentity(&p.Workspace, strings.Clone(c.Get(wire.HeaderIdentity)), strings.Clone(c.Get(wire.HeaderSignature)), h.clock.Now())
	if err != nil {
		return err
	}
	conv, err := h.sessions.StartSession(c.UserContext(), &p.Workspace, body.Slug, identity)
	if err != nil {
		return err
	}
	return c.JSON(sessionDTO{SessionID: conv.ID})
}

// messageRequest is the body of POST /api/chat/{sessionId}/message. With
// stream set the answer comes as SSE: the stored USER message as a message
// event, then token and done (or error) as on POST /api/v2/chat.
type messageRequest struct {
	Message string `json:"message"`
	Stream  bool   `json:"stream"`
}

// messageResponse is the answer of POST /api/chat/{sessionId}/message:
// the messages this call created (the USER message, then the reply when
// the agent answered) and whether a handoff is offered.
type messageResponse struct {
	Messages     []wire.MessageDTO `json:"messages"`
	OfferHandoff bool              `json:"offerHandoff"`
}

// Message serves POST /api/chat/{sessionId}/message: one answer, as JSON
// or (stream) as SSE.
func (h *Handlers) Message(c *fiber.Ctx) error {
	var body messageRequest
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	key, err := wire.Header(c, wire.HeaderIdempotencyKey)
	if err != nil {
		return err
	}
	ctx := c.UserContext()
	pending, err := h.engine.Start(ctx, chat.Request{
		Session:        sessionOf(c),
		Message:        body.Message,
		IdempotencyKey: key,
	})
	if err != nil {
		return err
	}
	if body.Stream {
		return sse.Answer(c, ctx, pending, true)
	}
	answer, err := pending.Run(ctx, nil)
	if err != nil {
		return err
	}
	out := messageResponse{Messages: []wire.MessageDTO{wire.Message(answer.UserMessage)}, OfferHandoff: answer.OfferHandoff}
	if answer.Reply.ID != "" {
		out.Messages = append(out.Messages, wire.Message(answer.Reply))
	}
	return c.JSON(out)
}
