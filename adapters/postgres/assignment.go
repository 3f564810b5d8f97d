package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.AssignmentStore = (*Store)(nil)

// ChangeAssignee runs changeAssigneeSQL and writes the change's deliveries
// in the same transaction; when it changes nothing it reads the
// conversation to say why. The conditions are on the updated row, so of
// two racing take-overs the second waits for the first's row lock, sees
// the new assignee on the row's newest version and updates nothing.
func (s *Store) ChangeAssignee(ctx context.Context, change domain.AssigneeChange) (domain.Conversation, []domain.Delivery, error) {
	var (
		conv       domain.Conversation
		deliveries []domain.Delivery
	)
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		var channel, status string
		var verified, assignee, outcome *string
		err := tx.QueryRow(ctx, changeAssigneeSQL,
			change.WorkspaceID, change.ConversationID, nullString(change.AssigneeID), change.TakeOver,
		).Scan(&conv.ID, &conv.AgentID, &conv.AgentSlug, &channel, &status, &verified, &conv.ContactName, &conv.ContactEmail, &conv.ContactNote,
			&assignee, &conv.LastMessage, &conv.MessageCount, &conv.LastActivityAt, &conv.CreatedAt, &outcome)
		if err != nil {
			return err
		}
		conv.WorkspaceID, conv.Channel, conv.Status = change.WorkspaceID, domain.Channel(channel), domain.ConversationStatus(status)
		conv.VerifiedUserID, conv.AssigneeID, conv.Outcome = deref(verified), deref(assignee), domain.Outcome(deref(outcome))
		conv.LastActivityAt, conv.CreatedAt = conv.LastActivityAt.UTC(), conv.CreatedAt.UTC()
		if change.Report != nil {
			deliveries = change.Report(conv)
		}
		return insertDeliveries(ctx, tx, deliveries)
	})
	if err == nil {
		return conv, deliveries, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return domain.Conversation{}, nil, dbError("change assignee", err)
	}
	current, err := s.GetConversation(ctx, change.WorkspaceID, change.ConversationID)
	if err != nil {
		return domain.Conversation{}, nil, err
	}
	switch {
	case change.TakeOver && current.HeldByOther(change.AssigneeID):
		return current, nil, domain.HeldByOther(current.AssigneeID)
	case change.TakeOver && current.Status != domain.StatusHuman:
		// Moved since the caller read it: the caller decides again.
		return current, nil, domain.ErrStatusChanged
	case current.AssigneeID == change.AssigneeID:
		// Already so: nothing changed, nothing to report.
		return current, nil, nil
	}
	// The only condition left is membership (a member removed meanwhile is
	// never assigned).
	return current, nil, domain.InvalidField("assigneeId", "is not a member of this workspace")
}

// changeAssigneeSQL sets the assignee ($3, NULL unassigns) if it is another
// than the conversation's and a member of the workspace and, for a
// take-over ($4), only while the conversation is HUMAN and not held by
// another member. Returns the updated row (conversationListColumns and
// its outcome, which an assignment does not change) or no row.
const changeAssigneeSQL = `UPDATE conversations AS c SET assignee_id = $3
WHERE c.workspace_id = $1 AND c.id = $2
	AND c.assignee_id IS DISTINCT FROM $3::text
	AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM memberships AS m WHERE m.workspace_id = $1 AND m.user_id = $3))
	AND (NOT $4 OR (c.status = 'HUMAN' AND c.assignee_id IS NULL))
RETURNING ` + conversationListColumns + ", " + outcomeColumn
