package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// lastMessageRunes bounds the stored preview, as the API guide promises.
const lastMessageRunes = 200

// AppendMessage stores a message and updates the conversation's preview,
// count and last activity, atomically in one statement (appendSQL): it runs
// on every turn, so it is one round trip rather than a transaction's four.
//
// A message whose InboundEventID is already stored is not stored again: the
// unique index on inbound_event_id makes the INSERT a no-op (concurrent
// appends of the same event wait for the first to commit), and the stored
// message is returned with created false. Last activity never moves
// backwards, so a late append cannot reorder the conversation list; the
// preview follows the newest message. Returns domain.ErrNotFound if the
// conversation does not belong to the message's workspace.
//
// Deliveries make it a transaction (the statement, then the outbox rows,
// only if the message was inserted), so a message and what reports it are
// stored together or not at all; without any, it stays one round trip.
func (s *Store) AppendMessage(ctx context.Context, msg domain.Message, while domain.ConversationStatus, deliveries ...domain.Delivery) (domain.Message, bool, error) {
	msgs := []domain.Message{msg}
	batch, err := newMessageBatch(msgs)
	if err != nil {
		return domain.Message{}, false, err
	}
	// Not created: a retry of an inbound event, whose deliveries went with
	// the first append, or a conversation in another state.
	created, status, err := s.appendBatch(ctx, "append message", batch, while, deliveries)
	if err != nil {
		return domain.Message{}, false, err
	}
	switch {
	case status == nil:
		return domain.Message{}, false, domain.NotFound("conversation")
	case !created && while != "" && *status != string(while):
		return domain.Message{}, false, domain.ErrStatusChanged
	}
	if !created {
		var existing messageRow
		err := s.db.WithContext(ctx).Where("workspace_id = ? AND inbound_event_id = ?", msg.WorkspaceID, msg.InboundEventID).
			Take(&existing).Error
		if err != nil {
			return domain.Message{}, false, notFoundOr(err, "conversation", "append message: read existing")
		}
		stored, err := existing.toDomain()
		return stored, false, err
	}
	return batch.stored(msgs)[0], true, nil
}

// AppendMessages stores msgs in order and updates the conversation once, in
// one statement (appendSQL): a question and its reply cost what one message
// does.
func (s *Store) AppendMessages(ctx context.Context, msgs []domain.Message, while domain.ConversationStatus, deliveries ...domain.Delivery) ([]domain.Message, error) {
	if len(msgs) == 0 {
		return nil, errors.New("postgres: append messages: none")
	}
	if err := refuseInboundEvents(msgs); err != nil {
		return nil, err
	}
	batch, err := newMessageBatch(msgs)
	if err != nil {
		return nil, err
	}
	created, status, err := s.appendBatch(ctx, "append messages", batch, while, deliveries)
	if err != nil {
		return nil, err
	}
	switch {
	case status == nil:
		return nil, domain.NotFound("conversation")
	case !created:
		return nil, domain.ErrStatusChanged
	}
	return batch.stored(msgs), nil
}

// appendBatch runs appendSQL for the batch with its deliveries: created
// reports whether its messages were inserted, status is the conversation's
// state (nil: no such conversation in the workspace). A message id that
// exists already is domain.ErrConflict; other errors are dbError(op).
func (s *Store) appendBatch(ctx context.Context, op string, b messageBatch, while domain.ConversationStatus, deliveries []domain.Delivery) (created bool, status *string, err error) {
	values, args := b.appendArgs(while)
	err = s.withDeliveries(ctx, deliveries, func(q querier) (bool, error) {
		err := q.QueryRow(ctx, appendSQL(values, b), args...).Scan(&created, &status)
		return created, err
	})
	if constraint, ok := uniqueViolation(err); ok {
		return false, nil, messageConflict(constraint)
	}
	return created, status, dbError(op, err)
}

// appendArgs returns the VALUES list and the arguments of appendSQL for
// the batch appended under the state while.
func (b messageBatch) appendArgs(while domain.ConversationStatus) (string, []any) {
	return b.values([]any{b.rows[0].WorkspaceID, b.rows[0].ConversationID, string(while), b.latest, b.preview, b.fallbacks})
}

