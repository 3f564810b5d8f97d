package memory

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"

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

// txn undoes the writes of one operation when a later step fails, so an
// operation stores all of it or nothing, as a transaction does.
type txn struct {
	s    *Conversations
	undo []func()
}

func (t *txn) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo = nil
}

// setConv replaces c's conversation, to be undone.
func (t *txn) setConv(c *conversation, conv domain.Conversation) {
	prev := c.conv
	c.conv = conv
	t.undo = append(t.undo, func() { c.conv = prev })
}

// deliver writes deliveries to the outbox. An id written before is a
// conflict, as the outbox's primary key makes it.
func (t *txn) deliver(ds []domain.Delivery) error {
	for _, d := range ds {
		if t.s.outboxID[d.ID] {
			return domain.Conflict("a message with this id already exists")
		}
		if d.Status == "" {
			d.Status = domain.DeliveryPending
		}
		d.NextAttemptAt, d.CreatedAt = dbTime(d.NextAttemptAt), dbTime(d.CreatedAt)
		t.s.outbox = append(t.s.outbox, d)
		t.s.outboxID[d.ID] = true
		id := d.ID
		t.undo = append(t.undo, func() {
			t.s.outbox = t.s.outbox[:len(t.s.outbox)-1]
			delete(t.s.outboxID, id)
		})
	}
	return nil
}

// insert appends msgs to c as the PostgreSQL store's append statement
// does: nothing when c is not in state while (any when ""), an inbound
// event's message already stored skipped, the conversation counted and
// its preview and activity moved to the newest message unless that is
// older than its activity. It reports whether anything was inserted.
func (t *txn) insert(c *conversation, msgs []domain.Message, while domain.ConversationStatus) (bool, error) {
	s := t.s
	if while != "" && c.conv.Status != while {
		return false, nil
	}
	var inserted []domain.Message
	for _, m := range msgs {
		if m.InboundEventID != "" {
			if _, ok := s.inbound[m.InboundEventID]; ok {
				continue
			}
		}
		if s.failMessage != nil {
			if err := s.failMessage(m); err != nil {
				return false, err
			}
		}
		if _, ok := s.messages[m.ID]; ok {
			return false, domain.Conflict("a message with this id already exists")
		}
		key := scopedKey{c.conv.WorkspaceID, m.IdempotencyKey}
		if m.IdempotencyKey != "" {
			if _, ok := s.keys[key]; ok {
				return false, domain.ErrAnswerInProgress
			}
		}
		stored := storedMessage(m)
		stored.WorkspaceID, stored.ConversationID = c.conv.WorkspaceID, c.conv.ID
		c.messages = append(c.messages, stored)
		s.messages[m.ID] = messageRef{conv: c, index: len(c.messages) - 1}
		if m.InboundEventID != "" {
			s.inbound[m.InboundEventID] = m.ID
		}
		if m.IdempotencyKey != "" {
			s.keys[key] = m.ID
		}
		if m.Trace != nil {
			s.traces[m.ID] = *m.Trace
		}
		t.undo = append(t.undo, func() {
			c.messages = c.messages[:len(c.messages)-1]
			delete(s.messages, m.ID)
			delete(s.traces, m.ID)
			if m.InboundEventID != "" {
				delete(s.inbound, m.InboundEventID)
			}
			if m.IdempotencyKey != "" {
				delete(s.keys, key)
			}
		})
		inserted = append(inserted, stored)
	}
	if len(inserted) == 0 {
		return false, nil
	}
	if tracksAnswers(msgs) {
		t.trackAnswers(c, inserted)
	}
	latest, preview := newest(msgs)
	conv := c.conv
	conv.MessageCount += len(inserted)
	if !latest.Before(conv.LastActivityAt) {
		conv.LastMessage, conv.LastActivityAt = preview, latest
	}
	t.setConv(c, conv)
	return true, nil
}

// trackAnswers keeps answers in progress in step with inserted messages:
// a question whose reply is not among them starts one (unless one with its
// reply id exists), and a reply ends its own.
func (t *txn) trackAnswers(c *conversation, inserted []domain.Message) {
	s := t.s
	for _, q := range inserted {
		if q.ReplyID == "" || slices.ContainsFunc(inserted, func(r domain.Message) bool { return r.ID == q.ReplyID }) {
			continue
		}
		if _, ok := s.answers[q.ReplyID]; ok {
			continue
		}
		s.answers[q.ReplyID] = domain.AnswerInProgress{ReplyID: q.ReplyID, WorkspaceID: c.conv.WorkspaceID,
			ConversationID: c.conv.ID, QuestionID: q.ID, StartedAt: q.CreatedAt}
		id := q.ReplyID
		t.undo = append(t.undo, func() { delete(s.answers, id) })
	}
	for _, r := range inserted {
		t.endAnswer(r.ID)
	}
}

