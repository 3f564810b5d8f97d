package v2

import (
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
)

// DeliveryHandlers serve /api/v2/deliveries: the log of every handoff and
// outbound event sent (or being sent) to the workspace's receivers.
type DeliveryHandlers struct {
	deliveries DeliveryLog
}

// NewDeliveryHandlers returns the delivery log handlers.
func NewDeliveryHandlers(deliveries DeliveryLog) *DeliveryHandlers {
	return &DeliveryHandlers{deliveries: deliveries}
}

type deliveryDTO struct {
	ID             string `json:"id"`
	Target         string `json:"target"`
	Type           string `json:"type"`
	ConversationID string `json:"conversationId"`
	Status         string `json:"status"`
	Attempts       int    `json:"attempts"`
	// NextAttemptAt is set while the delivery is PENDING.
	NextAttemptAt *string `json:"nextAttemptAt"`
	LastError     *string `json:"lastError"`
	CreatedAt     string  `json:"createdAt"`
	DeliveredAt   *string `json:"deliveredAt"`
}

type deliveryAttemptDTO struct {
	Attempt    int     `json:"attempt"`
	At         string  `json:"at"`
	StatusCode *int    `json:"statusCode"`
	Error      *string `json:"error"`
	DurationMs int64   `json:"durationMs"`
}

type deliveryWithLogDTO struct {
	deliveryDTO
	Log []deliveryAttemptDTO `json:"log"`
}

func toDeliveryDTO(d domain.Delivery) deliveryDTO {
	dto := deliveryDTO{
		ID: d.ID, Target: string(d.Target), Type: d.Type, ConversationID: d.ConversationID, Status: string(d.Status),
		Attempts: d.Attempts, LastError: wire.OptionalString(d.LastError), CreatedAt: wire.Time(d.CreatedAt),
	}
	if d.Status == domain.DeliveryPending {
		at := wire.Time(d.NextAttemptAt)
		dto.NextAttemptAt = &at
	}
	if !d.DeliveredAt.IsZero() {
		at := wire.Time(d.DeliveredAt)
		dto.DeliveredAt = &at
	}
	return dto
}

// List serves GET /api/v2/deliveries.
func (h *DeliveryHandlers) List(c *fiber.Ctx) error {
	filter := domain.DeliveryFilter{
		Target: domain.DeliveryTarget(strings.Clone(c.Query("target"))),
		Status: domain.DeliveryStatus(strings.Clone(c.Query("status"))),
		Type:   strings.Clone(c.Query("type")),
	}
	scope := "deliveries|target=" + string(filter.Target) + "|status=" + string(filter.Status) + "|type=" + filter.Type
	page, err := wire.Page(c, scope, domain.PrefixDelivery)
	if err != nil {
		return err
	}
	deliveries, err := h.deliveries.List(c.UserContext(), workspaceID(c), filter, page)
	if err != nil {
		return err
	}
	return c.JSON(wire.NewList(deliveries, scope, toDeliveryDTO))
}

// Get serves GET /api/v2/deliveries/{id} with its attempts.
func (h *DeliveryHandlers) Get(c *fiber.Ctx) error {
	d, attempts, err := h.deliveries.Get(c.UserContext(), workspaceID(c), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	out := deliveryWithLogDTO{deliveryDTO: toDeliveryDTO(d), Log: make([]deliveryAttemptDTO, 0, len(attempts))}
	for _, a := range attempts {
		dto := deliveryAttemptDTO{Attempt: a.Attempt, At: wire.Time(a.At), Error: wire.OptionalString(a.Error), DurationMs: a.Duration.Milliseconds()}
		if a.StatusCode != 0 {
			code := a.StatusCode
			dto.StatusCode = &code
		}
		out.Log = append(out.Log, dto)
	}
	return c.JSON(out)
}

// Retry serves POST /api/v2/deliveries/{id}/retry.
func (h *DeliveryHandlers) Retry(c *fiber.Ctx) error {
	d, err := h.deliveries.Retry(c.UserContext(), workspaceID(c), strings.Clone(c.Params("id")))
	if err != nil {
		return err
	}
	return c.Status(fiber.StatusAccepted).JSON(toDeliveryDTO(d))
}
