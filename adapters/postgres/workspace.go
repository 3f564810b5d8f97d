package postgres

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgtype"
	"gorm.io/gorm"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.WorkspaceStore = (*Store)(nil)

type workspaceRow struct {
	ID                        string     `gorm:"column:id;primaryKey"`
	Name                      string     `gorm:"column:name"`
	Plan                      string     `gorm:"column:plan"`
	Addons                    textArray  `gorm:"column:addons;type:text[]"`
	WebhookSecret             string     `gorm:"column:webhook_secret"`
	WebhookSecretHash         string     `gorm:"column:webhook_secret_hash"`
	PreviousWebhookSecret     *string    `gorm:"column:previous_webhook_secret"`
	PreviousWebhookSecretHash *string    `gorm:"column:previous_webhook_secret_hash"`
	PreviousSecretExpiresAt   *time.Time `gorm:"column:previous_secret_expires_at"`
	HelpdeskURL               string     `gorm:"column:helpdesk_url"`
	EventsURL                 string     `gorm:"column:events_url"`
	SigningSecret             string     `gorm:"column:signing_secret"`
	// AutoAssign is read-only to gorm: it changes only through
	// UpdateIntegrations, and a new workspace takes the column's default
	// (off), so creating one works on a schema before 00024 too.
	AutoAssign bool      `gorm:"column:auto_assign;->"`
	CreatedAt  time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt  time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (workspaceRow) TableName() string { return "workspaces" }

func workspaceFromDomain(ws domain.Workspace) workspaceRow {
	addons := make(textArray, 0, len(ws.Addons))
	for _, a := range ws.Addons {
		addons = append(addons, string(a))
	}
	row := workspaceRow{
		ID:                ws.ID,
		Name:              ws.Name,
		Plan:              string(ws.Plan),
		Addons:            addons,
		WebhookSecret:     ws.WebhookSecret,
		WebhookSecretHash: domain.HashSecret(ws.WebhookSecret),
		HelpdeskURL:       ws.HelpdeskURL,
		EventsURL:         ws.EventsURL,
		SigningSecret:     ws.SigningSecret,
		CreatedAt:         dbTime(ws.CreatedAt),
		UpdatedAt:         dbTime(ws.UpdatedAt),
	}
	if ws.PreviousWebhookSecret != "" {
		hash := domain.HashSecret(ws.PreviousWebhookSecret)
		row.PreviousWebhookSecret = &ws.PreviousWebhookSecret
		row.PreviousWebhookSecretHash = &hash
		row.PreviousSecretExpiresAt = dbTimePtr(&ws.PreviousSecretExpiresAt)
	}
	return row
}

func (r workspaceRow) toDomain() domain.Workspace {
	ws := domain.Workspace{
		ID:                    r.ID,
		Name:                  r.Name,
		Plan:                  domain.Plan(r.Plan),
		WebhookSecret:         r.WebhookSecret,
		PreviousWebhookSecret: deref(r.PreviousWebhookSecret),
		HelpdeskURL:           r.HelpdeskURL,
		EventsURL:             r.EventsURL,
		SigningSecret:         r.SigningSecret,
		AutoAssign:            r.AutoAssign,
		CreatedAt:             r.CreatedAt.UTC(),
		UpdatedAt:             r.UpdatedAt.UTC(),
	}
	for _, a := range r.Addons {
		ws.Addons = append(ws.Addons, domain.Feature(a))
	}
	if r.PreviousSecretExpiresAt != nil {
		ws.PreviousSecretExpiresAt = r.PreviousSecretExpiresAt.UTC()
	}
	return ws
}

// CreateWorkspace stores a new workspace with its first API key in one
// transaction. A key without a workspace id is given the workspace's. Returns
// domain.ErrConflict if the id or webhook secret is already used.
func (s *Store) CreateWorkspace(ctx context.Context, ws domain.Workspace, key domain.APIKey) error {
	if key.WorkspaceID == "" {
		key.WorkspaceID = ws.ID
	}
	if key.WorkspaceID != ws.ID {
		return fmt.Errorf("postgres: create workspace: the API key belongs to workspace %q, not %q", key.WorkspaceID, ws.ID)
	}
	wsRow, keyRow := workspaceFromDomain(ws), apiKeyFromDomain(key)
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&wsRow).Error; err != nil {
			if _, ok := uniqueViolation(err); ok {
				return domain.Conflict("a workspace with this id or webhook secret already exists")
			}
			return dbError("create workspace", err)
		}
		if err := tx.Create(&keyRow).Error; err != nil {
			if _, ok := uniqueViolation(err); ok {
				return domain.Conflict("an API key with this id or secret already exists")
			}
			return dbError("create workspace: api key", err)
		}
		return nil
	})
}

