package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
)

// ChangeStatus moves the conversation and appends its notice in one
// conditional statement, then writes the message that motivated the move
// (if any) and the deliveries, in one transaction (the statement alone when
// there are neither): concurrent changes serialize on the conversation's
// row, and a change that does not apply writes nothing. The notice counts
// as activity (the conversation moves up the list) but keeps the last
// message's preview, which shows what someone said; the motivating message
// becomes the preview.
func (s *Store) ChangeStatus(ctx context.Context, change domain.StatusChange) (domain.Conversation, bool, error) {
	from := change.From
	if len(from) == 0 {
		from = domain.StatusesFrom(change.To)
	}
	states := make([]string, len(from))
	for i, f := range from {
		states[i] = string(f)
	}
	notice, err := messageFromDomain(change.Notice)
	if err != nil {
		return domain.Conversation{}, false, err
	}
	var motive *messageBatch
	if change.Message != nil {
		b, err := newMessageBatch([]domain.Message{*change.Message})
		if err != nil {
			return domain.Conversation{}, false, err
		}
		if b.rows[0].WorkspaceID != change.WorkspaceID || b.rows[0].ConversationID != change.ConversationID {
			return domain.Conversation{}, false, errors.New("postgres: change status: the message is another conversation's")
		}
		motive = &b
	}
	var name, email, note string
	if change.Contact != nil {
		name, email, note = change.Contact.Name, change.Contact.Email, change.Contact.Note
	}
	var (
		conv    domain.Conversation
		changed bool
	)
	move := func(q querier) (bool, error) {
		var channel, status string
		var verified, assignee *string
		var handoff *time.Time
		err := q.QueryRow(ctx, changeStatusSQL,
			change.WorkspaceID, change.ConversationID, string(change.To), name, email, notice.CreatedAt, states,
			notice.ID, notice.Content, notice.AuthorName, change.MessageCount, nullString(change.AssigneeID), note,
		).Scan(&conv.ID, &conv.AgentID, &conv.AgentSlug, &channel, &status, &verified, &conv.ContactName, &conv.ContactEmail, &conv.ContactNote,
			&assignee, &conv.LastMessage, &conv.MessageCount, &conv.LastActivityAt, &conv.CreatedAt, &handoff)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		changed = true
		conv.WorkspaceID, conv.Channel, conv.Status, conv.VerifiedUserID, conv.AssigneeID = change.WorkspaceID, domain.Channel(channel), domain.ConversationStatus(status), deref(verified), deref(assignee)
		conv.LastActivityAt, conv.CreatedAt, conv.HandoffRequestedAt = conv.LastActivityAt.UTC(), conv.CreatedAt.UTC(), timeOrZero(handoff)
		return true, nil
	}
	if motive != nil {
		err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
			if change.MessageFirst {
				// Under the state the change moves from; appendSQL locks
				// the row, so the move that follows sees the message.
				while := domain.ConversationStatus("")
				if len(from) == 1 {
					while = from[0]
				}
				if err := appendInTx(ctx, tx, *motive, while); err != nil {
					return err
				}
			}
			moved, err := move(tx)
			if err != nil || !moved {
				if err == nil {
					err = errNotMoved // the message first, if any, goes too
				}
				return err
			}
			if !change.MessageFirst {
				// The row is locked by the move, so the append sees the new state.
				if err := appendInTx(ctx, tx, *motive, change.To); err != nil {
					changed = false
					return err
				}
				conv.MessageCount++
				if !motive.latest.Before(conv.LastActivityAt) {
					conv.LastMessage, conv.LastActivityAt = motive.preview, motive.latest
				}
			}
			return insertDeliveries(ctx, tx, change.Deliveries)
		})
		if errors.Is(err, errNotMoved) {
			err = nil
		}
	} else {
		err = s.withDeliveries(ctx, change.Deliveries, move)
	}
	if errors.Is(err, domain.ErrMessageExists) {
		current, gerr := s.GetConversation(ctx, change.WorkspaceID, change.ConversationID)
		if gerr != nil {
			return domain.Conversation{}, false, gerr
		}
		return current, false, err
	}
	if err != nil {
		if constraint, ok := uniqueViolation(err); ok {
			return domain.Conversation{}, false, messageConflict(constraint)
		}
		return domain.Conversation{}, false, dbError("change status", err)
	}
	if !changed {
		// Nothing was written: say where the conversation stands, or that it
		// is not the workspace's.
		conv, err = s.GetConversation(ctx, change.WorkspaceID, change.ConversationID)
		if err != nil || change.AssigneeID == "" {
			return conv, false, err
		}
		// A take-over also fails when the member left the workspace;
		// retrying would not help.
		var member bool
		if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memberships WHERE workspace_id = $1 AND user_id = $2)`,
			change.WorkspaceID, change.AssigneeID).Scan(&member); err != nil {
			return domain.Conversation{}, false, dbError("change status: membership", err)
		}
		if !member {
			return conv, false, domain.ErrForbidden
		}
		return conv, false, nil
	}
	return conv, true, nil
}

// errNotMoved rolls back a change that did not apply, with the message
// stored before it.
var errNotMoved = errors.New("the conversation was not in a state the change moves from")

// appendInTx runs appendSQL for b inside tx, under state while (any when
// empty): the message that motivated a state change. A message of an
// inbound event that was stored before is domain.ErrMessageExists and a
// conversation in another state errNotMoved; either rolls the change back
// with it.
func appendInTx(ctx context.Context, tx pgx.Tx, b messageBatch, while domain.ConversationStatus) error {
	values, args := b.appendArgs(while)
	var (
		created bool
		status  *string
	)
	if err := tx.QueryRow(ctx, appendSQL(values, b), args...).Scan(&created, &status); err != nil {
		return err
	}
	switch {
	case created:
		return nil
	case status == nil:
		return domain.NotFound("conversation")
	case while != "" && *status != string(while):
		return errNotMoved
	default:
		return domain.ErrMessageExists
	}
}

// changeStatusSQL updates the conversation if its status is one of $7 and
// its message count is $11 (NULL: any) and, for a take-over by the member
// $12 (NULL: none), the conversation is not held by another member
// (domain.Conversation.HeldByOther) and $12 is a member of the workspace,
// assigning it to $12; it stores the handoff form's name ($4), email ($5)
// and note ($13) where they are not empty, so a later request's note
// replaces an earlier one and a request without one keeps it (as
// domain.HandoffContact.ApplyTo does); a move to HANDOFF_REQUESTED stamps
// handoff_requested_at with the notice's time ($6), every time, so a
// conversation handed off again waits from the new request (migration
// 00023); only then it inserts the SYSTEM
// notice; it returns the updated row (conversationListColumns), or no row
// when nothing changed. The conditions are on the updated row itself, so a
// concurrent append or change that commits first is seen (PostgreSQL
// re-checks them on the newest version of a row it had to wait for).
const changeStatusSQL = `WITH upd AS (
	UPDATE conversations AS c SET
		status = $3,
		contact_name = CASE WHEN $4 = '' THEN c.contact_name ELSE $4 END,
		contact_email = CASE WHEN $5 = '' THEN c.contact_email ELSE $5 END,
		contact_note = CASE WHEN $13 = '' THEN c.contact_note ELSE $13 END,
		message_count = c.message_count + 1,
		last_activity_at = GREATEST(c.last_activity_at, $6),
		assignee_id = COALESCE($12::text, c.assignee_id),
		handoff_requested_at = CASE WHEN $3 = 'HANDOFF_REQUESTED' THEN $6 ELSE c.handoff_requested_at END
	WHERE c.workspace_id = $1 AND c.id = $2 AND c.status = ANY($7::text[])
		AND ($11::int IS NULL OR c.message_count = $11::int)
		AND ($12::text IS NULL OR (
			(c.assignee_id IS NULL OR c.assignee_id = $12::text OR c.status = 'RESOLVED')
			AND EXISTS (SELECT 1 FROM memberships AS m WHERE m.workspace_id = $1 AND m.user_id = $12::text)))
	RETURNING ` + conversationListColumns + `
), ins AS (
	INSERT INTO messages (id, workspace_id, conversation_id, role, content, citations, created_at, status, author_name)
	SELECT $8, $1, $2, 'SYSTEM', $9, '[]', $6, $3, $10 FROM upd
)
SELECT * FROM upd`
