package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.ConversationStore = (*Store)(nil)

// lastMessageRunes bounds the stored preview, as the API guide promises.
const lastMessageRunes = 200

type conversationRow struct {
	ID          string `gorm:"column:id;primaryKey"`
	WorkspaceID string `gorm:"column:workspace_id"`
	AgentID     string `gorm:"column:agent_id"`
	// AgentSlug copies the agent's immutable slug (migration 00002), so lists
	// need no join.
	AgentSlug      string    `gorm:"column:agent_slug"`
	Channel        string    `gorm:"column:channel"`
	Status         string    `gorm:"column:status"`
	VerifiedUserID *string   `gorm:"column:verified_user_id"`
	ContactName    string    `gorm:"column:contact_name"`
	ContactEmail   string    `gorm:"column:contact_email"`
	LastMessage    string    `gorm:"column:last_message"`
	MessageCount   int       `gorm:"column:message_count"`
	LastActivityAt time.Time `gorm:"column:last_activity_at"`
	CreatedAt      time.Time `gorm:"column:created_at;autoCreateTime:false"`
}

func (conversationRow) TableName() string { return "conversations" }

// conversationColumns is what conversation reads select: the row without
// anything else, plus the agent's slug from the join.
const conversationColumns = `c.id, c.workspace_id, c.agent_id, c.agent_slug, c.channel, c.status,
	c.verified_user_id, c.contact_name, c.contact_email, c.last_message, c.message_count, c.last_activity_at, c.created_at`

// conversationListColumns is conversationColumns less the workspace id, which
// a list already knows; in this order for positional scanning.
const conversationListColumns = `c.id, c.agent_id, c.agent_slug, c.channel, c.status,
	c.verified_user_id, c.contact_name, c.contact_email, c.last_message, c.message_count, c.last_activity_at, c.created_at`

func conversationFromDomain(c *domain.Conversation) conversationRow {
	return conversationRow{
		ID:             c.ID,
		WorkspaceID:    c.WorkspaceID,
		AgentID:        c.AgentID,
		AgentSlug:      c.AgentSlug,
		Channel:        string(c.Channel),
		Status:         string(c.Status),
		VerifiedUserID: nullString(c.VerifiedUserID),
		ContactName:    c.ContactName,
		ContactEmail:   c.ContactEmail,
		LastMessage:    c.LastMessage,
		MessageCount:   c.MessageCount,
		LastActivityAt: dbTime(c.LastActivityAt),
		CreatedAt:      dbTime(c.CreatedAt),
	}
}

func (r conversationRow) toDomain() (domain.Conversation, error) {
	return domain.Conversation{
		ID:             r.ID,
		WorkspaceID:    r.WorkspaceID,
		AgentID:        r.AgentID,
		AgentSlug:      r.AgentSlug,
		Channel:        domain.Channel(r.Channel),
		Status:         domain.ConversationStatus(r.Status),
		VerifiedUserID: deref(r.VerifiedUserID),
		ContactName:    r.ContactName,
		ContactEmail:   r.ContactEmail,
		LastMessage:    r.LastMessage,
		MessageCount:   r.MessageCount,
		LastActivityAt: r.LastActivityAt.UTC(),
		CreatedAt:      r.CreatedAt.UTC(),
	}, nil
}

func conversationPosition(c domain.Conversation) domain.Position {
	return domain.Position{Time: c.LastActivityAt, ID: c.ID}
}

type messageRow struct {
	ID             string    `gorm:"column:id;primaryKey"`
	WorkspaceID    string    `gorm:"column:workspace_id"`
	ConversationID string    `gorm:"column:conversation_id"`
	Role           string    `gorm:"column:role"`
	Content        string    `gorm:"column:content"`
	Citations      []byte    `gorm:"column:citations;type:jsonb"`
	InboundEventID *string   `gorm:"column:inbound_event_id"`
	TokensIn       int       `gorm:"column:tokens_in"`
	TokensOut      int       `gorm:"column:tokens_out"`
	TokenEnds      intArray  `gorm:"column:token_ends;type:integer[]"`
	Status         *string   `gorm:"column:status"`
	AuthorName     string    `gorm:"column:author_name"`
	FallbackReason string    `gorm:"column:fallback_reason"`
	OfferHandoff   bool      `gorm:"column:offer_handoff"`
	ReplyID        *string   `gorm:"column:reply_id"`
	IdempotencyKey *string   `gorm:"column:idempotency_key"`
	RequestHash    *string   `gorm:"column:request_hash"`
	CreatedAt      time.Time `gorm:"column:created_at;autoCreateTime:false"`
	// Feedback is set by SetFeedback only (migration 00006), hence read-only.
	FeedbackRating  *string    `gorm:"column:feedback_rating;->"`
	FeedbackComment string     `gorm:"column:feedback_comment;->"`
	FeedbackAt      *time.Time `gorm:"column:feedback_at;->"`
}

