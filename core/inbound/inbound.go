// Package inbound holds the use cases of the inbound webhook: receiving an
// event durably, and processing it into the conversation.
package inbound

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// StaleAfter is how long a PENDING event may wait before the sweeper assumes its
// task was lost (enqueue failed, or Redis lost it) and enqueues it again.
const StaleAfter = time.Minute

// Service runs inbound use cases.
type Service struct {
	conversations ports.ConversationStore
	events        ports.InboundEventStore
	queue         ports.JobQueue
	bus           ports.EventBus
	clock         ports.Clock
	log           *slog.Logger
	maxMessage    int
}

// NewService returns a Service. maxMessageChars caps chat.message text.
func NewService(conversations ports.ConversationStore, events ports.InboundEventStore, queue ports.JobQueue, bus ports.EventBus, clock ports.Clock, log *slog.Logger, maxMessageChars int) *Service {
	return &Service{conversations: conversations, events: events, queue: queue, bus: bus, clock: clock, log: log, maxMessage: maxMessageChars}
}

// Request is one webhook call, already authenticated.
type Request struct {
	Event          string
	SessionID      string
	Message        string
	IdempotencyKey string
	// BodyHash identifies the request body, so a reused idempotency key with a
	// different body is told apart from a sender's retry.
	BodyHash string
}

// Receive validates and stores an event, then enqueues its processing. The
// event is committed before Receive returns, so acknowledging it cannot lose
// it. Returns domain.ErrInvalidInput for a bad request, domain.ErrNotFound for
// a chat.message whose session is unknown or of another workspace, and
// domain.ErrConflict when the idempotency key was used with another body.
func (s *Service) Receive(ctx context.Context, ws *domain.Workspace, req Request) (domain.InboundEvent, error) {
	if req.Event == "" {
		return domain.InboundEvent{}, domain.InvalidField("event", "is required")
	}
	if len(req.Event) > 100 {
		return domain.InboundEvent{}, domain.InvalidField("event", "must be at most 100 characters")
	}
	if len(req.IdempotencyKey) > domain.MaxIdempotencyKeyLength {
		return domain.InboundEvent{}, domain.InvalidField("Idempotency-Key", "must be at most 255 characters")
	}
	ev := domain.InboundEvent{
		ID:             domain.NewID(domain.PrefixInboundEvent),
		WorkspaceID:    ws.ID,
		Event:          req.Event,
		SessionID:      req.SessionID,
		Message:        req.Message,
		IdempotencyKey: req.IdempotencyKey,
		BodyHash:       req.BodyHash,
		Status:         domain.InboundIgnored,
		ReceivedAt:     s.clock.Now(),
	}
	if domain.InboundEventKind(req.Event) == domain.EventChatMessage {
		if req.SessionID == "" {
			return domain.InboundEvent{}, domain.InvalidField("sessionId", "is required")
		}
		if err := domain.ValidateMessageText(req.Message, s.maxMessage); err != nil {
			return domain.InboundEvent{}, err
		}
		if !domain.ValidID(domain.PrefixSession, req.SessionID) {
			return domain.InboundEvent{}, domain.NotFound("session")
		}
		if _, err := s.conversations.GetConversation(ctx, ws.ID, req.SessionID); err != nil {
			return domain.InboundEvent{}, err
		}
		ev.Status = domain.InboundPending
	} else {
		s.log.InfoContext(ctx, "inbound event of unknown kind acknowledged", "workspaceId", ws.ID, "event", req.Event)
	}

	stored, created, err := s.events.SaveInboundEvent(ctx, ev)
	if err != nil {
		return domain.InboundEvent{}, err
	}
	if !created && stored.BodyHash != req.BodyHash {
		return domain.InboundEvent{}, domain.Conflict("Idempotency-Key %q was already used with a different request body", req.IdempotencyKey)
	}
	if stored.Status == domain.InboundPending {
		// A retry of a still-pending event enqueues again: harmless, because
		// processing is idempotent, and it recovers a task lost the first time.
		if err := s.queue.EnqueueInboundEvent(ctx, stored.ID); err != nil {
			// The event is committed; the sweeper enqueues it later. Failing the
			// request now would make the sender retry something we already hold.
			s.log.WarnContext(ctx, "enqueueing inbound event failed; the sweeper will retry", "eventId", stored.ID, "error", err)
		}
	}
	return stored, nil
}

// ProcessInboundEvent appends the event's USER message to its conversation,
// exactly once however often it runs. Returns domain.ErrNotFound for an unknown
// event; infrastructure errors are returned for the queue to retry.
func (s *Service) ProcessInboundEvent(ctx context.Context, eventID string) error {
	ev, err := s.events.GetInboundEvent(ctx, eventID)
	if err != nil {
		return err
	}
	if ev.Status != domain.InboundPending {
		return nil
	}
	msg := domain.Message{
		ID:             domain.NewID(domain.PrefixMessage),
		WorkspaceID:    ev.WorkspaceID,
		ConversationID: ev.SessionID,
		Role:           domain.RoleUser,
		Content:        ev.Message,
		InboundEventID: ev.ID,
		CreatedAt:      s.clock.Now(),
	}
	stored, created, err := s.conversations.AppendMessage(ctx, msg)
	if errors.Is(err, domain.ErrNotFound) {
		// The conversation was deleted after the event was accepted: nothing to
		// append to, ever. Record it and stop retrying.
		return s.events.MarkInboundEvent(ctx, ev.ID, domain.InboundFailed, "", "session no longer exists", s.clock.Now())
	}
	if err != nil {
		return err
	}
	if created {
		// The live relay is best effort; PostgreSQL holds the durable copy that
		// resuming clients replay from.
		if err := s.bus.Publish(ctx, ports.SessionEvent{Type: "message", SessionID: ev.SessionID, Message: &stored}); err != nil {
			s.log.WarnContext(ctx, "publishing inbound message failed", "eventId", ev.ID, "sessionId", ev.SessionID, "error", err)
		}
	}
	return s.events.MarkInboundEvent(ctx, ev.ID, domain.InboundProcessed, stored.ID, "", s.clock.Now())
}

// RequeueStale enqueues PENDING events older than StaleAfter again, for events
// whose task was never enqueued or was lost. Safe to run on every worker.
func (s *Service) RequeueStale(ctx context.Context) (int, error) {
	ids, err := s.events.ListStaleInboundEvents(ctx, s.clock.Now().Add(-StaleAfter), 500)
	if err != nil {
		return 0, err
	}
	for i, id := range ids {
		if err := s.queue.EnqueueInboundEvent(ctx, id); err != nil {
			return i, err
		}
	}
	return len(ids), nil
}
