package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
)

// chatRequest is the body of POST /api/v2/chat. A missing message is left to
// the engine, which answers with the spec's exact "message is required".
type chatRequest struct {
	Agent     string `json:"agent" validate:"max=64"`
	Message   string `json:"message"`
	Stream    bool   `json:"stream"`
	SessionID string `json:"sessionId" validate:"max=64"`
}

// ChatHandlers serves POST /api/v2/chat and an agent's retrieval.
type ChatHandlers struct {
	engine    Chat
	retrieval Retrieval
	decoder   *wire.Decoder
}

// NewChatHandlers returns the chat handlers.
func NewChatHandlers(engine Chat, retrieval Retrieval, decoder *wire.Decoder) *ChatHandlers {
	return &ChatHandlers{engine: engine, retrieval: retrieval, decoder: decoder}
}

// Chat serves POST /api/v2/chat: one answer, as JSON or (stream) as SSE.
func (h *ChatHandlers) Chat(c *fiber.Ctx) error {
	var body chatRequest
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	key, err := wire.Header(c, wire.HeaderIdempotencyKey)
	if err != nil {
		return err
	}
	p, _ := wire.Principal(c)
	ctx := c.UserContext()
	pending, err := h.engine.Start(ctx, chat.Request{
		Session: conversation.SessionRef{
			Workspace: &p.Workspace, ID: body.SessionID,
			IdentityHeader: strings.Clone(c.Get(wire.HeaderIdentity)), SignatureHeader: strings.Clone(c.Get(wire.HeaderSignature)),
		},
		AgentSlug:      body.Agent,
		Message:        body.Message,
		IdempotencyKey: key,
	})
	if err != nil {
		return err
	}
	if !body.Stream {
		answer, err := pending.Run(ctx, nil)
		if err != nil {
			return err
		}
		return c.JSON(wire.Answer(answer))
	}
	return sse.Answer(c, ctx, pending, false)
}
