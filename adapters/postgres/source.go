package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var _ ports.SourceStore = (*Store)(nil)

// sourceRow leaves out the generated search column: it is written by
// PostgreSQL and read only by retrieval queries.
type sourceRow struct {
	ID           string     `gorm:"column:id;primaryKey"`
	WorkspaceID  string     `gorm:"column:workspace_id"`
	AgentID      string     `gorm:"column:agent_id"`
	Type         string     `gorm:"column:type"`
	Name         string     `gorm:"column:name"`
	Content      string     `gorm:"column:content"`
	Question     string     `gorm:"column:question"`
	Answer       string     `gorm:"column:answer"`
	Status       string     `gorm:"column:status"`
	StatusReason string     `gorm:"column:status_reason"`
	ChunkCount   int        `gorm:"column:chunk_count"`
	TokenCount   int        `gorm:"column:token_count"`
	URL          string     `gorm:"column:url"`
	Filename     string     `gorm:"column:filename"`
	MaxPages     int        `gorm:"column:max_pages"`
	MaxDepth     int        `gorm:"column:max_depth"`
	PageCount    int        `gorm:"column:page_count"`
	ContentHash  string     `gorm:"column:content_hash"`
	Embedder     string     `gorm:"column:embedder"`
	QuestionsBy  string     `gorm:"column:questions_by"`
	Generation   int        `gorm:"column:generation"`
	IndexedAt    *time.Time `gorm:"column:indexed_at"`
	CreatedAt    time.Time  `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt    time.Time  `gorm:"column:updated_at;autoUpdateTime:false"`
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
		URL:          s.URL,
		Filename:     s.Filename,
		MaxPages:     s.MaxPages,
		MaxDepth:     s.MaxDepth,
		PageCount:    s.PageCount,
		ContentHash:  s.ContentHash,
		Embedder:     s.Embedder,
		QuestionsBy:  s.QuestionsBy,
		Generation:   s.Generation,
		IndexedAt:    nullTime(s.IndexedAt),
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
		URL:          r.URL,
		Filename:     r.Filename,
		MaxPages:     r.MaxPages,
		MaxDepth:     r.MaxDepth,
		PageCount:    r.PageCount,
		ContentHash:  r.ContentHash,
		Embedder:     r.Embedder,
		QuestionsBy:  r.QuestionsBy,
		Generation:   r.Generation,
		IndexedAt:    timeOrZero(r.IndexedAt),
		CreatedAt:    r.CreatedAt.UTC(),
		UpdatedAt:    r.UpdatedAt.UTC(),
	}, nil
}

func sourcePosition(s domain.Source) domain.Position {
	return domain.Position{Time: s.CreatedAt, ID: s.ID}
}

// CreateSource stores a source, and a file source's file with it, atomically,
// and truncates its times to what is stored. Returns domain.ErrNotFound if
// the agent does not exist in the source's workspace.
func (s *Store) CreateSource(ctx context.Context, src *domain.Source) error {
	row := sourceFromDomain(src)
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Create(&row).Error; err != nil {
			return err
		}
		if len(src.File) == 0 {
			return nil
		}
		return tx.Exec(`INSERT INTO source_files (source_id, workspace_id, body, created_at) VALUES (?, ?, ?, ?)`,
			row.ID, row.WorkspaceID, src.File, row.CreatedAt).Error
	})
	if err != nil {
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

// DeleteSource removes the source with its chunks and file and bumps the
// agent's knowledge version, in one statement. Returns domain.ErrNotFound
// unless the source belongs to the agent and workspace.
func (s *Store) DeleteSource(ctx context.Context, workspaceID, agentID, id string) (ports.KnowledgeChange, error) {
	change := ports.KnowledgeChange{WorkspaceID: workspaceID, AgentID: agentID}
	err := s.pool.QueryRow(ctx, `WITH gone AS (
    DELETE FROM sources WHERE workspace_id = $1 AND agent_id = $2 AND id = $3 RETURNING agent_id
)
UPDATE agents SET knowledge_version = knowledge_version + 1
WHERE workspace_id = $1 AND id = (SELECT agent_id FROM gone)
RETURNING knowledge_version`, workspaceID, agentID, id).Scan(&change.Version)
	if errors.Is(err, pgx.ErrNoRows) {
		return ports.KnowledgeChange{}, domain.NotFound("source")
	}
	if err != nil {
		return ports.KnowledgeChange{}, dbError("delete source", err)
	}
	return change, nil
}

// RequestReindex moves the source to PENDING with a new generation. Returns
// domain.ErrNotFound unless the source belongs to the agent and workspace.
func (s *Store) RequestReindex(ctx context.Context, workspaceID, agentID, id string, at time.Time) (domain.Source, error) {
	var row sourceRow
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Model(&row).
			Clauses(clause.Returning{}).
			Where("workspace_id = ? AND agent_id = ? AND id = ?", workspaceID, agentID, id).
			Updates(map[string]any{
				"status":        string(domain.SourcePending),
				"status_reason": "",
				"generation":    gorm.Expr("generation + 1"),
				"updated_at":    dbTime(at),
			})
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected == 0 {
			return gorm.ErrRecordNotFound
		}
		// The superseded generation's crawl, if one was under way, will not
		// be continued: the new generation crawls afresh.
		return tx.Exec(`DELETE FROM crawl_progress WHERE workspace_id = ? AND source_id = ?`, workspaceID, id).Error
	})
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return domain.Source{}, domain.NotFound("source")
	}
	if err != nil {
		return domain.Source{}, dbError("request reindex", err)
	}
	return row.toDomain()
}
