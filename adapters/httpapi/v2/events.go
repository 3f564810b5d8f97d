package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/relay"
)

// EventHandlers serves GET /api/v2/conversations/{id}/events.
type EventHandlers struct {
	relay Relay
}

// NewEventHandlers returns the live stream handlers.
func NewEventHandlers(r Relay) *EventHandlers {
	return &EventHandlers{relay: r}
}

// Follow streams a conversation of the caller's workspace live, resuming
// after Last-Event-ID; another workspace's conversation is 404.
func (h *EventHandlers) Follow(c *fiber.Ctx) error {
	p, _ := wire.Principal(c)
	return sse.Follow(c, h.relay, relay.Request{Workspace: &p.Workspace, SessionID: strings.Clone(c.Params("id"))})
}