func (messageRow) TableName() string { return "messages" }

// citationJSON is the stored shape of domain.Citation; the message keeps its
// citations for history even after the cited source is deleted.
type citationJSON struct {
	DocumentName string  `json:"documentName"`
	SourceID     string  `json:"sourceId"`
	SourceType   string  `json:"sourceType"`
	URL          string  `json:"url,omitempty"`
	Snippet      string  `json:"snippet"`
	Score        float64 `json:"score"`
}

func messageFromDomain(m domain.Message) (messageRow, error) {
	citations := make([]citationJSON, 0, len(m.Citations))
	for _, c := range m.Citations {
		citations = append(citations, citationJSON{
			DocumentName: c.DocumentName,
			SourceID:     c.SourceID,
			SourceType:   string(c.SourceType),
			URL:          c.URL,
			Snippet:      c.Snippet,
			Score:        c.Score,
		})
	}
	encoded, err := json.Marshal(citations) // never "null": an empty list is []
	if err != nil {
		return messageRow{}, fmt.Errorf("postgres: encode citations: %w", err)
	}
	return messageRow{
		ID:             m.ID,
		WorkspaceID:    m.WorkspaceID,
		ConversationID: m.ConversationID,
		Role:           string(m.Role),
		Content:        m.Content,
		Citations:      encoded,
		InboundEventID: nullString(m.InboundEventID),
		TokensIn:       m.TokensIn,
		TokensOut:      m.TokensOut,
		TokenEnds:      intArray(m.TokenEnds),
		Status:         nullString(string(m.Status)),
		AuthorName:     m.AuthorName,
		FallbackReason: string(m.FallbackReason),
		OfferHandoff:   m.OfferHandoff,
		ReplyID:        nullString(m.ReplyID),
		IdempotencyKey: nullString(m.IdempotencyKey),
		RequestHash:    nullString(m.RequestHash),
		CreatedAt:      dbTime(m.CreatedAt),
	}, nil
}

func (r messageRow) toDomain() (domain.Message, error) {
	var citations []citationJSON
	if err := json.Unmarshal(r.Citations, &citations); err != nil {
		return domain.Message{}, fmt.Errorf("postgres: decode citations of message %s: %w", r.ID, err)
	}
	m := domain.Message{
		ID:             r.ID,
		WorkspaceID:    r.WorkspaceID,
		ConversationID: r.ConversationID,
		Role:           domain.Role(r.Role),
		Content:        r.Content,
		InboundEventID: deref(r.InboundEventID),
		TokensIn:       r.TokensIn,
		TokensOut:      r.TokensOut,
		TokenEnds:      []int(r.TokenEnds),
		Status:         domain.ConversationStatus(deref(r.Status)),
		AuthorName:     r.AuthorName,
		FallbackReason: domain.FallbackReason(r.FallbackReason),
		OfferHandoff:   r.OfferHandoff,
		ReplyID:        deref(r.ReplyID),
		IdempotencyKey: deref(r.IdempotencyKey),
		RequestHash:    deref(r.RequestHash),
		CreatedAt:      r.CreatedAt.UTC(),
	}
	if r.FeedbackRating != nil && r.FeedbackAt != nil {
		m.Feedback = &domain.Feedback{Rating: domain.Rating(*r.FeedbackRating), Comment: r.FeedbackComment, UpdatedAt: r.FeedbackAt.UTC()}
	}
	for _, c := range citations {
		m.Citations = append(m.Citations, domain.Citation{
			DocumentName: c.DocumentName,
			SourceID:     c.SourceID,
			SourceType:   domain.SourceType(c.SourceType),
			URL:          c.URL,
			Snippet:      c.Snippet,
			Score:        c.Score,
		})
	}
	return m, nil
}

func messagePosition(m domain.Message) domain.Position {
	return domain.Position{Time: m.CreatedAt, ID: m.ID}
}

