package domain

import "time"

// Workspace event types, as the workspace event stream names them.
const (
	WorkspaceEventMessageCreated       = "message.created"
	WorkspaceEventConversationStatus   = "conversation.status"
	WorkspaceEventConversationAssigned = "conversation.assigned"
)

// WorkspaceEventContentMax is how much of a message's content a workspace
// event carries, in characters: the stream tells an inbox that something
// happened and shows a preview; the whole message is read from the API.
const WorkspaceEventContentMax = 500

// WorkspaceEvent is something that happened in one of a workspace's
// conversations, for the members and integrations following the whole
// workspace (an inbox), as opposed to a session's own live events.
type WorkspaceEvent struct {
	// ID is the event's position in the workspace's stream, set by the log
	// when the event is appended; it is the SSE id a client resumes from.
	ID             string
	Type           string
	WorkspaceID    string
	ConversationID string
	// AgentID is the conversation's agent, when known.
	AgentID string
	// Status is the conversation's status after the event, when known.
	Status ConversationStatus
	// AssigneeID is, for conversation.assigned, the new assignee ("" when
	// the conversation was unassigned).
	AssigneeID string
	// Message is, for message.created, the message, its content cut to
	// WorkspaceEventContentMax characters.
	Message *Message
	At      time.Time
}

// MessageWorkspaceEvent is the workspace event of a stored message: a
// conversation.status event for a SYSTEM notice of a status change, a
// message.created event for any other. The message's content is cut to
// WorkspaceEventContentMax characters, and only what an inbox shows is kept.
func MessageWorkspaceEvent(m Message) WorkspaceEvent {
	ev := WorkspaceEvent{WorkspaceID: m.WorkspaceID, ConversationID: m.ConversationID, At: m.CreatedAt}
	if m.Role == RoleSystem && m.Status != "" {
		ev.Type, ev.Status = WorkspaceEventConversationStatus, m.Status
		return ev
	}
	ev.Type = WorkspaceEventMessageCreated
	ev.Message = &Message{
		ID: m.ID, WorkspaceID: m.WorkspaceID, ConversationID: m.ConversationID, Role: m.Role,
		Content: truncateChars(m.Content, WorkspaceEventContentMax), AuthorName: m.AuthorName, AuthorID: m.AuthorID, CreatedAt: m.CreatedAt,
	}
	return ev
}

// truncateChars cuts s to at most n characters (not bytes), never inside
// one.
func truncateChars(s string, n int) string {
	if len(s) <= n {
		return s
	}
	count := 0
	for i := range s {
		if count == n {
			return s[:i]
		}
		count++
	}
	return s
}
