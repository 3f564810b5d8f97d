package v1

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/relay"
)

// EventHandlers serves the widget's live stream of a session.
type EventHandlers struct {
	follower *sse.Follower
}

// NewEventHandlers returns the live stream handlers.
func NewEventHandlers(follower *sse.Follower) *EventHandlers {
	return &EventHandlers{follower: follower}
}

// RegisterSession adds GET /:sessionId/events to r, whose capability is
// the session id (no key; rate-limited per client IP by r's middleware).
func (h *EventHandlers) RegisterSession(r fiber.Router) {
	r.Get("/:sessionId/events", h.events)
}

// events streams the session's live events, resuming after Last-Event-ID.
// Errors before the stream opens are the usual JSON error bodies.
func (h *EventHandlers) events(c *fiber.Ctx) error {
	return h.follower.Follow(c, relay.Request{Session: conversation.SessionRef{
		ID:              strings.Clone(c.Params("sessionId")),
		IdentityHeader:  strings.Clone(c.Get(wire.HeaderIdentity)),
		SignatureHeader: strings.Clone(c.Get(wire.HeaderSignature)),
	}})
}
