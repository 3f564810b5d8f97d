package postgres

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.APIKeyStore = (*Store)(nil)

// touchInterval is how stale last_used_at must be before TouchAPIKey writes
// it again: minute precision is plenty for people, and it spares the hot path
// a write per request.
const touchInterval = time.Minute

type apiKeyRow struct {
	ID            string     `gorm:"column:id;primaryKey"`
	WorkspaceID   string     `gorm:"column:workspace_id"`
	Name          string     `gorm:"column:name"`
	DisplayPrefix string     `gorm:"column:display_prefix"`
	Hash          string     `gorm:"column:hash"`
	CreatedAt     time.Time  `gorm:"column:created_at;autoCreateTime:false"`
	LastUsedAt    *time.Time `gorm:"column:last_used_at"`
	RevokedAt     *time.Time `gorm:"column:revoked_at"`
}

func (apiKeyRow) TableName() string { return "api_keys" }

func apiKeyFromDomain(k domain.APIKey) apiKeyRow {
	return apiKeyRow{
		ID:            k.ID,
		WorkspaceID:   k.WorkspaceID,
		Name:          k.Name,
		DisplayPrefix: k.DisplayPrefix,
		Hash:          k.Hash,
		CreatedAt:     dbTime(k.CreatedAt),
		LastUsedAt:    dbTimePtr(k.LastUsedAt),
		RevokedAt:     dbTimePtr(k.RevokedAt),
	}
}

func (r apiKeyRow) toDomain() domain.APIKey {
	return domain.APIKey{
		ID:            r.ID,
		WorkspaceID:   r.WorkspaceID,
		Name:          r.Name,
		DisplayPrefix: r.DisplayPrefix,
		Hash:          r.Hash,
		CreatedAt:     r.CreatedAt.UTC(),
		LastUsedAt:    domainTimePtr(r.LastUsedAt),
		RevokedAt:     domainTimePtr(r.RevokedAt),
	}
}

// CreateAPIKey stores a key. Returns domain.ErrNotFound if its workspace does
// not exist, domain.ErrConflict if the id or hash is already stored.
func (s *Store) CreateAPIKey(ctx context.Context, key domain.APIKey) error {
	row := apiKeyFromDomain(key)
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		if foreignKeyViolation(err) {
			return domain.NotFound("workspace")
		}
		if _, ok := uniqueViolation(err); ok {
			return domain.Conflict("an API key with this id or secret already exists")
		}
		return dbError("create api key", err)
	}
	return nil
}

// FindAPIKeyByHash returns the key, revoked or not, whose hash matches.
// Returns domain.ErrNotFound when none does.
func (s *Store) FindAPIKeyByHash(ctx context.Context, hash string) (domain.APIKey, error) {
	var row apiKeyRow
	if err := s.db.WithContext(ctx).Where("hash = ?", hash).Take(&row).Error; err != nil {
		return domain.APIKey{}, notFoundOr(err, "API key", "find api key")
	}
	return row.toDomain(), nil
}

// ListAPIKeys returns a workspace's keys, newest first (an empty slice when it
// has none).
func (s *Store) ListAPIKeys(ctx context.Context, workspaceID string) ([]domain.APIKey, error) {
	var rows []apiKeyRow
	err := s.db.WithContext(ctx).Where("workspace_id = ?", workspaceID).
		Order("created_at DESC, id DESC").Find(&rows).Error
	if err != nil {
		return nil, dbError("list api keys", err)
	}
	keys := make([]domain.APIKey, 0, len(rows))
	for _, r := range rows {
		keys = append(keys, r.toDomain())
	}
	return keys, nil
}

// RevokeAPIKey marks the key revoked at the given time and returns it; a key
// revoked before keeps its first revocation time. Returns domain.ErrNotFound
// if the workspace has no such key.
func (s *Store) RevokeAPIKey(ctx context.Context, workspaceID, keyID string, at time.Time) (domain.APIKey, error) {
	var rows []apiKeyRow
	err := s.db.WithContext(ctx).Raw(
		`UPDATE api_keys SET revoked_at = COALESCE(revoked_at, ?)
		 WHERE workspace_id = ? AND id = ?
		 RETURNING id, workspace_id, name, display_prefix, hash, created_at, last_used_at, revoked_at`,
		dbTime(at), workspaceID, keyID).Scan(&rows).Error
	if err != nil {
		return domain.APIKey{}, dbError("revoke api key", err)
	}
	if len(rows) == 0 {
		return domain.APIKey{}, domain.NotFound("API key")
	}
	return rows[0].toDomain(), nil
}

// TouchAPIKey records a use of the key. The single conditional UPDATE writes
// only when the stored time is unset or over a minute older than at, so a
// busy key costs one write a minute, and concurrent requests never move the
// time backwards. An unknown key is not an error: there is nothing to touch.
func (s *Store) TouchAPIKey(ctx context.Context, keyID string, at time.Time) error {
	at = dbTime(at)
	err := s.db.WithContext(ctx).Exec(
		`UPDATE api_keys SET last_used_at = ?
		 WHERE id = ? AND (last_used_at IS NULL OR last_used_at < ?)`,
		at, keyID, at.Add(-touchInterval)).Error
	return dbError("touch api key", err)
}
