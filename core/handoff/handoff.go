// Package handoff holds the use cases of human handoff: a visitor asking
// for a person, a person replying from the helpdesk or the inbox, moving a
// conversation between its states, and polling a session for what happened
// in it. Every state change is stored with its SYSTEM notice and its outbox
// rows in one transaction, then published to the session's followers and
// scheduled for delivery.
package handoff

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// MaxAuthorNameLength bounds a HUMAN reply's author name.
const MaxAuthorNameLength = 200

// publishTimeout bounds the live relay of what a request stored.
const publishTimeout = 2 * time.Second

// changeAttempts bounds how often a use case re-reads a conversation that
// another request changed between its read and its write.
const changeAttempts = 3

// Deps are the ports the handoff use cases need.
type Deps struct {
	Workspaces    ports.WorkspaceStore
	Agents        ports.AgentLookups
	Conversations ports.ConversationStore
	Bus           ports.EventBus
	Deliveries    ports.DeliveryQueue
	Clock         ports.Clock
	Log           *slog.Logger
}

// Service runs the handoff use cases.
type Service struct {
	workspaces    ports.WorkspaceStore
	agents        ports.AgentLookups
	conversations ports.ConversationStore
	bus           ports.EventBus
	deliveries    ports.DeliveryQueue
	clock         ports.Clock
	log           *slog.Logger
	maxMessage    int
}

// NewService returns a Service. maxMessageChars caps a HUMAN reply, as it
// caps every message.
func NewService(d Deps, maxMessageChars int) *Service {
	if maxMessageChars <= 0 {
		maxMessageChars = domain.MaxMessageLength
	}
	return &Service{
		workspaces: d.Workspaces, agents: d.Agents, conversations: d.Conversations, bus: d.Bus,
		deliveries: d.Deliveries, clock: d.Clock, log: d.Log, maxMessage: maxMessageChars,
	}
}

// Session names a conversation the way its caller holds it.
type Session struct {
	// Workspace is the authenticated caller's workspace; nil when the caller
	// holds only the session id (the widget, v1), which then reaches only
	// conversations of published agents.
	Workspace *domain.Workspace
	SessionID string
	// IdentityHeader and SignatureHeader are the raw X-Service-Identity and
	// X-Service-Signature values: a session of a verified user is not found
	// for another verified user.
	IdentityHeader  string
	SignatureHeader string
}

// Request is a visitor asking for a person, with the optional handoff form.
type Request struct {
	Session
	Name  string
	Email string
	Note  string
}

// RequestHandoff moves the conversation from AI or RESOLVED to
// HANDOFF_REQUESTED, storing the contact and delivering handoff.requested
// (contact and transcript) to the helpdesk, and as an event when the
// workspace has an events URL. Asking again while the request is pending
// changes and delivers nothing. Returns domain.ErrNotFound for an unknown
// session, a PlanError below Standard, domain.ErrInvalidInput for a bad
// form, and domain.ErrConflict when a person already owns the conversation.
func (s *Service) RequestHandoff(ctx context.Context, req Request) (domain.Conversation, error) {
	ws, conv, err := s.session(ctx, req.Session)
	if err != nil {
		return domain.Conversation{}, err
	}
	if err := ws.Require(domain.FeatureHandoff); err != nil {
		return domain.Conversation{}, err
	}
	contact, err := domain.NewHandoffContact(req.Name, req.Email, req.Note)
	if err != nil {
		return domain.Conversation{}, err
	}
	conv, notices, err := s.move(ctx, &ws, conv, domain.StatusHandoffRequested, "", &contact, nil, func(c domain.Conversation) error {
		return &domain.ConflictError{
			Message: "a person already owns this conversation",
			Details: map[string]string{"status": string(c.Status)},
		}
	})
	s.publish(ctx, notices...)
	return conv, err
}

// HumanMessage is a person's reply from the helpdesk or the inbox.
type HumanMessage struct {
	// Role must be HUMAN: the endpoint is for people, and saying so keeps
	// room for other roles later.
	Role       string
	Content    string
	AuthorName string
}

