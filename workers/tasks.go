// Package workers holds everything asynq: task types, payloads and their
// constructors, the enqueuer behind ports.JobQueue, the worker server with its
// handlers, the retry policy, and the sweeper that re-enqueues lost work.
//
// Delivery is at least once, so every handler must be idempotent; dedupe is
// backed by database unique constraints, never by asynq's TaskID or Unique,
// whose locks outlive failures.
package workers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/hibiken/asynq"
)

// Task types, named noun:verb: every task this service enqueues, with the
// Server method that handles it (routed in NewServer). Each type's payload,
// constructor and handler live in the file of its concern: inbound below,
// delivery.go, knowledge.go, assign.go (TypeConversationAssign).
// Periodic work is not a task: Sweeper (sweeper.go) runs it in every worker,
// wired in app/concierge/wiring.go (lost inbound events, index jobs and
// deliveries re-enqueued; conversation outcomes decided, core/outcome, and
// then the report rollups brought up to date, core/report.Rollup).
const (
	// TypeInboundProcess appends a stored inbound webhook event's USER message
	// to its session and publishes it (handleInboundProcess).
	TypeInboundProcess = "inbound:process"
	// TypeHandoffDeliver delivers a handoff (or a message of a handed-off
	// conversation) to the workspace's helpdesk, and TypeEventDeliver an
	// outbound event to its events URL. Both carry an outbox row id; the
	// row is the truth, the task only a wake-up (handleDeliver).
	TypeHandoffDeliver = "handoff:deliver"
	TypeEventDeliver   = "event:deliver"
	// TypeKnowledgeIndex (re)indexes one source: extract, chunk, embed, store
	// (handleKnowledgeIndex).
	TypeKnowledgeIndex = "knowledge:index"
)

// Queue names. Server gives each a priority.
const (
	// QueueInbound carries work a person is waiting on (inbound messages,
	// auto-assignments).
	QueueInbound = "inbound"
	// QueueDelivery carries deliveries to workspaces' receivers, which may be
	// slow or down; it has a queue of its own so they never hold up inbound
	// messages or indexing.
	QueueDelivery = "delivery"
	// QueueKnowledge carries indexing, which nobody waits on second by second.
	QueueKnowledge = "knowledge"
	// QueueDefault is where asynq puts tasks enqueued without a queue; the
	// server listens on it so such tasks never sit unprocessed.
	QueueDefault = "default"
)

// Inbound task limits. A transient outage (Postgres or Redis down) is retried
// with capped exponential backoff: 20 retries at up to 5 minutes apart span
// over an hour, after which the sweeper still re-enqueues the PENDING event.
const (
	inboundMaxRetry = 20
	// inboundTimeout bounds one attempt: appending a message is a few queries
	// and a publish, so anything near 30 s is a hung dependency.
	inboundTimeout = 30 * time.Second
)

// InboundProcessPayload identifies the stored inbound event to process. It
// carries the id only: the worker reads the event from the database, so the
// queue never holds message text.
type InboundProcessPayload struct {
	EventID string `json:"eventId"`
}

// NewInboundProcessTask returns the inbound:process task for a stored event.
// Enqueueing it twice is safe: appending the message is idempotent per event.
func NewInboundProcessTask(ctx context.Context, eventID string) (*asynq.Task, error) {
	if eventID == "" {
		return nil, errors.New("inbound:process task: empty event id")
	}
	payload, err := json.Marshal(InboundProcessPayload{EventID: eventID})
	if err != nil {
		return nil, fmt.Errorf("inbound:process task: encode payload: %w", err)
	}
	return newTask(ctx, TypeInboundProcess, payload,
		asynq.Queue(QueueInbound),
		asynq.MaxRetry(inboundMaxRetry),
		asynq.Timeout(inboundTimeout),
	), nil
}
