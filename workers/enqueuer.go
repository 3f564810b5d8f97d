package workers

import (
	"context"
	"fmt"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Enqueuer puts tasks on the asynq queues in Redis.
type Enqueuer struct {
	client *asynq.Client
}

var _ ports.JobQueue = (*Enqueuer)(nil)

// NewEnqueuer returns an enqueuer with its own Redis connection pool; Close it
// when done.
func NewEnqueuer(redisOpt asynq.RedisConnOpt) *Enqueuer {
	return &Enqueuer{client: asynq.NewClient(redisOpt)}
}

// EnqueueInboundEvent schedules inbound:process for a stored event. Enqueueing
// the same event twice is allowed: processing is idempotent. Returns an error
// wrapping domain.ErrUnavailable if Redis cannot be reached; the event stays
// PENDING in the database and the sweeper enqueues it later.
func (e *Enqueuer) EnqueueInboundEvent(ctx context.Context, eventID string) error {
	task, err := NewInboundProcessTask(ctx, eventID)
	if err != nil {
		return err
	}
	if _, err := e.client.EnqueueContext(ctx, task); err != nil {
		return domain.Unavailable(fmt.Sprintf("enqueue %s for %s", TypeInboundProcess, eventID), err)
	}
	return nil
}

// Close releases the enqueuer's Redis connections.
func (e *Enqueuer) Close() error {
	return e.client.Close()
}
