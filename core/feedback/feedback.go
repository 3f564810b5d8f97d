// Package feedback holds the use cases of visitors' ratings of answers:
// rating an answer from the widget (whose capability is the session id)
// and listing rated answers for the workspace.
package feedback

import (
	"context"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Deps are the ports the feedback use cases need.
type Deps struct {
	// Agents reads the agent a listing is narrowed to.
	Agents ports.AgentLookups
	// Lifecycle finds the session a visitor rates an answer of.
	Lifecycle *conversation.Lifecycle
	Feedback  ports.FeedbackStore
	Clock     ports.Clock
}

// Service runs the feedback use cases.
type Service struct {
	agents    ports.AgentLookups
	lifecycle *conversation.Lifecycle
	feedback  ports.FeedbackStore
	clock     ports.Clock
}

// NewService returns a Service.
func NewService(d Deps) *Service {
	return &Service{agents: d.Agents, lifecycle: d.Lifecycle, feedback: d.Feedback, clock: d.Clock}
}

// Request rates one answer of a session. The caller holds only the session
// id, with the identity headers it carries (Session.Workspace is nil).
type Request struct {
	Session   conversation.SessionRef
	MessageID string
	// Rating is "up", "down", or "" to clear the feedback.
	Rating  string
	Comment string
}

// Rate stores (or clears) a visitor's feedback on an answer of the session
// and returns it: a cleared feedback has no rating and the time it was
// cleared. The session is found by the rules of
// the other keyless session calls (the engine's and the poll's): a
// malformed, unknown or foreign id, another verified user's session and a
// session of an unpublished agent are all domain.ErrNotFound. A message of
// another session is domain.ErrNotFound too; a message that is not an
// answer is domain.ErrFeedbackNotAnswer; a bad rating or comment is
// domain.ErrInvalidInput; bad identity headers fail as in
// domain.VerifySessionCaller.
func (s *Service) Rate(ctx context.Context, req Request) (domain.Feedback, error) {
	now := s.clock.Now()
	fb, err := domain.NewFeedback(req.Rating, req.Comment, now)
	if err != nil {
		return domain.Feedback{}, err
	}
	found, err := s.lifecycle.Find(ctx, req.Session)
	if err != nil {
		return domain.Feedback{}, err
	}
	conv := found.Conversation
	if !domain.ValidID(domain.PrefixMessage, req.MessageID) {
		return domain.Feedback{}, domain.NotFound("message")
	}
	if err := s.feedback.SetFeedback(ctx, conv.WorkspaceID, conv.ID, req.MessageID, fb); err != nil {
		return domain.Feedback{}, err
	}
	if fb == nil {
		return domain.Feedback{UpdatedAt: now}, nil
	}
	return *fb, nil
}

// ListFilter narrows List by agent slug and rating; empty values match all.
type ListFilter struct {
	AgentSlug string
	Rating    string
}

// List returns a page of the workspace's rated answers, most recently
// rated first. An unknown agent slug is domain.ErrNotFound; a rating other
// than up or down is domain.ErrInvalidInput.
func (s *Service) List(ctx context.Context, workspaceID string, f ListFilter, page domain.PageRequest) (domain.Page[domain.RatedAnswer], error) {
	rating, err := domain.ParseRatingFilter(f.Rating)
	if err != nil {
		return domain.Page[domain.RatedAnswer]{}, err
	}
	filter := domain.FeedbackFilter{Rating: rating}
	if f.AgentSlug != "" {
		if domain.ValidateSlug(f.AgentSlug) != nil {
			return domain.Page[domain.RatedAnswer]{}, domain.NotFound("agent")
		}
		agent, err := s.agents.GetAgentBySlug(ctx, workspaceID, f.AgentSlug)
		if err != nil {
			return domain.Page[domain.RatedAnswer]{}, err
		}
		filter.AgentID = agent.ID
	}
	return s.feedback.ListFeedback(ctx, workspaceID, filter, page)
}
