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
	"strings"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// MaxAuthorNameLength bounds a HUMAN reply's author name.
const MaxAuthorNameLength = 200

// Deps are the ports the handoff use cases need.
type Deps struct {
	Conversations ports.ConversationStore
	// Lifecycle finds sessions, moves conversations between states and
	// publishes what was stored.
	Lifecycle *conversation.Lifecycle
	Clock     ports.Clock
}

// Service runs the handoff use cases.
type Service struct {
	conversations ports.ConversationStore
	lifecycle     *conversation.Lifecycle
	clock         ports.Clock
	maxMessage    int
}

// NewService returns a Service. maxMessageChars caps a HUMAN reply, as it
// caps every message.
func NewService(d Deps, maxMessageChars int) *Service {
	if maxMessageChars <= 0 {
		maxMessageChars = domain.MaxMessageLength
	}
	return &Service{conversations: d.Conversations, lifecycle: d.Lifecycle, clock: d.Clock, maxMessage: maxMessageChars}
}

// Request is a visitor asking for a person, with the optional handoff form.
type Request struct {
	Session conversation.SessionRef
	Name    string
	Email   string
	Note    string
}

// RequestHandoff moves the conversation from AI or RESOLVED to
// HANDOFF_REQUESTED, storing the contact and delivering handoff.requested
// (contact and transcript) to the helpdesk, and as an event when the
// workspace has an events URL. Asking again while the request is pending
// changes and delivers nothing. Returns domain.ErrNotFound for an unknown
// session, a PlanError below Standard, domain.ErrInvalidInput for a bad
// form, and domain.ErrConflict when a person already owns the conversation.
func (s *Service) RequestHandoff(ctx context.Context, req Request) (domain.Conversation, error) {
	found, err := s.lifecycle.Find(ctx, req.Session)
	if err != nil {
		return domain.Conversation{}, err
	}
	ws := found.Workspace
	if err := ws.Require(domain.FeatureHandoff); err != nil {
		return domain.Conversation{}, err
	}
	contact, err := domain.NewHandoffContact(req.Name, req.Email, req.Note)
	if err != nil {
		return domain.Conversation{}, err
	}
	moved, err := s.lifecycle.Move(ctx, &ws, found.Conversation, conversation.Move{
		To: domain.StatusHandoffRequested, Contact: &contact,
		Refused: func(c domain.Conversation) error {
			return &domain.ConflictError{
				Message: "a person already owns this conversation",
				Details: map[string]string{"from": string(c.Status), "to": string(domain.StatusHandoffRequested)},
			}
		},
	})
	s.publishNotice(ctx, moved)
	return moved.Conversation, err
}

// HumanMessage is a person's reply or internal note from the helpdesk,
// the inbox or an integration.
type HumanMessage struct {
	// Role is HUMAN (a reply to the visitor) or NOTE (an internal note,
	// for the team only).
	Role       string
	Content    string
	AuthorName string
	// AuthorID is the member (usr_...) writing from the console; "" for
	// an API key or the helpdesk, which are no member.
	AuthorID string
}

// PostHumanMessage stores a person's reply or internal note.
//
// A reply (HUMAN) takes the conversation over: from any other state it
// moves to HUMAN first, with a notice. The reply is published to the
// session's followers and, when the workspace has an events URL, delivered
// as message.created.
//
// A note (NOTE) is only stored (and published, which keeps it from the
// session: conversation.Lifecycle.PublishMessages): it changes no state,
// takes nothing over and is delivered nowhere, since it never leaves the
// team. Its author is required, as a reply's is: a note nobody signed
// tells the team nothing.
//
// Returns domain.ErrInvalidInput for a bad message and domain.ErrNotFound
// unless the conversation belongs to the workspace.
func (s *Service) PostHumanMessage(ctx context.Context, ws *domain.Workspace, conversationID string, m HumanMessage) (domain.Message, error) {
	role := domain.Role(m.Role)
	if role != domain.RoleHuman && role != domain.RoleNote {
		return domain.Message{}, domain.InvalidField("role", "must be HUMAN or NOTE")
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
	if role == domain.RoleNote && author == "" {
		return domain.Message{}, domain.InvalidField("authorName", "is required for a note")
	}
	if m.AuthorID != "" && !domain.ValidID(domain.PrefixUser, m.AuthorID) {
		return domain.Message{}, domain.InvalidField("authorId", "is not a user id (usr_...)")
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
		Role: role, Content: m.Content, AuthorName: author, AuthorID: m.AuthorID, CreatedAt: s.clock.Now(),
	}
	if role == domain.RoleNote {
		if msg, _, err = s.conversations.AppendMessage(ctx, msg, ""); err != nil {
			return domain.Message{}, err
		}
		s.lifecycle.PublishMessages(ctx, msg)
		return msg, nil
	}
	// The takeover and the reply are stored together or not at all: a
	// reply that fails must not leave the conversation taken from the
	// agent with nobody answering.
	moved, err := s.lifecycle.Move(ctx, ws, conv, conversation.Move{To: domain.StatusHuman, Author: author, Motive: &msg})
	if err != nil {
		return domain.Message{}, err
	}
	var published []domain.Message
	if moved.Notice == nil {
		// A person owned it already: the reply is stored whatever happens
		// to the state meanwhile.
		deliveries := domain.MessageDeliveries(ws, moved.Conversation, msg, msg.CreatedAt)
		if msg, _, err = s.conversations.AppendMessage(ctx, msg, "", deliveries...); err != nil {
			return domain.Message{}, err
		}
		s.lifecycle.EnqueueDeliveries(ctx, deliveries)
	} else {
		published = append(published, *moved.Notice)
	}
	// The notice of the takeover, if this reply made it, goes out with the
	// reply, in order.
	s.lifecycle.PublishMessages(ctx, append(published, msg)...)
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
	moved, err := s.lifecycle.Move(ctx, ws, conv, conversation.Move{To: to})
	s.publishNotice(ctx, moved)
	return moved.Conversation, err
}

// publishNotice publishes the notice of a move, if it made one.
func (s *Service) publishNotice(ctx context.Context, moved conversation.Moved) {
	if moved.Notice != nil {
		s.lifecycle.PublishMessages(ctx, *moved.Notice)
	}
}

// Poll returns the session's messages after req.After with the
// conversation's state, for clients that cannot hold a stream open
// (conversation.Lifecycle.Poll). Returns domain.ErrNotFound for an unknown
// session and domain.ErrInvalidInput for a bad limit or an After that is
// not a message of this session.
func (s *Service) Poll(ctx context.Context, req conversation.PollRequest) (conversation.PollResult, error) {
	return s.lifecycle.Poll(ctx, req)
}

// conversation reads a conversation of the workspace; a malformed id is
// domain.ErrNotFound without a query.
func (s *Service) conversation(ctx context.Context, workspaceID, id string) (domain.Conversation, error) {
	if !domain.ValidID(domain.PrefixSession, id) {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return s.conversations.GetConversation(ctx, workspaceID, id)
}
