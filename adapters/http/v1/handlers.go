// Package v1 serves the stable v1 API: sessions (and, with the answer engine,
// widget-compatible chat messages).
package v1

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/http/wire"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/workspace"
	"github.com/conciergehq/concierge/ports"
)

// Identity verification headers (PRODUCT.md, "Identity verification").
const (
	HeaderIdentity  = "X-Service-Identity"
	HeaderSignature = "X-Service-Signature"
)

// Handlers serves /api/v1.
type Handlers struct {
	conversations *conversation.Service
	decoder       *wire.Decoder
	clock         ports.Clock
}

// NewHandlers returns the v1 handlers.
func NewHandlers(conversations *conversation.Service, decoder *wire.Decoder, clock ports.Clock) *Handlers {
	return &Handlers{conversations: conversations, decoder: decoder, clock: clock}
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
	identity, err := workspace.VerifyIdentity(&p.Workspace, strings.Clone(c.Get(HeaderIdentity)), strings.Clone(c.Get(HeaderSignature)), h.clock.Now())
	if err != nil {
		return err
	}
	conv, err := h.conversations.StartSession(c.UserContext(), &p.Workspace, body.Slug, identity)
	if err != nil {
		return err
	}
	return c.JSON(sessionDTO{SessionID: conv.ID})
}