// GetWorkspace returns domain.ErrNotFound if no workspace has the id.
func (s *Store) GetWorkspace(ctx context.Context, id string) (domain.Workspace, error) {
	var row workspaceRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if err != nil {
		return domain.Workspace{}, notFoundOr(err, "workspace", "get workspace")
	}
	return row.toDomain(), nil
}

// UpdateWorkspace saves name, plan, add-ons and webhook secrets (with their
// hashes) and the update time. Integration settings (helpdesk and events
// URLs, signing secret, auto-assignment) are not written: they change only through
// UpdateIntegrations, so a plan change read before a concurrent settings
// change cannot undo it. Returns domain.ErrNotFound if the workspace
// does not exist, domain.ErrConflict if another workspace has the secret.
func (s *Store) UpdateWorkspace(ctx context.Context, ws domain.Workspace) error {
	row := workspaceFromDomain(ws)
	// An explicit column map: gorm skips zero values in struct updates, and
	// clearing the previous secret must write NULLs.
	res := s.db.WithContext(ctx).Model(&workspaceRow{}).Where("id = ?", ws.ID).Updates(map[string]any{
		"name":                         row.Name,
		"plan":                         row.Plan,
		"addons":                       row.Addons,
		"webhook_secret":               row.WebhookSecret,
		"webhook_secret_hash":          row.WebhookSecretHash,
		"previous_webhook_secret":      row.PreviousWebhookSecret,
		"previous_webhook_secret_hash": row.PreviousWebhookSecretHash,
		"previous_secret_expires_at":   row.PreviousSecretExpiresAt,
		"updated_at":                   row.UpdatedAt,
	})
	if res.Error != nil {
		if _, ok := uniqueViolation(res.Error); ok {
			return domain.Conflict("another workspace uses this webhook secret")
		}
		return dbError("update workspace", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("workspace")
	}
	return nil
}

// FindWorkspaceByWebhookSecretHash returns the workspace whose current or
// previous webhook secret has the hash; the caller checks the previous
// secret's grace period. Returns domain.ErrNotFound when none matches.
func (s *Store) FindWorkspaceByWebhookSecretHash(ctx context.Context, hash string) (domain.Workspace, error) {
	if hash == "" {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	var row workspaceRow
	err := s.db.WithContext(ctx).
		Where("webhook_secret_hash = ? OR previous_webhook_secret_hash = ?", hash, hash).
		Take(&row).Error
	if err != nil {
		return domain.Workspace{}, notFoundOr(err, "workspace", "find workspace by webhook secret")
	}
	return row.toDomain(), nil
}

// notFoundOr maps gorm's record-not-found to a NotFoundError naming what, and
// any other error through dbError.
func notFoundOr(err error, what, op string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.NotFound(what)
	}
	return dbError(op, err)
}

// textArray is a text[] column. database/sql hands arrays over in PostgreSQL's
// text form, so scanning goes through pgx's type map.
type textArray []string

// Scan implements sql.Scanner.
func (a *textArray) Scan(src any) error {
	var out []string
	if err := pgtype.NewMap().SQLScanner(&out).Scan(src); err != nil {
		return fmt.Errorf("scan text[]: %w", err)
	}
	*a = out
	return nil
}

// Value implements driver.Valuer with an array literal, every element quoted.
func (a textArray) Value() (driver.Value, error) {
	escape := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	var b strings.Builder
	b.WriteByte('{')
	for i, s := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('"')
		b.WriteString(escape.Replace(s))
		b.WriteByte('"')
	}
	b.WriteByte('}')
	return b.String(), nil
}

// intArray is an integer[] column; nil is NULL.
type intArray []int

// Scan implements sql.Scanner.
func (a *intArray) Scan(src any) error {
	if src == nil {
		*a = nil
		return nil
	}
	var out []int
	if err := pgtype.NewMap().SQLScanner(&out).Scan(src); err != nil {
		return fmt.Errorf("scan integer[]: %w", err)
	}
	*a = out
	return nil
}

// Value implements driver.Valuer with an array literal.
func (a intArray) Value() (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	var b strings.Builder
	b.WriteByte('{')
	for i, n := range a {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(n))
	}
	b.WriteByte('}')
	return b.String(), nil
}

// int32s is the array for pgx's native encoding (nil stays NULL).
func (a intArray) int32s() []int32 {
	if a == nil {
		return nil
	}
	out := make([]int32, len(a))
	for i, n := range a {
		out[i] = int32(n)
	}
	return out
}
