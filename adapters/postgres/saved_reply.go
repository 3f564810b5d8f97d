package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.SavedReplyStore = (*Store)(nil)

type savedReplyRow struct {
	ID          string    `gorm:"column:id;primaryKey"`
	WorkspaceID string    `gorm:"column:workspace_id"`
	Shortcut    string    `gorm:"column:shortcut"`
	Title       string    `gorm:"column:title"`
	Body        string    `gorm:"column:body"`
	CreatedBy   *string   `gorm:"column:created_by"`
	CreatedAt   time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt   time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (savedReplyRow) TableName() string { return "saved_replies" }

func savedReplyFromDomain(r *domain.SavedReply) savedReplyRow {
	return savedReplyRow{
		ID:          r.ID,
		WorkspaceID: r.WorkspaceID,
		Shortcut:    r.Shortcut,
		Title:       r.Title,
		Body:        r.Body,
		CreatedBy:   nullString(r.CreatedBy),
		CreatedAt:   dbTime(r.CreatedAt),
		UpdatedAt:   dbTime(r.UpdatedAt),
	}
}

func (r savedReplyRow) toDomain() (domain.SavedReply, error) {
	return domain.SavedReply{
		ID:          r.ID,
		WorkspaceID: r.WorkspaceID,
		Shortcut:    r.Shortcut,
		Title:       r.Title,
		Body:        r.Body,
		CreatedBy:   deref(r.CreatedBy),
		CreatedAt:   r.CreatedAt.UTC(),
		UpdatedAt:   r.UpdatedAt.UTC(),
	}, nil
}

// savedReplyShortcutKey is the unique constraint of migration 00018.
const savedReplyShortcutKey = "saved_replies_workspace_shortcut_key"

func savedReplyConflict(shortcut string) error {
	return domain.Conflict("a saved reply with shortcut %q already exists", shortcut)
}

// CreateSavedReply stores a new reply and truncates its times to what is
// stored. The workspace row is locked (FOR NO KEY UPDATE) before the replies
// are counted, so two creations racing for the last free place are taken
// one after the other and the cap holds; the lock does not conflict with
// the key-share locks that inserts into other tables take on the
// workspace. Returns domain.ErrConflict if the shortcut is taken or the
// workspace is full, domain.ErrNotFound if the workspace does not exist.
func (s *Store) CreateSavedReply(ctx context.Context, r *domain.SavedReply) error {
	row := savedReplyFromDomain(r)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		var locked []string
		if err := tx.Table("workspaces").Select("id").Where("id = ?", r.WorkspaceID).
			Clauses(clause.Locking{Strength: "NO KEY UPDATE"}).Pluck("id", &locked).Error; err != nil {
			return err
		}
		if len(locked) == 0 {
			return domain.NotFound("workspace")
		}
		var n int64
		if err := tx.Model(&savedReplyRow{}).Where("workspace_id = ?", r.WorkspaceID).Count(&n).Error; err != nil {
			return err
		}
		if n >= domain.MaxSavedRepliesPerWorkspace {
			return domain.Conflict("a workspace keeps at most %d saved replies; delete one first", domain.MaxSavedRepliesPerWorkspace)
		}
		return tx.Create(&row).Error
	})
	if err != nil {
		if constraint, ok := uniqueViolation(err); ok {
			if constraint == savedReplyShortcutKey {
				return savedReplyConflict(r.Shortcut)
			}
			return domain.Conflict("a saved reply with this id already exists")
		}
		if foreignKeyViolation(err) {
			// created_by names a user that was deleted meanwhile, or the
			// workspace went away after the lock (it cannot, but say so).
			return domain.NotFound("workspace or user")
		}
		if errors.Is(err, domain.ErrNotFound) || errors.Is(err, domain.ErrConflict) {
			return err
		}
		return dbError("create saved reply", err)
	}
	r.CreatedAt, r.UpdatedAt = row.CreatedAt, row.UpdatedAt
	return nil
}

// GetSavedReply returns domain.ErrNotFound if the workspace has no reply
// with the id.
func (s *Store) GetSavedReply(ctx context.Context, workspaceID, id string) (domain.SavedReply, error) {
	var row savedReplyRow
	err := s.db.WithContext(ctx).Where("workspace_id = ? AND id = ?", workspaceID, id).Take(&row).Error
	if err != nil {
		return domain.SavedReply{}, notFoundOr(err, "saved reply", "get saved reply")
	}
	return row.toDomain()
}

// ListSavedReplies returns a page of the workspace's replies in shortcut
// order (bytes, the column's "C" collation). The prefix matches the
// shortcut or the title, ignoring case; LIKE's wildcards in it are escaped,
// so "50%" finds titles starting with "50%". Shortcuts are lowercase, so
// the lowered prefix meets them with LIKE, which their index serves; a
// workspace has at most 500 replies, so ILIKE on its titles costs little.
func (s *Store) ListSavedReplies(ctx context.Context, workspaceID string, q ports.SavedReplyQuery) (domain.Page[domain.SavedReply], error) {
	limit := pageLimit(domain.PageRequest{Limit: q.Limit})
	query := s.db.WithContext(ctx).Where("workspace_id = ?", workspaceID)
	if q.Prefix != "" {
		pattern := prefixPattern(q.Prefix)
		query = query.Where("(shortcut LIKE ? OR title ILIKE ?)", strings.ToLower(pattern), pattern)
	}
	if q.AfterShortcut != "" {
		query = query.Where("shortcut > ?", q.AfterShortcut)
	}
	var rows []savedReplyRow
	if err := query.Order("shortcut").Limit(limit + 1).Find(&rows).Error; err != nil {
		return domain.Page[domain.SavedReply]{}, dbError("list saved replies", err)
	}
	return makePage(rows, limit, savedReplyRow.toDomain, func(r domain.SavedReply) domain.Position {
		return domain.Position{ID: r.Shortcut}
	})
}

// UpdateSavedReply saves shortcut, title, body and update time. Returns
// domain.ErrNotFound if the workspace has no reply with the id,
// domain.ErrConflict if the new shortcut is taken.
func (s *Store) UpdateSavedReply(ctx context.Context, r *domain.SavedReply) error {
	row := savedReplyFromDomain(r)
	res := s.db.WithContext(ctx).Model(&savedReplyRow{}).
		Where("workspace_id = ? AND id = ?", r.WorkspaceID, r.ID).
		Updates(map[string]any{"shortcut": row.Shortcut, "title": row.Title, "body": row.Body, "updated_at": row.UpdatedAt})
	if res.Error != nil {
		if constraint, ok := uniqueViolation(res.Error); ok && constraint == savedReplyShortcutKey {
			return savedReplyConflict(r.Shortcut)
		}
		return dbError("update saved reply", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("saved reply")
	}
	r.UpdatedAt = row.UpdatedAt
	return nil
}

// DeleteSavedReply returns domain.ErrNotFound if the workspace has no reply
// with the id.
func (s *Store) DeleteSavedReply(ctx context.Context, workspaceID, id string) error {
	res := s.db.WithContext(ctx).Where("workspace_id = ? AND id = ?", workspaceID, id).Delete(&savedReplyRow{})
	if res.Error != nil {
		return dbError("delete saved reply", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("saved reply")
	}
	return nil
}

// prefixPattern is the LIKE pattern of text starting with s: its own %, _
// and \ are escaped, as containsPattern does, so they match themselves.
func prefixPattern(s string) string {
	return strings.NewReplacer(`\`, `\\`, "%", `\%`, "_", `\_`).Replace(s) + "%"
}
