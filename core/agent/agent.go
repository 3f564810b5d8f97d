// Package agent holds the use cases of agents and their knowledge sources.
package agent

import (
	"context"
	"log/slog"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Service runs agent use cases, always within one workspace.
type Service struct {
	agents   ports.AgentStore
	sources  ports.SourceStore
	jobs     ports.IndexJobs
	notifier ports.KnowledgeNotifier
	clock    ports.Clock
	log      *slog.Logger
}

// NewService returns a Service.
func NewService(agents ports.AgentStore, sources ports.SourceStore, jobs ports.IndexJobs, notifier ports.KnowledgeNotifier,
	clock ports.Clock, log *slog.Logger) *Service {
	return &Service{agents: agents, sources: sources, jobs: jobs, notifier: notifier, clock: clock, log: log}
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
	RetrievalTopK      *int
	RetrievalThreshold *float64
	PrimaryColor       *string
	AvatarURL          *string
	AllowedOrigins     *[]string
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
	setIf(&a.Config.RetrievalTopK, p.RetrievalTopK)
	setIf(&a.Config.RetrievalThreshold, p.RetrievalThreshold)
	setIf(&a.Config.PrimaryColor, p.PrimaryColor)
	setIf(&a.Config.AvatarURL, p.AvatarURL)
	setIf(&a.Config.AllowedOrigins, p.AllowedOrigins)
	if err := a.Validate(); err != nil {
		return domain.Agent{}, err
	}
	a.UpdatedAt = s.clock.Now()
	if err := s.agents.UpdateAgent(ctx, &a); err != nil {
		return domain.Agent{}, err
	}
	s.announce(ctx, a.WorkspaceID, a.ID)
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
	if err := s.agents.DeleteAgent(ctx, workspaceID, a.ID); err != nil {
		return err
	}
	s.announce(ctx, workspaceID, a.ID)
	return nil
}

// announce tells every pod to drop its cached copy of the agent. Caches also
// expire on their own within seconds, so a lost message only delays that.
func (s *Service) announce(ctx context.Context, workspaceID, agentID string) {
	if err := s.notifier.AgentChanged(ctx, workspaceID, agentID); err != nil {
		s.log.WarnContext(ctx, "announcing an agent change", "agent_id", agentID, "error", err)
	}
}

// AddSource stores a knowledge source for the agent, PENDING, and schedules
// its indexing. If the job cannot be enqueued now, the source stays PENDING
// and the worker's sweeper enqueues it later: the request still succeeds,
// because nothing the caller sent is lost.
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
	src.Status = domain.SourcePending
	src.Generation = 0
	src.CreatedAt, src.UpdatedAt = now, now
	if err := s.sources.CreateSource(ctx, &src); err != nil {
		return domain.Source{}, err
	}
	s.enqueue(ctx, src)
	src.File = nil
	return src, nil
}

// Reindex schedules the source's indexing again (its file, page or site may
// have changed, or its last indexing failed).
func (s *Service) Reindex(ctx context.Context, workspaceID, slug, sourceID string) (domain.Source, error) {
	a, err := s.Get(ctx, workspaceID, slug)
	if err != nil {
		return domain.Source{}, err
	}
	if !domain.ValidID(domain.PrefixSource, sourceID) {
		return domain.Source{}, domain.NotFound("source")
	}
	src, err := s.sources.RequestReindex(ctx, workspaceID, a.ID, sourceID, s.clock.Now())
	if err != nil {
		return domain.Source{}, err
	}
	s.enqueue(ctx, src)
	return src, nil
}

func (s *Service) enqueue(ctx context.Context, src domain.Source) {
	ref := domain.SourceRef{WorkspaceID: src.WorkspaceID, SourceID: src.ID, Generation: src.Generation}
	if err := s.jobs.EnqueueIndexSource(ctx, ref); err != nil {
		s.log.WarnContext(ctx, "enqueueing a source's indexing failed; the sweeper will retry",
			"source_id", src.ID, "error", err)
	}
}

// GetSource returns one of the agent's sources, or domain.ErrNotFound.
func (s *Service) GetSource(ctx context.Context, workspaceID, slug, sourceID string) (domain.Source, error) {
	a, err := s.Get(ctx, workspaceID, slug)
	if err != nil {
		return domain.Source{}, err
	}
	if !domain.ValidID(domain.PrefixSource, sourceID) {
		return domain.Source{}, domain.NotFound("source")
	}
	return s.sources.GetSource(ctx, workspaceID, a.ID, sourceID)
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
	change, err := s.sources.DeleteSource(ctx, workspaceID, a.ID, sourceID)
	if err != nil {
		return err
	}
	if err := s.notifier.KnowledgeChanged(ctx, change); err != nil {
		s.log.WarnContext(ctx, "announcing a knowledge change", "agent_id", change.AgentID, "error", err)
	}
	return nil
}
