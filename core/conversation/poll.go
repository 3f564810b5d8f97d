package conversation

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/core/domain"
)

// PollRequest asks for a session's messages after one the client has.
type PollRequest struct {
	Session SessionRef
	// After is the id of the last message the client has; "" starts from
	// the first message.
	After string
	// Limit caps the messages returned (0: the default page size).
	Limit int
}

// PollResult is what happened in a session since After.
type PollResult struct {
	Conversation domain.Conversation
	// Messages are oldest first: every role, SYSTEM notices included.
	Messages []domain.Message
	// HasMore says more messages follow the last one returned: poll again
	// at once with its id.
	HasMore bool
}

var errBadAfter = domain.InvalidField("after", "is not a message of this session; pass the id of the last message you received")

// Poll returns the session's messages after req.After with the
// conversation's state, for clients that cannot hold a stream open. The
// session is found as Find finds it. Returns domain.ErrNotFound for an
// unknown session and domain.ErrInvalidInput for a bad limit or an After
// that is not a message of this session.
func (l *Lifecycle) Poll(ctx context.Context, req PollRequest) (PollResult, error) {
	limit, err := domain.ValidatePageLimit(req.Limit)
	if err != nil {
		return PollResult{}, err
	}
	if req.After != "" && !domain.ValidID(domain.PrefixMessage, req.After) {
		return PollResult{}, errBadAfter
	}
	s, err := l.Find(ctx, req.Session)
	if err != nil {
		return PollResult{}, err
	}
	// Internal notes are for the team, never the session's client: they
	// are left out, and pages are read on until the client's page is full
	// or the conversation ends, so a run of notes never yields an empty
	// page that still has more.
	out := PollResult{Conversation: s.Conversation, Messages: []domain.Message{}}
	after := req.After
	for {
		page := domain.PageRequest{Limit: limit}
		if after != "" {
			page.After = &domain.Position{ID: after}
		}
		msgs, err := l.d.Conversations.ListMessages(ctx, s.Workspace.ID, s.Conversation.ID, page)
		if errors.Is(err, domain.ErrInvalidInput) {
			return PollResult{}, errBadAfter
		}
		if err != nil {
			return PollResult{}, err
		}
		for _, m := range msgs.Items {
			if m.Role.Internal() {
				continue
			}
			if len(out.Messages) == limit {
				out.HasMore = true
				return out, nil
			}
			out.Messages = append(out.Messages, m)
		}
		if !msgs.HasMore || len(msgs.Items) == 0 {
			return out, nil
		}
		if len(out.Messages) == limit {
			out.HasMore = true
			return out, nil
		}
		after = msgs.Items[len(msgs.Items)-1].ID
	}
}
