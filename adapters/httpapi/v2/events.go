package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/relay"
)

// EventHandlers serves GET /api/v2/conversations/{id}/events.
type EventHandlers struct {
	follower *sse.Follower
}

// NewEventHandlers returns the live stream handlers over the pod's
// follower (sse.NewFollower over the relay), whose cache of rendered frames
// both APIs share.
func NewEventHandlers(follower *sse.Follower) *EventHandlers {
	return &EventHandlers{follower: follower}
}

// Follow streams a conversation of the caller's workspace live, resuming
// after Last-Event-ID; another workspace's conversation is 404.
func (h *EventHandlers) Follow(c *fiber.Ctx) error {
	p, _ := wire.Principal(c)
	return h.follower.Follow(c, relay.Request{Session: conversation.SessionRef{Workspace: &p.Workspace, ID: strings.Clone(c.Params("id"))}})
}

// WorkspaceEventHandlers serves GET /api/v2/events.
type WorkspaceEventHandlers struct {
	opener sse.WorkspaceOpener
}

// NewWorkspaceEventHandlers returns the workspace event stream's handler
// over the relay.
func NewWorkspaceEventHandlers(opener sse.WorkspaceOpener) *WorkspaceEventHandlers {
	return &WorkspaceEventHandlers{opener: opener}
}

// Follow streams the events of the key's workspace (new messages, status
// and assignment changes of every conversation), resuming after
// Last-Event-ID. A key only ever sees its own workspace's events.
func (h *WorkspaceEventHandlers) Follow(c *fiber.Ctx) error {
	p, _ := wire.Principal(c)
	return sse.FollowWorkspace(c, h.opener, p.Workspace.ID)
}