// PostHumanMessage stores a person's reply. A person replying takes the
// conversation over: from any other state it moves to HUMAN first, with a
// notice. The reply is published to the session's followers and, when the
// workspace has an events URL, delivered as message.created. Returns
// domain.ErrInvalidInput for a bad message and domain.ErrNotFound unless
// the conversation belongs to the workspace.
func (s *Service) PostHumanMessage(ctx context.Context, ws *domain.Workspace, conversationID string, m HumanMessage) (domain.Message, error) {
	if m.Role != string(domain.RoleHuman) {
		return domain.Message{}, domain.InvalidField("role", "must be HUMAN")
	}
	if err := domain.ValidateMessageText(m.Content, s.maxMessage); err != nil {
		var verr *domain.ValidationError
		if errors.As(err, &verr) {
			// The rule is every message's; the field here is content.
			return domain.Message{}, domain.InvalidField("content", verr.Fields["message"])
		}
		return domain.Message{}, err
	}
	author := strings.TrimSpace(m.AuthorName)
	if err := domain.ValidateText("authorName", author); err != nil {
		return domain.Message{}, err
	}
	if len([]rune(author)) > MaxAuthorNameLength {
		return domain.Message{}, domain.InvalidField("authorName", "must be at most 200 characters")
	}
	if err := ws.Require(domain.FeatureHandoff); err != nil {
		return domain.Message{}, err
	}
	conv, err := s.conversation(ctx, ws.ID, conversationID)
	if err != nil {
		return domain.Message{}, err
	}
	msg := domain.Message{
		ID: domain.NewID(domain.PrefixMessage), WorkspaceID: ws.ID, ConversationID: conv.ID,
		Role: domain.RoleHuman, Content: m.Content, AuthorName: author, CreatedAt: s.clock.Now(),
	}
	// The takeover and the reply are stored together or not at all: a
	// reply that fails must not leave the conversation taken from the
	// agent with nobody answering.
	conv, notices, err := s.move(ctx, ws, conv, domain.StatusHuman, author, nil, &msg, nil)
	if err != nil {
		return domain.Message{}, err
	}
	if len(notices) == 0 {
		// A person owned it already: the reply is stored whatever happens
		// to the state meanwhile.
		deliveries := domain.MessageDeliveries(ws, conv, msg, msg.CreatedAt)
		if msg, _, err = s.conversations.AppendMessage(ctx, msg, "", deliveries...); err != nil {
			return domain.Message{}, err
		}
		ports.EnqueueDeliveries(ctx, s.deliveries, s.log, deliveries)
	}
	// The notice of the takeover, if this reply made it, goes out with the
	// reply, in order.
	s.publish(ctx, append(notices, msg)...)
	return msg, nil
}

// SetStatus moves the conversation to `to` if the state machine allows it
// (domain.ConversationStatus.CanMoveTo), with a notice and the deliveries of
// the move (domain.StatusDeliveries). Staying in the same state changes
// nothing. Returns domain.ErrInvalidInput for an unknown state,
// domain.ErrNotFound unless the conversation belongs to the workspace, and
// a ConflictError naming from and to for a move the state machine forbids.
func (s *Service) SetStatus(ctx context.Context, ws *domain.Workspace, conversationID string, to domain.ConversationStatus) (domain.Conversation, error) {
	if !to.Valid() {
		return domain.Conversation{}, domain.InvalidField("status", "must be one of AI, HANDOFF_REQUESTED, HUMAN, RESOLVED")
	}
	if err := ws.Require(domain.FeatureHandoff); err != nil {
		return domain.Conversation{}, err
	}
	conv, err := s.conversation(ctx, ws.ID, conversationID)
	if err != nil {
		return domain.Conversation{}, err
	}
	conv, notices, err := s.move(ctx, ws, conv, to, "", nil, nil, nil)
	s.publish(ctx, notices...)
	return conv, err
}

// errBusy is what a caller gets when the conversation kept changing under
// it; retrying is safe.
var errBusy = domain.Conflict("the conversation changed while this request ran; retry")

