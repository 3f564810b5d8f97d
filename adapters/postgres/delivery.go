package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var (
	_ ports.DeliveryAttempts = (*Store)(nil)
	_ ports.DeliveryLog      = (*Store)(nil)
	_ ports.IntegrationStore = (*Store)(nil)
)

// defaultDueLimit bounds a sweep when the caller passes no limit.
const defaultDueLimit = 100

// deliveryColumns are read by every delivery query, in scanDelivery's order;
// the payload (the snapshot) is read only where a body is built from it.
const deliveryColumns = "id, workspace_id, target, event_type, conversation_id, status, attempts, next_attempt_at, last_error, created_at, delivered_at"

// scanDelivery reads deliveryColumns, then the payload when withPayload.
func scanDelivery(row pgx.Row, withPayload bool) (domain.Delivery, error) {
	var (
		d              domain.Delivery
		target, status string
		deliveredAt    *time.Time
		payload        []byte
	)
	dest := []any{&d.ID, &d.WorkspaceID, &target, &d.Type, &d.ConversationID, &status, &d.Attempts,
		&d.NextAttemptAt, &d.LastError, &d.CreatedAt, &deliveredAt}
	if withPayload {
		dest = append(dest, &payload)
	}
	if err := row.Scan(dest...); err != nil {
		return domain.Delivery{}, err
	}
	d.Target, d.Status = domain.DeliveryTarget(target), domain.DeliveryStatus(status)
	d.NextAttemptAt, d.CreatedAt = d.NextAttemptAt.UTC(), d.CreatedAt.UTC()
	if deliveredAt != nil {
		d.DeliveredAt = deliveredAt.UTC()
	}
	d.Conversation.ID, d.Conversation.WorkspaceID = d.ConversationID, d.WorkspaceID
	if withPayload {
		if err := decodeDeliveryPayload(payload, &d); err != nil {
			return domain.Delivery{}, err
		}
	}
	return d, nil
}

// ClaimDelivery counts an attempt of a PENDING delivery due by dueBy and
// holds it until `until`, in one conditional UPDATE: of two workers racing
// for the same delivery exactly one gets ok true. Otherwise the delivery is
// returned as stored, without its snapshot (nothing will be sent), with ok
// false. Returns domain.ErrNotFound if no delivery has the id.
func (s *Store) ClaimDelivery(ctx context.Context, id string, dueBy, until time.Time) (domain.Delivery, bool, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `UPDATE outbox SET attempts = attempts + 1, next_attempt_at = $3
		WHERE id = $1 AND status = 'PENDING' AND next_attempt_at <= $2
		RETURNING `+deliveryColumns+`, payload`, id, dbTime(dueBy), dbTime(until)), true)
	if err == nil {
		return d, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return domain.Delivery{}, false, dbError("claim delivery", err)
	}
	d, err = scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+` FROM outbox WHERE id = $1`, id), false)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Delivery{}, false, domain.NotFound("delivery")
	}
	if err != nil {
		return domain.Delivery{}, false, dbError("claim delivery: read", err)
	}
	return d, false, nil
}