// appendSQL is the statement that appends the messages of values (see
// messageBatch.values; $1 and $2 are the workspace and conversation, $3 the
// state the caller decided under, $4 and $5 the newest message's time and
// preview, $6 the number of fallback answers among them). A batch is
// inserted whole or not at all, so the fallback count added with it is
// exact. It locks the conversation's row first, so appends and state
// changes (changeStatusSQL) serialize and each sees the other's outcome;
// inserts the messages if the conversation is the workspace's and in state
// $3 (any state when empty), skipping an inbound event's message already
// stored; and only if something was inserted updates the conversation. A
// data-modifying CTE is one atomic statement. It returns whether messages
// were inserted and the conversation's state (NULL: no such conversation
// in the workspace).
func appendSQL(values string, b messageBatch) string {
	return `WITH cur AS (
	SELECT status FROM conversations WHERE workspace_id = $1 AND id = $2 FOR UPDATE
), ins AS (
	INSERT INTO messages (` + batchColumns + `)
	SELECT ` + batchSelect("$1", "$2") + ` FROM cur, ` + values + `
	WHERE $3 = '' OR cur.status = $3
	ORDER BY v.ord
	ON CONFLICT (inbound_event_id) DO NOTHING
	` + batchReturning + `
)` + b.trackAnswers("$1", "$2") + `, upd AS (
	UPDATE conversations SET
		message_count = message_count + (SELECT count(*) FROM ins),
		fallback_count = fallback_count + $6,
		last_message = CASE WHEN $4 >= last_activity_at THEN $5 ELSE last_message END,
		last_activity_at = GREATEST(last_activity_at, $4)
	WHERE workspace_id = $1 AND id = $2 AND EXISTS (SELECT 1 FROM ins)
	RETURNING 1
)
SELECT EXISTS (SELECT 1 FROM ins), (SELECT status FROM cur)`
}

// idempotencyKeyIndex is the unique index on the questions' Idempotency-Keys.
const idempotencyKeyIndex = "messages_idempotency_key_idx"

// messageConflict is the error for a message refused by a unique index: a
// question whose Idempotency-Key another request stored first (it is being
// answered, or was), or a message id that exists.
func messageConflict(constraint string) error {
	if constraint == idempotencyKeyIndex {
		return domain.ErrAnswerInProgress
	}
	return domain.Conflict("a message with this id already exists")
}

// refuseInboundEvents refuses batches holding an inbound event's message:
// those are appended one by one (AppendMessage), whose retries are no-ops.
func refuseInboundEvents(msgs []domain.Message) error {
	for _, m := range msgs {
		if m.InboundEventID != "" {
			return errors.New("postgres: messages of inbound events are appended one by one")
		}
	}
	return nil
}

// messageBatch is several messages of one conversation ready for one
// INSERT: their rows and encoded traces, and what the conversation shows
// after them (the newest one's preview and time).
type messageBatch struct {
	rows    []messageRow
	traces  [][]byte
	latest  time.Time
	preview string
	// tracksAnswers: storing the batch starts or ends an answer in progress.
	tracksAnswers bool
	// fallbacks counts the batch's fallback answers, for the
	// conversation's fallback_count (the list's fallback filter).
	fallbacks int
}

func newMessageBatch(msgs []domain.Message) (messageBatch, error) {
	b := messageBatch{rows: make([]messageRow, len(msgs)), traces: make([][]byte, len(msgs)), tracksAnswers: tracksAnswers(msgs)}
	for i, m := range msgs {
		if m.WorkspaceID != msgs[0].WorkspaceID || m.ConversationID != msgs[0].ConversationID {
			return messageBatch{}, errors.New("postgres: a batch of messages must be of one conversation")
		}
		row, err := messageFromDomain(m)
		if err != nil {
			return messageBatch{}, err
		}
		if b.traces[i], err = encodeTrace(m.Trace); err != nil {
			return messageBatch{}, err
		}
		b.rows[i] = row
		if m.Role == domain.RoleAssistant && m.FallbackReason != domain.FallbackNone {
			b.fallbacks++
		}
		// The newest message is the preview, as AppendMessage keeps it;
		// a tie goes to the later one.
		if i == 0 || !row.CreatedAt.Before(b.latest) {
			b.latest, b.preview = row.CreatedAt, domain.Preview(m.Content, lastMessageRunes)
		}
	}
	return b, nil
}

// batchColumns are the columns a batch inserts; batchSelect selects them
// from the VALUES list v, with the conversation's keys as given.
const batchColumns = `id, workspace_id, conversation_id, role, content, citations, tokens_in, tokens_out, created_at, trace, token_ends, status, author_name, author_id, fallback_reason, offer_handoff, inbound_event_id, reply_id, idempotency_key, request_hash, model`

