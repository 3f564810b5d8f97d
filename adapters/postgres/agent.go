package postgres

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var (
	_ ports.AgentStore   = (*Store)(nil)
	_ ports.WidgetAgents = (*Store)(nil)
)

type agentRow struct {
	ID          string `gorm:"column:id;primaryKey"`
	WorkspaceID string `gorm:"column:workspace_id"`
	// Seq is assigned by the database (an identity column), hence read-only.
	Seq  int64  `gorm:"column:seq;->"`
	Slug string `gorm:"column:slug"`
	// WidgetSlug is claimed once, by CreateAgent (migration 00006), hence
	// read-only here.
	WidgetSlug *string `gorm:"column:widget_slug;->"`
	Name       string  `gorm:"column:name"`
	Config     []byte  `gorm:"column:config;type:jsonb"`
	// KnowledgeVersion is bumped by indexing only, never by agent updates.
	KnowledgeVersion int64     `gorm:"column:knowledge_version;->"`
	CreatedAt        time.Time `gorm:"column:created_at;autoCreateTime:false"`
	UpdatedAt        time.Time `gorm:"column:updated_at;autoUpdateTime:false"`
}

func (agentRow) TableName() string { return "agents" }

// agentConfigJSON is the stored shape of domain.AgentConfig. It is spelled out
// so renaming a domain field never silently changes what is in the database.
type agentConfigJSON struct {
	SystemPrompt       string   `json:"systemPrompt"`
	WelcomeMessage     string   `json:"welcomeMessage"`
	SuggestedQuestions []string `json:"suggestedQuestions"`
	FallbackMessage    string   `json:"fallbackMessage"`
	Published          bool     `json:"published"`
	Model              string   `json:"model,omitempty"`
	BlockedTopics      []string `json:"blockedTopics,omitempty"`
	RetrievalTopK      *int     `json:"retrievalTopK,omitempty"`
	RetrievalThreshold *float64 `json:"retrievalThreshold,omitempty"`
	PrimaryColor       string   `json:"primaryColor,omitempty"`
	AvatarURL          string   `json:"avatarUrl,omitempty"`
	AllowedOrigins     []string `json:"allowedOrigins,omitempty"`
}

func agentFromDomain(a *domain.Agent) (agentRow, error) {
	questions := a.Config.SuggestedQuestions
	if questions == nil {
		questions = []string{}
	}
	config, err := json.Marshal(agentConfigJSON{
		SystemPrompt:       a.Config.SystemPrompt,
		WelcomeMessage:     a.Config.WelcomeMessage,
		SuggestedQuestions: questions,
		FallbackMessage:    a.Config.FallbackMessage,
		Published:          a.Config.Published,
		Model:              a.Config.Model,
		BlockedTopics:      a.Config.BlockedTopics,
		RetrievalTopK:      &a.Config.RetrievalTopK,
		RetrievalThreshold: &a.Config.RetrievalThreshold,
		PrimaryColor:       a.Config.PrimaryColor,
		AvatarURL:          a.Config.AvatarURL,
		AllowedOrigins:     a.Config.AllowedOrigins,
	})
	if err != nil {
		return agentRow{}, fmt.Errorf("postgres: encode agent config: %w", err)
	}
	return agentRow{
		ID:          a.ID,
		WorkspaceID: a.WorkspaceID,
		Seq:         a.Seq,
		Slug:        a.Slug,
		WidgetSlug:  nullString(a.WidgetSlug),
		Name:        a.Name,
		Config:      config,
		CreatedAt:   dbTime(a.CreatedAt),
		UpdatedAt:   dbTime(a.UpdatedAt),
	}, nil
}

