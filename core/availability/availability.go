// Package availability holds the use cases of members' availability: a
// member saying they are available to answer visitors, or away, and the
// widget asking whether anyone is, so that a visitor who asks for a person
// while nobody is there is told so and leaves an email.
//
// A member changes only their own availability: being "available" is a
// promise about oneself, so no role may make it for someone else.
package availability

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Deps are the ports the availability use cases need.
type Deps struct {
	Members    ports.AvailabilityStore
	Workspaces ports.WorkspaceStore
	// Conversations finds a widget session's workspace.
	Conversations ports.ConversationReader
}

// Service runs the availability use cases.
type Service struct {
	members       ports.AvailabilityStore
	workspaces    ports.WorkspaceStore
	conversations ports.ConversationReader
}

// NewService returns a Service.
func NewService(d Deps) *Service {
	return &Service{members: d.Members, workspaces: d.Workspaces, conversations: d.Conversations}
}

// SetAvailable records the actor's own availability in the actor's
// workspace and returns the membership as stored. Any role may. Returns
// domain.ErrForbidden for an actor with no workspace or user (a wiring
// mistake: the edges resolve the actor from the session), and
// domain.ErrNotFound when the actor is no longer a member.
func (s *Service) SetAvailable(ctx context.Context, actor domain.Member, available bool) (domain.Member, error) {
	if actor.WorkspaceID == "" || actor.UserID == "" {
		return domain.Member{}, domain.ErrForbidden
	}
	return s.members.SetAvailable(ctx, actor.WorkspaceID, actor.UserID, available)
}

// HumanAvailable reports whether a person can be expected to answer a
// handoff in the workspace soon: a member is available, or the workspace
// sends its handoffs to its own helpdesk, whose people are not members
// here and whose hours we cannot see (saying "nobody is available" there
// would be a guess, and usually a wrong one). Returns domain.ErrNotFound
// for an unknown workspace.
func (s *Service) HumanAvailable(ctx context.Context, workspaceID string) (bool, error) {
	ws, err := s.workspaces.GetWorkspace(ctx, workspaceID)
	if err != nil {
		return false, err
	}
	return s.humanAvailable(ctx, &ws)
}

func (s *Service) humanAvailable(ctx context.Context, ws *domain.Workspace) (bool, error) {
	if ws.HelpdeskURL != "" {
		return true, nil
	}
	return s.members.AnyAvailable(ctx, ws.ID)
}

// ForSession is HumanAvailable for the workspace of a session, for callers
// whose capability is the session id (the widget). Returns
// domain.ErrNotFound for an unknown session, and for one whose workspace
// has been deleted since.
func (s *Service) ForSession(ctx context.Context, sessionID string) (bool, error) {
	if !domain.ValidID(domain.PrefixSession, sessionID) {
		return false, domain.NotFound("session")
	}
	conv, err := s.conversations.GetConversationBySession(ctx, sessionID)
	if err != nil {
		return false, err
	}
	ws, err := s.workspaces.GetWorkspace(ctx, conv.WorkspaceID)
	if errors.Is(err, domain.ErrNotFound) {
		return false, domain.NotFound("session")
	}
	if err != nil {
		return false, err
	}
	return s.humanAvailable(ctx, &ws)
}
