package ports

import (
	"context"
	"errors"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// SessionRef names a session the way a caller does: a keyed caller with
// its workspace, a keyless one (the widget) by the session id alone, which
// is the capability. The identity headers are as the caller sent them.
type SessionRef struct {
	// Workspace is the API key's workspace; nil for keyless callers.
	Workspace       *domain.Workspace
	SessionID       string
	IdentityHeader  string
	SignatureHeader string
}

// SessionStores are the reads FindSession makes; the stores, or the
// per-pod caches in front of them, provide them.
type SessionStores struct {
	Conversations interface {
		GetConversation(ctx context.Context, workspaceID, id string) (domain.Conversation, error)
		GetConversationBySession(ctx context.Context, sessionID string) (domain.Conversation, error)
	}
	Workspaces interface {
		GetWorkspace(ctx context.Context, id string) (domain.Workspace, error)
	}
	Agents interface {
		GetAgentByID(ctx context.Context, workspaceID, id string) (domain.Agent, error)
	}
}

// FindSession returns the session's workspace, conversation and agent by
// the one set of rules every session route follows: a malformed, unknown or
// foreign id, another verified user's session (domain.VerifySessionCaller)
// and, for a keyless caller, a session of an agent that is no longer
// published are all the same domain.ErrNotFound ("session"), so a caller
// cannot probe what exists; bad identity headers fail as
// domain.VerifySessionCaller says. Other errors are the stores'.
func FindSession(ctx context.Context, st SessionStores, ref SessionRef, now time.Time) (domain.Workspace, domain.Conversation, domain.Agent, error) {
	var (
		ws   domain.Workspace
		conv domain.Conversation
		err  error
	)
	notFound := domain.NotFound("session")
	if !domain.ValidID(domain.PrefixSession, ref.SessionID) {
		return ws, conv, domain.Agent{}, notFound
	}
	if ref.Workspace != nil {
		ws = *ref.Workspace
		conv, err = st.Conversations.GetConversation(ctx, ws.ID, ref.SessionID)
	} else {
		conv, err = st.Conversations.GetConversationBySession(ctx, ref.SessionID)
		if err == nil {
			ws, err = st.Workspaces.GetWorkspace(ctx, conv.WorkspaceID)
		}
	}
	if errors.Is(err, domain.ErrNotFound) {
		return ws, conv, domain.Agent{}, notFound
	}
	if err != nil {
		return ws, conv, domain.Agent{}, err
	}
	if err := domain.VerifySessionCaller(&ws, conv, ref.IdentityHeader, ref.SignatureHeader, now); err != nil {
		return ws, conv, domain.Agent{}, err
	}
	agent, err := st.Agents.GetAgentByID(ctx, ws.ID, conv.AgentID)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && ref.Workspace == nil && !agent.Config.Published) {
		return ws, conv, agent, notFound
	}
	return ws, conv, agent, err
}
