package memory

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// conversationIn returns the workspace's conversation with the id, or nil.
func (s *Conversations) conversationIn(workspaceID, id string) *conversation {
	c, ok := s.convs[id]
	if !ok || c.conv.WorkspaceID != workspaceID {
		return nil
	}
	return c
}

// CreateConversation stores a new conversation with its deliveries.
// Returns domain.ErrNotFound unless AgentID and AgentSlug name an agent of
// the workspace (AddAgent), and domain.ErrConflict for an id that exists.
func (s *Conversations) CreateConversation(ctx context.Context, conv *domain.Conversation, deliveries ...domain.Delivery) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.agents[agentKey{conv.WorkspaceID, conv.AgentID, conv.AgentSlug}] {
		return domain.NotFound("agent")
	}
	if _, ok := s.convs[conv.ID]; ok {
		return domain.Conflict("a conversation with this id already exists")
	}
	tx := &txn{s: s}
	if err := tx.deliver(deliveries); err != nil {
		tx.rollback()
		return domain.Conflict("a conversation with this id already exists")
	}
	conv.LastActivityAt, conv.CreatedAt = dbTime(conv.LastActivityAt), dbTime(conv.CreatedAt)
	s.convs[conv.ID] = &conversation{conv: *conv}
	return nil
}

// StartConversation stores a new conversation with its first messages and
// deliveries, all or nothing, as ports.ConversationStore says. Like the
// PostgreSQL store it does not store the conversation's contact.
func (s *Conversations) StartConversation(ctx context.Context, conv *domain.Conversation, first []domain.Message, deliveries ...domain.Delivery) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(first) == 0 {
		return nil, errors.New("memory: start conversation: no messages")
	}
	if first[0].WorkspaceID != conv.WorkspaceID || first[0].ConversationID != conv.ID {
		return nil, errors.New("memory: start conversation: the messages are another conversation's")
	}
	if err := checkBatch(first); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.agents[agentKey{conv.WorkspaceID, conv.AgentID, conv.AgentSlug}] {
		return nil, domain.NotFound("agent")
	}
	if _, ok := s.convs[conv.ID]; ok {
		return nil, domain.Conflict("a conversation or message with this id already exists")
	}
	row := *conv
	row.ContactName, row.ContactEmail, row.ContactNote = "", "", ""
	row.MessageCount, row.LastMessage = 0, ""
	row.CreatedAt = dbTime(row.CreatedAt)
	row.LastActivityAt = time.Time{} // the first messages set it
	c := &conversation{conv: row}
	s.convs[conv.ID] = c
	tx := &txn{s: s}
	tx.undo = append(tx.undo, func() { delete(s.convs, conv.ID) })
	if _, err := tx.insert(c, first, ""); err != nil {
		tx.rollback()
		return nil, err
	}
	if err := tx.deliver(deliveries); err != nil {
		tx.rollback()
		return nil, err
	}
	conv.MessageCount, conv.LastMessage, conv.LastActivityAt, conv.CreatedAt =
		c.conv.MessageCount, c.conv.LastMessage, c.conv.LastActivityAt, c.conv.CreatedAt
	s.writes++
	return returned(first), nil
}

// AppendMessage stores a message as ports.ConversationStore says.
func (s *Conversations) AppendMessage(ctx context.Context, msg domain.Message, while domain.ConversationStatus, deliveries ...domain.Delivery) (domain.Message, bool, error) {
	if err := ctx.Err(); err != nil {
		return domain.Message{}, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(msg.WorkspaceID, msg.ConversationID)
	if c == nil {
		return domain.Message{}, false, domain.NotFound("conversation")
	}
	tx := &txn{s: s}
	created, err := tx.insert(c, []domain.Message{msg}, while)
	if err == nil && created {
		err = tx.deliver(deliveries)
	}
	if err != nil {
		tx.rollback()
		return domain.Message{}, false, err
	}
	if created {
		s.writes++
		return returned([]domain.Message{msg})[0], true, nil
	}
	if while != "" && c.conv.Status != while {
		return domain.Message{}, false, domain.ErrStatusChanged
	}
	// The inbound event's message stored before, if it is this workspace's.
	ref, ok := s.messages[s.inbound[msg.InboundEventID]]
	if !ok || ref.conv.conv.WorkspaceID != msg.WorkspaceID {
		return domain.Message{}, false, domain.NotFound("conversation")
	}
	return cloneMessage(ref.conv.messages[ref.index]), false, nil
}

// AppendMessages stores several messages of one conversation, all or
// nothing, as ports.ConversationStore says.
func (s *Conversations) AppendMessages(ctx context.Context, msgs []domain.Message, while domain.ConversationStatus, deliveries ...domain.Delivery) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(msgs) == 0 {
		return nil, errors.New("memory: append messages: none")
	}
	if err := checkBatch(msgs); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(msgs[0].WorkspaceID, msgs[0].ConversationID)
	if c == nil {
		return nil, domain.NotFound("conversation")
	}
	tx := &txn{s: s}
	created, err := tx.insert(c, msgs, while)
	if err == nil && !created {
		err = domain.ErrStatusChanged
	}
	if err == nil {
		err = tx.deliver(deliveries)
	}
	if err != nil {
		tx.rollback()
		return nil, err
	}
	s.writes++
	return returned(msgs), nil
}

