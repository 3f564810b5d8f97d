package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.FeedbackStore = (*Store)(nil)

// SetFeedback stores fb on an ASSISTANT message of the conversation, or
// clears the message's feedback when fb is nil, and moves the
// conversation's thumbs_up and thumbs_down counters (the list's rating
// filter) by the difference, in one statement (setFeedbackSQL) in a
// transaction that first locks the conversation. The role is part of the
// update's condition; only when nothing was updated does a second read say
// why. Returns domain.ErrNotFound unless the message
// belongs to the conversation and workspace, and domain.ErrFeedbackNotAnswer
// for a message that is not an answer.
func (s *Store) SetFeedback(ctx context.Context, workspaceID, conversationID, messageID string, fb *domain.Feedback) error {
	var (
		rating  *string
		comment string
		at      *time.Time
	)
	if fb != nil {
		r, t := string(fb.Rating), dbTime(fb.UpdatedAt)
		rating, comment, at = &r, fb.Comment, &t
	}
	// The conversation's row is locked first, as appends and deletions
	// lock it before its messages: locking the answer first could
	// deadlock with the deletion of its conversation.
	var updated int
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM conversations WHERE workspace_id = $1 AND id = $2 FOR NO KEY UPDATE`, workspaceID, conversationID); err != nil {
			return err
		}
		return tx.QueryRow(ctx, setFeedbackSQL, workspaceID, conversationID, messageID, rating, comment, at).Scan(&updated)
	})
	if err != nil {
		return dbError("set feedback", err)
	}
	if updated == 1 {
		return nil
	}
	var roles []string
	err = s.db.WithContext(ctx).Raw(`SELECT role FROM messages WHERE workspace_id = ? AND conversation_id = ? AND id = ?`,
		workspaceID, conversationID, messageID).Scan(&roles).Error
	switch {
	case err != nil:
		return dbError("set feedback: read message", err)
	case len(roles) == 0:
		return domain.NotFound("message")
	default:
		return domain.ErrFeedbackNotAnswer
	}
}

// setFeedbackSQL sets an answer's feedback ($4 rating or NULL, $5 comment,
// $6 time) and moves its conversation's counters from the old rating to
// the new one. It runs under the conversation's lock (SetFeedback), and
// locks the answer too, so of two ratings of one answer at once the second
// reads the rating the first stored, and the counters never count an
// answer twice. It returns the number of answers updated (0 or 1).
const setFeedbackSQL = `WITH old AS (
	SELECT id, feedback_rating FROM messages
	WHERE workspace_id = $1 AND conversation_id = $2 AND id = $3 AND role = 'ASSISTANT'
	FOR UPDATE
), upd AS (
	UPDATE messages AS m SET feedback_rating = $4, feedback_comment = $5, feedback_at = $6
	FROM old WHERE m.workspace_id = $1 AND m.conversation_id = $2 AND m.id = old.id
	RETURNING m.id
), counted AS (
	UPDATE conversations AS c SET
		thumbs_up = c.thumbs_up + (CASE WHEN $4::text = 'up' THEN 1 ELSE 0 END) - (CASE WHEN old.feedback_rating = 'up' THEN 1 ELSE 0 END),
		thumbs_down = c.thumbs_down + (CASE WHEN $4::text = 'down' THEN 1 ELSE 0 END) - (CASE WHEN old.feedback_rating = 'down' THEN 1 ELSE 0 END)
	FROM old WHERE c.workspace_id = $1 AND c.id = $2 AND old.feedback_rating IS DISTINCT FROM $4::text
)
SELECT count(*)::int FROM upd`

// listFeedbackQuery builds the keyset query of ListFeedback. It walks the
// partial index messages_feedback_idx (workspace, feedback_at DESC, id
// DESC), which holds rated answers only; the rating and agent filters are
// checked on the way.
func listFeedbackQuery(workspaceID string, filter domain.FeedbackFilter, after *domain.Position, limit int) (string, []any) {
	k := newKeysetQuery(`SELECT m.id, m.conversation_id, c.agent_slug, m.content, m.feedback_rating, m.feedback_comment, m.feedback_at
	FROM messages AS m JOIN conversations AS c ON c.workspace_id = m.workspace_id AND c.id = m.conversation_id
	WHERE m.workspace_id = $1 AND m.feedback_rating IS NOT NULL`, workspaceID)
	k.filter("m.feedback_rating", string(filter.Rating))
	k.filter("c.agent_id", filter.AgentID)
	return k.page("m.feedback_at", "m.id", after, limit)
}

// ListFeedback returns a page of the workspace's rated answers, most
// recently rated first, ordered by (feedback_at, id).
func (s *Store) ListFeedback(ctx context.Context, workspaceID string, filter domain.FeedbackFilter, page domain.PageRequest) (domain.Page[domain.RatedAnswer], error) {
	limit := pageLimit(page)
	query, args := listFeedbackQuery(workspaceID, filter, page.After, limit+1)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return domain.Page[domain.RatedAnswer]{}, dbError("list feedback", err)
	}
	defer rows.Close()
	items := make([]domain.RatedAnswer, 0, limit+1)
	for rows.Next() {
		var (
			a      domain.RatedAnswer
			rating string
		)
		if err := rows.Scan(&a.MessageID, &a.ConversationID, &a.AgentSlug, &a.Content, &rating, &a.Feedback.Comment, &a.Feedback.UpdatedAt); err != nil {
			return domain.Page[domain.RatedAnswer]{}, dbError("list feedback", err)
		}
		a.Feedback.Rating, a.Feedback.UpdatedAt = domain.Rating(rating), a.Feedback.UpdatedAt.UTC()
		items = append(items, a)
	}
	if err := rows.Err(); err != nil {
		return domain.Page[domain.RatedAnswer]{}, dbError("list feedback", err)
	}
	return makePage(items, limit, func(a domain.RatedAnswer) (domain.RatedAnswer, error) { return a, nil },
		func(a domain.RatedAnswer) domain.Position {
			return domain.Position{Time: a.Feedback.UpdatedAt, ID: a.MessageID}
		})
}
