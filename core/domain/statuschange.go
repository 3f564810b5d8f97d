package domain

import (
	"slices"
	"time"
)

// StatusChange moves a conversation to To, from any state that may move
// there (StatusesFrom), recording the change as Notice (a SYSTEM
// message whose Status is To) and writing Deliveries to the outbox, all in
// one transaction.
type StatusChange struct {
	WorkspaceID    string
	ConversationID string
	To             ConversationStatus
	// From, when not empty, narrows the states the move applies from: a
	// caller whose deliveries depend on the state it read passes that state,
	// so a concurrent change makes the move a no-op instead of a wrong report.
	From []ConversationStatus
	// Notice is the SYSTEM message that records the change; its live event
	// is a status event (MessageEvent).
	Notice Message
	// Contact, when not nil, is stored on the conversation (the handoff form).
	Contact *HandoffContact
	// Deliveries go to the outbox with the change, and only if it happened.
	Deliveries []Delivery
	// Message, when not nil, is the message that motivated the move (a
	// person's reply taking the conversation over, a visitor's question
	// reopening it), stored in the same transaction: the move and the
	// message are stored together or not at all (WithMessage). It comes
	// after the notice, as the first act of the new state, unless
	// MessageFirst: a question that reopens a conversation came before
	// the move it caused. A message of an inbound event that is already
	// stored makes the whole change a no-op: ChangeStatus returns
	// ErrMessageExists.
	Message      *Message
	MessageFirst bool
	// MessageCount, when not nil, is how many messages the conversation had
	// when the caller read what the deliveries report (a handoff request's
	// transcript): the change applies only if none was appended since, so a
	// message racing the handoff is never missing from what the helpdesk
	// gets. A conversation that changed this way is returned with changed
	// false, like one in another state; the caller reads again.
	MessageCount *int
	// AssigneeID, when not empty, makes the move a member's take-over
	// (WithTakeOver): it applies only while the conversation is not held
	// by another member (Conversation.HeldByOther) and the member belongs
	// to the workspace, and assigns the conversation to them, in the same
	// statement as the move, so two members racing serialize on the
	// conversation's row and exactly one wins.
	AssigneeID string
}

// HandoffTranscript is a conversation's latest messages, oldest first, and
// its message count, read together.
type HandoffTranscript struct {
	Messages     []Message
	MessageCount int
}

// NewStatusChange returns the move of conv, as it was read, to `to`: from
// exactly conv's state, with the SYSTEM notice (author names a person
// taking over, when known), the contact, if any, and the move's deliveries
// (StatusDeliveries; transcript is the conversation so far, for a
// handoff request). Every path that changes a conversation's state builds
// its change here, so they all record and report a move alike.
func NewStatusChange(ws *Workspace, conv Conversation, to ConversationStatus, author string,
	contact *HandoffContact, transcript *HandoffTranscript, now time.Time) StatusChange {
	next := conv
	next.Status = to
	contact.ApplyTo(&next)
	change := StatusChange{
		WorkspaceID: conv.WorkspaceID, ConversationID: conv.ID, To: to, From: []ConversationStatus{conv.Status},
		Notice: NewStatusNotice(next, to, author, now), Contact: contact,
	}
	var messages []Message
	if transcript != nil {
		messages = transcript.Messages
		change.MessageCount = &transcript.MessageCount
	}
	change.Deliveries = StatusDeliveries(ws, next, conv.Status, contact, messages, now)
	return change
}

// WithMessage returns the change carrying msg (StatusChange.Message), first
// or after the notice, with what reports msg in the state it is stored
// under (conv's, as the change was built from, when first; the new one
// otherwise) added to its deliveries.
func (c StatusChange) WithMessage(ws *Workspace, conv Conversation, msg Message, first bool) StatusChange {
	under := conv
	if !first {
		under.Status = c.To
	}
	c.Message, c.MessageFirst = &msg, first
	c.Deliveries = append(slices.Clip(c.Deliveries), MessageDeliveries(ws, under, msg, msg.CreatedAt)...)
	return c
}

// WithTakeOver returns the change as the take-over of conv (as it was read)
// by the member userID (StatusChange.AssigneeID), with conversation.assigned
// added to its deliveries when the assignee changes.
func (c StatusChange) WithTakeOver(ws *Workspace, conv Conversation, userID string, now time.Time) StatusChange {
	c.AssigneeID = userID
	if conv.AssigneeID == userID {
		return c
	}
	next := conv
	next.Status, next.AssigneeID = c.To, userID
	c.Contact.ApplyTo(&next)
	c.Deliveries = append(slices.Clip(c.Deliveries), AssignedDeliveries(ws, next, now)...)
	return c
}
