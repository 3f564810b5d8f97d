package memory

import (
	"slices"
	"sync"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var (
	_ ports.ConversationStore  = (*Conversations)(nil)
	_ ports.Transcript         = (*Conversations)(nil)
	_ ports.KeyedQuestions     = (*Conversations)(nil)
	_ ports.InterruptedAnswers = (*Conversations)(nil)
)

// lastMessageRunes bounds the stored preview, as the PostgreSQL store does.
const lastMessageRunes = 200

// Conversations is an in-memory conversation store: conversations, their
// messages in append order, the outbox rows written with them, answers in
// progress and Idempotency-Keys. Every write holds one lock for its whole
// length, so appends and state changes serialize as they do on the
// conversation's row in PostgreSQL, and a write that fails is undone
// entirely, as a transaction is. Reads return copies.
//
// Like the PostgreSQL store it keeps times in UTC to the microsecond, reads
// messages without their retrieval trace (MessageTrace reads it) and
// checks that a new conversation's agent exists: tell it about agents with
// AddAgent, or seed conversations with Put.
type Conversations struct {
	mu sync.Mutex

	agents   map[agentKey]bool
	convs    map[string]*conversation
	messages map[string]messageRef // every message by id, across workspaces
	inbound  map[string]string     // message id by inbound event id, across workspaces
	keys     map[scopedKey]string  // question id by workspace and Idempotency-Key
	traces   map[string]domain.RetrievalTrace
	answers  map[string]domain.AnswerInProgress // by reply id
	outbox   []domain.Delivery
	outboxID map[string]bool

	failMessage  func(domain.Message) error
	beforeChange func(*domain.Conversation)
	// writes counts the writes that stored messages (see Writes).
	writes int
}

type agentKey struct{ workspaceID, id, slug string }

type scopedKey struct{ workspaceID, key string }

type conversation struct {
	conv     domain.Conversation
	messages []domain.Message // append order, as reads return them
}

type messageRef struct {
	conv  *conversation
	index int
}

// NewConversations returns an empty store.
func NewConversations() *Conversations {
	return &Conversations{
		agents:   map[agentKey]bool{},
		convs:    map[string]*conversation{},
		messages: map[string]messageRef{},
		inbound:  map[string]string{},
		keys:     map[scopedKey]string{},
		traces:   map[string]domain.RetrievalTrace{},
		answers:  map[string]domain.AnswerInProgress{},
		outboxID: map[string]bool{},
	}
}

// AddAgent makes the agent one a conversation may be created with
// (CreateConversation and StartConversation check workspace, id and slug,
// as the PostgreSQL store's foreign key does).
func (s *Conversations) AddAgent(a domain.Agent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.agents[agentKey{a.WorkspaceID, a.ID, a.Slug}] = true
}

// FailMessages makes every write that would store a message ask fail
// first (nil: never fail): a non-nil error fails the whole write, which
// stores nothing, as a refused INSERT rolls back its transaction. It is
// asked for each message a write stores (AppendMessage, AppendMessages,
// StartConversation, the Message of a StatusChange, CloseAnswer's reply),
// after the write's not-found and state checks, never for notices.
func (s *Conversations) FailMessages(fail func(domain.Message) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failMessage = fail
}

// BeforeChange sets a hook that runs at the start of every ChangeStatus
// of a conversation that exists, under the store's lock, with the stored
// conversation to modify as a concurrent write that committed first would
// (another request moving it, say). nil removes the hook.
func (s *Conversations) BeforeChange(hook func(*domain.Conversation)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.beforeChange = hook
}

// Put stores conv as given (its status, counts and times included, no
// agent check), replacing a stored conversation with its id but keeping
// that one's messages, then appends msgs to it as AppendMessage would
// (counted, previewed, no hooks). Tests seed conversations in any state
// with it.
func (s *Conversations) Put(conv domain.Conversation, msgs ...domain.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[conv.ID]
	if !ok {
		c = &conversation{}
		s.convs[conv.ID] = c
	}
	c.conv = conv
	if len(msgs) > 0 {
		fail := s.failMessage
		s.failMessage = nil
		defer func() { s.failMessage = fail }()
		tx := &txn{s: s}
		for i := range msgs {
			msgs[i].WorkspaceID, msgs[i].ConversationID = conv.WorkspaceID, conv.ID
		}
		if _, err := tx.insert(c, msgs, ""); err != nil {
			tx.rollback()
			panic("memory: Put: " + err.Error())
		}
	}
}

// Delete removes a conversation with its messages and answers in progress,
// as deleting its agent does in PostgreSQL; its deliveries stay. Tests of
// a session that vanishes use it.
func (s *Conversations) Delete(conversationID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[conversationID]
	if !ok {
		return
	}
	for _, m := range c.messages {
		delete(s.messages, m.ID)
		delete(s.traces, m.ID)
		if m.InboundEventID != "" {
			delete(s.inbound, m.InboundEventID)
		}
		if m.IdempotencyKey != "" {
			delete(s.keys, scopedKey{c.conv.WorkspaceID, m.IdempotencyKey})
		}
	}
	for id, a := range s.answers {
		if a.ConversationID == conversationID {
			delete(s.answers, id)
		}
	}
	delete(s.convs, conversationID)
}

// Writes returns how many writes stored messages: one for every call that
// stored any (AppendMessage, AppendMessages, StartConversation, a
// ChangeStatus carrying a Message, CloseAnswer), as each is one statement
// or transaction of the PostgreSQL store. Tests of how many round trips a
// turn costs read it; notices alone are not counted.
func (s *Conversations) Writes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// Len returns how many conversations are stored, across workspaces.
func (s *Conversations) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.convs)
}

// Conversation returns the stored conversation with the id, whatever its
// workspace, for assertions.
func (s *Conversations) Conversation(id string) (domain.Conversation, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok {
		return domain.Conversation{}, false
	}
	return c.conv, true
}

// Messages returns the conversation's messages in append order as reads
// give them, for assertions; every stored message when conversationID is
// "" (in no particular order across conversations).
func (s *Conversations) Messages(conversationID string) []domain.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []domain.Message
	for id, c := range s.convs {
		if conversationID == "" || id == conversationID {
			for _, m := range c.messages {
				out = append(out, cloneMessage(m))
			}
		}
	}
	return out
}

// Deliveries returns every delivery written, in the order they were
// written, for assertions.
func (s *Conversations) Deliveries() []domain.Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.outbox)
}
