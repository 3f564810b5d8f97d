package postgres

import (
	"context"
	"errors"
	"time"

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
	auto := change.Choose != nil
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if auto {
			chosen, err := chooseAutoAssignee(ctx, tx, change)
			if err != nil {
				return err
			}
			change.AssigneeID = chosen
		}
		var channel, status string
		var verified, assignee, outcome *string
		var handoff *time.Time
		err := tx.QueryRow(ctx, changeAssigneeSQL,
			change.WorkspaceID, change.ConversationID, nullString(change.AssigneeID), change.TakeOver, auto,
		).Scan(&conv.ID, &conv.AgentID, &conv.AgentSlug, &channel, &status, &verified, &conv.ContactName, &conv.ContactEmail, &conv.ContactNote,
			&assignee, &conv.LastMessage, &conv.MessageCount, &conv.LastActivityAt, &conv.CreatedAt, &handoff, &outcome)
		if err != nil {
			return err
		}
		conv.WorkspaceID, conv.Channel, conv.Status = change.WorkspaceID, domain.Channel(channel), domain.ConversationStatus(status)
		conv.VerifiedUserID, conv.AssigneeID = deref(verified), deref(assignee)
		conv.Outcome = domain.Outcome(deref(outcome))
		conv.LastActivityAt, conv.CreatedAt, conv.HandoffRequestedAt = conv.LastActivityAt.UTC(), conv.CreatedAt.UTC(), timeOrZero(handoff)
		if auto {
			if _, err := tx.Exec(ctx, `UPDATE memberships SET last_auto_assigned_at = $3 WHERE workspace_id = $1 AND user_id = $2`,
				change.WorkspaceID, change.AssigneeID, dbTime(change.At)); err != nil {
				return err
			}
		}
		if change.Report != nil {
			deliveries = change.Report(conv)
		}
		return insertDeliveries(ctx, tx, deliveries)
	})
	if err == nil {
		return conv, deliveries, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) && !errors.Is(err, errNobodyToAssign) {
		return domain.Conversation{}, nil, dbError("change assignee", err)
	}
	current, err := s.GetConversation(ctx, change.WorkspaceID, change.ConversationID)
	if err != nil {
		return domain.Conversation{}, nil, err
	}
	switch {
	case auto:
		// Assigned or moved on meanwhile, or nobody to give it to: it
		// stays as it is, in "Needs a person" if it still waits.
		return current, nil, nil
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
// another member, for an auto-assignment ($5), only while it waits
// unassigned in HANDOFF_REQUESTED. Returns the updated row
// (conversationListColumns and its outcome, which an assignment does not
// change) or no row.
const changeAssigneeSQL = `UPDATE conversations AS c SET assignee_id = $3
WHERE c.workspace_id = $1 AND c.id = $2
	AND c.assignee_id IS DISTINCT FROM $3::text
	AND ($3::text IS NULL OR EXISTS (SELECT 1 FROM memberships AS m WHERE m.workspace_id = $1 AND m.user_id = $3))
	AND (NOT $4 OR (c.status = 'HUMAN' AND c.assignee_id IS NULL))
	AND (NOT $5 OR (c.status = 'HANDOFF_REQUESTED' AND c.assignee_id IS NULL))
RETURNING ` + conversationListColumns + ", " + outcomeColumn

// errNobodyToAssign ends an auto-assignment's transaction that has nothing
// to write: the conversation does not wait for a person any more, or no
// member can take it.
var errNobodyToAssign = errors.New("nobody to auto-assign")

// autoAssignLockSQL takes the transaction-scoped advisory lock of the
// workspace's auto-assignments. It serialises them across pods: each
// transaction reads the counts after the one before it committed (READ
// COMMITTED takes a new snapshot per statement), so two handoffs at once
// go to two members when two are equal, not both to the same one. The key
// is a 64-bit hash of the workspace id in a namespace of its own; another
// workspace colliding with it only waits a moment more.
const autoAssignLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended('concierge.auto-assign:' || $1, 0))`

// autoAssignCandidatesSQL reads the workspace's available members with
// their open conversations (counted on the partial index
// conversations_open_assignee_activity_idx of 00021) and their last
// auto-assignment. Whose role may take conversations is the domain's to
// say (the Choose function), not this query's.
const autoAssignCandidatesSQL = `SELECT m.user_id, m.role, m.available, m.last_auto_assigned_at,
	(SELECT count(*) FROM conversations AS c
		WHERE c.workspace_id = m.workspace_id AND c.assignee_id = m.user_id
			AND c.status IN ('HANDOFF_REQUESTED', 'HUMAN')) AS open
FROM memberships AS m
WHERE m.workspace_id = $1 AND m.available`

// chooseAutoAssignee takes the workspace's auto-assignment lock in tx and,
// when the conversation still waits unassigned in HANDOFF_REQUESTED, reads
// the candidates and returns whom change.Choose picks. Returns
// errNobodyToAssign when there is nothing to do, and pgx.ErrNoRows for a
// conversation that is not the workspace's.
func chooseAutoAssignee(ctx context.Context, tx pgx.Tx, change domain.AssigneeChange) (string, error) {
	if _, err := tx.Exec(ctx, autoAssignLockSQL, change.WorkspaceID); err != nil {
		return "", err
	}
	var waiting bool
	err := tx.QueryRow(ctx, `SELECT status = 'HANDOFF_REQUESTED' AND assignee_id IS NULL FROM conversations WHERE workspace_id = $1 AND id = $2`,
		change.WorkspaceID, change.ConversationID).Scan(&waiting)
	if err != nil {
		return "", err
	}
	if !waiting {
		return "", errNobodyToAssign
	}
	rows, err := tx.Query(ctx, autoAssignCandidatesSQL, change.WorkspaceID)
	if err != nil {
		return "", err
	}
	candidates, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.AssignCandidate, error) {
		var c domain.AssignCandidate
		var role string
		var last *time.Time
		err := row.Scan(&c.UserID, &role, &c.Available, &last, &c.Open)
		c.Role = domain.MemberRole(role)
		if last != nil {
			c.LastAutoAssignedAt = last.UTC()
		}
		return c, err
	})
	if err != nil {
		return "", err
	}
	chosen := change.Choose(candidates)
	if chosen == "" {
		return "", errNobodyToAssign
	}
	return chosen, nil
}