// CreateConversation stores a new conversation, with the deliveries
// reporting it in the same transaction, and truncates its times to what is
// stored. Returns domain.ErrNotFound if the agent does not exist in the
// conversation's workspace.
func (s *Store) CreateConversation(ctx context.Context, conv *domain.Conversation, deliveries ...domain.Delivery) error {
	row := conversationFromDomain(conv)
	args := []any{row.ID, row.WorkspaceID, row.AgentID, row.AgentSlug, row.Channel, row.Status, row.VerifiedUserID,
		row.ContactName, row.ContactEmail, row.LastMessage, row.MessageCount, row.LastActivityAt, row.CreatedAt}
	err := s.withDeliveries(ctx, deliveries, func(q querier) (bool, error) {
		_, err := q.Exec(ctx, createConversationSQL, args...)
		return err == nil, err
	})
	if err != nil {
		if foreignKeyViolation(err) {
			return domain.NotFound("agent")
		}
		if _, ok := uniqueViolation(err); ok {
			return domain.Conflict("a conversation with this id already exists")
		}
		return dbError("create conversation", err)
	}
	conv.LastActivityAt, conv.CreatedAt = row.LastActivityAt, row.CreatedAt
	return nil
}

const createConversationSQL = `INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, verified_user_id,
	contact_name, contact_email, last_message, message_count, last_activity_at, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`

// GetConversation returns domain.ErrNotFound unless the conversation belongs
// to the workspace.
func (s *Store) GetConversation(ctx context.Context, workspaceID, id string) (domain.Conversation, error) {
	var row conversationRow
	err := s.db.WithContext(ctx).Table("conversations AS c").Select(conversationColumns).
		Where("c.workspace_id = ? AND c.id = ?", workspaceID, id).
		Take(&row).Error
	if err != nil {
		return domain.Conversation{}, notFoundOr(err, "conversation", "get conversation")
	}
	return row.toDomain()
}

// GetConversationBySession looks a conversation up by its session id alone:
// the id is a 128-bit capability. Returns domain.ErrNotFound.
func (s *Store) GetConversationBySession(ctx context.Context, sessionID string) (domain.Conversation, error) {
	var row conversationRow
	err := s.db.WithContext(ctx).Table("conversations AS c").Select(conversationColumns).
		Where("c.id = ?", sessionID).
		Take(&row).Error
	if err != nil {
		return domain.Conversation{}, notFoundOr(err, "conversation", "get conversation by session")
	}
	return row.toDomain()
}

// listConversationsQuery builds the keyset query of ListConversations; its
// predicates keep to the (workspace, [agent|status,] last_activity_at, id)
// indexes, which the scale test checks with EXPLAIN.
func listConversationsQuery(workspaceID string, filter domain.ConversationFilter, after *domain.Position, limit int) (string, []any) {
	k := newKeysetQuery("SELECT "+conversationListColumns+" FROM conversations AS c WHERE c.workspace_id = $1", workspaceID)
	k.filter("c.agent_id", filter.AgentID)
	k.filter("c.status", string(filter.Status))
	return k.page("c.last_activity_at", "c.id", after, limit)
}

// ListConversations returns a page ordered by (last_activity_at, id), newest
// first. Each filter shape has an index ending in that order, so a page reads
// about limit+1 index entries whatever the table size.
func (s *Store) ListConversations(ctx context.Context, workspaceID string, filter domain.ConversationFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	// The busiest read of the API: plain pgx with positional scanning, which
	// costs a fraction of gorm's reflection per row.
	limit := pageLimit(page)
	query, args := listConversationsQuery(workspaceID, filter, page.After, limit+1)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return domain.Page[domain.Conversation]{}, dbError("list conversations", err)
	}
	defer rows.Close()
	// Scan straight into the page's items: no row structs to copy, and no
	// per-row heap escape.
	items := make([]domain.Conversation, 0, limit+1)
	var channel, status string
	var verified *string
	for rows.Next() {
		items = append(items, domain.Conversation{WorkspaceID: workspaceID})
		c := &items[len(items)-1]
		if err := rows.Scan(&c.ID, &c.AgentID, &c.AgentSlug, &channel, &status,
			&verified, &c.ContactName, &c.ContactEmail, &c.LastMessage, &c.MessageCount, &c.LastActivityAt, &c.CreatedAt); err != nil {
			return domain.Page[domain.Conversation]{}, dbError("list conversations", err)
		}
		c.Channel, c.Status, c.VerifiedUserID = domain.Channel(channel), domain.ConversationStatus(status), deref(verified)
		c.LastActivityAt, c.CreatedAt = c.LastActivityAt.UTC(), c.CreatedAt.UTC()
	}
	if err := rows.Err(); err != nil {
		return domain.Page[domain.Conversation]{}, dbError("list conversations", err)
	}
	out := domain.Page[domain.Conversation]{Items: items, HasMore: len(items) > limit}
	if out.HasMore {
		out.Items = items[:limit]
		next := conversationPosition(out.Items[limit-1])
		out.Next = &next
	}
	return out, nil
}

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

