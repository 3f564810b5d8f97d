package postgres

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.SourceStore = (*Store)(nil)

// sourceRow leaves out the generated search column: it is written by
// PostgreSQL and read only by retrieval queries.
type sourceRow struct {
	ID           string    `gorm:"column:id;primaryKey"`
	WorkspaceID  string    `gorm:"column:workspace_id"`
	AgentID      string    `gorm:"column:agent_id"`
	Type         string    `gorm:"column:type"`
	Name         string    `gorm:"column:name"`
	Content      string    `gorm:"column:content"`
	Question     string    `gorm:"column:question"`
	Answer       string    `gorm:"column:answer"`
	Status       string    `gorm:"column:status"`
	StatusReason string    `gorm:"column:status_reason"`
	ChunkCount   int       `gorm:"column:chunk_count"`
	TokenCount   int       `gorm:"column:token_count"`
	CreatedAt    time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt    time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (sourceRow) TableName() string { return "sources" }

func sourceFromDomain(s *domain.Source) sourceRow {
	return sourceRow{
		ID:           s.ID,
		WorkspaceID:  s.WorkspaceID,
		AgentID:      s.AgentID,
		Type:         string(s.Type),
		Name:         s.Name,
		Content:      s.Content,
		Question:     s.Question,
		Answer:       s.Answer,
		Status:       string(s.Status),
		StatusReason: s.StatusReason,
		ChunkCount:   s.ChunkCount,
		TokenCount:   s.TokenCount,
		CreatedAt:    dbTime(s.CreatedAt),
		UpdatedAt:    dbTime(s.UpdatedAt),
	}
}

func (r sourceRow) toDomain() (domain.Source, error) {
	return domain.Source{
		ID:           r.ID,
		WorkspaceID:  r.WorkspaceID,
		AgentID:      r.AgentID,
		Type:         domain.SourceType(r.Type),
		Name:         r.Name,
		Content:      r.Content,
		Question:     r.Question,
		Answer:       r.Answer,
		Status:       domain.SourceStatus(r.Status),
		StatusReason: r.StatusReason,
		ChunkCount:   r.ChunkCount,
		TokenCount:   r.TokenCount,
		CreatedAt:    r.CreatedAt.UTC(),
		UpdatedAt:    r.UpdatedAt.UTC(),
	}, nil
}

func sourcePosition(s domain.Source) domain.Position {
	return domain.Position{Time: s.CreatedAt, ID: s.ID}
}

// CreateSource stores a source and truncates its times to what is stored.
// Returns domain.ErrNotFound if the agent does not exist in the source's
// workspace.
func (s *Store) CreateSource(ctx context.Context, src *domain.Source) error {
	row := sourceFromDomain(src)
	if err := s.db.WithContext(ctx).Create(&row).Error; err != nil {
		if foreignKeyViolation(err) {
			return domain.NotFound("agent")
		}
		if _, ok := uniqueViolation(err); ok {
			return domain.Conflict("a source with this id already exists")
		}
		return dbError("create source", err)
	}
	src.CreatedAt, src.UpdatedAt = row.CreatedAt, row.UpdatedAt
	return nil
}

// ListSources returns a page of an agent's sources, newest first, keyed by
// (created_at, id) descending.
func (s *Store) ListSources(ctx context.Context, workspaceID, agentID string, page domain.PageRequest) (domain.Page[domain.Source], error) {
	limit := pageLimit(page)
	q := s.db.WithContext(ctx).Where("workspace_id = ? AND agent_id = ?", workspaceID, agentID)
	if page.After != nil {
		q = q.Where("(created_at, id) < (?, ?)", dbTime(page.After.Time), page.After.ID)
	}
	var rows []sourceRow
	if err := q.Order("created_at DESC, id DESC").Limit(limit + 1).Find(&rows).Error; err != nil {
		return domain.Page[domain.Source]{}, dbError("list sources", err)
	}
	return makePage(rows, limit, sourceRow.toDomain, sourcePosition)
}

// GetSource returns domain.ErrNotFound unless the source belongs to the agent
// and workspace.
func (s *Store) GetSource(ctx context.Context, workspaceID, agentID, id string) (domain.Source, error) {
	var row sourceRow
	err := s.db.WithContext(ctx).
		Where("workspace_id = ? AND agent_id = ? AND id = ?", workspaceID, agentID, id).
		Take(&row).Error
	if err != nil {
		return domain.Source{}, notFoundOr(err, "source", "get source")
	}
	return row.toDomain()
}

// DeleteSource returns domain.ErrNotFound unless the source belongs to the
// agent and workspace.
func (s *Store) DeleteSource(ctx context.Context, workspaceID, agentID, id string) error {
	res := s.db.WithContext(ctx).
		Where("workspace_id = ? AND agent_id = ? AND id = ?", workspaceID, agentID, id).
		Delete(&sourceRow{})
	if res.Error != nil {
		return dbError("delete source", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("source")
	}
	return nil
}
