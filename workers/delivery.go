package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Delivery task types: a handoff (or a message of a handed-off conversation)
// to the workspace's helpdesk, and an outbound event to its events URL. Both
// carry an outbox row id; the row is the truth, the task only a wake-up.
const (
	TypeHandoffDeliver = "handoff:deliver"
	TypeEventDeliver   = "event:deliver"
)

// QueueDelivery carries deliveries to workspaces' receivers, which may be
// slow or down; it has a queue of its own so they never hold up inbound
// messages or indexing.
const QueueDelivery = "delivery"

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

// NewDeliverTask returns the task of a stored delivery. Its TaskID (the
// delivery id) makes enqueueing it again while it is queued, retrying or
// running a no-op; the row's status makes a duplicate run harmless.
func NewDeliverTask(d domain.Delivery) (*asynq.Task, error) {
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
	return asynq.NewTask(typ, payload,
		asynq.Queue(QueueDelivery),
		asynq.MaxRetry(deliveryMaxRetry),
		asynq.Timeout(deliveryTimeout),
		asynq.TaskID(d.ID),
	), nil
}

// deliveryMaxRetry is enough attempts, with the delivery backoff, to keep
// trying for over 24 hours.
const deliveryMaxRetry = 40

var _ ports.DeliveryQueue = (*Enqueuer)(nil)

// EnqueueDelivery schedules an attempt of a stored delivery now. A task for
// it already queued or retrying is left alone. Returns an error wrapping
// domain.ErrUnavailable if Redis cannot be reached; the row stays PENDING and
// the sweeper enqueues it later.
func (e *Enqueuer) EnqueueDelivery(ctx context.Context, d domain.Delivery) error {
	task, err := NewDeliverTask(d)
	if err != nil {
		return err
	}
	_, err = e.client.EnqueueContext(ctx, task)
	if err != nil && !errors.Is(err, asynq.ErrTaskIDConflict) {
		return domain.Unavailable(fmt.Sprintf("enqueue %s for %s", task.Type(), d.ID), err)
	}
	return nil
}