// checkBatch refuses what one batch cannot hold, as the PostgreSQL store
// does: messages of several conversations, and inbound events' messages
// (appended one by one, whose retries are no-ops).
func checkBatch(msgs []domain.Message) error {
	for _, m := range msgs {
		if m.InboundEventID != "" {
			return errors.New("memory: messages of inbound events are appended one by one")
		}
		if m.WorkspaceID != msgs[0].WorkspaceID || m.ConversationID != msgs[0].ConversationID {
			return errors.New("memory: a batch of messages must be of one conversation")
		}
	}
	return nil
}

// errNotMoved undoes a change that did not apply, with the message stored
// before it.
var errNotMoved = errors.New("the conversation was not in a state the change moves from")

// ChangeStatus applies a StatusChange as ports.ConversationStore says, in
// the PostgreSQL store's order: the message first (under the one state the
// change moves from, if From names one), then the move with its
// conditions, then the message after the notice, then the deliveries.
func (s *Conversations) ChangeStatus(ctx context.Context, change domain.StatusChange) (domain.Conversation, bool, error) {
	if err := ctx.Err(); err != nil {
		return domain.Conversation{}, false, err
	}
	if m := change.Message; m != nil {
		if m.WorkspaceID != change.WorkspaceID || m.ConversationID != change.ConversationID {
			return domain.Conversation{}, false, errors.New("memory: change status: the message is another conversation's")
		}
	}
	from := change.From
	if len(from) == 0 {
		from = domain.StatusesFrom(change.To)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(change.WorkspaceID, change.ConversationID)
	if c == nil {
		return domain.Conversation{}, false, domain.NotFound("conversation")
	}
	if s.beforeChange != nil {
		s.beforeChange(&c.conv)
	}
	tx := &txn{s: s}
	err := s.change(tx, c, change, from)
	switch {
	case err == nil:
		if change.Message != nil {
			s.writes++
		}
		return c.conv, true, nil
	case errors.Is(err, errNotMoved):
		tx.rollback()
		return c.conv, false, nil
	case errors.Is(err, domain.ErrMessageExists):
		tx.rollback()
		return c.conv, false, err
	default:
		tx.rollback()
		return domain.Conversation{}, false, err
	}
}

func (s *Conversations) change(tx *txn, c *conversation, change domain.StatusChange, from []domain.ConversationStatus) error {
	appendMotive := func(while domain.ConversationStatus) error {
		created, err := tx.insert(c, []domain.Message{*change.Message}, while)
		switch {
		case err != nil:
			return err
		case created:
			return nil
		case while != "" && c.conv.Status != while:
			return errNotMoved
		default:
			return domain.ErrMessageExists
		}
	}
	if change.Message != nil && change.MessageFirst {
		while := domain.ConversationStatus("")
		if len(from) == 1 {
			while = from[0]
		}
		if err := appendMotive(while); err != nil {
			return err
		}
	}
	conv := c.conv
	if !slices.Contains(from, conv.Status) || (change.MessageCount != nil && *change.MessageCount != conv.MessageCount) ||
		(change.AssigneeID != "" && conv.HeldByOther(change.AssigneeID)) {
		// This store keeps no memberships: a take-over's member is taken
		// to be one.
		return errNotMoved
	}
	notice := domain.Message{
		ID: change.Notice.ID, WorkspaceID: change.WorkspaceID, ConversationID: change.ConversationID, Role: domain.RoleSystem,
		Content: change.Notice.Content, Status: change.To, AuthorName: change.Notice.AuthorName, CreatedAt: dbTime(change.Notice.CreatedAt),
	}
	if _, ok := s.messages[notice.ID]; ok {
		return domain.Conflict("a message with this id already exists")
	}
	conv.Status = change.To
	if change.To == domain.StatusHandoffRequested {
		// Every request, so a conversation asked for again waits from the
		// new one.
		conv.HandoffRequestedAt = notice.CreatedAt
	}
	if change.AssigneeID != "" {
		conv.AssigneeID = change.AssigneeID
	}
	if ct := change.Contact; ct != nil {
		if ct.Name != "" {
			conv.ContactName = ct.Name
		}
		if ct.Email != "" {
			conv.ContactEmail = ct.Email
		}
		if ct.Note != "" {
			conv.ContactNote = ct.Note
		}
	}
	conv.MessageCount++
	if notice.CreatedAt.After(conv.LastActivityAt) {
		conv.LastActivityAt = notice.CreatedAt
	}
	tx.setConv(c, conv)
	c.messages = append(c.messages, notice)
	s.messages[notice.ID] = messageRef{conv: c, index: len(c.messages) - 1}
	tx.undo = append(tx.undo, func() {
		c.messages = c.messages[:len(c.messages)-1]
		delete(s.messages, notice.ID)
	})
	if change.Message != nil && !change.MessageFirst {
		if err := appendMotive(change.To); err != nil {
			return err
		}
	}
	return tx.deliver(change.Deliveries)
}
