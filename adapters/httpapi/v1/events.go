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

// NewEventHandlers returns the live stream handlers over the pod's
// follower (sse.NewFollower over the relay), whose cache of rendered frames
// both APIs share.
func NewEventHandlers(follower *sse.Follower) *EventHandlers {
	return &EventHandlers{follower: follower}
}

// Follow serves GET /api/chat/{sessionId}/events: it streams the
// session's live events, resuming after Last-Event-ID. Errors before the
// stream opens are the usual JSON error bodies.
func (h *EventHandlers) Follow(c *fiber.Ctx) error {
	return h.follower.Follow(c, relay.Request{Session: conversation.SessionRef{
		ID:              strings.Clone(c.Params("sessionId")),
		IdentityHeader:  strings.Clone(c.Get(wire.HeaderIdentity)),
		SignatureHeader: strings.Clone(c.Get(wire.HeaderSignature)),
	}})
}
