package conversation

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/core/domain"
)

// Appended is what Append stored.
type Appended struct {
	// Conversation is the conversation as the message was stored under
	// (read again when its state moved first, reopened when it was
	// RESOLVED).
	Conversation domain.Conversation
	// Message is the message as stored (for an inbound event appended
	// before, the earlier copy).
	Message domain.Message
	// Created is false when the message was stored before (an inbound
	// event's, by an earlier run of its task).
	Created bool
	// Notice is the SYSTEM notice of the move back to AI when the message
	// reopened a RESOLVED conversation; it follows the message.
	Notice *domain.Message
	// Deliveries were written with them, and are scheduled already.
	Deliveries []domain.Delivery
}

// Events are the live events of what was stored, in order: the message's
// and the notice's, if any; none when the message was stored before.
func (a Appended) Events() []domain.SessionEvent {
	if !a.Created {
		return nil
	}
	events := []domain.SessionEvent{domain.MessageEvent(a.Message)}
	if a.Notice != nil {
		events = append(events, domain.MessageEvent(*a.Notice))
	}
	return events
}

// Append stores a message a visitor wrote under the conversation's state as
// conv was read, with what reports it in that state
// (domain.MessageDeliveries), and schedules those deliveries. A RESOLVED
// conversation is reopened by it: the move back to AI and the message are
// one write (domain.StatusChange.WithMessage), so no question is stored
// that the agent then does not answer. When the state moved first (a
// person took over, say) it reads the conversation again and decides
// again, up to StatusAttempts times, so the message goes where the state
// now sends it; the result says which conversation that was. A question
// (ReplyID set) stored where the agent does not answer awaits no reply: its
// ReplyID is cleared. Nothing is published: the caller publishes
// Appended.Events in its own order. Returns the store's errors
// (domain.ErrStatusChanged when the state never held still).
func (l *Lifecycle) Append(ctx context.Context, ws *domain.Workspace, conv domain.Conversation, msg domain.Message) (Appended, error) {
	store := l.d.Conversations
	for attempt := 1; ; attempt++ {
		m := msg
		if !conv.Status.AgentAnswers() {
			m.ReplyID = ""
		}
		if conv.Status == domain.StatusResolved {
			change := domain.NewStatusChange(ws, conv, domain.StatusAI, "", nil, nil, l.d.Clock.Now()).WithMessage(ws, conv, m, true)
			current, changed, err := store.ChangeStatus(ctx, change)
			switch {
			case errors.Is(err, domain.ErrMessageExists):
				// An inbound event's message an earlier run stored: this
				// append is a no-op that returns it.
				stored, _, err := store.AppendMessage(ctx, m, "")
				return Appended{Conversation: conv, Message: stored}, err
			case err != nil:
				return Appended{}, err
			case changed:
				l.EnqueueDeliveries(ctx, change.Deliveries)
				return Appended{Conversation: current, Message: m, Created: true, Notice: &change.Notice, Deliveries: change.Deliveries}, nil
			}
			conv = current
		} else {
			deliveries := domain.MessageDeliveries(ws, conv, m, m.CreatedAt)
			stored, created, err := store.AppendMessage(ctx, m, conv.Status, deliveries...)
			if !errors.Is(err, domain.ErrStatusChanged) {
				if err != nil {
					return Appended{}, err
				}
				if created {
					l.EnqueueDeliveries(ctx, deliveries)
				}
				return Appended{Conversation: conv, Message: stored, Created: created, Deliveries: deliveries}, nil
			}
			current, err := store.GetConversation(ctx, ws.ID, conv.ID)
			if err != nil {
				return Appended{}, err
			}
			conv = current
		}
		if attempt == StatusAttempts {
			return Appended{}, domain.ErrStatusChanged
		}
	}
}
