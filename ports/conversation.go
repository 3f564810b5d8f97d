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

// AppendAsDecided stores a message a visitor wrote under the conversation's
// state as conv was read, with what reports it in that state
// (domain.MessageDeliveries). When the state moved first (a person took
// over, say) it reads the conversation again and decides again, up to
// StatusAttempts times, so the message goes where the state now sends it;
// conv is left as the message was stored under. Returns the stored message,
// whether it was created (ConversationStore.AppendMessage), the deliveries
// written with it for the caller to schedule, and the store's errors
// (domain.ErrStatusChanged when the state never held still).
func AppendAsDecided(ctx context.Context, conversations ConversationStore, ws *domain.Workspace, conv *domain.Conversation, msg domain.Message) (domain.Message, bool, []domain.Delivery, error) {
	for attempt := 1; ; attempt++ {
		deliveries := domain.MessageDeliveries(ws, *conv, msg, msg.CreatedAt)
		stored, created, err := conversations.AppendMessage(ctx, msg, conv.Status, deliveries...)
		if !errors.Is(err, domain.ErrStatusChanged) || attempt == StatusAttempts {
			return stored, created, deliveries, err
		}
		current, err := conversations.GetConversation(ctx, ws.ID, conv.ID)
		if err != nil {
			return domain.Message{}, false, nil, err
		}
		*conv = current
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