func batchSelect(workspaceID, conversationID string) string {
	return `v.id, ` + workspaceID + `, ` + conversationID + `, v.role, v.content, v.citations, v.tokens_in, v.tokens_out, v.created_at, v.trace, v.token_ends, v.status, v.author_name, v.author_id, v.fallback_reason, v.offer_handoff, v.inbound_event_id, v.reply_id, v.idempotency_key, v.request_hash, v.model`
}

// batchReturning is what a batch's INSERT returns for the statements that
// keep answers_in_progress (see messageBatch.trackAnswers).
const batchReturning = `RETURNING id, reply_id, created_at`

// trackAnswers keeps answers_in_progress in step with the batch inserted by
// the CTE ins (batchReturning) into a conversation (the SQL expressions
// workspaceID and conversationID): a question whose reply is not in the same
// batch starts an answer in progress, and a reply ends its own. Both run in
// the statement that inserts the messages, so an answer is in progress
// exactly while its question is stored and its reply is not. It is more
// CTEs for that statement (with a leading comma), or nothing for a batch
// that starts and ends no answer: a question stored with its reply, the
// turn of every JSON call, pays nothing for it.
func (b messageBatch) trackAnswers(workspaceID, conversationID string) string {
	if !b.tracksAnswers {
		return ""
	}
	return `, started AS (
	INSERT INTO answers_in_progress (reply_id, workspace_id, conversation_id, question_id, started_at)
	SELECT i.reply_id, ` + workspaceID + `, ` + conversationID + `, i.id, i.created_at FROM ins i
	WHERE i.reply_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM ins j WHERE j.id = i.reply_id)
	ON CONFLICT (reply_id) DO NOTHING
), ended AS (
	DELETE FROM answers_in_progress p USING ins i WHERE p.reply_id = i.id
)`
}

// tracksAnswers reports whether storing msgs starts or ends an answer in
// progress: a question whose reply is not among them, or a reply whose
// question is not.
func tracksAnswers(msgs []domain.Message) bool {
	for _, m := range msgs {
		if m.ReplyID != "" && !slices.ContainsFunc(msgs, func(r domain.Message) bool { return r.ID == m.ReplyID }) {
			return true
		}
		if m.Role == domain.RoleAssistant && !slices.ContainsFunc(msgs, func(q domain.Message) bool { return q.ReplyID == m.ID }) {
			return true
		}
	}
	return false
}

// values renders the batch as a VALUES list named v, with an ord column
// that keeps the messages' order (seq follows it), numbering its
// parameters after args and appending their values. Parameters in VALUES
// get no type from the INSERT, hence the casts.
func (b messageBatch) values(args []any) (string, []any) {
	var list strings.Builder
	list.WriteString("(VALUES ")
	for i, r := range b.rows {
		if i > 0 {
			list.WriteString(", ")
		}
		n := len(args)
		fmt.Fprintf(&list, "(%d, $%d::text, $%d::text, $%d::text, $%d::jsonb, $%d::integer, $%d::integer, $%d::timestamptz, $%d::json, $%d::integer[], $%d::text, $%d::text, $%d::text, $%d::text, $%d::boolean, $%d::text, $%d::text, $%d::text, $%d::text, $%d::text)",
			i, n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10, n+11, n+12, n+13, n+14, n+15, n+16, n+17, n+18, n+19)
		args = append(args, r.ID, r.Role, r.Content, r.Citations, r.TokensIn, r.TokensOut, r.CreatedAt,
			b.traces[i], r.TokenEnds.int32s(), r.Status, r.AuthorName, r.AuthorID, r.FallbackReason, r.OfferHandoff, r.InboundEventID,
			r.ReplyID, r.IdempotencyKey, r.RequestHash, r.Model)
	}
	list.WriteString(") AS v (ord, id, role, content, citations, tokens_in, tokens_out, created_at, trace, token_ends, status, author_name, author_id, fallback_reason, offer_handoff, inbound_event_id, reply_id, idempotency_key, request_hash, model)")
	return list.String(), args
}

// stored returns the messages as a read would give them back: the same,
// with their times as stored (UTC, microseconds). Nothing else changes on
// the way in, so nothing is decoded again.
func (b messageBatch) stored(msgs []domain.Message) []domain.Message {
	out := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		m.CreatedAt = b.rows[i].CreatedAt
		out[i] = m
	}
	return out
}
