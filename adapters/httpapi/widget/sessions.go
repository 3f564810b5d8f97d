package widget

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	corewidget "github.com/conciergehq/concierge/core/widget"
)

// RegisterAPI adds POST /:slug/sessions to r (the /api/widget group). It
// needs no key and no plan: limit, the per-IP rate limit of widget
// sessions, is what stands between it and a flood of conversations.
func (h *Handlers) RegisterAPI(r fiber.Router, limit fiber.Handler) {
	r.Post("/:slug/sessions", limit, h.createSession)
}

// sessionCreate is the body of POST /api/widget/{slug}/sessions: {} or
// none. The agent is the address's; the identity comes in headers.
type sessionCreate struct{}

// sessionCreated is the new session, whose id is the widget's capability.
type sessionCreated struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
}

func (h *Handlers) createSession(c *fiber.Ctx) error {
	var body sessionCreate
	if err := h.decoder.Decode(c, &body, true); err != nil {
		return err
	}
	conv, err := h.widgets.StartSession(c.UserContext(), corewidget.SessionRequest{
		Address: strings.Clone(c.Params("slug")),
		Session: conversation.SessionRef{IdentityHeader: strings.Clone(c.Get(wire.HeaderIdentity)), SignatureHeader: strings.Clone(c.Get(wire.HeaderSignature))},
	})
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusCreated).JSON(sessionCreated{SessionID: conv.ID, Status: string(conv.Status)})
}
