// Package assignment holds the use cases of conversation ownership: a
// member taking a conversation over, and assigning or unassigning it. It
// is its own package, not part of core/handoff, because ownership is about
// members of a workspace (the console, integrations acting for them) while
// handoff is about the visitor and the helpdesk.
//
// A take-over is a move of the conversation's lifecycle
// (conversation.Lifecycle.Move with TakeOverBy): the move to HUMAN, its
// notice ("<name> joined the conversation."), its outbox rows and the new
// assignee are one conditional write, so two members racing each other
// serialize on the conversation's row and exactly one wins; the other gets
// domain.HeldByOther's conflict naming the winner. Every change of assignee
// is delivered as conversation.assigned when the workspace has an events
// URL.
//
// Any member role (owner, admin, agent) may take over, assign and
// unassign: agents are the people who work the inbox, and an inbox where
// only admins could hand a conversation to a colleague would stall.
package assignment

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Deps are the ports the ownership use cases need.
type Deps struct {
	Assignments ports.AssignmentStore
	// Conversations reads the conversation a take-over starts from.
	Conversations interface {
		// GetConversation returns domain.ErrNotFound unless the
		// conversation belongs to the workspace.
		GetConversation(ctx context.Context, workspaceID, id string) (domain.Conversation, error)
	}
	// Lifecycle moves a conversation taken over to HUMAN, publishes the
	// notice and schedules deliveries.
	Lifecycle *conversation.Lifecycle
	// Workspaces reads the workspace an auto-assignment runs in, for its
	// current setting; only AutoAssign needs it.
	Workspaces interface {
		// GetWorkspace returns domain.ErrNotFound for an unknown workspace.
		GetWorkspace(ctx context.Context, id string) (domain.Workspace, error)
	}
	Clock ports.Clock
}

// Service runs the ownership use cases.
type Service struct {
	d Deps
}

// NewService returns a Service over d.
func NewService(d Deps) *Service {
	return &Service{d: d}
}

