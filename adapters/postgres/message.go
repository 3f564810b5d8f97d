package postgres

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"gorm.io/gorm"

	"github.com/conciergehq/concierge/core/domain"
)

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
	Model          *string   `gorm:"column:model"`
	TokenEnds      intArray  `gorm:"column:token_ends;type:integer[]"`
	Status         *string   `gorm:"column:status"`
	AuthorName     string    `gorm:"column:author_name"`
	AuthorID       *string   `gorm:"column:author_id"`
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
		Model:          nullString(m.Model),
		TokenEnds:      intArray(m.TokenEnds),
		Status:         nullString(string(m.Status)),
		AuthorName:     m.AuthorName,
		AuthorID:       nullString(m.AuthorID),
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
		Model:          deref(r.Model),
		TokenEnds:      []int(r.TokenEnds),
		Status:         domain.ConversationStatus(deref(r.Status)),
		AuthorName:     r.AuthorName,
		AuthorID:       deref(r.AuthorID),
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

// RecentMessages returns up to limit of the conversation's latest messages,
// oldest first. An unknown conversation simply has none.
func (s *Store) RecentMessages(ctx context.Context, workspaceID, conversationID string, limit int) ([]domain.Message, error) {
	var rows []messageRow
	err := s.db.WithContext(ctx).Where("workspace_id = ? AND conversation_id = ? AND role <> ?", workspaceID, conversationID, string(domain.RoleNote)).
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
		if err := tx.Where("workspace_id = ? AND conversation_id = ? AND role <> ?", workspaceID, conversationID, string(domain.RoleNote)).
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
