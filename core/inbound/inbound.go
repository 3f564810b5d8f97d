// Package inbound holds the use cases of the inbound webhook: receiving an
// event durably, and processing it into the conversation.
package inbound

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// StaleAfter is how long a PENDING event may wait before the sweeper assumes its
// task was lost (enqueue failed, or Redis lost it) and enqueues it again.
const StaleAfter = time.Minute

// Service runs inbound use cases.
type Service struct {
	workspaces    ports.WorkspaceStore
	conversations ports.ConversationReader
	events        ports.InboundEventStore
	queue         ports.JobQueue
	lifecycle     *conversation.Lifecycle
	clock         ports.Clock
	log           *slog.Logger
	maxMessage    int
}

// Deps are the ports the inbound use cases need.
type Deps struct {
	Workspaces ports.WorkspaceStore
	// Conversations is only read, to check that a session exists: the
	// Lifecycle writes the messages.
	Conversations ports.ConversationReader
	Events        ports.InboundEventStore
	Queue         ports.JobQueue
	// Lifecycle appends messages under the conversation's state, schedules
	// what they are delivered as (the helpdesk while a person owns the
	// conversation, outbound events) and publishes them.
	Lifecycle *conversation.Lifecycle
	Clock     ports.Clock
	Log       *slog.Logger
}

// NewService returns a Service. maxMessageChars caps chat.message text.
func NewService(d Deps, maxMessageChars int) *Service {
	return &Service{
		workspaces: d.Workspaces, conversations: d.Conversations, events: d.Events, queue: d.Queue,
		lifecycle: d.Lifecycle, clock: d.Clock, log: d.Log, maxMessage: maxMessageChars,
	}
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
	if err := domain.ValidateIdempotencyKey(req.IdempotencyKey); err != nil {
		return domain.InboundEvent{}, err
	}
	for _, f := range [...]struct{ name, value string }{{"event", req.Event}, {"sessionId", req.SessionID}} {
		if err := domain.ValidateText(f.name, f.value); err != nil {
			return domain.InboundEvent{}, err
		}
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
		// An event we do not act on is logged and acknowledged, as the
		// contract says, whatever its message. It is kept for its sender's
		// records with a message no freer than a chat message's: one that
		// is blank or too long is left out, and the log says why.
		if req.Message != "" {
			if err := domain.ValidateMessageText(req.Message, s.maxMessage); err != nil {
				ev.Message = ""
				s.log.InfoContext(ctx, "inbound event of unknown kind: its message is not kept", "workspaceId", ws.ID, "event", req.Event, "why", err.Error())
			}
		}
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
// exactly once however often it runs. The conversation's state rules apply
// as to any user message, except that no answer is generated here: while a
// person owns the conversation the message is also delivered to the
// helpdesk, and a RESOLVED conversation goes back to AI. Returns
// domain.ErrNotFound for an unknown event; infrastructure errors are
// returned for the queue to retry.
func (s *Service) ProcessInboundEvent(ctx context.Context, eventID string) error {
	ev, err := s.events.GetInboundEvent(ctx, eventID)
	if err != nil {
		return err
	}
	if ev.Status != domain.InboundPending {
		return nil
	}
	conv, err := s.conversations.GetConversation(ctx, ev.WorkspaceID, ev.SessionID)
	if errors.Is(err, domain.ErrNotFound) {
		return s.sessionGone(ctx, ev)
	}
	if err != nil {
		return err
	}
	ws, err := s.workspaces.GetWorkspace(ctx, ev.WorkspaceID)
	if err != nil {
		return err
	}
	now := s.clock.Now()
	msg := domain.Message{
		ID:             domain.NewID(domain.PrefixMessage),
		WorkspaceID:    ev.WorkspaceID,
		ConversationID: ev.SessionID,
		Role:           domain.RoleUser,
		Content:        ev.Message,
		InboundEventID: ev.ID,
		CreatedAt:      now,
	}
	// Stored under the state as read, with what reports it in that state; a
	// state that changed first (a handoff, say) is decided again, so the
	// helpdesk gets the message; a resolved conversation is reopened with
	// it, in the same write. Still changing after that: the task is retried.
	appended, err := s.lifecycle.Append(ctx, &ws, conv, msg)
	if errors.Is(err, domain.ErrNotFound) {
		return s.sessionGone(ctx, ev)
	}
	if err != nil {
		return err
	}
	// The live relay is best effort; PostgreSQL holds the durable copy that
	// resuming clients replay from. A message stored by an earlier run has
	// no events (it was published then).
	s.lifecycle.Publish(ctx, appended.Events()...)
	return s.events.MarkInboundEvent(ctx, ev.ID, domain.InboundProcessed, appended.Message.ID, "", s.clock.Now())
}

// sessionGone records that the conversation was deleted after the event
// was accepted: nothing to append to, ever, so retrying is pointless.
func (s *Service) sessionGone(ctx context.Context, ev domain.InboundEvent) error {
	return s.events.MarkInboundEvent(ctx, ev.ID, domain.InboundFailed, "", "session no longer exists", s.clock.Now())
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
