// Package inbox is the built-in helpdesk: a workspace without a helpdesk
// URL works its handoffs through the v2 API (GET /api/v2/conversations
// filtered by status, the conversation's messages, replies and status
// changes). The conversation, its messages and its state are already stored
// with the change the delivery reports, so there is nothing to send: a
// delivery to the inbox is delivered the moment it is attempted, and the
// delivery log still shows it.
package inbox

import (
	"context"
	"fmt"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Inbox accepts helpdesk deliveries. It is safe for concurrent use.
type Inbox struct{}

var _ ports.Helpdesk = Inbox{}

// New returns the inbox.
func New() Inbox { return Inbox{} }

// Deliver accepts a helpdesk delivery; the endpoint is ignored, since
// nothing leaves the service. An events delivery has no place in the inbox
// and is refused with domain.ErrInvalidInput.
func (Inbox) Deliver(_ context.Context, _ ports.Endpoint, d domain.Delivery) (ports.DeliveryReport, error) {
	if d.Target != domain.TargetHelpdesk {
		return ports.DeliveryReport{}, domain.Invalid("the built-in inbox takes helpdesk deliveries, not %s", d.Target)
	}
	if d.ID == "" || d.ConversationID == "" {
		return ports.DeliveryReport{}, fmt.Errorf("inbox: delivery %q names no conversation: %w", d.ID, domain.ErrInvalidInput)
	}
	return ports.DeliveryReport{}, nil
}
