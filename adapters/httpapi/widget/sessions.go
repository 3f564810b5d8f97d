package widget

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	corewidget "github.com/conciergehq/concierge/core/widget"
)

// sessionCreate is the body of POST /api/widget/{slug}/sessions: {} or
// none. The agent is the address's; the identity comes in headers.
type sessionCreate struct{}

// sessionCreated is the new session, whose id is the widget's capability.
type sessionCreated struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
}

// CreateSession serves POST /api/widget/{slug}/sessions. It needs no key
// and no plan: the per-IP rate limit of widget sessions in front of it is
// what stands between it and a flood of conversations.
func (h *Handlers) CreateSession(c *fiber.Ctx) error {
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