// TakeOver assigns the conversation to the actor and moves it to HUMAN, in
// one write with the move's notice ("<actor's name> joined the
// conversation.") and deliveries (conversation.assigned among them), then
// publishes the notice to the session's followers. A RESOLVED conversation
// is reopened this way too: the member taking over a closed case is
// answering the visitor again, and the notice says so in the transcript.
// Taking over what the actor already holds, HUMAN, changes nothing.
//
// Returns domain.ErrNotFound unless the conversation is the workspace's,
// domain.ErrForbidden when the actor is not a member of the workspace, a
// PlanError below the handoff feature, and domain.HeldByOther's
// ConflictError (details assigneeId) when another member holds it.
func (s *Service) TakeOver(ctx context.Context, ws *domain.Workspace, conversationID string, actor domain.Member) (domain.Conversation, error) {
	if err := checkActor(ws.ID, actor); err != nil {
		return domain.Conversation{}, err
	}
	if err := ws.Require(domain.FeatureHandoff); err != nil {
		return domain.Conversation{}, err
	}
	if !domain.ValidID(domain.PrefixSession, conversationID) {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	conv, err := s.d.Conversations.GetConversation(ctx, ws.ID, conversationID)
	if err != nil {
		return domain.Conversation{}, err
	}
	for range conversation.StatusAttempts {
		if conv.Status != domain.StatusHuman {
			moved, err := s.d.Lifecycle.Move(ctx, ws, conv, conversation.Move{
				To: domain.StatusHuman, Author: actor.Name, TakeOverBy: actor.UserID,
			})
			if err != nil {
				return domain.Conversation{}, err
			}
			if moved.Notice != nil {
				s.d.Lifecycle.PublishMessages(ctx, *moved.Notice)
				if conv.AssigneeID != actor.UserID {
					// Move scheduled the deliveries already.
					s.d.Lifecycle.Reassigned(ctx, nil, moved.Conversation)
				}
				return moved.Conversation, nil
			}
			// Someone else moved it to HUMAN first: claim it, if nobody
			// holds it.
			conv = moved.Conversation
		}
		if conv.HeldByOther(actor.UserID) {
			return domain.Conversation{}, domain.HeldByOther(conv.AssigneeID)
		}
		after, _, err := s.change(ctx, ws, domain.AssigneeChange{
			WorkspaceID: ws.ID, ConversationID: conv.ID, AssigneeID: actor.UserID, TakeOver: true,
		})
		if errors.Is(err, domain.ErrStatusChanged) {
			conv = after // moved out of HUMAN meanwhile: decide again
			continue
		}
		return after, err
	}
	return domain.Conversation{}, domain.ErrStatusChanged
}

// Assign gives the conversation to a member of the workspace, whoever held
// it; its status stays as it is. actor is nil for an API key, which acts
// for the workspace and is no member. Assigning it to its assignee changes
// and delivers nothing. Returns domain.ErrNotFound unless the conversation
// is the workspace's, domain.ErrForbidden for an actor of another
// workspace, and a domain.ValidationError on field assigneeId when the
// assignee is not a member of the workspace.
func (s *Service) Assign(ctx context.Context, ws *domain.Workspace, conversationID, assigneeUserID string, actor *domain.Member) (domain.Conversation, error) {
	if actor != nil {
		if err := checkActor(ws.ID, *actor); err != nil {
			return domain.Conversation{}, err
		}
	}
	if !domain.ValidID(domain.PrefixSession, conversationID) {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	if !domain.ValidID(domain.PrefixUser, assigneeUserID) {
		return domain.Conversation{}, domain.InvalidField("assigneeId", "is not a user id (usr_...)")
	}
	after, _, err := s.change(ctx, ws, domain.AssigneeChange{
		WorkspaceID: ws.ID, ConversationID: conversationID, AssigneeID: assigneeUserID,
	})
	return after, err
}

// Unassign leaves the conversation to nobody; its status stays as it is.
// Errors as Assign's, but for the assignee's.
func (s *Service) Unassign(ctx context.Context, ws *domain.Workspace, conversationID string, actor *domain.Member) (domain.Conversation, error) {
	if actor != nil {
		if err := checkActor(ws.ID, *actor); err != nil {
			return domain.Conversation{}, err
		}
	}
	if !domain.ValidID(domain.PrefixSession, conversationID) {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	after, _, err := s.change(ctx, ws, domain.AssigneeChange{WorkspaceID: ws.ID, ConversationID: conversationID})
	return after, err
}

// change applies an assignee change with its conversation.assigned
// delivery (conversation.AssignedReport), then schedules what was written
// and tells every member's inbox (Lifecycle.Reassigned), as a member's
// removal does for the conversations it unassigns; changed reports whether
// the assignee changed.
func (s *Service) change(ctx context.Context, ws *domain.Workspace, change domain.AssigneeChange) (_ domain.Conversation, changed bool, _ error) {
	report := conversation.AssignedReport(ws, s.d.Clock.Now())
	change.Report = func(after domain.Conversation) []domain.Delivery {
		changed = true
		return report(after)
	}
	after, deliveries, err := s.d.Assignments.ChangeAssignee(ctx, change)
	if err != nil {
		return after, false, err
	}
	if !changed {
		s.d.Lifecycle.EnqueueDeliveries(ctx, deliveries)
		return after, false, nil
	}
	s.d.Lifecycle.Reassigned(ctx, deliveries, after)
	return after, true, nil
}

// checkActor refuses a member of another workspace: the edges resolve the
// member from the session, so this guards against wiring mistakes rather
// than users.
func checkActor(workspaceID string, actor domain.Member) error {
	if actor.WorkspaceID != workspaceID || actor.UserID == "" {
		return domain.ErrForbidden
	}
	return nil
}