// ListMessages returns a page of a conversation's messages, oldest first.
//
// Messages are ordered by seq, their append order, which clocks cannot
// disturb; the cursor's message id locates the position (messages are never
// deleted one by one, so it stays valid). Returns domain.ErrNotFound unless
// the conversation belongs to the workspace, and domain.ErrInvalidInput for a
// cursor that is not a message of this conversation.
func (s *Store) ListMessages(ctx context.Context, workspaceID, conversationID string, page domain.PageRequest) (domain.Page[domain.Message], error) {
	limit := pageLimit(page)
	afterID := ""
	if page.After != nil {
		afterID = page.After.ID
	}
	rows, err := s.messageRows(ctx, workspaceID, conversationID, afterID, false, limit+1)
	if err != nil {
		return domain.Page[domain.Message]{}, dbError("list messages", err)
	}
	if len(rows) == 0 {
		// Messages exist only in their conversation's workspace, so rows prove
		// the conversation is visible; only an empty page needs the check.
		if err := s.checkEmptyMessagePage(ctx, workspaceID, conversationID, page.After); err != nil {
			return domain.Page[domain.Message]{}, err
		}
	}
	return makePage(rows, limit, messageRow.toDomain, messagePosition)
}

// messageRows reads up to limit of the conversation's messages in append
// order (seq): from its first, or from the one with id fromID, itself
// included or not. A fromID that is not a message of the conversation
// reads nothing.
func (s *Store) messageRows(ctx context.Context, workspaceID, conversationID, fromID string, inclusive bool, limit int) ([]messageRow, error) {
	q := s.db.WithContext(ctx).Where("workspace_id = ? AND conversation_id = ?", workspaceID, conversationID)
	if fromID != "" {
		op := ">"
		if inclusive {
			op = ">="
		}
		q = q.Where("seq "+op+" (SELECT m.seq FROM messages AS m WHERE m.workspace_id = ? AND m.conversation_id = ? AND m.id = ?)",
			workspaceID, conversationID, fromID)
	}
	var rows []messageRow
	err := q.Order("seq").Limit(limit).Find(&rows).Error
	return rows, err
}

// checkEmptyMessagePage says why a read of a conversation's messages found
// none: domain.ErrNotFound unless the conversation is the workspace's, and
// a cursor error when after is not one of its messages; nil when there is
// simply nothing (more) to read.
func (s *Store) checkEmptyMessagePage(ctx context.Context, workspaceID, conversationID string, after *domain.Position) error {
	var found struct {
		Conversation bool
		Cursor       bool
	}
	cursorID := ""
	if after != nil {
		cursorID = after.ID
	}
	err := s.db.WithContext(ctx).Raw(`SELECT
			EXISTS (SELECT 1 FROM conversations WHERE workspace_id = ? AND id = ?) AS conversation,
			EXISTS (SELECT 1 FROM messages WHERE workspace_id = ? AND conversation_id = ? AND id = ?) AS cursor`,
		workspaceID, conversationID, workspaceID, conversationID, cursorID).Scan(&found).Error
	switch {
	case err != nil:
		return dbError("list messages: check conversation", err)
	case !found.Conversation:
		return domain.NotFound("conversation")
	case after != nil && !found.Cursor:
		return domain.InvalidField("cursor", "is not a position in this conversation")
	}
	return nil
}