// FinishAttempt logs the attempt and applies the outcome in one
// transaction. The log insert ignores an attempt number already logged (a
// retried commit), so the log never holds an attempt twice.
func (s *Store) FinishAttempt(ctx context.Context, d domain.Delivery, attempt *domain.DeliveryAttempt, out ports.DeliveryOutcome) (bool, error) {
	if !out.Status.Valid() {
		return false, fmt.Errorf("postgres: finish delivery %s: invalid status %q", d.ID, out.Status)
	}
	var applied bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if attempt != nil {
			_, err := tx.Exec(ctx, `INSERT INTO delivery_attempts (outbox_id, attempt, at, status_code, error, duration_ms)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (outbox_id, attempt) DO NOTHING`,
				d.ID, attempt.Attempt, dbTime(attempt.At), attempt.StatusCode, attempt.Error, attempt.Duration.Milliseconds())
			if err != nil {
				if foreignKeyViolation(err) {
					return domain.NotFound("delivery")
				}
				return dbError("log delivery attempt", err)
			}
		}
		var deliveredAt, nextAt *time.Time
		if out.Status == domain.DeliveryDelivered {
			deliveredAt = dbTimePtr(&out.At)
		}
		if out.Status == domain.DeliveryPending {
			nextAt = dbTimePtr(&out.NextAttemptAt)
		}
		tag, err := tx.Exec(ctx, `UPDATE outbox SET status = $2, next_attempt_at = COALESCE($3, next_attempt_at),
				last_error = $4, delivered_at = $5
			WHERE id = $1 AND status = 'PENDING' AND ($2 = 'DELIVERED' OR attempts = $6)`,
			d.ID, string(out.Status), nextAt, out.LastError, deliveredAt, d.Attempts)
		if err != nil {
			return dbError("finish delivery", err)
		}
		applied = tag.RowsAffected() == 1
		if !applied && attempt == nil {
			var one int
			err := tx.QueryRow(ctx, `SELECT 1 FROM outbox WHERE id = $1`, d.ID).Scan(&one)
			if errors.Is(err, pgx.ErrNoRows) {
				return domain.NotFound("delivery")
			}
			if err != nil {
				return dbError("finish delivery: read", err)
			}
		}
		return nil
	})
	if err != nil {
		return false, err
	}
	return applied, nil
}

// ListDueDeliveries returns PENDING deliveries due before `before`, longest
// overdue first, across workspaces (it serves the sweeper, not a tenant),
// without their snapshots. A limit of 0 or less means 100.
func (s *Store) ListDueDeliveries(ctx context.Context, before time.Time, limit int) ([]domain.Delivery, error) {
	if limit <= 0 {
		limit = defaultDueLimit
	}
	rows, err := s.pool.Query(ctx, `SELECT `+deliveryColumns+` FROM outbox
		WHERE status = 'PENDING' AND next_attempt_at < $1 ORDER BY next_attempt_at, id LIMIT $2`, dbTime(before), limit)
	if err != nil {
		return nil, dbError("list due deliveries", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Delivery, error) { return scanDelivery(r, false) })
	if err != nil {
		return nil, dbError("list due deliveries", err)
	}
	return out, nil
}

// ListDeliveries returns a page of the workspace's deliveries, newest first,
// without their snapshots: a list shows where each delivery stands, and
// GetDelivery the rest. The (workspace_id, created_at, id) index serves it.
func (s *Store) ListDeliveries(ctx context.Context, workspaceID string, filter domain.DeliveryFilter, page domain.PageRequest) (domain.Page[domain.Delivery], error) {
	limit := pageLimit(page)
	var sql strings.Builder
	args := []any{workspaceID}
	sql.WriteString("SELECT " + deliveryColumns + " FROM outbox WHERE workspace_id = $1")
	for _, f := range []struct{ column, value string }{
		{"target", string(filter.Target)}, {"status", string(filter.Status)}, {"event_type", filter.Type},
	} {
		if f.value != "" {
			args = append(args, f.value)
			fmt.Fprintf(&sql, " AND %s = $%d", f.column, len(args))
		}
	}
	if page.After != nil {
		args = append(args, dbTime(page.After.Time), page.After.ID)
		fmt.Fprintf(&sql, " AND (created_at, id) < ($%d, $%d)", len(args)-1, len(args))
	}
	args = append(args, limit+1)
	fmt.Fprintf(&sql, " ORDER BY created_at DESC, id DESC LIMIT $%d", len(args))
	rows, err := s.pool.Query(ctx, sql.String(), args...)
	if err != nil {
		return domain.Page[domain.Delivery]{}, dbError("list deliveries", err)
	}
	items, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.Delivery, error) { return scanDelivery(r, false) })
	if err != nil {
		return domain.Page[domain.Delivery]{}, dbError("list deliveries", err)
	}
	return makePage(items, limit, func(d domain.Delivery) (domain.Delivery, error) { return d, nil }, domain.Delivery.Position)
}

