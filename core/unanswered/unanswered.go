// Package unanswered groups the questions an agent failed on into topics
// (issue 18, item 3), as the worker's job, and lets the team answer a
// topic or one answer with a Q&A source (item 4, "improve an answer").
// docs/unanswered.md explains both.
package unanswered

import (
	"context"
	"log/slog"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// DefaultBatch is how many questions one transaction groups.
const DefaultBatch = 100

// maxBatchesPerSweep bounds one sweep's work.
const maxBatchesPerSweep = 100

// Agents is the agent lookup and the source creation the service needs:
// agent.Service, whose AddSource stores and schedules the source's
// indexing like any other.
type Agents interface {
	// Get returns domain.ErrNotFound if the workspace has no such agent.
	Get(ctx context.Context, workspaceID, slug string) (domain.Agent, error)
	// AddSource stores a source for the agent, PENDING, and schedules its indexing.
	AddSource(ctx context.Context, workspaceID, slug string, src domain.Source) (domain.Source, error)
}

// Service groups unanswered questions and answers topics.
type Service struct {
	store  ports.UnansweredStore
	agents Agents
	clock  ports.Clock
	log    *slog.Logger
	batch  int
}

// NewService returns the service over store; batch <= 0 takes DefaultBatch.
func NewService(store ports.UnansweredStore, agents Agents, clock ports.Clock, log *slog.Logger, batch int) *Service {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Service{store: store, agents: agents, clock: clock, log: log, batch: batch}
}

// Sweep groups every ungrouped question, a batch per transaction, and
// returns how many it grouped. Any number of workers may sweep at once.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	total := 0
	for range maxBatchesPerSweep {
		n, err := s.store.GroupPendingQuestions(ctx, s.clock.Now(), s.batch, domain.ChooseTopic)
		total += n
		if err != nil || n < s.batch {
			return total, err
		}
	}
	return total, nil
}

// ListRequest asks for a page of an agent's topics.
type ListRequest struct {
	AgentSlug string
	Order     domain.TopicOrder
	Status    domain.TopicStatus
	Limit     int
	After     *domain.TopicPosition
}

// List returns a page of the agent's topics. Errors: domain.ErrNotFound
// for an unknown agent, a ValidationError naming order, status or limit.
func (s *Service) List(ctx context.Context, workspaceID string, r ListRequest) (domain.TopicPage, error) {
	switch r.Order {
	case "":
		r.Order = domain.TopicsRecent
	case domain.TopicsRecent, domain.TopicsLargest:
	default:
		return domain.TopicPage{}, domain.InvalidField("order", "must be recent or largest")
	}
	switch r.Status {
	case "", domain.TopicOpen, domain.TopicAddressed:
	default:
		return domain.TopicPage{}, domain.InvalidField("status", "must be OPEN or ADDRESSED")
	}
	limit, err := domain.ValidatePageLimit(r.Limit)
	if err != nil {
		return domain.TopicPage{}, err
	}
	a, err := s.agents.Get(ctx, workspaceID, r.AgentSlug)
	if err != nil {
		return domain.TopicPage{}, err
	}
	return s.store.ListTopics(ctx, domain.TopicQuery{WorkspaceID: workspaceID, AgentID: a.ID, Order: r.Order, Status: r.Status,
		Limit: limit, After: r.After})
}

// Get returns one of the agent's topics with its examples, or
// domain.ErrNotFound.
func (s *Service) Get(ctx context.Context, workspaceID, slug, topicID string) (domain.UnansweredTopic, error) {
	a, err := s.agents.Get(ctx, workspaceID, slug)
	if err != nil {
		return domain.UnansweredTopic{}, err
	}
	if !domain.ValidID(domain.PrefixTopic, topicID) {
		return domain.UnansweredTopic{}, domain.NotFound("topic")
	}
	return s.store.GetTopic(ctx, workspaceID, a.ID, topicID)
}

// Answer writes the team's answer to a topic: a Q&A source on the agent
// (indexed by the worker like any other), linked to the topic's
// conversations, and the topic addressed. The topic is read first, so an
// unknown topic creates no source. Returns the topic as it is now and the
// source.
func (s *Service) Answer(ctx context.Context, workspaceID, slug, topicID string, ans domain.TopicAnswer) (domain.UnansweredTopic, domain.Source, error) {
	if _, err := s.Get(ctx, workspaceID, slug, topicID); err != nil {
		return domain.UnansweredTopic{}, domain.Source{}, err
	}
	if err := ans.Validate(); err != nil {
		return domain.UnansweredTopic{}, domain.Source{}, err
	}
	src, err := s.agents.AddSource(ctx, workspaceID, slug, domain.Source{Type: domain.SourceQA, Question: ans.Question, Answer: ans.Answer})
	if err != nil {
		return domain.UnansweredTopic{}, domain.Source{}, err
	}
	if err := s.store.AddressTopic(ctx, workspaceID, src.AgentID, topicID, src.ID, s.clock.Now()); err != nil {
		return domain.UnansweredTopic{}, src, err
	}
	t, err := s.store.GetTopic(ctx, workspaceID, src.AgentID, topicID)
	return t, src, err
}

// Question returns one visitor question of the agent's conversation,
// with its topic (TopicID "" when it is in none), or domain.ErrNotFound
// unless questionID is a USER message of that conversation.
func (s *Service) Question(ctx context.Context, workspaceID, slug, conversationID, questionID string) (domain.UnansweredQuestion, error) {
	if !domain.ValidID(domain.PrefixSession, conversationID) || !domain.ValidID(domain.PrefixMessage, questionID) {
		return domain.UnansweredQuestion{}, domain.NotFound("message")
	}
	a, err := s.agents.Get(ctx, workspaceID, slug)
	if err != nil {
		return domain.UnansweredQuestion{}, err
	}
	return s.store.Question(ctx, workspaceID, a.ID, conversationID, questionID)
}

// ImproveAnswer writes the team's answer to one visitor question of a
// conversation (questionID, a USER message): a Q&A source linked to it,
// and the question's topic, if any, addressed. It returns the source and
// that topic's id ("" when the question was in none). The question is
// checked first, so an unknown one creates no source.
func (s *Service) ImproveAnswer(ctx context.Context, workspaceID, slug, conversationID, questionID string, ans domain.TopicAnswer) (domain.Source, string, error) {
	if !domain.ValidID(domain.PrefixSession, conversationID) || !domain.ValidID(domain.PrefixMessage, questionID) {
		return domain.Source{}, "", domain.NotFound("message")
	}
	a, err := s.agents.Get(ctx, workspaceID, slug)
	if err != nil {
		return domain.Source{}, "", err
	}
	if err := ans.Validate(); err != nil {
		return domain.Source{}, "", err
	}
	if _, err := s.store.Question(ctx, workspaceID, a.ID, conversationID, questionID); err != nil {
		return domain.Source{}, "", err
	}
	src, err := s.agents.AddSource(ctx, workspaceID, slug, domain.Source{Type: domain.SourceQA, Question: ans.Question, Answer: ans.Answer})
	if err != nil {
		return domain.Source{}, "", err
	}
	topicID, err := s.store.AddressQuestion(ctx, workspaceID, src.AgentID, conversationID, questionID, src.ID, s.clock.Now())
	return src, topicID, err
}
