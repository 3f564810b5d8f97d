package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
)

// AssignmentHandlers serves who owns a conversation, for integrations. An
// API key acts for the workspace and is no member, so it assigns without
// an actor; taking a conversation over is a member's action, in the
// console.
type AssignmentHandlers struct {
	assignments Assignments
	decoder     *wire.Decoder
}

// NewAssignmentHandlers returns the assignment handlers.
func NewAssignmentHandlers(svc Assignments, decoder *wire.Decoder) *AssignmentHandlers {
	return &AssignmentHandlers{assignments: svc, decoder: decoder}
}

// assigneeChange is the body of PUT /api/v2/conversations/{id}/assignee:
// a user id, or null to unassign.
type assigneeChange struct {
	AssigneeID *string `json:"assigneeId"`
}

// SetAssignee serves PUT /api/v2/conversations/{id}/assignee.
func (h *AssignmentHandlers) SetAssignee(c *fiber.Ctx) error {
	var body assigneeChange
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	id := strings.Clone(c.Params("id"))
	p, _ := wire.Principal(c)
	if body.AssigneeID == nil {
		conv, err := h.assignments.Unassign(c.UserContext(), &p.Workspace, id, nil)
		if err != nil {
			return err
		}
		return c.JSON(toConversationDTO(conv))
	}
	conv, err := h.assignments.Assign(c.UserContext(), &p.Workspace, id, *body.AssigneeID, nil)
	if err != nil {
		return err
	}
	return c.JSON(toConversationDTO(conv))
}
