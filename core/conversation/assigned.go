package conversation

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// A change of who holds a conversation is reported the same way whoever
// makes it: an assignment or a take-over (core/assignment), or a member's
// removal that unassigns what they held (core/account). The store writes
// the conversation.assigned outbox rows with the change (AssignedReport),
// and after the commit Reassigned schedules them and tells every member's
// inbox. Written here, next to Move, because capabilities do not share
// code with each other, only with the Conversation aggregate.

// AssignedReport returns the report a store calls, inside the write that
// changes assignees in ws, for each conversation as the write left it: its
// conversation.assigned deliveries (domain.AssignedDeliveries), dated now.
func AssignedReport(ws *domain.Workspace, now time.Time) func(after domain.Conversation) []domain.Delivery {
	return func(after domain.Conversation) []domain.Delivery {
		return domain.AssignedDeliveries(ws, after, now)
	}
}

// AssigneeReport is AssignedReport for the workspace read now, for a use
// case that has only its id. Returns the workspace store's errors
// (domain.ErrNotFound for an unknown workspace).
func (l *Lifecycle) AssigneeReport(ctx context.Context, workspaceID string) (func(after domain.Conversation) []domain.Delivery, error) {
	ws, err := l.d.Workspaces.GetWorkspace(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	return AssignedReport(&ws, l.d.Clock.Now()), nil
}

// Reassigned runs after a change of assignees was committed: it schedules
// the deliveries written with it and publishes conversation.assigned on
// the workspace event stream for each conversation as it now is, so every
// member's inbox moves it (to Unassigned when nobody holds it). It never
// fails its caller, as EnqueueDeliveries and PublishWorkspace do not.
func (l *Lifecycle) Reassigned(ctx context.Context, deliveries []domain.Delivery, convs ...domain.Conversation) {
	l.EnqueueDeliveries(ctx, deliveries)
	if len(convs) == 0 {
		return
	}
	now := l.d.Clock.Now()
	events := make([]domain.WorkspaceEvent, 0, len(convs))
	for _, c := range convs {
		events = append(events, domain.WorkspaceEvent{
			Type: domain.WorkspaceEventConversationAssigned, WorkspaceID: c.WorkspaceID, ConversationID: c.ID,
			AgentID: c.AgentID, Status: c.Status, AssigneeID: c.AssigneeID, At: now,
		})
	}
	l.PublishWorkspace(ctx, events...)
}
