// Package v1 serves the stable v1 API: sessions, and widget-compatible chat
// messages whose capability is the session id.
package v1

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/ports"
)

// Handlers serves /api/v1.
type Handlers struct {
	conversations *conversation.Service
	engine        *chat.Service
	handoff       *handoff.Service
	decoder       *wire.Decoder
	clock         ports.Clock
}

// NewHandlers returns the v1 handlers.
func NewHandlers(conversations *conversation.Service, engine *chat.Service, handoffs *handoff.Service, decoder *wire.Decoder, clock ports.Clock) *Handlers {
	return &Handlers{conversations: conversations, engine: engine, handoff: handoffs, decoder: decoder, clock: clock}
}

// RegisterKeyed adds the v1 routes that need an API key to r (already authenticated).
func (h *Handlers) RegisterKeyed(r fiber.Router) {
	r.Post("/sessions", h.createSession)
}

type sessionCreate struct {
	Slug string `json:"slug" validate:"max=64"`
}

type sessionDTO struct {
	SessionID string `json:"sessionId"`
}

func (h *Handlers) createSession(c *fiber.Ctx) error {
	var body sessionCreate
	if err := h.decoder.Decode(c, &body, true); err != nil {
		return err
	}
	p, _ := wire.Principal(c)
	identity, err := domain.VerifyIdentity(&p.Workspace, strings.Clone(c.Get(wire.HeaderIdentity)), strings.Clone(c.Get(wire.HeaderSignature)), h.clock.Now())
	if err != nil {
		return err
	}
	conv, err := h.conversations.StartSession(c.UserContext(), &p.Workspace, body.Slug, identity)
	if err != nil {
		return err
	}
	return c.JSON(sessionDTO{SessionID: conv.ID})
}

// RegisterSession adds the v1 routes whose capability is the session id.
func (h *Handlers) RegisterSession(r fiber.Router) {
	r.Post("/:sessionId/message", h.message)
	h.registerHandoff(r)
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

func (h *Handlers) message(c *fiber.Ctx) error {
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
