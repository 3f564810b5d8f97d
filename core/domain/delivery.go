package domain

import (
	"encoding/base64"
	"slices"
	"strings"
)

// MaxReceiverURLLength bounds a helpdesk or events URL.
const MaxReceiverURLLength = 2048

// Valid reports whether t is one of the delivery targets.
func (t DeliveryTarget) Valid() bool { return t == TargetHelpdesk || t == TargetEvents }

// Valid reports whether s is one of the delivery states.
func (s DeliveryStatus) Valid() bool {
	return s == DeliveryPending || s == DeliveryDelivered || s == DeliveryFailed
}

// EventTypes lists every outbound event type, in the order the API documents them.
var EventTypes = []string{EventConversationCreated, EventMessageCreated, EventHandoffRequested, EventHandoffResolved, EventConversationAssigned}

// ValidEventType reports whether s is one of EventTypes.
func ValidEventType(s string) bool { return slices.Contains(EventTypes, s) }

// DeliveryFilter narrows a workspace's delivery list; zero fields match all.
type DeliveryFilter struct {
	Target DeliveryTarget
	Status DeliveryStatus
	Type   string
}

// Validate checks the filter's values, naming the query parameter at fault.
func (f DeliveryFilter) Validate() error {
	if f.Target != "" && !f.Target.Valid() {
		return InvalidField("target", "must be helpdesk or events")
	}
	if f.Status != "" && !f.Status.Valid() {
		return InvalidField("status", "must be PENDING, DELIVERED or FAILED")
	}
	if f.Type != "" && !ValidEventType(f.Type) {
		return InvalidField("type", "must be one of "+strings.Join(EventTypes, ", "))
	}
	return nil
}

// Position is where a delivery sits in its workspace's list (newest first).
func (d Delivery) Position() Position { return Position{Time: d.CreatedAt, ID: d.ID} }

// signingSecretBytes is the key size of a signing secret: 256 bits, within
// the 24 to 64 bytes Standard Webhooks allows.
const signingSecretBytes = 32

// NewSigningSecret returns a Standard Webhooks signing secret: "whsec_" and
// the standard base64 of 32 random bytes, the form the scheme's reference
// libraries take as is.
func NewSigningSecret() string {
	return PrefixWebhookSecret + base64.StdEncoding.EncodeToString(randomBytes(signingSecretBytes))
}

// ValidSigningSecret reports whether s is a signing secret NewSigningSecret
// could have made: the prefix and a standard base64 key of 24 to 64 bytes.
func ValidSigningSecret(s string) bool {
	rest, ok := strings.CutPrefix(s, PrefixWebhookSecret)
	if !ok {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(rest)
	return err == nil && len(key) >= 24 && len(key) <= 64
}
