package conversation

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// Move is a change of a conversation's state that a caller asks for.
type Move struct {
	To domain.ConversationStatus
	// From, when not empty, is the only state the move is made from: a
	// conversation found in any other is left as it is, without an error
	// (the answer engine's handoff tool moves only a conversation the
	// agent still has).
	From domain.ConversationStatus
	// Author names a person taking over, for the notice.
	Author string
	// Contact, when not nil, is stored on the conversation (the handoff
	// form).
	Contact *domain.HandoffContact
	// Motive, when not nil, is the message that motivated the move (a
	// person's reply taking the conversation over), stored after the
	// notice, in the same write.
	Motive *domain.Message
	// Refused, when not nil, is the error of a move the state machine
	// forbids (domain.ConversationStatus.CanMoveTo); nil gives a
	// ConflictError naming from and to.
	Refused func(domain.Conversation) error
	// TakeOverBy, when not empty, is the member (a user id) taking the
	// conversation over: the move also assigns it to them, in the same
	// write, and applies only while no other member holds it
	// (domain.Conversation.HeldByOther); when one does, Move returns
	// domain.HeldByOther's conflict. A conversation found in To already is
	// returned as it is, assigned to whoever had it: claiming it is the
	// caller's (domain.AssigneeChange.TakeOver).
	TakeOverBy string
}

// Moved is what Move did.
type Moved struct {
	// Conversation is the conversation as it now is.
	Conversation domain.Conversation
	// Notice is the SYSTEM notice of the move, unpublished, so the caller
	// can publish it with what follows it; nil when nothing moved.
	Notice *domain.Message
	// Deliveries were written with the move, and are scheduled already.
	Deliveries []domain.Delivery
}

// Move moves conv (as read) to m.To with its notice, the contact (if any),
// the motive (if any) and the move's deliveries (domain.NewStatusChange; a
// move to HANDOFF_REQUESTED carries the transcript so far, read as one
// snapshot with its message count, so a message racing the move is never
// missing from what the helpdesk gets), in one conditional ChangeStatus
// from exactly the state conv was read in, then schedules the deliveries.
// When another request changed the conversation first (its state, or a
// message appended after the transcript was read) it decides again on the
// conversation as it now is, up to StatusAttempts times, then gives up with
// domain.ErrStatusChanged. A conversation already in m.To, or not in
// m.From, is returned as read last, with nothing stored. A move to
// HANDOFF_REQUESTED in a workspace with auto-assignment on schedules it
// (enqueueAutoAssign). Returns m.Refused's
// error (or a ConflictError) for a move the state machine forbids, and the
// store's errors.
func (l *Lifecycle) Move(ctx context.Context, ws *domain.Workspace, conv domain.Conversation, m Move) (Moved, error) {
	store := l.d.Conversations
	for range StatusAttempts {
		if m.TakeOverBy != "" && conv.HeldByOther(m.TakeOverBy) {
			return Moved{Conversation: conv}, domain.HeldByOther(conv.AssigneeID)
		}
		if conv.Status == m.To || (m.From != "" && conv.Status != m.From) {
			return Moved{Conversation: conv}, nil
		}
		if !conv.Status.CanMoveTo(m.To) {
			if m.Refused != nil {
				return Moved{}, m.Refused(conv)
			}
			return Moved{}, &domain.ConflictError{
				Message: "a " + string(conv.Status) + " conversation cannot move to " + string(m.To),
				Details: map[string]string{"from": string(conv.Status), "to": string(m.To)},
			}
		}
		var transcript *domain.HandoffTranscript
		if m.To == domain.StatusHandoffRequested {
			read, err := store.HandoffTranscript(ctx, ws.ID, conv.ID, domain.HandoffTranscriptMessages)
			if err != nil {
				return Moved{}, err
			}
			transcript = &read
		}
		now := l.d.Clock.Now()
		if m.Motive != nil && m.Motive.CreatedAt.Before(now) {
			// The notice is the motive's first act, not later than it:
			// the message, stored after it, must still be the newest
			// message and so the conversation's preview (lastMessage).
			now = m.Motive.CreatedAt
		}
		change := domain.NewStatusChange(ws, conv, m.To, m.Author, m.Contact, transcript, now)
		if m.TakeOverBy != "" {
			change = change.WithTakeOver(ws, conv, m.TakeOverBy, now)
		}
		if m.Motive != nil {
			change = change.WithMessage(ws, conv, *m.Motive, false)
		}
		current, changed, err := store.ChangeStatus(ctx, change)
		if err != nil {
			return Moved{}, err
		}
		if changed {
			l.EnqueueDeliveries(ctx, change.Deliveries)
			if m.To == domain.StatusHandoffRequested {
				l.enqueueAutoAssign(ctx, ws, current)
				if l.d.Handoffs != nil {
					l.d.Handoffs.HandedOff(ctx)
				}
			}
			return Moved{Conversation: current, Notice: &change.Notice, Deliveries: change.Deliveries}, nil
		}
		conv = current
	}
	return Moved{}, domain.ErrStatusChanged
}