func (r agentRow) toDomain() (domain.Agent, error) {
	var c agentConfigJSON
	if err := json.Unmarshal(r.Config, &c); err != nil {
		return domain.Agent{}, fmt.Errorf("postgres: decode config of agent %s: %w", r.ID, err)
	}
	if len(c.SuggestedQuestions) == 0 {
		c.SuggestedQuestions = nil
	}
	// Agents stored before retrieval settings existed get the defaults.
	topK := domain.DefaultRetrievalTopK
	if c.RetrievalTopK != nil {
		topK = *c.RetrievalTopK
	}
	threshold := domain.DefaultRetrievalThreshold
	if c.RetrievalThreshold != nil {
		threshold = *c.RetrievalThreshold
	}
	return domain.Agent{
		ID:          r.ID,
		WorkspaceID: r.WorkspaceID,
		Slug:        r.Slug,
		WidgetSlug:  deref(r.WidgetSlug),
		Name:        r.Name,
		Config: domain.AgentConfig{
			SystemPrompt:       c.SystemPrompt,
			WelcomeMessage:     c.WelcomeMessage,
			SuggestedQuestions: c.SuggestedQuestions,
			FallbackMessage:    c.FallbackMessage,
			Published:          c.Published,
			Model:              c.Model,
			BlockedTopics:      c.BlockedTopics,
			RetrievalTopK:      topK,
			RetrievalThreshold: threshold,
			PrimaryColor:       c.PrimaryColor,
			AvatarURL:          c.AvatarURL,
			AllowedOrigins:     c.AllowedOrigins,
		},
		KnowledgeVersion: r.KnowledgeVersion,
		Seq:              r.Seq,
		CreatedAt:        r.CreatedAt.UTC(),
		UpdatedAt:        r.UpdatedAt.UTC(),
	}, nil
}

func agentPosition(a domain.Agent) domain.Position {
	return domain.Position{Time: a.CreatedAt, ID: a.ID}
}

// CreateAgent stores a new agent, sets its Seq and WidgetSlug, and
// truncates its times to what is stored. The agent claims the widget
// address /chat/{slug} (WidgetSlug = Slug) when no agent of any workspace
// holds it; otherwise WidgetSlug stays "" and its widget lives at
// /chat/{id}. Returns domain.ErrConflict if the slug is taken in the
// workspace, domain.ErrNotFound if the workspace does not exist.
func (s *Store) CreateAgent(ctx context.Context, agent *domain.Agent) error {
	row, err := agentFromDomain(agent)
	if err != nil {
		return err
	}
	var widgetSlug *string
	insert := func(claim bool) error {
		return s.pool.QueryRow(ctx, createAgentSQL, row.ID, row.WorkspaceID, row.Slug, row.Name, row.Config,
			row.CreatedAt, row.UpdatedAt, claim).Scan(&row.Seq, &widgetSlug)
	}
	err = insert(true)
	if constraint, ok := uniqueViolation(err); ok && constraint == "agents_widget_slug_key" {
		// Another pod's agent claimed the address between the check and the
		// insert: first come, first served; this one lives at its id.
		err = insert(false)
	}
	if err != nil {
		if constraint, ok := uniqueViolation(err); ok {
			if constraint == "agents_workspace_slug_key" {
				return domain.Conflict("an agent with slug %q already exists", agent.Slug)
			}
			return domain.Conflict("an agent with this id already exists")
		}
		if foreignKeyViolation(err) {
			return domain.NotFound("workspace")
		}
		return dbError("create agent", err)
	}
	agent.Seq, agent.WidgetSlug, agent.CreatedAt, agent.UpdatedAt = row.Seq, deref(widgetSlug), row.CreatedAt, row.UpdatedAt
	return nil
}

// createAgentSQL inserts an agent, claiming the widget slug when $8 is set
// and no agent holds it. The check alone cannot decide a race; the unique
// constraint agents_widget_slug_key does.
const createAgentSQL = `INSERT INTO agents (id, workspace_id, slug, name, config, created_at, updated_at, widget_slug)
VALUES ($1, $2, $3, $4, $5, $6, $7,
	CASE WHEN $8::boolean AND NOT EXISTS (SELECT 1 FROM agents WHERE widget_slug = $3) THEN $3 END)
RETURNING seq, widget_slug`

// GetAgentByWidgetSlug returns the agent holding the service-wide widget
// slug, or domain.ErrNotFound.
func (s *Store) GetAgentByWidgetSlug(ctx context.Context, slug string) (domain.Agent, error) {
	var row agentRow
	err := s.db.WithContext(ctx).Where("widget_slug = ?", slug).Take(&row).Error
	if err != nil {
		return domain.Agent{}, notFoundOr(err, "agent", "get agent by widget slug")
	}
	return row.toDomain()
}