// GetDelivery returns the delivery with its snapshot and its attempts,
// oldest first. Returns domain.ErrNotFound unless it belongs to the
// workspace.
func (s *Store) GetDelivery(ctx context.Context, workspaceID, id string) (domain.Delivery, []domain.DeliveryAttempt, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `SELECT `+deliveryColumns+`, payload FROM outbox WHERE workspace_id = $1 AND id = $2`,
		workspaceID, id), true)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Delivery{}, nil, domain.NotFound("delivery")
	}
	if err != nil {
		return domain.Delivery{}, nil, dbError("get delivery", err)
	}
	rows, err := s.pool.Query(ctx, `SELECT attempt, at, status_code, error, duration_ms FROM delivery_attempts
		WHERE outbox_id = $1 ORDER BY attempt`, id)
	if err != nil {
		return domain.Delivery{}, nil, dbError("get delivery attempts", err)
	}
	attempts, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (domain.DeliveryAttempt, error) {
		a := domain.DeliveryAttempt{DeliveryID: id}
		var ms int64
		if err := r.Scan(&a.Attempt, &a.At, &a.StatusCode, &a.Error, &ms); err != nil {
			return a, err
		}
		a.At, a.Duration = a.At.UTC(), time.Duration(ms)*time.Millisecond
		return a, nil
	})
	if err != nil {
		return domain.Delivery{}, nil, dbError("get delivery attempts", err)
	}
	return d, attempts, nil
}

// RedriveDelivery moves a FAILED delivery back to PENDING, due at `at`.
// Returns domain.ErrNotFound unless it belongs to the workspace and
// domain.ErrConflict unless it is FAILED.
func (s *Store) RedriveDelivery(ctx context.Context, workspaceID, id string, at time.Time) (domain.Delivery, error) {
	d, err := scanDelivery(s.pool.QueryRow(ctx, `UPDATE outbox SET status = 'PENDING', next_attempt_at = $3
		WHERE workspace_id = $1 AND id = $2 AND status = 'FAILED' RETURNING `+deliveryColumns,
		workspaceID, id, dbTime(at)), false)
	if err == nil {
		return d, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return domain.Delivery{}, dbError("redrive delivery", err)
	}
	var status string
	err = s.pool.QueryRow(ctx, `SELECT status FROM outbox WHERE workspace_id = $1 AND id = $2`, workspaceID, id).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return domain.Delivery{}, domain.NotFound("delivery")
	}
	if err != nil {
		return domain.Delivery{}, dbError("redrive delivery: read", err)
	}
	return domain.Delivery{}, domain.Conflict("only a FAILED delivery can be retried; this one is %s", status)
}

// UpdateIntegrations applies p in one statement, so a concurrent rotation
// or first configuration cannot be half-applied, and returns the workspace
// as stored. Returns domain.ErrNotFound if the workspace does not exist.
func (s *Store) UpdateIntegrations(ctx context.Context, workspaceID string, p ports.IntegrationsPatch, at time.Time) (domain.Workspace, error) {
	var row workspaceRow
	res := s.db.WithContext(ctx).Raw(`UPDATE workspaces SET
			helpdesk_url = COALESCE(?::text, helpdesk_url),
			events_url = COALESCE(?::text, events_url),
			signing_secret = COALESCE(NULLIF(?::text, ''), CASE WHEN signing_secret = '' THEN NULLIF(?::text, '') END, signing_secret),
			auto_assign = COALESCE(?::boolean, auto_assign),
			updated_at = ?
		WHERE id = ?
		RETURNING id, name, plan, addons, webhook_secret, webhook_secret_hash, previous_webhook_secret,
			previous_webhook_secret_hash, previous_secret_expires_at, helpdesk_url, events_url, signing_secret, auto_assign, created_at, updated_at`,
		p.HelpdeskURL, p.EventsURL, p.SigningSecret, p.SigningSecretIfNone, p.AutoAssign, dbTime(at), workspaceID).Scan(&row)
	if res.Error != nil {
		return domain.Workspace{}, dbError("update integrations", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	return row.toDomain(), nil
}