// move moves conv (as read) to `to` with its notice, the contact (if any),
// the message that motivated the move (if any, stored after the notice)
// and the move's deliveries (domain.NewStatusChange), in one ChangeStatus
// from exactly the state conv was read in, then schedules the deliveries.
// When another request changed the conversation first, it decides again on
// the conversation as it is now, up to changeAttempts times. A
// conversation already in `to` is returned unchanged, with neither notice
// nor message stored. A move the state machine forbids
// (domain.ConversationStatus.CanMoveTo) is refused's error, or a
// ConflictError naming from and to when refused is nil. It returns the
// notice it stored, if any, unpublished, so the caller can publish it with
// what follows it.
func (s *Service) move(ctx context.Context, ws *domain.Workspace, conv domain.Conversation, to domain.ConversationStatus, author string,
	contact *domain.HandoffContact, motive *domain.Message, refused func(domain.Conversation) error) (domain.Conversation, []domain.Message, error) {
	for range changeAttempts {
		if conv.Status == to {
			return conv, nil, nil
		}
		if !conv.Status.CanMoveTo(to) {
			if refused != nil {
				return domain.Conversation{}, nil, refused(conv)
			}
			return domain.Conversation{}, nil, &domain.ConflictError{
				Message: "a " + string(conv.Status) + " conversation cannot move to " + string(to),
				Details: map[string]string{"from": string(conv.Status), "to": string(to)},
			}
		}
		var transcript *domain.HandoffTranscript
		if to == domain.StatusHandoffRequested {
			read, err := s.conversations.HandoffTranscript(ctx, ws.ID, conv.ID, domain.HandoffTranscriptMessages)
			if err != nil {
				return domain.Conversation{}, nil, err
			}
			transcript = &read
		}
		change := domain.NewStatusChange(ws, conv, to, author, contact, transcript, s.clock.Now())
		if motive != nil {
			change = change.WithMessage(ws, conv, *motive, false)
		}
		current, changed, err := s.conversations.ChangeStatus(ctx, change)
		if err != nil {
			return domain.Conversation{}, nil, err
		}
		if changed {
			ports.EnqueueDeliveries(ctx, s.deliveries, s.log, change.Deliveries)
			return current, []domain.Message{change.Notice}, nil
		}
		conv = current
	}
	return domain.Conversation{}, nil, errBusy
}

// PollRequest asks for a session's messages after one the client has.
type PollRequest struct {
	Session
	// After is the id of the last message the client has; "" starts from
	// the first message.
	After string
	// Limit caps the messages returned (0: the default page size).
	Limit int
}

// PollResult is what happened in a session since After.
type PollResult struct {
	Conversation domain.Conversation
	// Messages are oldest first: every role, SYSTEM notices included.
	Messages []domain.Message
	// HasMore says more messages follow the last one returned: poll again
	// at once with its id.
	HasMore bool
}

// Poll returns the session's messages after req.After with the
// conversation's state, for clients that cannot hold a stream open.
// Returns domain.ErrNotFound for an unknown session and
// domain.ErrInvalidInput for a bad limit or an After that is not a message
// of this session.
func (s *Service) Poll(ctx context.Context, req PollRequest) (PollResult, error) {
	limit, err := domain.ValidatePageLimit(req.Limit)
	if err != nil {
		return PollResult{}, err
	}
	if req.After != "" && !domain.ValidID(domain.PrefixMessage, req.After) {
		return PollResult{}, errBadAfter
	}
	ws, conv, err := s.session(ctx, req.Session)
	if err != nil {
		return PollResult{}, err
	}
	page := domain.PageRequest{Limit: limit}
	if req.After != "" {
		page.After = &domain.Position{ID: req.After}
	}
	msgs, err := s.conversations.ListMessages(ctx, ws.ID, conv.ID, page)
	if errors.Is(err, domain.ErrInvalidInput) {
		return PollResult{}, errBadAfter
	}
	if err != nil {
		return PollResult{}, err
	}
	return PollResult{Conversation: conv, Messages: msgs.Items, HasMore: msgs.HasMore}, nil
}

var errBadAfter = domain.InvalidField("after", "is not a message of this session; pass the id of the last message you received")

// session finds the conversation a caller names, by the rules of the answer
// engine: a malformed, unknown or foreign id, another verified user's
// session, and (for keyless callers) a session of an unpublished agent are
// all domain.ErrNotFound.
func (s *Service) session(ctx context.Context, ref Session) (domain.Workspace, domain.Conversation, error) {
	ws, conv, _, err := ports.FindSession(ctx, ports.SessionStores{Conversations: s.conversations, Workspaces: s.workspaces, Agents: s.agents},
		ports.SessionRef(ref), s.clock.Now())
	return ws, conv, err
}

// conversation reads a conversation of the workspace; a malformed id is
// domain.ErrNotFound without a query.
func (s *Service) conversation(ctx context.Context, workspaceID, id string) (domain.Conversation, error) {
	if !domain.ValidID(domain.PrefixSession, id) {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return s.conversations.GetConversation(ctx, workspaceID, id)
}

// publish relays stored messages to the session's followers, in order. The
// relay is best effort: PostgreSQL holds what resuming clients replay.
func (s *Service) publish(ctx context.Context, msgs ...domain.Message) {
	if len(msgs) == 0 {
		return
	}
	events := make([]domain.SessionEvent, 0, len(msgs))
	for _, m := range msgs {
		events = append(events, domain.MessageEvent(m))
	}
	// A bus that hangs must not hold the request: the messages are stored.
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	if err := s.bus.Publish(ctx, events...); err != nil {
		s.log.WarnContext(ctx, "publishing session events failed", "sessionId", msgs[0].ConversationID, "error", err)
	}
}