// endAnswer removes the answer in progress whose reply is replyID,
// reporting whether there was one.
func (t *txn) endAnswer(replyID string) bool {
	a, ok := t.s.answers[replyID]
	if !ok {
		return false
	}
	delete(t.s.answers, replyID)
	t.undo = append(t.undo, func() { t.s.answers[replyID] = a })
	return true
}

// tracksAnswers reports whether storing msgs starts or ends an answer in
// progress: a question whose reply is not among them, or a reply whose
// question is not.
func tracksAnswers(msgs []domain.Message) bool {
	for _, m := range msgs {
		if m.ReplyID != "" && !slices.ContainsFunc(msgs, func(r domain.Message) bool { return r.ID == m.ReplyID }) {
			return true
		}
		if m.Role == domain.RoleAssistant && !slices.ContainsFunc(msgs, func(q domain.Message) bool { return q.ReplyID == m.ID }) {
			return true
		}
	}
	return false
}

// newest returns the time and preview of the newest of msgs; a tie goes
// to the later one.
func newest(msgs []domain.Message) (time.Time, string) {
	var latest time.Time
	var preview string
	for i, m := range msgs {
		at := dbTime(m.CreatedAt)
		if i == 0 || !at.Before(latest) {
			latest, preview = at, domain.Preview(m.Content, lastMessageRunes)
		}
	}
	return latest, preview
}

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
	row.ContactName, row.ContactEmail = "", ""
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

// GetConversation returns domain.ErrNotFound unless the conversation
// belongs to the workspace.
func (s *Conversations) GetConversation(ctx context.Context, workspaceID, id string) (domain.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return domain.Conversation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, id)
	if c == nil {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return c.conv, nil
}

