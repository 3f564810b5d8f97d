package postgres

import (
	"context"
	"time"

	"gorm.io/gorm/clause"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.InboundEventStore = (*Store)(nil)

// defaultStaleLimit bounds a sweep when the caller passes no limit.
const defaultStaleLimit = 100

type inboundEventRow struct {
	ID             string     `gorm:"column:id;primaryKey"`
	WorkspaceID    string     `gorm:"column:workspace_id"`
	Event          string     `gorm:"column:event"`
	SessionID      string     `gorm:"column:session_id"`
	Message        string     `gorm:"column:message"`
	IdempotencyKey *string    `gorm:"column:idempotency_key"`
	BodyHash       string     `gorm:"column:body_hash"`
	Status         string     `gorm:"column:status"`
	MessageID      *string    `gorm:"column:message_id"`
	Error          string     `gorm:"column:error"`
	Attempts       int        `gorm:"column:attempts"`
	ReceivedAt     time.Time  `gorm:"column:received_at"`
	ProcessedAt    *time.Time `gorm:"column:processed_at"`
}

func (inboundEventRow) TableName() string { return "inbound_events" }

func inboundEventFromDomain(ev domain.InboundEvent) inboundEventRow {
	return inboundEventRow{
		ID:             ev.ID,
		WorkspaceID:    ev.WorkspaceID,
		Event:          ev.Event,
		SessionID:      ev.SessionID,
		Message:        ev.Message,
		IdempotencyKey: nullString(ev.IdempotencyKey),
		BodyHash:       ev.BodyHash,
		Status:         string(ev.Status),
		MessageID:      nullString(ev.MessageID),
		Error:          ev.Error,
		Attempts:       ev.Attempts,
		ReceivedAt:     dbTime(ev.ReceivedAt),
		ProcessedAt:    dbTimePtr(ev.ProcessedAt),
	}
}

func (r inboundEventRow) toDomain() domain.InboundEvent {
	return domain.InboundEvent{
		ID:             r.ID,
		WorkspaceID:    r.WorkspaceID,
		Event:          r.Event,
		SessionID:      r.SessionID,
		Message:        r.Message,
		IdempotencyKey: deref(r.IdempotencyKey),
		BodyHash:       r.BodyHash,
		Status:         domain.InboundStatus(r.Status),
		MessageID:      deref(r.MessageID),
		Error:          r.Error,
		Attempts:       r.Attempts,
		ReceivedAt:     r.ReceivedAt.UTC(),
		ProcessedAt:    domainTimePtr(r.ProcessedAt),
	}
}

// SaveInboundEvent stores the event. When the workspace already has an event
// with the same non-empty IdempotencyKey, the INSERT does nothing (a
// concurrent sender's retry waits for the first insert to commit) and the
// existing event is returned with created false; the caller compares
// BodyHash. Returns domain.ErrNotFound if the workspace does not exist.
func (s *Store) SaveInboundEvent(ctx context.Context, ev domain.InboundEvent) (domain.InboundEvent, bool, error) {
	row := inboundEventFromDomain(ev)
	res := s.db.WithContext(ctx).Clauses(clause.OnConflict{
		Columns:     []clause.Column{{Name: "workspace_id"}, {Name: "idempotency_key"}},
		TargetWhere: clause.Where{Exprs: []clause.Expression{clause.Expr{SQL: "idempotency_key IS NOT NULL"}}},
		DoNothing:   true,
	}).Create(&row)
	if res.Error != nil {
		if foreignKeyViolation(res.Error) {
			return domain.InboundEvent{}, false, domain.NotFound("workspace")
		}
		if _, ok := uniqueViolation(res.Error); ok {
			return domain.InboundEvent{}, false, domain.Conflict("an inbound event with this id already exists")
		}
		return domain.InboundEvent{}, false, dbError("save inbound event", res.Error)
	}
	if res.RowsAffected == 1 {
		return row.toDomain(), true, nil
	}
	var existing inboundEventRow
	err := s.db.WithContext(ctx).
		Where("workspace_id = ? AND idempotency_key = ?", ev.WorkspaceID, ev.IdempotencyKey).
		Take(&existing).Error
	if err != nil {
		// Only possible if the other event was deleted in between.
		return domain.InboundEvent{}, false, notFoundOr(err, "inbound event", "save inbound event: read existing")
	}
	return existing.toDomain(), false, nil
}

// GetInboundEvent returns domain.ErrNotFound if no event has the id.
func (s *Store) GetInboundEvent(ctx context.Context, id string) (domain.InboundEvent, error) {
	var row inboundEventRow
	if err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error; err != nil {
		return domain.InboundEvent{}, notFoundOr(err, "inbound event", "get inbound event")
	}
	return row.toDomain(), nil
}

// MarkInboundEvent records the outcome of one processing attempt: status,
// the appended message (if any), the error text, one more attempt, and the
// time (kept as processed_at unless the event goes back to PENDING). Returns
// domain.ErrNotFound if no event has the id.
func (s *Store) MarkInboundEvent(ctx context.Context, id string, status domain.InboundStatus, messageID, errText string, at time.Time) error {
	var processedAt *time.Time
	if status != domain.InboundPending {
		processedAt = dbTimePtr(&at)
	}
	res := s.db.WithContext(ctx).Model(&inboundEventRow{}).Where("id = ?", id).Updates(map[string]any{
		"status":       string(status),
		"message_id":   nullString(messageID),
		"error":        errText,
		"attempts":     clause.Expr{SQL: "attempts + 1"},
		"processed_at": processedAt,
	})
	if res.Error != nil {
		return dbError("mark inbound event", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("inbound event")
	}
	return nil
}

// ListStaleInboundEvents returns ids of PENDING events received before the
// given time, oldest first, across workspaces (it serves the sweeper, not a
// tenant). A limit of 0 or less means 100.
func (s *Store) ListStaleInboundEvents(ctx context.Context, before time.Time, limit int) ([]string, error) {
	if limit <= 0 {
		limit = defaultStaleLimit
	}
	ids := []string{}
	err := s.db.WithContext(ctx).Model(&inboundEventRow{}).
		Where("status = ? AND received_at < ?", string(domain.InboundPending), dbTime(before)).
		Order("received_at, id").Limit(limit).Pluck("id", &ids).Error
	if err != nil {
		return nil, dbError("list stale inbound events", err)
	}
	return ids, nil
}
