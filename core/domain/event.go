package domain

import "strconv"

// Session event types, as the live streams name them.
const (
	EventToken   = "token"
	EventDone    = "done"
	EventError   = "error"
	EventMessage = "message"
	EventStatus  = "status"
)

// SessionEvent is something that happened in a conversation, published to the
// session's live channel.
type SessionEvent struct {
	Type      string
	SessionID string
	// MessageID and Seq identify the event within an answer (SSE id
	// "<messageId>:<seq>"): Seq counts from 1 for each answer's events.
	MessageID string
	Seq       int
	// Content is a token's text.
	Content string
	// Message is a whole message (type message).
	Message *Message
	// Answer is the finished answer (type done).
	Answer *Answer
	Status ConversationStatus
	// ErrorCode and ErrorMessage describe a terminal error (type error).
	ErrorCode    string
	ErrorMessage string
}

// EventID is the event's SSE id, "<MessageID>:<Seq>", with which a client
// resumes (Last-Event-ID) and by which the recent log finds it; "" for an
// event without a message id.
func (ev SessionEvent) EventID() string {
	if ev.MessageID == "" {
		return ""
	}
	return ev.MessageID + ":" + strconv.Itoa(ev.Seq)
}

// LiveEvent is a session event as the live relay carries it: shared,
// read-only, by every local follower of the session.
type LiveEvent struct {
	SessionEvent
	// LogID is the event's entry in the session's recent log (EventLog);
	// "" for an event rebuilt from stored messages.
	LogID string
	// Gap marks not an event but a hole before this point in a
	// subscription: the feed lost its connection, or the follower fell
	// behind, and events published meanwhile were not delivered. The
	// follower catches up from the log.
	Gap bool
}

// MessageEvent is the live event of a stored USER, HUMAN or SYSTEM message:
// a message event, or a status event for a SYSTEM notice of a status change.
// Its SSE id is "<messageId>:1". Publishers and the replay of stored
// messages both build events here, so a resumed stream sees exactly what a
// live one saw.
func MessageEvent(m Message) SessionEvent {
	if m.Role == RoleSystem && m.Status != "" {
		return SessionEvent{Type: EventStatus, SessionID: m.ConversationID, MessageID: m.ID, Seq: 1, Status: m.Status}
	}
	return SessionEvent{Type: EventMessage, SessionID: m.ConversationID, MessageID: m.ID, Seq: 1, Message: &m}
}

// InterruptedMessage is what the error event ending an interrupted answer
// says (FallbackInterrupted).
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
func StoredEvents(m Message) []SessionEvent {
	if m.Role != RoleAssistant {
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
	if m.FallbackReason == FallbackInterrupted {
		return append(events, SessionEvent{
			Type: EventError, SessionID: m.ConversationID, MessageID: m.ID, Seq: InterruptedSeq,
			ErrorCode: CodeInternal, ErrorMessage: InterruptedMessage,
		})
	}
	answer := &Answer{SessionID: m.ConversationID, Reply: m, IsFallback: m.FallbackReason != FallbackNone,
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
