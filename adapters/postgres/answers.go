package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var (
	_ ports.KeyedQuestions     = (*Store)(nil)
	_ ports.InterruptedAnswers = (*Store)(nil)
)

// KeyedQuestion reads the question stored under an Idempotency-Key and, in
// the same statement, its reply if it is stored.
func (s *Store) KeyedQuestion(ctx context.Context, workspaceID, key string) (domain.Message, *domain.Message, error) {
	var rows []messageRow
	err := s.db.WithContext(ctx).Raw(`WITH q AS (
	SELECT * FROM messages WHERE workspace_id = ? AND idempotency_key = ?
)
SELECT * FROM q
UNION ALL
SELECT m.* FROM messages m JOIN q ON m.id = q.reply_id AND m.workspace_id = q.workspace_id`, workspaceID, key).Scan(&rows).Error
	if err != nil {
		return domain.Message{}, nil, dbError("keyed question", err)
	}
	var (
		question domain.Message
		reply    *domain.Message
		found    bool
	)
	for _, r := range rows {
		m, err := r.toDomain()
		if err != nil {
			return domain.Message{}, nil, err
		}
		if m.IdempotencyKey == key {
			question, found = m, true
		} else {
			reply = &m
		}
	}
	if !found {
		return domain.Message{}, nil, domain.NotFound("question")
	}
	return question, reply, nil
}

// AnswersStartedBefore lists answers in progress, oldest first.
func (s *Store) AnswersStartedBefore(ctx context.Context, t time.Time, limit int) ([]domain.AnswerInProgress, error) {
	rows, err := s.pool.Query(ctx, `SELECT reply_id, workspace_id, conversation_id, question_id, started_at
FROM answers_in_progress WHERE started_at < $1 ORDER BY started_at LIMIT $2`, dbTime(t), limit)
	if err != nil {
		return nil, dbError("answers in progress", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (domain.AnswerInProgress, error) {
		var a domain.AnswerInProgress
		err := row.Scan(&a.ReplyID, &a.WorkspaceID, &a.ConversationID, &a.QuestionID, &a.StartedAt)
		a.StartedAt = a.StartedAt.UTC()
		return a, err
	})
	if err != nil {
		return nil, dbError("answers in progress", err)
	}
	return out, nil
}

// CloseAnswer stores an interrupted answer's outcome in one transaction:
// the claim of the answer in progress (of two sweepers, one closes it), the
// reply (through appendSQL), its deliveries, and the release of the
// question's Idempotency-Key. An answer whose row is gone (closed by
// another sweeper, or its conversation deleted) or whose reply exists after
// all is only ended.
func (s *Store) CloseAnswer(ctx context.Context, a domain.AnswerInProgress, reply domain.Message, deliveries ...domain.Delivery) (bool, error) {
	if reply.ID != a.ReplyID || reply.WorkspaceID != a.WorkspaceID || reply.ConversationID != a.ConversationID {
		return false, errors.New("postgres: close answer: the reply is not the answer's")
	}
	batch, err := newMessageBatch([]domain.Message{reply})
	if err != nil {
		return false, err
	}
	closed := false
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM answers_in_progress WHERE reply_id = $1`, a.ReplyID)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		var finished bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM messages WHERE id = $1)`, a.ReplyID).Scan(&finished); err != nil || finished {
			return err // the reply came after all: the claim alone commits
		}
		if err := appendInTx(ctx, tx, batch, ""); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE messages SET idempotency_key = NULL, request_hash = NULL
WHERE workspace_id = $1 AND id = $2 AND idempotency_key IS NOT NULL`, a.WorkspaceID, a.QuestionID); err != nil {
			return err
		}
		closed = true
		return insertDeliveries(ctx, tx, deliveries)
	})
	if err != nil {
		return false, dbError("close answer", err)
	}
	return closed, nil
}
