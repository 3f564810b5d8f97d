package console

import (
	"errors"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/core/domain"
)

// InboxEvents streams the member's workspace's events (new messages,
// status and assignment changes of every conversation) to the inbox page,
// as Server-Sent Events resumable with Last-Event-ID: GET
// /console/w/{workspaceID}/inbox/events. The route's middleware has
// checked the session and the membership (another workspace is 404), so
// the workspace streamed is the member's.
func (h *Handlers) InboxEvents(c *fiber.Ctx) error {
	if h.events == nil {
		return domain.Unavailable("workspace events", errors.New("console built without Options.Events"))
	}
	return sse.FollowWorkspace(c, h.events, member(c).WorkspaceID)
}
