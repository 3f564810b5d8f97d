package delivery_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
)

func TestSetIntegrations(t *testing.T) {
	t.Parallel()
	str := func(s string) *string { return &s }
	ws := workspace(domain.PlanStandard, "", "")
	ws.SigningSecret = ""
	h := newHarness(t, delivery.Options{}, []domain.Workspace{ws})
	ctx := context.Background()

	// Clearing a URL on a workspace that has none generates no secret.
	got, secret, err := h.svc.SetIntegrations(ctx, &ws, delivery.IntegrationsChange{EventsURL: str("  ")})
	if err != nil || secret != "" || got.SigningSecret != "" || got.EventsURL != "" {
		t.Fatalf("clearing: %+v, secret %q, %v", got, secret, err)
	}
	// The first URL brings a secret, shown once.
	got, secret, err = h.svc.SetIntegrations(ctx, &ws, delivery.IntegrationsChange{HelpdeskURL: str(" https://desk.example.com/in ")})
	if err != nil || !domain.ValidSigningSecret(secret) || got.SigningSecret != secret || got.HelpdeskURL != "https://desk.example.com/in" {
		t.Fatalf("first URL: %+v, secret %q, %v", got, secret, err)
	}
	again, secret2, err := h.svc.SetIntegrations(ctx, &ws, delivery.IntegrationsChange{EventsURL: str("https://events.example.com/in")})
	if err != nil || secret2 != "" || again.SigningSecret != secret || again.HelpdeskURL != got.HelpdeskURL || again.EventsURL != "https://events.example.com/in" {
		t.Fatalf("second URL: %+v, secret %q, %v", again, secret2, err)
	}
	// Rotation replaces it.
	rotated, err := h.svc.RotateSigningSecret(ctx, ws.ID)
	if err != nil || rotated.SigningSecret == secret || !domain.ValidSigningSecret(rotated.SigningSecret) {
		t.Fatalf("rotate: %+v, %v", rotated, err)
	}
	if _, err := h.svc.RotateSigningSecret(ctx, domain.NewID(domain.PrefixWorkspace)); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("rotate unknown workspace: %v", err)
	}

	// Bad URLs are refused with the field named; nothing changes.
	for _, tt := range []struct {
		change delivery.IntegrationsChange
		field  string
	}{
		{delivery.IntegrationsChange{HelpdeskURL: str("http://desk.example.com")}, "helpdeskUrl"},
		{delivery.IntegrationsChange{EventsURL: str("https://internal.example.com")}, "eventsUrl"},
		{delivery.IntegrationsChange{HelpdeskURL: str("https://ok.example.com"), EventsURL: str("ftp://x")}, "eventsUrl"},
	} {
		_, _, err := h.svc.SetIntegrations(ctx, &ws, tt.change)
		var ve *domain.ValidationError
		if !errors.As(err, &ve) || ve.Fields[tt.field] == "" {
			t.Errorf("%+v: err = %v, want a ValidationError on %s", tt.change, err, tt.field)
		}
	}
	if cur, _ := h.svc.Integrations(ctx, ws.ID); cur.HelpdeskURL != "https://desk.example.com/in" {
		t.Errorf("a refused change was applied: %+v", cur)
	}
	// Each change that was applied (three settings, one rotation) was
	// announced, so no pod decides deliveries from a stale copy; refused
	// ones were not.
	if n := h.changes.count(); n != 4 {
		t.Errorf("%d announcements, want 4", n)
	}

	// A helpdesk needs the handoff feature; events do not.
	hobby := workspace(domain.PlanHobby, "", "")
	h2 := newHarness(t, delivery.Options{}, []domain.Workspace{hobby})
	if _, _, err := h2.svc.SetIntegrations(ctx, &hobby, delivery.IntegrationsChange{HelpdeskURL: str("https://desk.example.com")}); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("helpdesk on hobby: %v, want a plan error", err)
	}
	if _, _, err := h2.svc.SetIntegrations(ctx, &hobby, delivery.IntegrationsChange{EventsURL: str("https://events.example.com")}); err != nil {
		t.Errorf("events on hobby: %v", err)
	}
}

func TestDeliveryLogUseCases(t *testing.T) {
	t.Parallel()
	ws, other := workspace(domain.PlanStandard, "", ""), workspace(domain.PlanStandard, "", "")
	failed := pending(ws, domain.TargetHelpdesk, 41)
	failed.Status = domain.DeliveryFailed
	open := pending(ws, domain.TargetHelpdesk, 1)
	h := newHarness(t, delivery.Options{}, []domain.Workspace{ws, other}, failed, open)
	ctx := context.Background()

	if _, err := h.svc.List(ctx, ws.ID, domain.DeliveryFilter{Status: "LOST"}, domain.PageRequest{}); !errors.Is(err, domain.ErrInvalidInput) ||
		!strings.Contains(err.Error(), "status") {
		t.Errorf("bad status filter: %v", err)
	}
	if _, err := h.svc.List(ctx, ws.ID, domain.DeliveryFilter{Type: "conversation.deleted"}, domain.PageRequest{}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("bad type filter: %v", err)
	}
	if p, err := h.svc.List(ctx, ws.ID, domain.DeliveryFilter{Status: domain.DeliveryFailed}, domain.PageRequest{}); err != nil || len(p.Items) != 1 {
		t.Errorf("failed list: %+v, %v", p, err)
	}
	for _, id := range []string{"nonsense", failed.ID} {
		if _, _, err := h.svc.Get(ctx, other.ID, id); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("Get(%s) from another workspace: %v", id, err)
		}
	}
	if _, err := h.svc.Retry(ctx, ws.ID, open.ID); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("retry of a PENDING delivery: %v", err)
	}
	if _, err := h.svc.Retry(ctx, other.ID, failed.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("retry from another workspace: %v", err)
	}
	// The queue is down: the delivery is still re-driven (the sweeper enqueues it).
	h.queue.err = domain.Unavailable("redis", errors.New("down"))
	d, err := h.svc.Retry(ctx, ws.ID, failed.ID)
	if err != nil || d.Status != domain.DeliveryPending || !d.NextAttemptAt.Equal(t0) {
		t.Fatalf("retry = %+v, %v", d, err)
	}
	// One more attempt is made even after the budget was used up.
	h.webhook.reply = nil
	if res, err := h.svc.Deliver(ctx, failed.ID); err != nil || res.Status != domain.DeliveryDelivered {
		t.Fatalf("delivering the retried delivery = %+v, %v", res, err)
	}
}
