// Package assignment holds the use cases of conversation ownership: a
// member taking a conversation over, and assigning or unassigning it. It
// is its own package, not part of core/handoff, because ownership is about
// members of a workspace (the console, integrations acting for them) while
// handoff is about the visitor and the helpdesk; a take-over does move the
// conversation to HUMAN, in the same store statement that assigns it, so
// two members racing each other serialize on the conversation's row.
//
// Any member role (owner, admin, agent) may take over, assign and
// unassign: agents are the people who work the inbox, and an inbox where
// only admins could hand a conversation to a colleague would stall.
package assignment

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Service runs the ownership use cases.
type Service struct {
	store ports.AssignmentStore
}

// NewService returns a Service over the store.
func NewService(store ports.AssignmentStore) *Service {
	return &Service{store: store}
}

// TakeOver assigns the conversation to the actor and moves it to HUMAN.
// Taking over what the actor already holds succeeds and changes nothing.
// Returns domain.ErrNotFound unless the conversation is the workspace's,
// domain.ErrForbidden when the actor is not a member of the workspace, and
// a domain.ConflictError naming the holder (details assigneeId) when
// another member holds it, or naming the status when it is RESOLVED (it is
// reopened first).
func (s *Service) TakeOver(ctx context.Context, workspaceID, conversationID string, actor domain.Member) (domain.Conversation, error) {
	if err := checkActor(workspaceID, actor); err != nil {
		return domain.Conversation{}, err
	}
	if !domain.ValidID(domain.PrefixSession, conversationID) {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return s.store.ChangeAssignee(ctx, domain.AssigneeChange{
		WorkspaceID: workspaceID, ConversationID: conversationID, AssigneeID: actor.UserID, TakeOver: true,
	})
}

// Assign gives the conversation to a member of the workspace, whoever held
// it. actor is nil for an API key, which acts for the workspace and is no
// member. Returns domain.ErrNotFound unless the conversation is the
// workspace's, domain.ErrForbidden for an actor of another workspace, and a
// domain.ValidationError on field assigneeId when the assignee is not a
// member of the workspace.
func (s *Service) Assign(ctx context.Context, workspaceID, conversationID, assigneeUserID string, actor *domain.Member) (domain.Conversation, error) {
	if actor != nil {
		if err := checkActor(workspaceID, *actor); err != nil {
			return domain.Conversation{}, err
		}
	}
	if !domain.ValidID(domain.PrefixSession, conversationID) {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	if !domain.ValidID(domain.PrefixUser, assigneeUserID) {
		return domain.Conversation{}, domain.InvalidField("assigneeId", "is not a user id (usr_...)")
	}
	return s.store.ChangeAssignee(ctx, domain.AssigneeChange{
		WorkspaceID: workspaceID, ConversationID: conversationID, AssigneeID: assigneeUserID,
	})
}

// Unassign leaves the conversation to nobody; its status stays as it is.
// Errors as Assign's, but for the assignee's.
func (s *Service) Unassign(ctx context.Context, workspaceID, conversationID string, actor *domain.Member) (domain.Conversation, error) {
	if actor != nil {
		if err := checkActor(workspaceID, *actor); err != nil {
			return domain.Conversation{}, err
		}
	}
	if !domain.ValidID(domain.PrefixSession, conversationID) {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return s.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: workspaceID, ConversationID: conversationID})
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
