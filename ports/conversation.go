package ports

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// StatusAttempts bounds how often a use case reads a conversation again
// whose state keeps changing under its writes.
const StatusAttempts = 3

// Appended is what AppendAsDecided stored.
type Appended struct {
	// Message is the message as stored (for an inbound event appended
	// before, the earlier copy).
	Message domain.Message
	// Created is false when the message was stored before (an inbound
	// event's, by an earlier run of its task).
	Created bool
	// Notice is the SYSTEM notice of the move back to AI when the message
	// reopened a RESOLVED conversation; it follows the message.
	Notice *domain.Message
	// Deliveries were written with them, for the caller to schedule.
	Deliveries []domain.Delivery
}

// AppendAsDecided stores a message a visitor wrote under the conversation's
// state as conv was read, with what reports it in that state
// (domain.MessageDeliveries). A RESOLVED conversation is reopened by it: the
// move back to AI and the message are one write (StatusChange.WithMessage),
// so no question is stored that the agent then does not answer. When the
// state moved first (a person took over, say) it reads the conversation
// again and decides again, up to StatusAttempts times, so the message goes
// where the state now sends it; conv is left as the message was stored
// under. A question (ReplyID set) stored where the agent does not answer
// awaits no reply: its ReplyID is cleared. Returns the store's errors
// (domain.ErrStatusChanged when the state never held still).
func AppendAsDecided(ctx context.Context, conversations ConversationStore, ws *domain.Workspace, conv *domain.Conversation, msg domain.Message, now time.Time) (Appended, error) {
	for attempt := 1; ; attempt++ {
		m := msg
		if !conv.Status.AgentAnswers() {
			m.ReplyID = ""
		}
		if conv.Status == domain.StatusResolved {
			change := NewStatusChange(ws, *conv, domain.StatusAI, "", nil, nil, now).WithMessage(ws, *conv, m, true)
			current, changed, err := conversations.ChangeStatus(ctx, change)
			switch {
			case errors.Is(err, domain.ErrMessageExists):
				// An inbound event's message an earlier run stored: this
				// append is a no-op that returns it.
				stored, _, err := conversations.AppendMessage(ctx, m, "")
				return Appended{Message: stored}, err
			case err != nil:
				return Appended{}, err
			case changed:
				*conv = current
				return Appended{Message: m, Created: true, Notice: &change.Notice, Deliveries: change.Deliveries}, nil
			}
			*conv = current
		} else {
			deliveries := domain.MessageDeliveries(ws, *conv, m, m.CreatedAt)
			stored, created, err := conversations.AppendMessage(ctx, m, conv.Status, deliveries...)
			if !errors.Is(err, domain.ErrStatusChanged) {
				return Appended{Message: stored, Created: created, Deliveries: deliveries}, err
			}
			current, err := conversations.GetConversation(ctx, ws.ID, conv.ID)
			if err != nil {
				return Appended{}, err
			}
			*conv = current
		}
		if attempt == StatusAttempts {
			return Appended{}, domain.ErrStatusChanged
		}
	}
}

// OpenConversation stores a new, empty conversation of ws with agent (a
// verified user's when identity is set), with the events reporting it, and
// schedules them. The API's session creation and the widget's open
// conversations alike here. Returns the store's errors.
func OpenConversation(ctx context.Context, conversations ConversationStore, q DeliveryQueue, log *slog.Logger,
	ws *domain.Workspace, agent *domain.Agent, identity *domain.Identity, now time.Time) (domain.Conversation, error) {
	userID := ""
	if identity != nil {
		userID = identity.UserID
	}
	conv := domain.NewConversation(ws.ID, agent, userID, now)
	deliveries := domain.ConversationDeliveries(ws, conv, conv.CreatedAt)
	if err := conversations.CreateConversation(ctx, &conv, deliveries...); err != nil {
		return domain.Conversation{}, err
	}
	EnqueueDeliveries(ctx, q, log, deliveries)
	return conv, nil
}