// GetConversationBySession returns the conversation with the id, whatever
// its workspace, or domain.ErrNotFound.
func (s *Conversations) GetConversationBySession(ctx context.Context, sessionID string) (domain.Conversation, error) {
	if err := ctx.Err(); err != nil {
		return domain.Conversation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[sessionID]
	if !ok {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return c.conv, nil
}

// ListConversations returns a page ordered by (last activity, id), newest
// first.
func (s *Conversations) ListConversations(ctx context.Context, workspaceID string, filter domain.ConversationFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	if err := ctx.Err(); err != nil {
		return domain.Page[domain.Conversation]{}, err
	}
	s.mu.Lock()
	var items []domain.Conversation
	for _, c := range s.convs {
		cv := c.conv
		if cv.WorkspaceID != workspaceID || (filter.AgentID != "" && cv.AgentID != filter.AgentID) ||
			(filter.Status != "" && cv.Status != filter.Status) {
			continue
		}
		if a := page.After; a != nil && !before(cv.LastActivityAt, cv.ID, dbTime(a.Time), a.ID) {
			continue
		}
		items = append(items, cv)
	}
	s.mu.Unlock()
	slices.SortFunc(items, func(a, b domain.Conversation) int {
		return -cmp.Or(a.LastActivityAt.Compare(b.LastActivityAt), cmp.Compare(a.ID, b.ID))
	})
	return makePage(items, pageLimit(page), func(c domain.Conversation) domain.Position {
		return domain.Position{Time: c.LastActivityAt, ID: c.ID}
	}), nil
}

// before reports whether (t, id) sorts before (at, atID).
func before(t time.Time, id string, at time.Time, atID string) bool {
	return t.Before(at) || (t.Equal(at) && id < atID)
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
func (s *Conversations) ChangeStatus(ctx context.Context, change ports.StatusChange) (domain.Conversation, bool, error) {
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

func (s *Conversations) change(tx *txn, c *conversation, change ports.StatusChange, from []domain.ConversationStatus) error {
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
	if !slices.Contains(from, conv.Status) || (change.MessageCount != nil && *change.MessageCount != conv.MessageCount) {
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
	if ct := change.Contact; ct != nil {
		if ct.Name != "" {
			conv.ContactName = ct.Name
		}
		if ct.Email != "" {
			conv.ContactEmail = ct.Email
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

// RecentMessages returns up to limit of the conversation's latest
// messages, oldest first; an unknown conversation has none.
func (s *Conversations) RecentMessages(ctx context.Context, workspaceID, conversationID string, limit int) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, conversationID)
	if c == nil {
		return []domain.Message{}, nil
	}
	return latest(c.messages, limit), nil
}

// latest copies up to limit of msgs' last ones (all of them when limit is
// negative, as an SQL LIMIT of NULL).
func latest(msgs []domain.Message, limit int) []domain.Message {
	if limit >= 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	out := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		out[i] = cloneMessage(m)
	}
	return out
}

// HandoffTranscript returns the conversation's latest messages and its
// message count, read together. Returns domain.ErrNotFound unless the
// conversation belongs to the workspace.
func (s *Conversations) HandoffTranscript(ctx context.Context, workspaceID, conversationID string, limit int) (ports.HandoffTranscript, error) {
	if err := ctx.Err(); err != nil {
		return ports.HandoffTranscript{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, conversationID)
	if c == nil {
		return ports.HandoffTranscript{}, domain.NotFound("conversation")
	}
	return ports.HandoffTranscript{Messages: latest(c.messages, limit), MessageCount: c.conv.MessageCount}, nil
}

// ListMessages returns a page of a conversation's messages in append
// order. Returns domain.ErrNotFound unless the conversation belongs to the
// workspace, and domain.ErrInvalidInput for a cursor that is not one of its
// messages.
func (s *Conversations) ListMessages(ctx context.Context, workspaceID, conversationID string, page domain.PageRequest) (domain.Page[domain.Message], error) {
	if err := ctx.Err(); err != nil {
		return domain.Page[domain.Message]{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, conversationID)
	if c == nil {
		return domain.Page[domain.Message]{}, domain.NotFound("conversation")
	}
	msgs := c.messages
	if page.After != nil {
		i := slices.IndexFunc(msgs, func(m domain.Message) bool { return m.ID == page.After.ID })
		if i < 0 {
			return domain.Page[domain.Message]{}, domain.InvalidField("cursor", "is not a position in this conversation")
		}
		msgs = msgs[i+1:]
	}
	limit := pageLimit(page)
	return makePage(latest(msgs[:min(len(msgs), limit+1)], -1), limit, func(m domain.Message) domain.Position {
		return domain.Position{Time: m.CreatedAt, ID: m.ID}
	}), nil
}

// MessagesFrom returns up to limit (at least one) of the conversation's
// messages in append order from messageID on. Returns domain.ErrNotFound
// unless the conversation belongs to the workspace and, when messageID is
// set, has that message.
func (s *Conversations) MessagesFrom(ctx context.Context, workspaceID, conversationID, messageID string, limit int) ([]domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.conversationIn(workspaceID, conversationID)
	if c == nil {
		if messageID != "" {
			return nil, domain.NotFound("message")
		}
		return nil, domain.NotFound("conversation")
	}
	msgs := c.messages
	if messageID != "" {
		i := slices.IndexFunc(msgs, func(m domain.Message) bool { return m.ID == messageID })
		if i < 0 {
			return nil, domain.NotFound("message")
		}
		msgs = msgs[i:]
	}
	return latest(msgs[:min(len(msgs), max(limit, 1))], -1), nil
}

// MessageTrace returns the retrieval trace stored with a message. Returns
// domain.ErrNotFound unless the message belongs to the conversation and
// workspace and has a trace.
func (s *Conversations) MessageTrace(ctx context.Context, workspaceID, conversationID, messageID string) (domain.RetrievalTrace, error) {
	if err := ctx.Err(); err != nil {
		return domain.RetrievalTrace{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ref, ok := s.messages[messageID]
	if !ok || ref.conv.conv.WorkspaceID != workspaceID || ref.conv.conv.ID != conversationID {
		return domain.RetrievalTrace{}, domain.NotFound("message")
	}
	t, ok := s.traces[messageID]
	if !ok {
		return domain.RetrievalTrace{}, domain.NotFound("retrieval trace")
	}
	// Traces stored before questions were kept searched the question as
	// asked, as the PostgreSQL store reads them.
	if t.Question == "" {
		t.Question = t.Query
	}
	t.Focus, t.FeatureNames, t.Missing = slices.Clone(t.Focus), slices.Clone(t.FeatureNames), slices.Clone(t.Missing)
	t.Candidates = append([]domain.TraceCandidate{}, t.Candidates...)
	return t, nil
}

// KeyedQuestion returns the workspace's question stored under key and its
// reply when stored. Returns domain.ErrNotFound when no question has the
// key.
func (s *Conversations) KeyedQuestion(ctx context.Context, workspaceID, key string) (domain.Message, *domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return domain.Message{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ref, ok := s.messages[s.keys[scopedKey{workspaceID, key}]]
	if !ok {
		return domain.Message{}, nil, domain.NotFound("question")
	}
	q := cloneMessage(ref.conv.messages[ref.index])
	var reply *domain.Message
	if r, ok := s.messages[q.ReplyID]; ok && q.ReplyID != "" && r.conv.conv.WorkspaceID == workspaceID {
		m := cloneMessage(r.conv.messages[r.index])
		reply = &m
	}
	return q, reply, nil
}

// AnswersStartedBefore returns answers in progress that started before t,
// oldest first, at most limit.
func (s *Conversations) AnswersStartedBefore(ctx context.Context, t time.Time, limit int) ([]domain.AnswerInProgress, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var out []domain.AnswerInProgress
	for _, a := range s.answers {
		if a.StartedAt.Before(dbTime(t)) {
			out = append(out, a)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b domain.AnswerInProgress) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ReplyID, b.ReplyID))
	})
	if len(out) > max(limit, 0) {
		out = out[:max(limit, 0)]
	}
	return out, nil
}

// CloseAnswer stores an interrupted answer's outcome as
// ports.InterruptedAnswers says.
func (s *Conversations) CloseAnswer(ctx context.Context, a domain.AnswerInProgress, reply domain.Message, deliveries ...domain.Delivery) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if reply.ID != a.ReplyID || reply.WorkspaceID != a.WorkspaceID || reply.ConversationID != a.ConversationID {
		return false, errors.New("memory: close answer: the reply is not the answer's")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx := &txn{s: s}
	if !tx.endAnswer(a.ReplyID) {
		return false, nil
	}
	if _, ok := s.messages[a.ReplyID]; ok {
		return false, nil // the reply came after all: the claim alone stays
	}
	err := func() error {
		c := s.conversationIn(a.WorkspaceID, a.ConversationID)
		if c == nil {
			return domain.NotFound("conversation")
		}
		created, err := tx.insert(c, []domain.Message{reply}, "")
		if err != nil {
			return err
		}
		if !created {
			return domain.ErrMessageExists
		}
		if ref, ok := s.messages[a.QuestionID]; ok && ref.conv.conv.WorkspaceID == a.WorkspaceID {
			q := &ref.conv.messages[ref.index]
			if q.IdempotencyKey != "" {
				prev := *q
				key := scopedKey{a.WorkspaceID, q.IdempotencyKey}
				delete(s.keys, key)
				q.IdempotencyKey, q.RequestHash = "", ""
				tx.undo = append(tx.undo, func() { *q = prev; s.keys[key] = prev.ID })
			}
		}
		return tx.deliver(deliveries)
	}()
	if err != nil {
		tx.rollback()
		return false, err
	}
	s.writes++
	return true, nil
}

// dbTime is a time as PostgreSQL keeps it: UTC, to the microsecond.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// storedMessage is m as a read gives it back: its time as stored, no
// trace, no feedback (set by the feedback store alone), no empty citation
// list.
func storedMessage(m domain.Message) domain.Message {
	m = cloneMessage(m)
	m.CreatedAt, m.Trace, m.Feedback = dbTime(m.CreatedAt), nil, nil
	if len(m.Citations) == 0 {
		m.Citations = nil
	}
	return m
}

// returned is what a write returns of the messages it stored: the same,
// with their times as stored.
func returned(msgs []domain.Message) []domain.Message {
	out := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		m.CreatedAt = dbTime(m.CreatedAt)
		out[i] = m
	}
	return out
}

// cloneMessage copies m's slices, so a caller never shares them with the
// store.
func cloneMessage(m domain.Message) domain.Message {
	m.Citations, m.TokenEnds = slices.Clone(m.Citations), slices.Clone(m.TokenEnds)
	return m
}

// pageLimit is the number of items a page request gets: the default when
// unset, never more than the maximum.
func pageLimit(req domain.PageRequest) int {
	switch {
	case req.Limit <= 0:
		return domain.DefaultPageLimit
	case req.Limit > domain.MaxPageLimit:
		return domain.MaxPageLimit
	default:
		return req.Limit
	}
}

// makePage cuts items, in page order, to a page of limit with its Next.
func makePage[T any](items []T, limit int, position func(T) domain.Position) domain.Page[T] {
	page := domain.Page[T]{Items: items, HasMore: len(items) > limit}
	if page.Items == nil {
		page.Items = []T{}
	}
	if page.HasMore {
		page.Items = items[:limit]
		next := position(page.Items[limit-1])
		page.Next = &next
	}
	return page
}
