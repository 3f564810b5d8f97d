// Package inbox holds the read side of the human inbox: the views a member
// works through (needs a person, mine, unassigned, all open, resolved),
// their counts, the earlier conversations of a verified user, and the
// teammates a conversation can be assigned to. Writing (replies, notes,
// ownership, status) belongs to core/handoff and core/assignment; the
// console calls those directly.
package inbox

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// EarlierLimit is how many earlier conversations of a verified user a
// thread shows: enough to recognise a returning customer, not a history.
const EarlierLimit = 5

// Deps are the ports the inbox reads.
type Deps struct {
	Inbox   ports.InboxStore
	Agents  ports.AgentLookups
	Members ports.MemberStore
}

// Service runs the inbox's read use cases. Every member role may read
// the inbox (domain.PermConversations).
type Service struct{ d Deps }

// NewService returns a Service.
func NewService(d Deps) *Service { return &Service{d: d} }

// Request is one view of the inbox as a member asks for it.
type Request struct {
	View domain.InboxView
	// AgentSlug, when set, keeps one agent's conversations.
	AgentSlug string
	// Query searches the contact and the messages (ConversationFilter.Query).
	Query string
}

// List returns a page of a view for the actor. Returns a
// domain.ValidationError naming view or q for an unknown view or a query
// of the wrong length, domain.ErrNotFound for an unknown agent, and
// domain.ErrForbidden for an actor whose role cannot read conversations.
func (s *Service) List(ctx context.Context, actor domain.Member, req Request, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	q, err := s.query(ctx, actor, req)
	if err != nil {
		return domain.Page[domain.Conversation]{}, err
	}
	return s.d.Inbox.ListInbox(ctx, actor.WorkspaceID, q, page)
}

// Counts counts every view for the actor, of one agent when agentSlug is
// set; each count stops at domain.InboxCountCap. Errors as List's.
func (s *Service) Counts(ctx context.Context, actor domain.Member, agentSlug string) (domain.InboxCounts, error) {
	q, err := s.query(ctx, actor, Request{View: domain.InboxNeeds, AgentSlug: agentSlug})
	if err != nil {
		return nil, err
	}
	return s.d.Inbox.CountInbox(ctx, actor.WorkspaceID, actor.UserID, q.AgentID)
}

// Earlier returns the latest conversations (at most EarlierLimit) of the
// conversation's verified user but conv itself; none when conv has no
// verified user. Returns domain.ErrForbidden as List.
func (s *Service) Earlier(ctx context.Context, actor domain.Member, conv domain.Conversation) ([]domain.Conversation, error) {
	if err := actor.Role.Require(domain.PermConversations); err != nil {
		return nil, err
	}
	if conv.VerifiedUserID == "" || conv.WorkspaceID != actor.WorkspaceID {
		return nil, nil
	}
	return s.d.Inbox.VerifiedUserConversations(ctx, actor.WorkspaceID, conv.VerifiedUserID, conv.ID, EarlierLimit)
}

// Teammates lists the members of the actor's workspace, who a
// conversation may be assigned to. Unlike the members page it needs only
// domain.PermConversations: agents hand conversations to each other.
func (s *Service) Teammates(ctx context.Context, actor domain.Member) ([]domain.Member, error) {
	if err := actor.Role.Require(domain.PermConversations); err != nil {
		return nil, err
	}
	return s.d.Members.ListMembers(ctx, actor.WorkspaceID)
}

func (s *Service) query(ctx context.Context, actor domain.Member, req Request) (domain.InboxQuery, error) {
	if err := actor.Role.Require(domain.PermConversations); err != nil {
		return domain.InboxQuery{}, err
	}
	if req.View == "" {
		req.View = domain.InboxNeeds
	}
	if !req.View.Valid() {
		return domain.InboxQuery{}, domain.InvalidField("view", "must be one of needs, mine, unassigned, open, resolved")
	}
	q := domain.InboxQuery{View: req.View, UserID: actor.UserID, Query: strings.TrimSpace(req.Query)}
	if q.Query != "" {
		if err := domain.ValidateText("q", q.Query); err != nil {
			return q, err
		}
		if n := utf8.RuneCountInString(q.Query); n < domain.MinConversationQueryLength || n > domain.MaxConversationQueryLength {
			return q, domain.InvalidField("q", fmt.Sprintf("must be %d to %d characters", domain.MinConversationQueryLength, domain.MaxConversationQueryLength))
		}
	}
	if req.AgentSlug != "" {
		if domain.ValidateSlug(req.AgentSlug) != nil {
			return q, domain.NotFound("agent")
		}
		a, err := s.d.Agents.GetAgentBySlug(ctx, actor.WorkspaceID, req.AgentSlug)
		if err != nil {
			return q, err
		}
		q.AgentID = a.ID
	}
	return q, nil
}
