package ports

import (
	"context"
	"log/slog"
	"slices"
	"time"

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
	// Message, when not nil, is the message that motivated the move (a
	// person's reply taking the conversation over, a visitor's question
	// reopening it), stored in the same transaction: the move and the
	// message are stored together or not at all (WithMessage). It comes
	// after the notice, as the first act of the new state, unless
	// MessageFirst: a question that reopens a conversation came before
	// the move it caused. A message of an inbound event that is already
	// stored makes the whole change a no-op: ChangeStatus returns
	// domain.ErrMessageExists.
	Message      *domain.Message
	MessageFirst bool
	// MessageCount, when not nil, is how many messages the conversation had
	// when the caller read what the deliveries report (a handoff request's
	// transcript): the change applies only if none was appended since, so a
	// message racing the handoff is never missing from what the helpdesk
	// gets. A conversation that changed this way is returned with changed
	// false, like one in another state; the caller reads again.
	MessageCount *int
}

// HandoffTranscript is a conversation's latest messages, oldest first, and
// its message count, read together.
type HandoffTranscript struct {
	Messages     []domain.Message
	MessageCount int
}

// NewStatusChange returns the move of conv, as it was read, to `to`: from
// exactly conv's state, with the SYSTEM notice (author names a person
// taking over, when known), the contact, if any, and the move's deliveries
// (domain.StatusDeliveries; transcript is the conversation so far, for a
// handoff request). Every path that changes a conversation's state builds
// its change here, so they all record and report a move alike.
func NewStatusChange(ws *domain.Workspace, conv domain.Conversation, to domain.ConversationStatus, author string,
	contact *domain.HandoffContact, transcript *HandoffTranscript, now time.Time) StatusChange {
	next := conv
	next.Status = to
	contact.ApplyTo(&next)
	change := StatusChange{
		WorkspaceID: conv.WorkspaceID, ConversationID: conv.ID, To: to, From: []domain.ConversationStatus{conv.Status},
		Notice: domain.NewStatusNotice(next, to, author, now), Contact: contact,
	}
	var messages []domain.Message
	if transcript != nil {
		messages = transcript.Messages
		change.MessageCount = &transcript.MessageCount
	}
	change.Deliveries = domain.StatusDeliveries(ws, next, conv.Status, contact, messages, now)
	return change
}

// WithMessage returns the change carrying msg (StatusChange.Message), first
// or after the notice, with what reports msg in the state it is stored
// under (conv's, as the change was built from, when first; the new one
// otherwise) added to its deliveries.
func (c StatusChange) WithMessage(ws *domain.Workspace, conv domain.Conversation, msg domain.Message, first bool) StatusChange {
	under := conv
	if !first {
		under.Status = c.To
	}
	c.Message, c.MessageFirst = &msg, first
	c.Deliveries = append(slices.Clip(c.Deliveries), domain.MessageDeliveries(ws, under, msg, msg.CreatedAt)...)
	return c
}

// DeliveryQueue schedules outbox rows for delivery by the workers.
type DeliveryQueue interface {
	// EnqueueDelivery schedules an attempt of a stored delivery now, even
	// while the queue still holds an earlier task for it (one a killed
	// worker left active, say). Enqueueing the same delivery twice is
	// harmless: the worker claims the row first. Returns an error wrapping
	// domain.ErrUnavailable if the queue cannot be reached; the row stays
	// PENDING and the sweeper retries it.
	EnqueueDelivery(ctx context.Context, d domain.Delivery) error
}

// EnqueueDeliveries schedules deliveries that were just stored. It never
// fails its caller: the rows are committed and stay PENDING, so a failure
// is only logged and the delivery sweeper enqueues them later. Every use
// case that writes outbox rows schedules them here.
func EnqueueDeliveries(ctx context.Context, q DeliveryQueue, log *slog.Logger, deliveries []domain.Delivery) {
	for _, d := range deliveries {
		if err := q.EnqueueDelivery(ctx, d); err != nil {
			log.WarnContext(ctx, "enqueueing a delivery failed; the sweeper will retry", "deliveryId", d.ID, "type", d.Type, "error", err)
		}
	}
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

// InterruptedMessage is what the error event ending an interrupted answer
// says (domain.FallbackInterrupted).
const InterruptedMessage = "the answer was interrupted before it was finished; please ask again"

// InterruptedSeq is the seq of the error event that ends an interrupted
// answer: above any token's (an answer is capped far below it), so however
// many of its tokens a client saw, and whatever the session's log still
// holds of them, the end is never taken for an event the client has.
const InterruptedSeq = 1 << 20

// StoredEvents are the live events of a stored message, as they were
// published: an ASSISTANT reply's tokens (seq 1..T, cut where
// Message.TokenEnds says) and its done (seq T+1), or, for a reply whose
// generation was interrupted, the tokens that reached the visitor and the
// error event that ended its stream; the message or status event of any
// other message (seq 1). The live relay replays stored messages with them,
// and the answer engine a request it already answered (Idempotency-Key).
func StoredEvents(m domain.Message) []SessionEvent {
	if m.Role != domain.RoleAssistant {
		return []SessionEvent{MessageEvent(m)}
	}
	ends := m.TokenEnds
	if !validEnds(ends, len(m.Content)) {
		// A reply stored without usable token ends (older releases):
		// one token for the lot.
		ends = nil
		if m.Content != "" {
			ends = []int{len(m.Content)}
		}
	}
	events := make([]SessionEvent, 0, len(ends)+1)
	start := 0
	for i, end := range ends {
		events = append(events, SessionEvent{
			Type: EventToken, SessionID: m.ConversationID, MessageID: m.ID, Seq: i + 1, Content: m.Content[start:end],
		})
		start = end
	}
	if m.FallbackReason == domain.FallbackInterrupted {
		return append(events, SessionEvent{
			Type: EventError, SessionID: m.ConversationID, MessageID: m.ID, Seq: InterruptedSeq,
			ErrorCode: domain.CodeInternal, ErrorMessage: InterruptedMessage,
		})
	}
	answer := &domain.Answer{SessionID: m.ConversationID, Reply: m, IsFallback: m.FallbackReason != domain.FallbackNone,
		FallbackReason: m.FallbackReason, OfferHandoff: m.OfferHandoff}
	return append(events, SessionEvent{
		Type: EventDone, SessionID: m.ConversationID, MessageID: m.ID, Seq: len(ends) + 1, Answer: answer,
	})
}

// validEnds reports whether ends cut content into non-empty tokens that
// cover it exactly.
func validEnds(ends []int, length int) bool {
	if len(ends) == 0 || ends[len(ends)-1] != length {
		return false
	}
	prev := 0
	for _, e := range ends {
		if e <= prev {
			return false
		}
		prev = e
	}
	return true
}
