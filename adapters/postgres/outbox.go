package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/gorm"

	"github.com/conciergehq/concierge/core/domain"
)

// querier is what a statement needs from a pool or a transaction.
type querier interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// gormQuerier runs this package's pgx-style statements (insertDeliveries)
// on the connection of a gorm transaction, so a change written through
// gorm stores what reports it in the same transaction. database/sql's row
// scans as pgx's does; the command tag is not read.
type gormQuerier struct{ conn gorm.ConnPool }

func (q gormQuerier) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	_, err := q.conn.ExecContext(ctx, sql, args...)
	return pgconn.CommandTag{}, err
}

func (q gormQuerier) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return q.conn.QueryRowContext(ctx, sql, args...)
}

// withDeliveries runs write and then stores the deliveries reporting what
// it wrote, in one transaction, so a change and what reports it are stored
// together or not at all; write says whether it wrote anything, and the
// deliveries are stored only if it did. Without deliveries, which is most
// chat turns, write runs alone on the pool: its one statement is atomic by
// itself, and one round trip instead of a transaction's.
func (s *Store) withDeliveries(ctx context.Context, deliveries []domain.Delivery, write func(q querier) (wrote bool, err error)) error {
	if len(deliveries) == 0 {
		_, err := write(s.pool)
		return err
	}
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		wrote, err := write(tx)
		if err != nil || !wrote {
			return err
		}
		return insertDeliveries(ctx, tx, deliveries)
	})
}

// deliveryPayload is the stored snapshot of a delivery (outbox.payload): the
// conversation, message, contact and transcript as they were when the change
// happened, so every attempt sends the same body.
type deliveryPayload struct {
	Conversation conversationSnapshot `json:"conversation"`
	Message      *messageSnapshot     `json:"message,omitempty"`
	Contact      *contactSnapshot     `json:"contact,omitempty"`
	Transcript   []messageSnapshot    `json:"transcript,omitempty"`
}

