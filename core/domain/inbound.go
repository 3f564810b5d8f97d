package domain

import "time"

// InboundEventKind is the event field of an inbound webhook.
type InboundEventKind string

// EventChatMessage appends a USER message to a session.
const EventChatMessage InboundEventKind = "chat.message"

// InboundStatus tracks an inbound event through processing.
type InboundStatus string

// Inbound statuses. Unknown event kinds are stored as IGNORED for the audit trail.
const (
	InboundPending   InboundStatus = "PENDING"
	InboundProcessed InboundStatus = "PROCESSED"
	InboundIgnored   InboundStatus = "IGNORED"
	InboundFailed    InboundStatus = "FAILED"
)

// InboundEvent is a webhook request stored durably before it is acknowledged.
type InboundEvent struct {
	ID             string
	WorkspaceID    string
	Event          string
	SessionID      string
	Message        string
	IdempotencyKey string
	// BodyHash tells a sender's retry (same body) from a reused key (other body).
	BodyHash    string
	Status      InboundStatus
	MessageID   string
	Error       string
	Attempts    int
	ReceivedAt  time.Time
	ProcessedAt *time.Time
}
