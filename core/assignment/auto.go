package assignment

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/core/domain"
)

// AutoAssign gives a conversation waiting for a person (HANDOFF_REQUESTED,
// unassigned) to one of the workspace's members, chosen by ChooseAssignee,
// when the workspace has auto-assignment on. It goes through the same
// change as Assign, so conversation.assigned is delivered and the
// workspace's followers are told exactly as for a manual assignment; the
// actor is the system, which, like an API key, is no member, and the
// events name no actor either way. The conversation's status stays as it
// is: the member still takes it over or replies, and until then it waits
// in their Mine.
//
// It is idempotent: a conversation assigned meanwhile (by a member, or by
// an earlier run of the same task), moved on, or in a workspace that turned
// auto-assignment off is left as it is, and so is one no member can take
// (nobody available): it stays in "Needs a person". assigned reports
// whether this call gave the conversation to someone. Returns
// domain.ErrNotFound for an unknown conversation or workspace, and the
// store's errors.
func (s *Service) AutoAssign(ctx context.Context, workspaceID, conversationID string) (conv domain.Conversation, assigned bool, err error) {
	if !domain.ValidID(domain.PrefixSession, conversationID) {
		return domain.Conversation{}, false, domain.NotFound("conversation")
	}
	if s.d.Workspaces == nil {
		return domain.Conversation{}, false, domain.Unavailable("auto-assignment", errors.New("assignment.Deps.Workspaces is not wired"))
	}
	// The workspace is read from the store, not from a cache: the setting
	// may have been turned off since the handoff was queued.
	ws, err := s.d.Workspaces.GetWorkspace(ctx, workspaceID)
	if err != nil {
		return domain.Conversation{}, false, err
	}
	if !ws.AutoAssign {
		return domain.Conversation{}, false, nil
	}
	now := s.d.Clock.Now()
	return s.change(ctx, &ws, domain.AssigneeChange{
		WorkspaceID: ws.ID, ConversationID: conversationID, Choose: ChooseAssignee, At: now,
	})
}

// ChooseAssignee picks the member auto-assignment gives a conversation to:
// among the available members whose role may take conversations
// (domain.PermConversations), the one with the fewest open conversations;
// among those, the one auto-assigned least recently (never comes first), so
// equals take turns; among those, the lowest user id, so the choice never
// depends on the order the store read them in. Returns "" when nobody fits.
func ChooseAssignee(candidates []domain.AssignCandidate) string {
	var best *domain.AssignCandidate
	for i := range candidates {
		c := &candidates[i]
		if !c.Available || !c.Role.Can(domain.PermConversations) || c.UserID == "" {
			continue
		}
		if best == nil || before(c, best) {
			best = c
		}
	}
	if best == nil {
		return ""
	}
	return best.UserID
}

// before reports whether a comes before b in ChooseAssignee's order.
func before(a, b *domain.AssignCandidate) bool {
	if a.Open != b.Open {
		return a.Open < b.Open
	}
	if !a.LastAutoAssignedAt.Equal(b.LastAutoAssignedAt) {
		return a.LastAutoAssignedAt.Before(b.LastAutoAssignedAt)
	}
	return a.UserID < b.UserID
}