type conversationSnapshot struct {
	ID             string    `json:"id"`
	AgentID        string    `json:"agentId"`
	AgentSlug      string    `json:"agentSlug"`
	Channel        string    `json:"channel"`
	Status         string    `json:"status"`
	VerifiedUserID string    `json:"verifiedUserId,omitempty"`
	ContactName    string    `json:"contactName,omitempty"`
	ContactEmail   string    `json:"contactEmail,omitempty"`
	AssigneeID     string    `json:"assigneeId,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
}

type messageSnapshot struct {
	ID         string         `json:"id"`
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	Citations  []citationJSON `json:"citations"`
	Status     string         `json:"status,omitempty"`
	AuthorName string         `json:"authorName,omitempty"`
	CreatedAt  time.Time      `json:"createdAt"`
}

type contactSnapshot struct {
	Name  string `json:"name"`
	Email string `json:"email"`
	Note  string `json:"note"`
}

func snapshotMessage(m domain.Message) messageSnapshot {
	out := messageSnapshot{
		ID: m.ID, Role: string(m.Role), Content: m.Content, Citations: make([]citationJSON, 0, len(m.Citations)),
		Status: string(m.Status), AuthorName: m.AuthorName, CreatedAt: m.CreatedAt.UTC(),
	}
	for _, c := range m.Citations {
		out.Citations = append(out.Citations, citationJSON{
			DocumentName: c.DocumentName, SourceID: c.SourceID, SourceType: string(c.SourceType),
			URL: c.URL, Snippet: c.Snippet, Score: c.Score,
		})
	}
	return out
}

func (m messageSnapshot) toDomain(workspaceID, conversationID string) domain.Message {
	out := domain.Message{
		ID: m.ID, WorkspaceID: workspaceID, ConversationID: conversationID, Role: domain.Role(m.Role),
		Content: m.Content, Status: domain.ConversationStatus(m.Status), AuthorName: m.AuthorName, CreatedAt: m.CreatedAt,
	}
	for _, c := range m.Citations {
		out.Citations = append(out.Citations, domain.Citation{
			DocumentName: c.DocumentName, SourceID: c.SourceID, SourceType: domain.SourceType(c.SourceType),
			URL: c.URL, Snippet: c.Snippet, Score: c.Score,
		})
	}
	return out
}

func encodeDeliveryPayload(d domain.Delivery) ([]byte, error) {
	c := d.Conversation
	p := deliveryPayload{Conversation: conversationSnapshot{
		ID: c.ID, AgentID: c.AgentID, AgentSlug: c.AgentSlug, Channel: string(c.Channel), Status: string(c.Status),
		VerifiedUserID: c.VerifiedUserID, ContactName: c.ContactName, ContactEmail: c.ContactEmail, AssigneeID: c.AssigneeID,
		CreatedAt: c.CreatedAt.UTC(),
	}}
	if d.Message != nil {
		m := snapshotMessage(*d.Message)
		p.Message = &m
	}
	if d.Contact != nil {
		p.Contact = &contactSnapshot{Name: d.Contact.Name, Email: d.Contact.Email, Note: d.Contact.Note}
	}
	for _, m := range d.Transcript {
		p.Transcript = append(p.Transcript, snapshotMessage(m))
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("postgres: encode delivery %s: %w", d.ID, err)
	}
	return b, nil
}

// decodeDeliveryPayload fills d's snapshot fields from the stored payload.
func decodeDeliveryPayload(raw []byte, d *domain.Delivery) error {
	var p deliveryPayload
	if err := json.Unmarshal(raw, &p); err != nil {
		return fmt.Errorf("postgres: decode delivery %s: %w", d.ID, err)
	}
	c := p.Conversation
	d.Conversation = domain.Conversation{
		ID: c.ID, WorkspaceID: d.WorkspaceID, AgentID: c.AgentID, AgentSlug: c.AgentSlug, Channel: domain.Channel(c.Channel),
		Status: domain.ConversationStatus(c.Status), VerifiedUserID: c.VerifiedUserID, ContactName: c.ContactName,
		ContactEmail: c.ContactEmail, AssigneeID: c.AssigneeID, CreatedAt: c.CreatedAt,
	}
	if p.Message != nil {
		m := p.Message.toDomain(d.WorkspaceID, c.ID)
		d.Message = &m
	}
	if p.Contact != nil {
		d.Contact = &domain.HandoffContact{Name: p.Contact.Name, Email: p.Contact.Email, Note: p.Contact.Note}
	}
	for _, m := range p.Transcript {
		d.Transcript = append(d.Transcript, m.toDomain(d.WorkspaceID, c.ID))
	}
	return nil
}

// insertDeliveries writes outbox rows through q, which is the transaction of
// the change they report, so a change and its deliveries are stored together
// or not at all. One statement for all of them: one round trip.
func insertDeliveries(ctx context.Context, q querier, ds []domain.Delivery) error {
	if len(ds) == 0 {
		return nil
	}
	const columns = 10
	var sql strings.Builder
	sql.WriteString(`INSERT INTO outbox (id, workspace_id, target, event_type, conversation_id, payload, status, attempts, next_attempt_at, created_at) VALUES `)
	args := make([]any, 0, columns*len(ds))
	for i, d := range ds {
		payload, err := encodeDeliveryPayload(d)
		if err != nil {
			return err
		}
		status := d.Status
		if status == "" {
			status = domain.DeliveryPending
		}
		if i > 0 {
			sql.WriteString(", ")
		}
		sql.WriteByte('(')
		for j := range columns {
			if j > 0 {
				sql.WriteString(", ")
			}
			sql.WriteString("$" + strconv.Itoa(i*columns+j+1))
		}
		sql.WriteByte(')')
		args = append(args, d.ID, d.WorkspaceID, string(d.Target), d.Type, d.ConversationID, payload, string(status), d.Attempts,
			dbTime(d.NextAttemptAt), dbTime(d.CreatedAt))
	}
	if _, err := q.Exec(ctx, sql.String(), args...); err != nil {
		return dbError("insert delivery", err)
	}
	return nil
}
