package postgres

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.AvailabilityStore = (*Store)(nil)

// SetAvailable updates the one membership row and reads it back joined
// with its user in the same statement, so the member returned is the row
// as written.
func (s *Store) SetAvailable(ctx context.Context, workspaceID, userID string, available bool) (domain.Member, error) {
	var rows []memberRow
	err := s.db.WithContext(ctx).Raw(`WITH m AS (
		UPDATE memberships SET available = ? WHERE workspace_id = ? AND user_id = ?
		RETURNING workspace_id, user_id, role, available, created_at)
	SELECT m.workspace_id, m.user_id, u.email, u.name, m.role, m.available, m.created_at
	FROM m JOIN users u ON u.id = m.user_id`, available, workspaceID, userID).Scan(&rows).Error
	if err != nil {
		return domain.Member{}, dbError("set availability", err)
	}
	if len(rows) == 0 {
		return domain.Member{}, domain.NotFound("member")
	}
	return rows[0].toDomain(), nil
}

// AnyAvailable reads the partial index memberships_available_idx (00020).
func (s *Store) AnyAvailable(ctx context.Context, workspaceID string) (bool, error) {
	var found bool
	err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM memberships WHERE workspace_id = $1 AND available)`, workspaceID).Scan(&found)
	if err != nil {
		return false, dbError("any member available", err)
	}
	return found, nil
}
