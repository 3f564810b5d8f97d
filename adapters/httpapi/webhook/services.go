package webhook

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/inbound"
)

// The use cases the webhook handler calls, each exactly as much of its
// service as the handler needs, so that it can be tested with scripted
// fakes. Errors are the domain's kinds; the one ErrorHandler maps them.

// Senders authenticates a webhook's sender (workspace.Service).
type Senders interface {
	// AuthenticateWebhook finds the workspace whose current (or, within
	// its grace period, previous) webhook secret is given. Returns
	// domain.ErrUnauthorized when none matches and a domain.PlanError when
	// the plan lacks apiAccess.
	AuthenticateWebhook(ctx context.Context, secret string) (domain.Workspace, error)
}

// Inbox takes inbound events (inbound.Service).
type Inbox interface {
	// Receive validates, stores and enqueues an event. Returns
	// domain.ErrInvalidInput for a bad request, domain.ErrNotFound for a
	// chat.message whose session is unknown or of another workspace, and
	// domain.ErrConflict when the idempotency key was used with another
	// body.
	Receive(ctx context.Context, ws *domain.Workspace, req inbound.Request) (domain.InboundEvent, error)
}
