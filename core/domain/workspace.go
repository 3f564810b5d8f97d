package domain

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"strings"
	"time"
)

// Workspace owns agents, API keys, sessions and one webhook secret.
type Workspace struct {
	ID     string
	Name   string
	Plan   Plan
	Addons []Feature
	// WebhookSecret authenticates inbound webhooks and keys identity signatures.
	WebhookSecret string
	// PreviousWebhookSecret stays valid until PreviousSecretExpiresAt, so
	// integrators can move to a rotated secret without dropping events.
	PreviousWebhookSecret   string
	PreviousSecretExpiresAt time.Time
	// HelpdeskURL receives handoffs as signed webhooks; "" keeps them in
	// the built-in inbox (the v2 conversation endpoints).
	HelpdeskURL string
	// EventsURL receives outbound events; "" sends none.
	EventsURL string
	// SigningSecret signs deliveries to both ("whsec_" + base64, Standard
	// Webhooks).
	SigningSecret string
	// AutoAssign gives every conversation handed off to a person to one of
	// the available members (core/assignment.AutoAssign); off, handoffs
	// wait unassigned in "Needs a person" until a member takes one.
	AutoAssign bool
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// MaxWorkspaceNameLength bounds workspace names.
const MaxWorkspaceNameLength = 200

// Allows reports whether the workspace may use f, through its plan or an add-on.
func (w *Workspace) Allows(f Feature) bool {
	if w.Plan.Includes(f) {
		return true
	}
	if !addonFeatures[f] {
		return false
	}
	for _, a := range w.Addons {
		if a == f {
			return true
		}
	}
	return false
}

// Require returns a PlanError when the workspace may not use f.
func (w *Workspace) Require(f Feature) error {
	if w.Allows(f) {
		return nil
	}
	return &PlanError{Feature: f, Plan: w.Plan}
}

// AcceptsWebhookSecret compares given against the current secret and, until its
// grace period ends, the previous one, in constant time.
func (w *Workspace) AcceptsWebhookSecret(given string, now time.Time) bool {
	ok := constantTimeEqual(given, w.WebhookSecret)
	if w.PreviousWebhookSecret != "" && now.Before(w.PreviousSecretExpiresAt) {
		// Evaluate both comparisons every time so timing does not reveal which matched.
		ok = constantTimeEqual(given, w.PreviousWebhookSecret) || ok
	}
	return ok
}

// ValidateWorkspaceName trims and checks a workspace name.
func ValidateWorkspaceName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", InvalidField("name", "is required")
	}
	if len([]rune(name)) > MaxWorkspaceNameLength {
		return "", InvalidField("name", "must be at most 200 characters")
	}
	return name, nil
}

// HashSecret returns the hex SHA-256 of a secret. Secrets with 256 bits of
// entropy need no slow hash; the hash lets us look a secret up by index
// without keeping an index on the secret itself.
func HashSecret(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

func constantTimeEqual(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(a), []byte(b)) == 1
}
