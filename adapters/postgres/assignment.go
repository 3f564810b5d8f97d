package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.AssignmentStore = (*Store)(nil)

// ChangeAssignee runs changeAssigneeSQL; when it changes nothing it reads
// the conversation to say why. The conditions are on the updated row, so of
// two racing take-overs the second waits for the first's row lock, sees
// the new assignee on the row's newest version and updates nothing.
func (s *Store) ChangeAssignee(ctx context.Context, change domain.AssigneeChange) (domain.Conversation, error) {
	states := make([]string, len(domain.TakeOverFrom))
	for i, f := range domain.TakeOverFrom {
		states[i] = string(f)
	}
	var conv domain.Conversation
	var channel, status string
	var verified, assignee *string
	err := s.pool.QueryRow(ctx, changeAssigneeSQL,
		change.WorkspaceID, change.ConversationID, nullString(change.AssigneeID), change.TakeOver, states,
	).Scan(&conv.ID, &conv.AgentID, &conv.AgentSlug, &channel, &status, &verified, &conv.ContactName, &conv.ContactEmail,
		&assignee, &conv.LastMessage, &conv.MessageCount, &conv.LastActivityAt, &conv.CreatedAt)
	if err == nil {
		conv.WorkspaceID, conv.Channel, conv.Status = change.WorkspaceID, domain.Channel(channel), domain.ConversationStatus(status)
		conv.VerifiedUserID, conv.AssigneeID = deref(verified), deref(assignee)
		conv.LastActivityAt, conv.CreatedAt = conv.LastActivityAt.UTC(), conv.CreatedAt.UTC()
		return conv, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return domain.Conversation{}, dbError("change assignee", err)
	}
	current, err := s.GetConversation(ctx, change.WorkspaceID, change.ConversationID)
	if err != nil {
		return domain.Conversation{}, err
	}
	if change.TakeOver && current.AssigneeID != "" && current.AssigneeID != change.AssigneeID {
		return current, domain.HeldByOther(current.AssigneeID)
	}
	if change.TakeOver && current.Status == domain.StatusResolved {
		return current, &domain.ConflictError{
			Message: "a resolved conversation is reopened before it is taken over",
			Details: map[string]string{"status": string(current.Status)},
		}
	}
	// The only condition left is membership (a concurrent change may also
	// have moved the row, in which case the caller sees the new state on
	// its next read; a membership that is missing is the answer to give).
	return current, domain.InvalidField("assigneeId", "is not a member of this workspace")
}

// changeAssigneeSQL sets the assignee ($3, NULL unassigns) if it is a
// member of the workspace and, for a take-over ($4), only while the
// conversation is unassigned or already the assignee's and in one of the
// states $5, moving it to HUMAN. Returns the updated row
// (conversationListColumns) or no row.
const changeAssigneeSQL = `UPDATE conversations AS c SET
	assignee_id = $3,
	status = CASE WHEN $4 THEN 'HUMAN' ELSE c.status END
WHERE c.workspace_id = $1 AND c.id = $2
	AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM memberships AS m WHERE m.workspace_id = $1 AND m.user_id = $3))
	AND (NOT $4 OR ((c.assignee_id IS NULL OR c.assignee_id = $3) AND c.status = ANY($5::text[])))
RETURNING ` + conversationListColumns
