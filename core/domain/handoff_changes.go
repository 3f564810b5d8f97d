package domain

import "time"

// What a state change or a new message is delivered as. Every path that
// changes a conversation (the answer engine, the handoff use cases, the
// inbound webhook) builds its outbox rows here, so they all agree.

// HandoffTranscriptMessages is how many of a conversation's latest messages
// a handoff.requested carries.
const HandoffTranscriptMessages = 50

// StatusNotice is the text of the SYSTEM message that records a move to
// `to`; author names the person who took over, when known.
func StatusNotice(to ConversationStatus, author string) string {
	switch to {
	case StatusHandoffRequested:
		return "A person from the support team has been asked to join the conversation."
	case StatusHuman:
		if author != "" {
			return author + " joined the conversation."
		}
		return "A person from the support team joined the conversation."
	case StatusAI:
		return "The assistant is answering again."
	case StatusResolved:
		return "The conversation was marked as resolved."
	}
	return "The conversation changed state."
}

// NewStatusNotice returns the SYSTEM message that records conv's move to
// `to`; its live event is a status event.
func NewStatusNotice(conv Conversation, to ConversationStatus, author string, now time.Time) Message {
	return Message{
		ID: NewID(PrefixMessage), WorkspaceID: conv.WorkspaceID, ConversationID: conv.ID,
		Role: RoleSystem, Content: StatusNotice(to, author), Status: to, CreatedAt: now,
	}
}

// StatusDeliveries returns the deliveries of conv's move from `from` to
// conv.Status (conv as it is after the move):
//
//   - entering HANDOFF_REQUESTED: handoff.requested to the helpdesk, with the
//     contact and the transcript, and as an event when the workspace has an
//     events URL;
//   - leaving a state a person owns (to AI or RESOLVED): handoff.resolved to
//     the helpdesk and as an event, since the helpdesk's ticket is over
//     either way (conversation.status says how it ended).
//
// Other moves (a person taking over, a resolved conversation reopening
// with the agent) are delivered as nothing: the helpdesk made them itself,
// or never knew of the conversation.
func StatusDeliveries(ws *Workspace, conv Conversation, from ConversationStatus, contact *HandoffContact, transcript []Message, now time.Time) []Delivery {
	var typ string
	switch {
	case conv.Status == StatusHandoffRequested:
		typ = EventHandoffRequested
	case from.HumanOwned() && (conv.Status == StatusAI || conv.Status == StatusResolved):
		typ = EventHandoffResolved
	default:
		return nil
	}
	out := make([]Delivery, 0, 2)
	for _, target := range []DeliveryTarget{TargetHelpdesk, TargetEvents} {
		if target == TargetEvents && ws.EventsURL == "" {
			continue
		}
		d := NewDelivery(target, typ, conv, now)
		if typ == EventHandoffRequested {
			d.Contact, d.Transcript = contact, transcript
		}
		out = append(out, d)
	}
	return out
}

// MessageDeliveries returns the deliveries of a stored message m of conv:
// message.created to the helpdesk for a USER message of a conversation a
// person owns (the person answers it there), and as an event for any USER,
// ASSISTANT or HUMAN message when the workspace has an events URL. SYSTEM
// notices are delivered as the status change they record, and internal
// notes (Role.Internal) never leave the team.
func MessageDeliveries(ws *Workspace, conv Conversation, m Message, now time.Time) []Delivery {
	if m.Role.Internal() {
		return nil
	}
	var out []Delivery
	if m.Role == RoleUser && conv.Status.HumanOwned() {
		d := NewDelivery(TargetHelpdesk, EventMessageCreated, conv, now)
		d.Message = &m
		out = append(out, d)
	}
	if ws.EventsURL != "" && m.Role != RoleSystem {
		d := NewDelivery(TargetEvents, EventMessageCreated, conv, now)
		d.Message = &m
		out = append(out, d)
	}
	return out
}

// ConversationDeliveries returns the deliveries of a new conversation:
// conversation.created as an event when the workspace has an events URL.
func ConversationDeliveries(ws *Workspace, conv Conversation, now time.Time) []Delivery {
	if ws.EventsURL == "" {
		return nil
	}
	return []Delivery{NewDelivery(TargetEvents, EventConversationCreated, conv, now)}
}

// AssignedDeliveries returns the deliveries of a change of conv's assignee
// (conv as it is after the change): conversation.assigned as an event when
// the workspace has an events URL. The helpdesk is not told: it keeps its
// own assignment.
func AssignedDeliveries(ws *Workspace, conv Conversation, now time.Time) []Delivery {
	if ws.EventsURL == "" {
		return nil
	}
	return []Delivery{NewDelivery(TargetEvents, EventConversationAssigned, conv, now)}
}
