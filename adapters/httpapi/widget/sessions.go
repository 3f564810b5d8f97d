package widget

import (
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	corewidget "github.com/conciergehq/concierge/core/widget"
)

// Availability says whether a person can answer a handoff now
// (availability.Service).
type Availability interface {
	// HumanAvailable reports it for a workspace. Returns
	// domain.ErrNotFound for an unknown workspace.
	HumanAvailable(ctx context.Context, workspaceID string) (bool, error)
	// ForSession reports it for a session's workspace. Returns
	// domain.ErrNotFound for an unknown session.
	ForSession(ctx context.Context, sessionID string) (bool, error)
}

// sessionCreate is the body of POST /api/widget/{slug}/sessions: {} or
// none. The agent is the address's; the identity comes in headers.
type sessionCreate struct{}

// sessionCreated is the new session, whose id is the widget's capability,
// and whether a person is available now (the widget asks again when its
// handoff form opens: GET /api/chat/{sessionId}/availability).
type sessionCreated struct {
	SessionID      string `json:"sessionId"`
	Status         string `json:"status"`
	HumanAvailable bool   `json:"humanAvailable"`
}

// availabilityDTO is the body of GET /api/chat/{sessionId}/availability.
type availabilityDTO struct {
	HumanAvailable bool `json:"humanAvailable"`
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
	// The session exists now: failing the call over a hint would make the
	// widget open another one. When availability cannot be read, a person
	// is presumed available (the usual handoff form); the widget asks
	// again when the form opens.
	available, err := h.availability.HumanAvailable(c.UserContext(), conv.WorkspaceID)
	if err != nil {
		available = true
	}
	return c.Status(fiber.StatusCreated).JSON(sessionCreated{SessionID: conv.ID, Status: string(conv.Status), HumanAvailable: available})
}

// Availability serves GET /api/chat/{sessionId}/availability: whether a
// person of the session's workspace is available, for the handoff form.
// The session id is the capability, as for the other /api/chat calls; the
// answer says nothing about the session itself.
func (h *Handlers) Availability(c *fiber.Ctx) error {
	available, err := h.availability.ForSession(c.UserContext(), strings.Clone(c.Params("sessionId")))
	if err != nil {
		return err
	}
	return c.JSON(availabilityDTO{HumanAvailable: available})
}
