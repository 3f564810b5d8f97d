// Package webhook serves POST /api/webhooks/inbound.
package webhook

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/inbound"
)

// HeaderSecret authenticates the webhook's sender.
const HeaderSecret = "x-webhook-secret"

// Limits counts webhook calls: accepted ones against their workspace, and
// refused secrets against the client IP, so guessing secrets is slow. Each
// sets the rate-limit headers and returns a domain.RateLimitError when over.
type Limits struct {
	Workspace  func(c *fiber.Ctx, workspaceID string) error
	FailedAuth func(c *fiber.Ctx) error
}

// Handlers serves the inbound webhook.
type Handlers struct {
	workspaces Senders
	inbound    Inbox
	decoder    *wire.Decoder
	limits     Limits
}

// NewHandlers returns the webhook handlers.
func NewHandlers(workspaces Senders, in Inbox, decoder *wire.Decoder, limits Limits) *Handlers {
	return &Handlers{workspaces: workspaces, inbound: in, decoder: decoder, limits: limits}
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

// Receive serves POST /api/webhooks/inbound: the sender is authenticated by
// its secret before anything else, then counted against its workspace.
func (h *Handlers) Receive(c *fiber.Ctx) error {
	ws, err := h.workspaces.AuthenticateWebhook(c.UserContext(), strings.Clone(c.Get(HeaderSecret)))
	if errors.Is(err, domain.ErrUnauthorized) {
		if lerr := h.limits.FailedAuth(c); lerr != nil {
			return lerr
		}
	}
	if err != nil {
		return err
	}
	if err := h.limits.Workspace(c, ws.ID); err != nil {
		return err
	}
	var body inboundRequest
	if err := h.decoder.Decode(c, &body, false); err != nil {
		return err
	}
	key, err := wire.Header(c, wire.HeaderIdempotencyKey)
	if err != nil {
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
		IdempotencyKey: key,
		BodyHash:       hex.EncodeToString(sum[:]),
	})
	if err != nil {
		return err
	}
	return c.JSON(inboundResponse{Received: true, WorkspaceID: ws.ID, EventID: ev.ID})
}
