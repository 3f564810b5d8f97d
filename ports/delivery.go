package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Endpoint is where one delivery goes: a receiver's URL and the secret that
// signs what is sent there. Never log it whole: SigningSecret is a secret.
type Endpoint struct {
	URL string
	// SigningSecret is a Standard Webhooks secret (domain.NewSigningSecret).
	SigningSecret string
}

// DeliveryReport is what came back from one attempt.
type DeliveryReport struct {
	// StatusCode is the receiver's HTTP status; 0 when none came back (no
	// connection, a timeout, the built-in inbox).
	StatusCode int
	// RetryAfter is how long the receiver asked us to wait (Retry-After on
	// a 429 or 503); 0 when it did not say.
	RetryAfter time.Duration
}

// Helpdesk hands a delivery to its receiver: a person's helpdesk (a signed
// webhook, or the built-in inbox) or, through the same signed-webhook
// adapter, a workspace's outbound events URL.
type Helpdesk interface {
	// Deliver sends d to `to` with d.ID as the idempotency key and a body
	// built only from d's stored snapshot, so every attempt sends the same
	// bytes. A nil error means the receiver accepted it. Otherwise the error
	// wraps:
	//   - domain.ErrUnavailable when another attempt may succeed: no
	//     connection, no answer in time, or a status of 408, 409, 423, 425,
	//     429 or 5xx;
	//   - domain.ErrInvalidInput when it never will as things stand: any
	//     other 3xx or 4xx (redirects are not followed), or a URL that may
	//     not be used (not https, an internal address).
	// The report says what came back either way. Error texts name the
	// receiver's host and what happened, never the secret, the URL's path or
	// query, nor the body.
	Deliver(ctx context.Context, to Endpoint, d domain.Delivery) (DeliveryReport, error)
}

// ReceiverURLPolicy decides which URLs a workspace may send deliveries to.
type ReceiverURLPolicy interface {
	// CheckReceiverURL returns raw normalised, or a domain.ValidationError
	// naming field when no delivery would ever be sent there: not an
	// absolute https URL (http only under the test-only relaxation), user
	// info, a fragment, over domain.MaxReceiverURLLength, or a host that is
	// an internal address written literally or a cloud metadata service.
	// Names are not resolved here: every attempt checks the address it
	// connects to.
	CheckReceiverURL(field, raw string) (string, error)
}

// DeliveryOutcome is the state one attempt leaves a delivery in.
type DeliveryOutcome struct {
	Status domain.DeliveryStatus
	// NextAttemptAt is when a PENDING delivery is due again.
	NextAttemptAt time.Time
	// LastError says why the delivery is not DELIVERED ("" when it is).
	LastError string
	// At is when the outcome was decided: DeliveredAt on success.
	At time.Time
}

// DeliveryAttempts is what the delivery worker needs from the outbox.
type DeliveryAttempts interface {
	// ClaimDelivery starts an attempt: if the delivery is PENDING and due
	// by dueBy, one more attempt is counted and it is held until `until`
	// (its next attempt time), so no other worker starts one meanwhile; the
	// claimed delivery is returned with ok true. A delivery that is not
	// PENDING or not due is returned as stored, its snapshot left out, with
	// ok false. Returns domain.ErrNotFound if no delivery has the id.
	ClaimDelivery(ctx context.Context, id string, dueBy, until time.Time) (d domain.Delivery, ok bool, err error)
	// FinishAttempt writes attempt to the delivery log (when not nil) and
	// applies the outcome, in one transaction. A DELIVERED outcome applies
	// to any PENDING delivery; any other only while the delivery is PENDING
	// and no later attempt was claimed (its attempt count is still
	// d.Attempts), so a slow attempt never overwrites a newer one's state.
	// Reports whether the outcome applied. Returns domain.ErrNotFound if no
	// delivery has the id.
	FinishAttempt(ctx context.Context, d domain.Delivery, attempt *domain.DeliveryAttempt, out DeliveryOutcome) (applied bool, err error)
	// ListDueDeliveries returns PENDING deliveries due before `before`,
	// longest overdue first, across workspaces (for the sweeper). A limit
	// of 0 or less means 100.
	ListDueDeliveries(ctx context.Context, before time.Time, limit int) ([]domain.Delivery, error)
}

// DeliveryLog is a workspace's view of its deliveries.
type DeliveryLog interface {
	// ListDeliveries returns a page of the workspace's deliveries, newest
	// first by (created, id).
	ListDeliveries(ctx context.Context, workspaceID string, filter domain.DeliveryFilter, page domain.PageRequest) (domain.Page[domain.Delivery], error)
	// GetDelivery returns a delivery and its attempts, oldest first.
	// Returns domain.ErrNotFound unless it belongs to the workspace.
	GetDelivery(ctx context.Context, workspaceID, id string) (domain.Delivery, []domain.DeliveryAttempt, error)
	// RedriveDelivery moves a FAILED delivery back to PENDING, due at `at`,
	// keeping its attempt count and log, and returns it. Returns
	// domain.ErrNotFound unless it belongs to the workspace and
	// domain.ErrConflict unless it is FAILED.
	RedriveDelivery(ctx context.Context, workspaceID, id string, at time.Time) (domain.Delivery, error)
}

// IntegrationsPatch changes where a workspace's deliveries go; nil and ""
// fields leave the stored value alone.
type IntegrationsPatch struct {
	HelpdeskURL *string
	EventsURL   *string
	// SigningSecret replaces the secret (rotation).
	SigningSecret string
	// SigningSecretIfNone becomes the secret only if there is none yet, so
	// two concurrent first configurations agree on one.
	SigningSecretIfNone string
	// AutoAssign, when not nil, turns auto-assignment of handoffs on or off.
	AutoAssign *bool
}

// IntegrationStore keeps a workspace's integration settings.
type IntegrationStore interface {
	// UpdateIntegrations applies p and the update time in one statement and
	// returns the workspace as stored. Returns domain.ErrNotFound if the
	// workspace does not exist.
	UpdateIntegrations(ctx context.Context, workspaceID string, p IntegrationsPatch, at time.Time) (domain.Workspace, error)
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
