// Package webhook serves POST /api/webhooks/inbound.
package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/http/wire"
	"github.com/conciergehq/concierge/core/inbound"
	"github.com/conciergehq/concierge/core/workspace"
)

// Headers the webhook reads.
const (
	HeaderSecret         = "x-webhook-secret"
	HeaderIdempotencyKey = "Idempotency-Key"
)

// RateLimit counts a webhook call against its workspace; it sets the rate-limit
// headers and returns a domain.RateLimitError when over.
type RateLimit func(c *fiber.Ctx, workspaceID string) error

// Handlers serves the inbound webhook.
type Handlers struct {
	workspaces *workspace.Service
	inbound    *inbound.Service
	decoder    *wire.Decoder
	rateLimit  RateLimit
}

// NewHandlers returns the webhook handlers.
func NewHandlers(workspaces *workspace.Service, in *inbound.Service, decoder *wire.Decoder, rateLimit RateLimit) *Handlers {
	return &Handlers{workspaces: workspaces, inbound: in, decoder: decoder, rateLimit: rateLimit}
}

// Register adds the webhook route.
func (h *Handlers) Register(r fiber.Router) {
	r.Post("/inbound", h.receive)
}

type inboundRequest struct {
	Event     string `json:"event" validate:"required,max=100"`
	SessionID string `json:"sessionId" validate:"max=64"`
	Message   string `json:"message"`
}

type inboundResponse struct {
	Received    bool   `json:"received"`
	WorkspaceID string `json:"workspaceId"`
	EventID     string `json:"eventId"`
}

func (h *Handlers) receive(c *fiber.Ctx) error {
	ws, err := h.workspaces.AuthenticateWebhook(c.UserContext(), strings.Clone(c.Get(HeaderSecret)))
	if err != nil {
		return err
	}
	if err := h.rateLimit(c, ws.ID); err != nil {
		return err
	}
	var body inboundRequest
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	// Hash the decoded fields, not the raw bytes, so a retry that only
	// re-serialises the same JSON differently is still recognised as a retry.
	canonical, _ := json.Marshal(body)
	sum := sha256.Sum256(canonical)
	ev, err := h.inbound.Receive(c.UserContext(), &ws, inbound.Request{
		Event:          body.Event,
		SessionID:      body.SessionID,
		Message:        body.Message,
		IdempotencyKey: strings.Clone(c.Get(HeaderIdempotencyKey)),
		BodyHash:       hex.EncodeToString(sum[:]),
	})
	if err != nil {
		return err
	}
	return c.JSON(inboundResponse{Received: true, WorkspaceID: ws.ID, EventID: ev.ID})
}
