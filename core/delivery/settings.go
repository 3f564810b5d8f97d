package delivery

import (
	"context"
	"errors"
	"strings"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Integrations returns the workspace with its current integration settings,
// read from the store rather than from the caller's (possibly cached)
// principal. Returns domain.ErrNotFound for an unknown workspace.
func (s *Service) Integrations(ctx context.Context, workspaceID string) (domain.Workspace, error) {
	return s.d.Workspaces.GetWorkspace(ctx, workspaceID)
}

// IntegrationsChange is a partial update: nil fields stay as they are, ""
// clears a URL.
type IntegrationsChange struct {
	HelpdeskURL *string
	EventsURL   *string
	// AutoAssign turns auto-assignment of handed-off conversations to the
	// available members on or off (core/assignment.AutoAssign). Any plan
	// may turn it on: without the handoff feature there is simply nothing
	// to assign.
	AutoAssign *bool
}

// SetIntegrations validates and saves where ws's deliveries go. A helpdesk
// URL needs the handoff feature (domain.PlanError otherwise). The first URL
// a workspace configures gets it a signing secret, returned as newSecret
// (shown once); later calls return "". Returns domain.ErrInvalidInput for a
// URL no delivery would be sent to, naming the field.
func (s *Service) SetIntegrations(ctx context.Context, ws *domain.Workspace, change IntegrationsChange) (updated domain.Workspace, newSecret string, err error) {
	var patch ports.IntegrationsPatch
	if patch.HelpdeskURL, err = s.receiverURL("helpdeskUrl", change.HelpdeskURL); err != nil {
		return domain.Workspace{}, "", err
	}
	if patch.EventsURL, err = s.receiverURL("eventsUrl", change.EventsURL); err != nil {
		return domain.Workspace{}, "", err
	}
	patch.AutoAssign = change.AutoAssign
	setsHelpdesk := patch.HelpdeskURL != nil && *patch.HelpdeskURL != ""
	if setsHelpdesk {
		if err := ws.Require(domain.FeatureHandoff); err != nil {
			return domain.Workspace{}, "", err
		}
	}
	candidate := ""
	if setsHelpdesk || (patch.EventsURL != nil && *patch.EventsURL != "") {
		candidate = domain.NewSigningSecret()
		patch.SigningSecretIfNone = candidate
	}
	updated, err = s.d.Integrations.UpdateIntegrations(ctx, ws.ID, patch, s.d.Clock.Now())
	if err != nil {
		return domain.Workspace{}, "", err
	}
	s.announce(ctx, ws.ID)
	if candidate != "" && updated.SigningSecret == candidate {
		newSecret = candidate
	}
	return updated, newSecret, nil
}

// receiverURL is a change's URL as stored: nil when absent, "" to clear,
// else checked and normalised.
func (s *Service) receiverURL(field string, in *string) (*string, error) {
	if in == nil {
		return nil, nil
	}
	v := strings.TrimSpace(*in)
	if v != "" {
		var err error
		if v, err = s.d.URLs.CheckReceiverURL(field, v); err != nil {
			return nil, err
		}
	}
	return &v, nil
}

// RotateSigningSecret replaces the workspace's signing secret and returns
// the workspace with it (shown once). It applies at once, to deliveries
// still being retried too: receivers must switch to the new secret.
// Returns domain.ErrNotFound for an unknown workspace.
func (s *Service) RotateSigningSecret(ctx context.Context, workspaceID string) (domain.Workspace, error) {
	ws, err := s.d.Integrations.UpdateIntegrations(ctx, workspaceID, ports.IntegrationsPatch{SigningSecret: domain.NewSigningSecret()}, s.d.Clock.Now())
	if err != nil {
		return domain.Workspace{}, err
	}
	s.announce(ctx, workspaceID)
	return ws, nil
}

// List returns a page of the workspace's deliveries, newest first. Returns
// domain.ErrInvalidInput for an unknown filter value.
func (s *Service) List(ctx context.Context, workspaceID string, filter domain.DeliveryFilter, page domain.PageRequest) (domain.Page[domain.Delivery], error) {
	if err := filter.Validate(); err != nil {
		return domain.Page[domain.Delivery]{}, err
	}
	return s.d.Deliveries.ListDeliveries(ctx, workspaceID, filter, page)
}

// Get returns a delivery and its attempts, oldest first. Returns
// domain.ErrNotFound unless it belongs to the workspace.
func (s *Service) Get(ctx context.Context, workspaceID, id string) (domain.Delivery, []domain.DeliveryAttempt, error) {
	if !domain.ValidID(domain.PrefixDelivery, id) {
		return domain.Delivery{}, nil, domain.NotFound("delivery")
	}
	return s.d.Deliveries.GetDelivery(ctx, workspaceID, id)
}

// Retry re-drives a FAILED delivery now: back to PENDING with one more
// attempt, and the rest of its retries if it had not used them all. The
// same idempotency key and body are sent. Returns domain.ErrNotFound unless
// it belongs to the workspace and domain.ErrConflict unless it is FAILED.
// If the queue cannot be reached the delivery is still PENDING, and the
// sweeper enqueues it.
func (s *Service) Retry(ctx context.Context, workspaceID, id string) (domain.Delivery, error) {
	if !domain.ValidID(domain.PrefixDelivery, id) {
		return domain.Delivery{}, domain.NotFound("delivery")
	}
	d, err := s.d.Deliveries.RedriveDelivery(ctx, workspaceID, id, s.d.Clock.Now())
	if err != nil {
		return domain.Delivery{}, err
	}
	if err := s.d.Queue.EnqueueDelivery(ctx, d); err != nil {
		if !errors.Is(err, domain.ErrUnavailable) {
			return domain.Delivery{}, err
		}
		s.d.Log.WarnContext(ctx, "enqueueing a retried delivery failed; the sweeper will", "deliveryId", d.ID, "error", err)
	}
	return d, nil
}

// announce drops every pod's cached copies of the workspace after its
// integrations changed: the answer engine decides outbound events from the
// caller's workspace, which API calls take from the authentication cache,
// and a change must apply to the next call on this pod. A failed
// announcement only delays other pods (within the cache's lifetime).
func (s *Service) announce(ctx context.Context, workspaceID string) {
	if err := s.d.Changes.WorkspaceChanged(ctx, workspaceID); err != nil {
		s.d.Log.WarnContext(ctx, "announcing an integrations change failed; other pods see it within the auth cache's lifetime",
			"workspaceId", workspaceID, "error", err)
	}
}
