package v2

import (
	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
)

// IntegrationHandlers serve /api/v2/integrations: where the workspace's
// handoffs and outbound events go, and the secret that signs them.
type IntegrationHandlers struct {
	deliveries Integrations
	decoder    *wire.Decoder
}

// NewIntegrationHandlers returns the integration settings handlers.
func NewIntegrationHandlers(deliveries Integrations, decoder *wire.Decoder) *IntegrationHandlers {
	return &IntegrationHandlers{deliveries: deliveries, decoder: decoder}
}

// integrationsUpdate is the body of PATCH /api/v2/integrations: absent
// fields stay, "" clears a URL. The URLs themselves are checked by the use
// case (https, no internal address), which names the field at fault.
type integrationsUpdate struct {
	HelpdeskURL *string `json:"helpdeskUrl" validate:"omitnil,max=2048"`
	EventsURL   *string `json:"eventsUrl" validate:"omitnil,max=2048"`
	AutoAssign  *bool   `json:"autoAssign"`
}

// integrationsDTO never carries the signing secret, except in the one
// response that created it (first URL, or rotation).
type integrationsDTO struct {
	// Helpdesk says where handoffs go: "webhook" (helpdeskUrl) or "inbox"
	// (the v2 conversation endpoints).
	Helpdesk         string  `json:"helpdesk"`
	HelpdeskURL      *string `json:"helpdeskUrl"`
	EventsURL        *string `json:"eventsUrl"`
	SigningSecretSet bool    `json:"signingSecretSet"`
	SigningSecret    *string `json:"signingSecret,omitempty"`
	// AutoAssign says handed-off conversations are given to an available
	// member (core/assignment.AutoAssign).
	AutoAssign bool   `json:"autoAssign"`
	UpdatedAt  string `json:"updatedAt"`
}

func toIntegrationsDTO(ws domain.Workspace, shownOnce string) integrationsDTO {
	dto := integrationsDTO{
		Helpdesk:         "inbox",
		HelpdeskURL:      wire.OptionalString(ws.HelpdeskURL),
		EventsURL:        wire.OptionalString(ws.EventsURL),
		SigningSecretSet: ws.SigningSecret != "",
		SigningSecret:    wire.OptionalString(shownOnce),
		AutoAssign:       ws.AutoAssign,
		UpdatedAt:        wire.Time(ws.UpdatedAt),
	}
	if ws.HelpdeskURL != "" {
		dto.Helpdesk = "webhook"
	}
	return dto
}

// Get serves GET /api/v2/integrations.
func (h *IntegrationHandlers) Get(c *fiber.Ctx) error {
	ws, err := h.deliveries.Integrations(c.UserContext(), workspaceID(c))
	if err != nil {
		return err
	}
	return c.JSON(toIntegrationsDTO(ws, ""))
}

// Update serves PATCH /api/v2/integrations.
func (h *IntegrationHandlers) Update(c *fiber.Ctx) error {
	var body integrationsUpdate
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	p, _ := wire.Principal(c)
	ws, secret, err := h.deliveries.SetIntegrations(c.UserContext(), &p.Workspace, delivery.IntegrationsChange{
		HelpdeskURL: body.HelpdeskURL, EventsURL: body.EventsURL, AutoAssign: body.AutoAssign,
	})
	if err != nil {
		return err
	}
	if secret != "" {
		c.Set(fiber.HeaderCacheControl, "no-store")
	}
	return c.JSON(toIntegrationsDTO(ws, secret))
}

// RotateSigningSecret serves POST /api/v2/integrations/signing-secret.
func (h *IntegrationHandlers) RotateSigningSecret(c *fiber.Ctx) error {
	ws, err := h.deliveries.RotateSigningSecret(c.UserContext(), workspaceID(c))
	if err != nil {
		return err
	}
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.JSON(toIntegrationsDTO(ws, ws.SigningSecret))
}