// StartConversation inserts the conversation, already counting its first
// messages, and those messages in one statement: the foreign key from a
// message to the conversation is checked at the end of the statement, when
// all the rows exist. Deliveries make it a transaction with their outbox
// rows.
func (s *Store) StartConversation(ctx context.Context, conv *domain.Conversation, first []domain.Message, deliveries ...domain.Delivery) ([]domain.Message, error) {
	if len(first) == 0 {
		return nil, errors.New("postgres: start conversation: no messages")
	}
	if first[0].WorkspaceID != conv.WorkspaceID || first[0].ConversationID != conv.ID {
		return nil, errors.New("postgres: start conversation: the messages are another conversation's")
	}
	if err := refuseInboundEvents(first); err != nil {
		return nil, err
	}
	batch, err := newMessageBatch(first)
	if err != nil {
		return nil, err
	}
	c := conversationFromDomain(conv)
	c.MessageCount, c.LastMessage, c.LastActivityAt = len(first), batch.preview, batch.latest
	args := []any{c.ID, c.WorkspaceID, c.AgentID, c.AgentSlug, c.Channel, c.Status, c.VerifiedUserID, c.LastMessage, c.MessageCount, c.LastActivityAt, c.CreatedAt}
	values, args := batch.values(args)
	query := `WITH c AS (
	INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, verified_user_id, last_message, message_count, last_activity_at, created_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
	RETURNING id, workspace_id
), ins AS (
	INSERT INTO messages (` + batchColumns + `)
	SELECT ` + batchSelect("c.workspace_id", "c.id") + ` FROM c, ` + values + ` ORDER BY v.ord
	` + batchReturning + `
)` + batch.trackAnswers("$2", "$1") + `
SELECT count(*) FROM ins`
	err = s.withDeliveries(ctx, deliveries, func(q querier) (bool, error) {
		_, err := q.Exec(ctx, query, args...)
		return err == nil, err
	})
	if err != nil {
		if foreignKeyViolation(err) {
			return nil, domain.NotFound("agent")
		}
		if constraint, ok := uniqueViolation(err); ok {
			if constraint == idempotencyKeyIndex {
				return nil, messageConflict(constraint)
			}
			return nil, domain.Conflict("a conversation or message with this id already exists")
		}
		return nil, dbError("start conversation", err)
	}
	conv.MessageCount, conv.LastMessage, conv.LastActivityAt, conv.CreatedAt = c.MessageCount, c.LastMessage, c.LastActivityAt, c.CreatedAt
	return batch.stored(first), nil
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
	args := []any{b.rows[0].WorkspaceID, b.rows[0].ConversationID, string(while), b.latest, b.preview}
	values, args := b.values(args)
	err = s.withDeliveries(ctx, deliveries, func(q querier) (bool, error) {
		err := q.QueryRow(ctx, appendSQL(values, b), args...).Scan(&created, &status)
		return created, err
	})
	if constraint, ok := uniqueViolation(err); ok {
		return false, nil, messageConflict(constraint)
	}
	return created, status, dbError(op, err)
}

// appendSQL is the statement that appends the messages of values (see
// messageBatch.values; $1 and $2 are the workspace and conversation, $3 the
// state the caller decided under, $4 and $5 the newest message's time and
// preview). It locks the conversation's row first, so appends and state
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
const batchColumns = `id, workspace_id, conversation_id, role, content, citations, tokens_in, tokens_out, created_at, trace, token_ends, status, author_name, fallback_reason, offer_handoff, inbound_event_id, reply_id, idempotency_key, request_hash`

func batchSelect(workspaceID, conversationID string) string {
	return `v.id, ` + workspaceID + `, ` + conversationID + `, v.role, v.content, v.citations, v.tokens_in, v.tokens_out, v.created_at, v.trace, v.token_ends, v.status, v.author_name, v.fallback_reason, v.offer_handoff, v.inbound_event_id, v.reply_id, v.idempotency_key, v.request_hash`
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
		fmt.Fprintf(&list, "(%d, $%d::text, $%d::text, $%d::text, $%d::jsonb, $%d::integer, $%d::integer, $%d::timestamptz, $%d::json, $%d::integer[], $%d::text, $%d::text, $%d::text, $%d::boolean, $%d::text, $%d::text, $%d::text, $%d::text)",
			i, n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10, n+11, n+12, n+13, n+14, n+15, n+16, n+17)
		args = append(args, r.ID, r.Role, r.Content, r.Citations, r.TokensIn, r.TokensOut, r.CreatedAt,
			b.traces[i], r.TokenEnds.int32s(), r.Status, r.AuthorName, r.FallbackReason, r.OfferHandoff, r.InboundEventID,
			r.ReplyID, r.IdempotencyKey, r.RequestHash)
	}
	list.WriteString(") AS v (ord, id, role, content, citations, tokens_in, tokens_out, created_at, trace, token_ends, status, author_name, fallback_reason, offer_handoff, inbound_event_id, reply_id, idempotency_key, request_hash)")
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

