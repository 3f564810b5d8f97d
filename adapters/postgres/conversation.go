package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.ConversationStore = (*Store)(nil)

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
	ContactNote    string    `gorm:"column:contact_note"`
	AssigneeID     *string   `gorm:"column:assignee_id"`
	LastMessage    string    `gorm:"column:last_message"`
	MessageCount   int       `gorm:"column:message_count"`
	LastActivityAt time.Time `gorm:"column:last_activity_at"`
	CreatedAt      time.Time `gorm:"column:created_at;autoCreateTime:false"`
	// HandoffRequestedAt is NULL until the first handoff request
	// (migration 00023).
	HandoffRequestedAt *time.Time `gorm:"column:handoff_requested_at"`
	// Outcome is read only (outcomeColumn): the worker writes outcomes.
	Outcome *string `gorm:"column:outcome;->"`
}

func (conversationRow) TableName() string { return "conversations" }

// conversationColumns is what conversation reads select: the row without
// anything else, plus the agent's slug from the join and the outcome the
// worker stored (outcomeColumn).
const conversationColumns = `c.id, c.workspace_id, c.agent_id, c.agent_slug, c.channel, c.status,
	c.verified_user_id, c.contact_name, c.contact_email, c.contact_note, c.assignee_id, c.last_message, c.message_count, c.last_activity_at, c.created_at, c.handoff_requested_at, ` + outcomeColumn

// conversationListColumns is conversationColumns less the workspace id, which
// a list already knows; in this order for positional scanning.
const conversationListColumns = `c.id, c.agent_id, c.agent_slug, c.channel, c.status,
	c.verified_user_id, c.contact_name, c.contact_email, c.contact_note, c.assignee_id, c.last_message, c.message_count, c.last_activity_at, c.created_at, c.handoff_requested_at`

func conversationFromDomain(c *domain.Conversation) conversationRow {
	return conversationRow{
		ID:                 c.ID,
		WorkspaceID:        c.WorkspaceID,
		AgentID:            c.AgentID,
		AgentSlug:          c.AgentSlug,
		Channel:            string(c.Channel),
		Status:             string(c.Status),
		VerifiedUserID:     nullString(c.VerifiedUserID),
		ContactName:        c.ContactName,
		ContactEmail:       c.ContactEmail,
		ContactNote:        c.ContactNote,
		AssigneeID:         nullString(c.AssigneeID),
		LastMessage:        c.LastMessage,
		MessageCount:       c.MessageCount,
		LastActivityAt:     dbTime(c.LastActivityAt),
		CreatedAt:          dbTime(c.CreatedAt),
		HandoffRequestedAt: nullTime(c.HandoffRequestedAt),
	}
}

func (r conversationRow) toDomain() (domain.Conversation, error) {
	return domain.Conversation{
		ID:                 r.ID,
		WorkspaceID:        r.WorkspaceID,
		AgentID:            r.AgentID,
		AgentSlug:          r.AgentSlug,
		Channel:            domain.Channel(r.Channel),
		Status:             domain.ConversationStatus(r.Status),
		VerifiedUserID:     deref(r.VerifiedUserID),
		ContactName:        r.ContactName,
		ContactEmail:       r.ContactEmail,
		ContactNote:        r.ContactNote,
		AssigneeID:         deref(r.AssigneeID),
		LastMessage:        r.LastMessage,
		MessageCount:       r.MessageCount,
		LastActivityAt:     r.LastActivityAt.UTC(),
		CreatedAt:          r.CreatedAt.UTC(),
		HandoffRequestedAt: timeOrZero(r.HandoffRequestedAt),
		Outcome:            domain.Outcome(deref(r.Outcome)),
	}, nil
}

func conversationPosition(c domain.Conversation) domain.Position {
	return domain.Position{Time: c.LastActivityAt, ID: c.ID}
}

// CreateConversation stores a new conversation, with the deliveries
// reporting it in the same transaction, and truncates its times to what is
// stored. Returns domain.ErrNotFound if the agent does not exist in the
// conversation's workspace.
func (s *Store) CreateConversation(ctx context.Context, conv *domain.Conversation, deliveries ...domain.Delivery) error {
	row := conversationFromDomain(conv)
	args := []any{row.ID, row.WorkspaceID, row.AgentID, row.AgentSlug, row.Channel, row.Status, row.VerifiedUserID,
		row.ContactName, row.ContactEmail, row.LastMessage, row.MessageCount, row.LastActivityAt, row.CreatedAt, row.ContactNote}
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
	contact_name, contact_email, last_message, message_count, last_activity_at, created_at, contact_note)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`

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
	args := []any{c.ID, c.WorkspaceID, c.AgentID, c.AgentSlug, c.Channel, c.Status, c.VerifiedUserID, c.LastMessage, c.MessageCount, c.LastActivityAt, c.CreatedAt, batch.fallbacks}
	values, args := batch.values(args)
	query := `WITH c AS (
	INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, verified_user_id, last_message, message_count, last_activity_at, created_at, fallback_count)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
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
