package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// deliveryTimeout bounds one attempt: a receiver gets a 15 s request
// timeout, the rest is reading and recording.
const deliveryTimeout = 30 * time.Second

// DeliverPayload identifies the outbox row to deliver.
type DeliverPayload struct {
	DeliveryID string `json:"deliveryId"`
}

// deliveryTaskType picks the task type of a delivery's target.
func deliveryTaskType(target domain.DeliveryTarget) (string, error) {
	switch target {
	case domain.TargetHelpdesk:
		return TypeHandoffDeliver, nil
	case domain.TargetEvents:
		return TypeEventDeliver, nil
	}
	return "", fmt.Errorf("delivery task: unknown target %q", target)
}

// NewDeliverTask returns the task of a stored delivery. It has no TaskID:
// the outbox row's claim, not the queue, makes sure one attempt runs at a
// time, so a repeated enqueue (a sweep of a late task, a retry through the
// API) only adds a wake-up that finds nothing to do, and neither an
// archived task nor one a killed worker left active can ever block a
// delivery's next task.
func NewDeliverTask(ctx context.Context, d domain.Delivery) (*asynq.Task, error) {
	if d.ID == "" {
		return nil, errors.New("delivery task: empty delivery id")
	}
	typ, err := deliveryTaskType(d.Target)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(DeliverPayload{DeliveryID: d.ID})
	if err != nil {
		return nil, fmt.Errorf("%s task: encode payload: %w", typ, err)
	}
	return newTask(ctx, typ, payload,
		asynq.Queue(QueueDelivery),
		asynq.MaxRetry(deliveryMaxRetry),
		asynq.Timeout(deliveryTimeout),
	), nil
}

// deliveryMaxRetry is enough attempts, with the delivery backoff, to keep
// trying for over 24 hours (core/delivery.DefaultMaxAttempts is this plus
// the first attempt; the outbox row, not the task, counts them).
const deliveryMaxRetry = 40

var _ ports.DeliveryQueue = (*Enqueuer)(nil)

// EnqueueDelivery schedules an attempt of a stored delivery now. Enqueueing
// the same delivery twice is allowed: the attempt claims the row first.
// Returns an error wrapping domain.ErrUnavailable if Redis cannot be
// reached; the row stays PENDING and the sweeper enqueues it later.
func (e *Enqueuer) EnqueueDelivery(ctx context.Context, d domain.Delivery) error {
	task, err := NewDeliverTask(ctx, d)
	if err != nil {
		return err
	}
	if _, err := e.client.EnqueueContext(ctx, task); err != nil {
		return domain.Unavailable(fmt.Sprintf("enqueue %s for %s", task.Type(), d.ID), err)
	}
	return nil
}

// DeliveryProcessor makes one attempt of a stored delivery. core/delivery
// satisfies it; it must be idempotent, because a task can run more than once.
type DeliveryProcessor interface {
	// Deliver attempts the delivery if it is PENDING and due and records
	// the attempt. Its error is about the store (retried); the attempt's
	// outcome is in the result (see deliveryOutcome).
	Deliver(ctx context.Context, deliveryID string) (delivery.Result, error)
}

// handleDeliver runs both delivery task types: the target is the row's, so
// the two types differ only in name (and in how operators can filter them).
func (s *Server) handleDeliver(ctx context.Context, t *asynq.Task) error {
	var p DeliverPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return toAsynqError(fmt.Errorf("%s: malformed payload: %w: %w", t.Type(), err, domain.ErrInvalidInput))
	}
	if !domain.ValidID(domain.PrefixDelivery, p.DeliveryID) {
		return toAsynqError(fmt.Errorf("%s: payload has no valid delivery id: %w", t.Type(), domain.ErrInvalidInput))
	}
	res, err := s.delivery.Deliver(ctx, p.DeliveryID)
	if err != nil {
		return toAsynqError(fmt.Errorf("deliver %s: %w", p.DeliveryID, err))
	}
	return deliveryOutcome(p.DeliveryID, res)
}
