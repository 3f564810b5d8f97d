package wire

import "github.com/conciergehq/concierge/core/domain"

// WorkspaceEvent is the data of one event of a workspace's event stream
// (console inbox and GET /api/v2/events); the SSE id and event lines carry
// its position and type.
type WorkspaceEvent struct {
	Type           string                 `json:"type"`
	ConversationID string                 `json:"conversationId"`
	AgentID        string                 `json:"agentId,omitempty"`
	Status         string                 `json:"status,omitempty"`
	AssigneeID     *string                `json:"assigneeId,omitempty"`
	Message        *WorkspaceEventMessage `json:"message,omitempty"`
	At             string                 `json:"at"`
}

// WorkspaceEventMessage is a message.created event's message; its content
// is cut to domain.WorkspaceEventContentMax characters.
type WorkspaceEventMessage struct {
	ID         string `json:"id"`
	Role       string `json:"role"`
	Content    string `json:"content"`
	AuthorName string `json:"authorName,omitempty"`
	AuthorID   string `json:"authorId,omitempty"`
	CreatedAt  string `json:"createdAt"`
}

// WorkspaceEventData maps a workspace event to its data. assigneeId is
// always present on conversation.assigned ("" meaning unassigned), and only
// there.
func WorkspaceEventData(ev domain.WorkspaceEvent) WorkspaceEvent {
	out := WorkspaceEvent{
		Type: ev.Type, ConversationID: ev.ConversationID, AgentID: ev.AgentID, Status: string(ev.Status), At: Time(ev.At),
	}
	if ev.Type == domain.WorkspaceEventConversationAssigned {
		assignee := ev.AssigneeID
		out.AssigneeID = &assignee
	}
	if m := ev.Message; m != nil {
		out.Message = &WorkspaceEventMessage{
			ID: m.ID, Role: string(m.Role), Content: m.Content, AuthorName: m.AuthorName, AuthorID: m.AuthorID, CreatedAt: Time(m.CreatedAt),
		}
	}
	return out
}