// GetAgentByGlobalID returns the agent with the id in any workspace, for
// the public widget address /chat/{id}, or domain.ErrNotFound.
func (s *Store) GetAgentByGlobalID(ctx context.Context, id string) (domain.Agent, error) {
	var row agentRow
	err := s.db.WithContext(ctx).Where("id = ?", id).Take(&row).Error
	if err != nil {
		return domain.Agent{}, notFoundOr(err, "agent", "get agent by id")
	}
	return row.toDomain()
}

// GetAgentBySlug returns domain.ErrNotFound if the workspace has no such agent.
func (s *Store) GetAgentBySlug(ctx context.Context, workspaceID, slug string) (domain.Agent, error) {
	var row agentRow
	err := s.db.WithContext(ctx).Where("workspace_id = ? AND slug = ?", workspaceID, slug).Take(&row).Error
	if err != nil {
		return domain.Agent{}, notFoundOr(err, "agent", "get agent by slug")
	}
	return row.toDomain()
}

// GetAgentByID returns domain.ErrNotFound if the workspace has no such agent.
func (s *Store) GetAgentByID(ctx context.Context, workspaceID, id string) (domain.Agent, error) {
	var row agentRow
	err := s.db.WithContext(ctx).Where("workspace_id = ? AND id = ?", workspaceID, id).Take(&row).Error
	if err != nil {
		return domain.Agent{}, notFoundOr(err, "agent", "get agent")
	}
	return row.toDomain()
}

// FirstAgent returns the workspace's first agent in the order of ListAgents,
// or domain.ErrNotFound if it has none.
func (s *Store) FirstAgent(ctx context.Context, workspaceID string) (domain.Agent, error) {
	var row agentRow
	err := s.db.WithContext(ctx).Where("workspace_id = ?", workspaceID).
		Order("created_at, id").Limit(1).Take(&row).Error
	if err != nil {
		return domain.Agent{}, notFoundOr(err, "agent", "first agent")
	}
	return row.toDomain()
}

// ListAgents returns a page of agents in creation order, oldest first.
//
// The keyset is (created_at, id) ascending rather than seq: a Position
// carries a time and an id, and a cursor must stay valid after the agent it
// points at is deleted, which rules out looking its seq up. created_at comes
// from the service's clock; id breaks ties, so the order is total and stable.
func (s *Store) ListAgents(ctx context.Context, workspaceID string, page domain.PageRequest) (domain.Page[domain.Agent], error) {
	limit := pageLimit(page)
	q := s.db.WithContext(ctx).Where("workspace_id = ?", workspaceID)
	if page.After != nil {
		q = q.Where("(created_at, id) > (?, ?)", dbTime(page.After.Time), page.After.ID)
	}
	var rows []agentRow
	if err := q.Order("created_at, id").Limit(limit + 1).Find(&rows).Error; err != nil {
		return domain.Page[domain.Agent]{}, dbError("list agents", err)
	}
	return makePage(rows, limit, agentRow.toDomain, agentPosition)
}

// UpdateAgent saves name, configuration and update time; the slug is
// immutable. Returns domain.ErrNotFound if the agent does not exist in the
// workspace.
func (s *Store) UpdateAgent(ctx context.Context, agent *domain.Agent) error {
	row, err := agentFromDomain(agent)
	if err != nil {
		return err
	}
	res := s.db.WithContext(ctx).Model(&agentRow{}).
		Where("workspace_id = ? AND id = ?", agent.WorkspaceID, agent.ID).
		Updates(map[string]any{"name": row.Name, "config": row.Config, "updated_at": row.UpdatedAt})
	if res.Error != nil {
		return dbError("update agent", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("agent")
	}
	agent.UpdatedAt = row.UpdatedAt
	return nil
}

// DeleteAgent removes the agent; foreign keys cascade to its sources,
// conversations and their messages in the same statement. Returns
// domain.ErrNotFound if the workspace has no such agent.
func (s *Store) DeleteAgent(ctx context.Context, workspaceID, id string) error {
	res := s.db.WithContext(ctx).Where("workspace_id = ? AND id = ?", workspaceID, id).Delete(&agentRow{})
	if res.Error != nil {
		return dbError("delete agent", res.Error)
	}
	if res.RowsAffected == 0 {
		return domain.NotFound("agent")
	}
	return nil
}