// RecentMessages returns up to limit of the conversation's latest messages,
// oldest first. An unknown conversation simply has none.
func (s *Store) RecentMessages(ctx context.Context, workspaceID, conversationID string, limit int) ([]domain.Message, error) {
	var rows []messageRow
	err := s.db.WithContext(ctx).Where("workspace_id = ? AND conversation_id = ?", workspaceID, conversationID).
		Order("seq DESC").Limit(limit).Find(&rows).Error
	if err != nil {
		return nil, dbError("recent messages", err)
	}
	out := make([]domain.Message, len(rows))
	for i, r := range rows {
		m, err := r.toDomain()
		if err != nil {
			return nil, err
		}
		out[len(rows)-1-i] = m
	}
	return out, nil
}

// HandoffTranscript reads the conversation's message count and its latest
// messages in one REPEATABLE READ snapshot, so they describe the same moment.
func (s *Store) HandoffTranscript(ctx context.Context, workspaceID, conversationID string, limit int) (domain.HandoffTranscript, error) {
	var out domain.HandoffTranscript
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var conv conversationRow
		if err := tx.Select("message_count").Where("workspace_id = ? AND id = ?", workspaceID, conversationID).Take(&conv).Error; err != nil {
			return err
		}
		var rows []messageRow
		if err := tx.Where("workspace_id = ? AND conversation_id = ?", workspaceID, conversationID).
			Order("seq DESC").Limit(limit).Find(&rows).Error; err != nil {
			return err
		}
		out.MessageCount = conv.MessageCount
		out.Messages = make([]domain.Message, len(rows))
		for i, r := range rows {
			m, err := r.toDomain()
			if err != nil {
				return err
			}
			out.Messages[len(rows)-1-i] = m
		}
		return nil
	}, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		return domain.HandoffTranscript{}, notFoundOr(err, "conversation", "handoff transcript")
	}
	return out, nil
}

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
	var name, email string
	if change.Contact != nil {
		name, email = change.Contact.Name, change.Contact.Email
	}
	var (
		conv    domain.Conversation
		changed bool
	)
	move := func(q querier) (bool, error) {
		var channel, status string
		var verified *string
		err := q.QueryRow(ctx, changeStatusSQL,
			change.WorkspaceID, change.ConversationID, string(change.To), name, email, notice.CreatedAt, states,
			notice.ID, notice.Content, notice.AuthorName, change.MessageCount,
		).Scan(&conv.ID, &conv.AgentID, &conv.AgentSlug, &channel, &status, &verified, &conv.ContactName, &conv.ContactEmail,
			&conv.LastMessage, &conv.MessageCount, &conv.LastActivityAt, &conv.CreatedAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		changed = true
		conv.WorkspaceID, conv.Channel, conv.Status, conv.VerifiedUserID = change.WorkspaceID, domain.Channel(channel), domain.ConversationStatus(status), deref(verified)
		conv.LastActivityAt, conv.CreatedAt = conv.LastActivityAt.UTC(), conv.CreatedAt.UTC()
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
		return conv, false, err
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
	args := []any{b.rows[0].WorkspaceID, b.rows[0].ConversationID, string(while), b.latest, b.preview}
	values, args := b.values(args)
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
// its message count is $11 (NULL: any) and, only then, inserts the SYSTEM
// notice; it returns the updated row (conversationListColumns), or no row
// when nothing changed. The conditions are on the updated row itself, so a
// concurrent append or change that commits first is seen (PostgreSQL
// re-checks them on the newest version of a row it had to wait for).
const changeStatusSQL = `WITH upd AS (
	UPDATE conversations AS c SET
		status = $3,
		contact_name = CASE WHEN $4 = '' THEN c.contact_name ELSE $4 END,
		contact_email = CASE WHEN $5 = '' THEN c.contact_email ELSE $5 END,
		message_count = c.message_count + 1,
		last_activity_at = GREATEST(c.last_activity_at, $6)
	WHERE c.workspace_id = $1 AND c.id = $2 AND c.status = ANY($7::text[])
		AND ($11::int IS NULL OR c.message_count = $11::int)
	RETURNING ` + conversationListColumns + `
), ins AS (
	INSERT INTO messages (id, workspace_id, conversation_id, role, content, citations, created_at, status, author_name)
	SELECT $8, $1, $2, 'SYSTEM', $9, '[]', $6, $3, $10 FROM upd
)
SELECT * FROM upd`
