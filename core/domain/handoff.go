package domain

import (
	"net/mail"
	"strings"
	"time"
)

// CanMoveTo reports whether a conversation may go from s to `to`:
//
//	AI                -> HANDOFF_REQUESTED, HUMAN, RESOLVED
//	HANDOFF_REQUESTED -> HUMAN, AI, RESOLVED
//	HUMAN             -> AI, RESOLVED
//	RESOLVED          -> AI, HANDOFF_REQUESTED, HUMAN
//
// A person may take a conversation over directly, hand it back to the agent,
// or close it; a resolved conversation reopens with the agent (a new user
// message), with a person (a human reply) or by a new handoff request.
// Staying in the same state is not a move.
func (s ConversationStatus) CanMoveTo(to ConversationStatus) bool {
	switch s {
	case StatusAI:
		return to == StatusHandoffRequested || to == StatusHuman || to == StatusResolved
	case StatusHandoffRequested:
		return to == StatusHuman || to == StatusAI || to == StatusResolved
	case StatusHuman:
		return to == StatusAI || to == StatusResolved
	case StatusResolved:
		return to == StatusAI || to == StatusHandoffRequested || to == StatusHuman
	}
	return false
}

// Valid reports whether s is one of the four states.
func (s ConversationStatus) Valid() bool {
	switch s {
	case StatusAI, StatusHandoffRequested, StatusHuman, StatusResolved:
		return true
	}
	return false
}

// HumanOwned reports whether a person owns the conversation, in which case
// the agent never answers.
func (s ConversationStatus) HumanOwned() bool {
	return s == StatusHandoffRequested || s == StatusHuman
}

// AgentAnswers reports whether the agent answers a question asked in this
// state: the conversation is its own, or resolved (which the question
// reopens).
func (s ConversationStatus) AgentAnswers() bool {
	return s == StatusAI || s == StatusResolved
}

// StatusesFrom returns every state that may move to `to`, for conditional
// updates ("set HUMAN where status in ...").
func StatusesFrom(to ConversationStatus) []ConversationStatus {
	var out []ConversationStatus
	for _, s := range []ConversationStatus{StatusAI, StatusHandoffRequested, StatusHuman, StatusResolved} {
		if s.CanMoveTo(to) {
			out = append(out, s)
		}
	}
	return out
}

// Limits of the handoff form.
const (
	MaxContactNameLength  = 200
	MaxContactEmailLength = 254
	MaxHandoffNoteLength  = 2000
)

// HandoffContact is what a visitor gives when asking for a person; every
// field is optional.
type HandoffContact struct {
	Name  string
	Email string
	Note  string
}

// NewHandoffContact trims and checks the handoff form's fields.
func NewHandoffContact(name, email, note string) (HandoffContact, error) {
	c := HandoffContact{Name: strings.TrimSpace(name), Email: strings.TrimSpace(email), Note: strings.TrimSpace(note)}
	if err := validateTexts(textField{"name", c.Name}, textField{"email", c.Email}, textField{"note", c.Note}); err != nil {
		return HandoffContact{}, err
	}
	fields := map[string]string{}
	if len([]rune(c.Name)) > MaxContactNameLength {
		fields["name"] = "must be at most 200 characters"
	}
	if c.Email != "" {
		if len(c.Email) > MaxContactEmailLength {
			fields["email"] = "must be at most 254 characters"
		} else if a, err := mail.ParseAddress(c.Email); err != nil || a.Address != c.Email {
			fields["email"] = "must be an email address"
		}
	}
	if len([]rune(c.Note)) > MaxHandoffNoteLength {
		fields["note"] = "must be at most 2000 characters"
	}
	if len(fields) > 0 {
		return HandoffContact{}, &ValidationError{Message: "invalid handoff request", Fields: fields}
	}
	return c, nil
}

// ApplyTo records the contact on conv as the handoff form stores it: a name,
// email or note left empty keeps what the conversation has, so a visitor
// asking again without repeating themselves loses nothing, and a new note
// replaces the old one (the latest request is the one a member answers).
// A nil contact changes nothing.
func (h *HandoffContact) ApplyTo(conv *Conversation) {
	if h == nil {
		return
	}
	if h.Name != "" {
		conv.ContactName = h.Name
	}
	if h.Email != "" {
		conv.ContactEmail = h.Email
	}
	if h.Note != "" {
		conv.ContactNote = h.Note
	}
}

// DeliveryTarget is where a delivery goes.
type DeliveryTarget string

// Delivery targets: the workspace's helpdesk (handoffs and the messages of
// handed-off conversations) and its outbound events URL.
const (
	TargetHelpdesk DeliveryTarget = "helpdesk"
	TargetEvents   DeliveryTarget = "events"
)

// DeliveryStatus is how far a delivery got.
type DeliveryStatus string

// Delivery states: PENDING until the receiver accepted it (DELIVERED) or
// retries ran out or the receiver refused it for good (FAILED).
const (
	DeliveryPending   DeliveryStatus = "PENDING"
	DeliveryDelivered DeliveryStatus = "DELIVERED"
	DeliveryFailed    DeliveryStatus = "FAILED"
)

// Outbound event types (PRODUCT.md, Outbound events); the helpdesk receives
// handoff.requested, message.created of handed-off conversations and
// handoff.resolved under the same names.
const (
	EventConversationCreated = "conversation.created"
	EventMessageCreated      = "message.created"
	EventHandoffRequested    = "handoff.requested"
	EventHandoffResolved     = "handoff.resolved"
	// EventConversationAssigned reports a change of a conversation's
	// assignee (its assigneeId and status are in the conversation).
	EventConversationAssigned = "conversation.assigned"
)

// Delivery is one thing to send to a workspace's receiver, written to the
// outbox in the same transaction as the change it reports. Its ID is the
// idempotency key the receiver sees on every attempt.
type Delivery struct {
	ID          string
	WorkspaceID string
	Target      DeliveryTarget
	Type        string
	// ConversationID, Conversation and Message are the snapshot the body is
	// built from, as they were when the change happened.
	ConversationID string
	Conversation   Conversation
	Message        *Message
	// Contact is the handoff form (handoff.requested).
	Contact *HandoffContact
	// Transcript is the conversation so far (handoff.requested), oldest first.
	Transcript    []Message
	Status        DeliveryStatus
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	CreatedAt     time.Time
	DeliveredAt   time.Time
}

// NewDelivery starts a pending delivery about conv, due now.
func NewDelivery(target DeliveryTarget, eventType string, conv Conversation, now time.Time) Delivery {
	return Delivery{
		ID: NewID(PrefixDelivery), WorkspaceID: conv.WorkspaceID, Target: target, Type: eventType,
		ConversationID: conv.ID, Conversation: conv, Status: DeliveryPending, NextAttemptAt: now, CreatedAt: now,
	}
}

// DeliveryAttempt is one entry of the delivery log.
type DeliveryAttempt struct {
	DeliveryID string
	Attempt    int
	At         time.Time
	// StatusCode is the receiver's HTTP status; 0 when none came back.
	StatusCode int
	// Error says what went wrong, never with secrets; "" on success.
	Error    string
	Duration time.Duration
}
