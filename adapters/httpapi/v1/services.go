package v1

import (
	"context"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
	"github.com/conciergehq/concierge/core/handoff"
)

// The use cases the v1 handlers call, each exactly as much of its service
// as the handlers need, so that every handler can be tested with a scripted
// fake. Errors are the domain's kinds; the one ErrorHandler maps them.
// Every session call finds its session by the same rules: a malformed,
// unknown or foreign id, another verified user's session and a session of
// an unpublished agent are all domain.ErrNotFound, and bad identity headers
// are domain.ErrUnauthorized.

// Sessions opens sessions for API-key callers (conversation.Service).
type Sessions interface {
	// StartSession opens a conversation with the agent named by slug, or
	// with the workspace's first agent when slug is empty. Returns
	// domain.ErrNotFound when the agent does not exist.
	StartSession(ctx context.Context, ws *domain.Workspace, slug string, identity *domain.Identity) (domain.Conversation, error)
}

// Chat starts chat turns (chat.Service, whose Start returns *chat.Pending).
type Chat interface {
	// Start checks a request and resolves its session. Its errors come
	// before anything is answered: domain.ErrInvalidInput,
	// domain.ErrNotFound, a domain.PlanError, domain.ErrUnauthorized, and
	// a domain.ConflictError for an Idempotency-Key reused with another
	// request or still being answered.
	Start(ctx context.Context, req chat.Request) (sse.Turn, error)
}

// Handoffs serves a visitor's handoff request and polling
// (handoff.Service).
type Handoffs interface {
	// RequestHandoff asks for a person. Returns a domain.PlanError below
	// Standard, domain.ErrInvalidInput for a bad form, and
	// domain.ErrConflict when a person already owns the conversation.
	RequestHandoff(ctx context.Context, req handoff.Request) (domain.Conversation, error)
	// Poll returns the session's messages after req.After. Returns
	// domain.ErrInvalidInput for a bad limit or an After that is not a
	// message of this session.
	Poll(ctx context.Context, req conversation.PollRequest) (conversation.PollResult, error)
}

// Ratings stores a visitor's feedback on answers (feedback.Service).
type Ratings interface {
	// Rate stores (or, with no rating, clears) the feedback on an answer
	// of the session. A message of another session is
	// domain.ErrNotFound, a message that is not an answer
	// domain.ErrFeedbackNotAnswer, a bad rating or comment
	// domain.ErrInvalidInput.
	Rate(ctx context.Context, req feedback.Request) (domain.Feedback, error)
}
