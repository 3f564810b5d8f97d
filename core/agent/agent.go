// Package agent holds the use cases of agents and their knowledge sources.
package agent

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Service runs agent use cases, always within one workspace.
type Service struct {
	agents  ports.AgentStore
	sources ports.SourceStore
	clock   ports.Clock
}

// NewService returns a Service.
func NewService(agents ports.AgentStore, sources ports.SourceStore, clock ports.Clock) *Service {
	return &Service{agents: agents, sources: sources, clock: clock}
}

// Create stores a new agent. Returns domain.ErrInvalidInput for bad fields and
// domain.ErrConflict when the slug is taken.
func (s *Service) Create(ctx context.Context, workspaceID string, a domain.Agent) (domain.Agent, error) {
	if err := a.Validate(); err != nil {
		return domain.Agent{}, err
	}
	now := s.clock.Now()
	a.ID = domain.NewID(domain.PrefixAgent)
	a.WorkspaceID = workspaceID
	a.CreatedAt, a.UpdatedAt = now, now
	if err := s.agents.CreateAgent(ctx, &a); err != nil {
		return domain.Agent{}, err
	}
	return a, nil
}

// Get returns the agent with the slug, or domain.ErrNotFound.
func (s *Service) Get(ctx context.Context, workspaceID, slug string) (domain.Agent, error) {
	if domain.ValidateSlug(slug) != nil {
		return domain.Agent{}, domain.NotFound("agent")
	}
	return s.agents.GetAgentBySlug(ctx, workspaceID, slug)
}

// List returns a page of the workspace's agents in creation order.
func (s *Service) List(ctx context.Context, workspaceID string, page domain.PageRequest) (domain.Page[domain.Agent], error) {
	return s.agents.ListAgents(ctx, workspaceID, page)
}

// Patch lists the fields to change; nil leaves a field as it is.
type Patch struct {
	Name               *string
	SystemPrompt       *string
	WelcomeMessage     *string
	SuggestedQuestions *[]string
	FallbackMessage    *string
	Published          *bool
	Model              *string
	BlockedTopics      *[]string
}

// Update applies a patch. Returns domain.ErrNotFound or domain.ErrInvalidInput.
func (s *Service) Update(ctx context.Context, workspaceID, slug string, p Patch) (domain.Agent, error) {
	a, err := s.Get(ctx, workspaceID, slug)
	if err != nil {
		return domain.Agent{}, err
	}
	setIf(&a.Name, p.Name)
	setIf(&a.Config.SystemPrompt, p.SystemPrompt)
	setIf(&a.Config.WelcomeMessage, p.WelcomeMessage)
	setIf(&a.Config.SuggestedQuestions, p.SuggestedQuestions)
	setIf(&a.Config.FallbackMessage, p.FallbackMessage)
	setIf(&a.Config.Published, p.Published)
	setIf(&a.Config.Model, p.Model)
	setIf(&a.Config.BlockedTopics, p.BlockedTopics)
	if err := a.Validate(); err != nil {
		return domain.Agent{}, err
	}
	a.UpdatedAt = s.clock.Now()
	if err := s.agents.UpdateAgent(ctx, &a); err != nil {
		return domain.Agent{}, err
	}
	return a, nil
}

func setIf[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Delete removes the agent with everything it owns.
func (s *Service) Delete(ctx context.Context, workspaceID, slug string) error {
	a, err := s.Get(ctx, workspaceID, slug)
	if err != nil {
		return err
	}
	return s.agents.DeleteAgent(ctx, workspaceID, a.ID)
}

// AddSource stores a knowledge source for the agent. Text and Q&A sources are
// searchable as soon as they are stored, so they start READY; source types that
// need extraction start PENDING when the knowledge pipeline arrives.
func (s *Service) AddSource(ctx context.Context, workspaceID, slug string, src domain.Source) (domain.Source, error) {
	a, err := s.Get(ctx, workspaceID, slug)
	if err != nil {
		return domain.Source{}, err
	}
	if err := src.Validate(); err != nil {
		return domain.Source{}, err
	}
	now := s.clock.Now()
	src.ID = domain.NewID(domain.PrefixSource)
	src.WorkspaceID = workspaceID
	src.AgentID = a.ID
	src.Status = domain.SourceReady
	src.CreatedAt, src.UpdatedAt = now, now
	if err := s.sources.CreateSource(ctx, &src); err != nil {
		return domain.Source{}, err
	}
	return src, nil
}

// ListSources returns a page of the agent's sources, newest first.
func (s *Service) ListSources(ctx context.Context, workspaceID, slug string, page domain.PageRequest) (domain.Page[domain.Source], error) {
	a, err := s.Get(ctx, workspaceID, slug)
	if err != nil {
		return domain.Page[domain.Source]{}, err
	}
	return s.sources.ListSources(ctx, workspaceID, a.ID, page)
}

// DeleteSource removes one of the agent's sources.
func (s *Service) DeleteSource(ctx context.Context, workspaceID, slug, sourceID string) error {
	a, err := s.Get(ctx, workspaceID, slug)
	if err != nil {
		return err
	}
	if !domain.ValidID(domain.PrefixSource, sourceID) {
		return domain.NotFound("source")
	}
	return s.sources.DeleteSource(ctx, workspaceID, a.ID, sourceID)
}
