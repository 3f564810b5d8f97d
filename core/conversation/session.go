package conversation

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/core/domain"
)

// SessionRef names a session the way a caller does: a keyed caller with
// its workspace, a keyless one (the widget, v1) by the session id alone,
// which is the capability. Every request about "this session, asked by
// this caller" carries one.
type SessionRef struct {
	// Workspace is the API key's workspace; nil for keyless callers, who
	// then reach only sessions of published agents.
	Workspace *domain.Workspace
	// ID is the session (conversation) id; "" where a request opens a new
	// session.
	ID string
	// IdentityHeader and SignatureHeader are the raw X-Service-Identity and
	// X-Service-Signature values, as the caller sent them: a session of a
	// verified user is not found for another verified user.
	IdentityHeader  string
	SignatureHeader string
}

// Session is a session as Find found it: its workspace, conversation and
// agent.
type Session struct {
	Workspace    domain.Workspace
	Conversation domain.Conversation
	Agent        domain.Agent
}

// Find returns the session ref names by the one set of rules every session
// route follows: a malformed, unknown or foreign id, another verified
// user's session (domain.VerifySessionCaller) and, for a keyless caller, a
// session of an agent that is no longer published are all the same
// domain.ErrNotFound ("session"), so a caller cannot probe what exists; bad
// identity headers fail as domain.VerifySessionCaller says. Other errors
// are the stores'. What was read before an error is returned with it.
func (l *Lifecycle) Find(ctx context.Context, ref SessionRef) (Session, error) {
	var (
		s   Session
		err error
	)
	notFound := domain.NotFound("session")
	if !domain.ValidID(domain.PrefixSession, ref.ID) {
		return s, notFound
	}
	if ref.Workspace != nil {
		s.Workspace = *ref.Workspace
		s.Conversation, err = l.d.Conversations.GetConversation(ctx, s.Workspace.ID, ref.ID)
	} else {
		s.Conversation, err = l.d.Conversations.GetConversationBySession(ctx, ref.ID)
		if err == nil {
			s.Workspace, err = l.d.Workspaces.GetWorkspace(ctx, s.Conversation.WorkspaceID)
		}
	}
	if errors.Is(err, domain.ErrNotFound) {
		return s, notFound
	}
	if err != nil {
		return s, err
	}
	if err := domain.VerifySessionCaller(&s.Workspace, s.Conversation, ref.IdentityHeader, ref.SignatureHeader, l.d.Clock.Now()); err != nil {
		return s, err
	}
	s.Agent, err = l.d.Agents.GetAgentByID(ctx, s.Workspace.ID, s.Conversation.AgentID)
	if errors.Is(err, domain.ErrNotFound) || (err == nil && ref.Workspace == nil && !s.Agent.Config.Published) {
		return s, notFound
	}
	return s, err
}
