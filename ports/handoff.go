package ports

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// StatusChange moves a conversation to To, from any state that may move
// there (domain.StatusesFrom), recording the change as Notice (a SYSTEM
// message whose Status is To) and writing Deliveries to the outbox, all in
// one transaction.
type StatusChange struct {
	WorkspaceID    string
	ConversationID string
	To             domain.ConversationStatus
	// From, when not empty, narrows the states the move applies from: a
	// caller whose deliveries depend on the state it read passes that state,
	// so a concurrent change makes the move a no-op instead of a wrong report.
	From []domain.ConversationStatus
	// Notice is the SYSTEM message that records the change; its live event
	// is a status event (MessageEvent).
	Notice domain.Message
	// Contact, when not nil, is stored on the conversation (the handoff form).
	Contact *domain.HandoffContact
	// Deliveries go to the outbox with the change, and only if it happened.
	Deliveries []domain.Delivery
}

// DeliveryQueue schedules outbox rows for delivery by the workers.
type DeliveryQueue interface {
	// EnqueueDelivery schedules an attempt of a stored delivery now.
	// Enqueueing the same delivery twice is harmless (the worker checks the
	// row). Returns an error wrapping domain.ErrUnavailable if the queue
	// cannot be reached; the row stays PENDING and the sweeper retries it.
	EnqueueDelivery(ctx context.Context, d domain.Delivery) error
}

// DeliveryRedriver re-drives deliveries the sweeper found overdue.
type DeliveryRedriver interface {
	// RedriveDelivery schedules an attempt of a stored delivery now, even
	// while the queue still holds an earlier task for it: a killed worker's
	// task stays active until its lease is recovered, a minute or more, and
	// an overdue delivery must not wait for that. Returns an error wrapping
	// domain.ErrUnavailable if the queue cannot be reached.
	RedriveDelivery(ctx context.Context, d domain.Delivery) error
}

// MessageEvent is the live event of a stored USER, HUMAN or SYSTEM message:
// a message event, or a status event for a SYSTEM notice of a status change.
// Its SSE id is "<messageId>:1". Publishers and the replay of stored
// messages both build events here, so a resumed stream sees exactly what a
// live one saw.
func MessageEvent(m domain.Message) SessionEvent {
	if m.Role == domain.RoleSystem && m.Status != "" {
		return SessionEvent{Type: EventStatus, SessionID: m.ConversationID, MessageID: m.ID, Seq: 1, Status: m.Status}
	}
	return SessionEvent{Type: EventMessage, SessionID: m.ConversationID, MessageID: m.ID, Seq: 1, Message: &m}
}
