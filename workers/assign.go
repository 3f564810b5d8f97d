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

// Auto-assignment runs as a task, not inline in the request that handed
// the conversation off: the handoff is committed first and stands whatever
// happens to the assignment (a conversation nobody was given waits in
// "Needs a person", as it did before auto-assignment); a failure (Postgres
// restarting, the workspace's lock held by a burst of handoffs) is retried
// with backoff; and the visitor's request never waits on another pod's
// assignment. It is idempotent: assigning a conversation already assigned
// changes nothing.

// TypeConversationAssign gives a handed-off conversation to an available
// member of its workspace (handleConversationAssign).
const TypeConversationAssign = "conversation:assign"

// assignMaxRetry and assignTimeout: an assignment is a lock and three short
// statements; 10 retries with the capped backoff span a quarter of an hour,
// after which a person assigns it by hand.
const (
	assignMaxRetry = 10
	assignTimeout  = 30 * time.Second
)

// AutoAssigner gives a handed-off conversation to an available member.
// core/assignment satisfies it; it is idempotent.
type AutoAssigner interface {
	// AutoAssign returns domain.ErrNotFound for an unknown workspace or
	// conversation (permanent), other errors are retried.
	AutoAssign(ctx context.Context, workspaceID, conversationID string) (domain.Conversation, bool, error)
}

// ConversationAssignPayload identifies the conversation to assign.
type ConversationAssignPayload struct {
	WorkspaceID    string `json:"workspaceId"`
	ConversationID string `json:"conversationId"`
}

// NewConversationAssignTask returns the conversation:assign task of a
// conversation. It goes on the inbound queue, with the work a person waits
// on: a member watching their Mine.
func NewConversationAssignTask(ctx context.Context, workspaceID, conversationID string) (*asynq.Task, error) {
	if workspaceID == "" || conversationID == "" {
		return nil, errors.New("conversation:assign task: empty workspace or conversation id")
	}
	payload, err := json.Marshal(ConversationAssignPayload{WorkspaceID: workspaceID, ConversationID: conversationID})
	if err != nil {
		return nil, fmt.Errorf("conversation:assign task: encode payload: %w", err)
	}
	return newTask(ctx, TypeConversationAssign, payload,
		asynq.Queue(QueueInbound),
		asynq.MaxRetry(assignMaxRetry),
		asynq.Timeout(assignTimeout),
	), nil
}

var _ ports.AutoAssignQueue = (*Enqueuer)(nil)

// EnqueueAutoAssign schedules conversation:assign. Returns an error
// wrapping domain.ErrUnavailable if Redis cannot be reached.
func (e *Enqueuer) EnqueueAutoAssign(ctx context.Context, workspaceID, conversationID string) error {
	task, err := NewConversationAssignTask(ctx, workspaceID, conversationID)
	if err != nil {
		return err
	}
	if _, err := e.client.EnqueueContext(ctx, task); err != nil {
		return domain.Unavailable(fmt.Sprintf("enqueue %s for %s", TypeConversationAssign, conversationID), err)
	}
	return nil
}

// handleConversationAssign decodes the payload and runs the assignment.
func (s *Server) handleConversationAssign(ctx context.Context, t *asynq.Task) error {
	var p ConversationAssignPayload
	if err := json.Unmarshal(t.Payload(), &p); err != nil {
		return toAsynqError(fmt.Errorf("%s: malformed payload: %w: %w", TypeConversationAssign, err, domain.ErrInvalidInput))
	}
	if p.WorkspaceID == "" || !domain.ValidID(domain.PrefixSession, p.ConversationID) {
		return toAsynqError(fmt.Errorf("%s: payload has no valid ids: %w", TypeConversationAssign, domain.ErrInvalidInput))
	}
	conv, assigned, err := s.autoAssign.AutoAssign(ctx, p.WorkspaceID, p.ConversationID)
	if err != nil {
		return toAsynqError(fmt.Errorf("auto-assign conversation %s: %w", p.ConversationID, err))
	}
	if assigned {
		s.logger.InfoContext(ctx, "conversation auto-assigned", "workspaceId", p.WorkspaceID, "conversationId", p.ConversationID, "assigneeId", conv.AssigneeID)
	}
	return nil
}
