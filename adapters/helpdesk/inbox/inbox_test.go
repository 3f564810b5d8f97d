package inbox_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/helpdesk/inbox"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func TestInboxAcceptsHelpdeskDeliveriesOnly(t *testing.T) {
	t.Parallel()
	conv := domain.Conversation{ID: domain.NewID(domain.PrefixSession), WorkspaceID: domain.NewID(domain.PrefixWorkspace)}
	now := time.Now()
	tests := []struct {
		name string
		d    domain.Delivery
		kind error
	}{
		{"handoff", domain.NewDelivery(domain.TargetHelpdesk, domain.EventHandoffRequested, conv, now), nil},
		{"message of a handed-off conversation", domain.NewDelivery(domain.TargetHelpdesk, domain.EventMessageCreated, conv, now), nil},
		{"an outbound event", domain.NewDelivery(domain.TargetEvents, domain.EventConversationCreated, conv, now), domain.ErrInvalidInput},
		{"no conversation", domain.Delivery{ID: domain.NewID(domain.PrefixDelivery), Target: domain.TargetHelpdesk}, domain.ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The endpoint is ignored: nothing leaves the service.
			report, err := inbox.New().Deliver(context.Background(), ports.Endpoint{}, tt.d)
			if tt.kind == nil && err != nil {
				t.Fatalf("err = %v, want accepted", err)
			}
			if tt.kind != nil && !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want %v", err, tt.kind)
			}
			if report != (ports.DeliveryReport{}) {
				t.Errorf("report = %+v, want none (nothing was sent)", report)
			}
		})
	}
}
