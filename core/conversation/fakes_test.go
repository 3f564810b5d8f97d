package conversation

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// store is a minimal in-memory ConversationStore for the lifecycle's
// tests: conversations and their messages, the conditional writes
// (AppendMessage's while, ChangeStatus's From and MessageCount) and hooks
// that change a conversation between a read and a write, as a concurrent
// request would.
type store struct {
	ports.ConversationStore // the methods the lifecycle does not use panic

	mu    sync.Mutex
	convs map[string]domain.Conversation
	msgs  map[string][]domain.Message
	// beforeWrite, when set, runs before each AppendMessage or
	// ChangeStatus decides (under no lock), with the write's number from 1.
	beforeWrite func(n int)
	writes      int
	// afterTranscript, when set, runs after each HandoffTranscript read.
	afterTranscript func()
	changes         []domain.StatusChange
}

func newStore() *store {
	return &store{convs: map[string]domain.Conversation{}, msgs: map[string][]domain.Message{}}
}

func (s *store) put(c domain.Conversation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.convs[c.ID] = c
}

func (s *store) conv(id string) domain.Conversation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.convs[id]
}

func (s *store) setStatus(id string, st domain.ConversationStatus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.convs[id]
	c.Status = st
	s.convs[id] = c
}

func (s *store) messages(id string) []domain.Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs[id])
}

func (s *store) hook() {
	s.mu.Lock()
	s.writes++
	n, h := s.writes, s.beforeWrite
	s.mu.Unlock()
	if h != nil {
		h(n)
	}
}

func (s *store) appendLocked(m domain.Message) {
	s.msgs[m.ConversationID] = append(s.msgs[m.ConversationID], m)
	c := s.convs[m.ConversationID]
	c.MessageCount++
	s.convs[m.ConversationID] = c
}

func (s *store) inboundLocked(conversationID, eventID string) (domain.Message, bool) {
	if eventID == "" {
		return domain.Message{}, false
	}
	for _, m := range s.msgs[conversationID] {
		if m.InboundEventID == eventID {
			return m, true
		}
	}
	return domain.Message{}, false
}

func (s *store) CreateConversation(_ context.Context, conv *domain.Conversation, _ ...domain.Delivery) error {
	s.put(*conv)
	return nil
}

func (s *store) GetConversation(_ context.Context, workspaceID, id string) (domain.Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok || c.WorkspaceID != workspaceID {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return c, nil
}

func (s *store) GetConversationBySession(_ context.Context, id string) (domain.Conversation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok {
		return domain.Conversation{}, domain.NotFound("conversation")
	}
	return c, nil
}

func (s *store) AppendMessage(_ context.Context, m domain.Message, while domain.ConversationStatus, _ ...domain.Delivery) (domain.Message, bool, error) {
	s.hook()
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[m.ConversationID]
	if !ok || c.WorkspaceID != m.WorkspaceID {
		return domain.Message{}, false, domain.NotFound("conversation")
	}
	if stored, ok := s.inboundLocked(m.ConversationID, m.InboundEventID); ok {
		return stored, false, nil
	}
	if while != "" && c.Status != while {
		return domain.Message{}, false, domain.ErrStatusChanged
	}
	s.appendLocked(m)
	return m, true, nil
}

func (s *store) ChangeStatus(_ context.Context, change domain.StatusChange) (domain.Conversation, bool, error) {
	s.hook()
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[change.ConversationID]
	if !ok || c.WorkspaceID != change.WorkspaceID {
		return domain.Conversation{}, false, domain.NotFound("conversation")
	}
	if change.Message != nil {
		if _, ok := s.inboundLocked(c.ID, change.Message.InboundEventID); ok {
			return domain.Conversation{}, false, domain.ErrMessageExists
		}
	}
	from := change.From
	if len(from) == 0 {
		from = domain.StatusesFrom(change.To)
	}
	if !slices.Contains(from, c.Status) || (change.MessageCount != nil && *change.MessageCount != c.MessageCount) {
		return c, false, nil
	}
	c.Status = change.To
	s.convs[c.ID] = c
	if change.Message != nil && change.MessageFirst {
		s.appendLocked(*change.Message)
	}
	s.appendLocked(change.Notice)
	if change.Message != nil && !change.MessageFirst {
		s.appendLocked(*change.Message)
	}
	s.changes = append(s.changes, change)
	return s.convs[c.ID], true, nil
}

func (s *store) HandoffTranscript(_ context.Context, workspaceID, id string, limit int) (domain.HandoffTranscript, error) {
	s.mu.Lock()
	c, ok := s.convs[id]
	if !ok || c.WorkspaceID != workspaceID {
		s.mu.Unlock()
		return domain.HandoffTranscript{}, domain.NotFound("conversation")
	}
	msgs := s.msgs[id]
	tr := domain.HandoffTranscript{Messages: slices.Clone(msgs[max(0, len(msgs)-limit):]), MessageCount: c.MessageCount}
	h := s.afterTranscript
	s.mu.Unlock()
	if h != nil {
		h()
	}
	return tr, nil
}

func (s *store) ListMessages(_ context.Context, workspaceID, id string, page domain.PageRequest) (domain.Page[domain.Message], error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.convs[id]
	if !ok || c.WorkspaceID != workspaceID {
		return domain.Page[domain.Message]{}, domain.NotFound("conversation")
	}
	msgs := s.msgs[id]
	start := 0
	if page.After != nil {
		i := slices.IndexFunc(msgs, func(m domain.Message) bool { return m.ID == page.After.ID })
		if i < 0 {
			return domain.Page[domain.Message]{}, domain.InvalidField("after", "unknown")
		}
		start = i + 1
	}
	end := min(len(msgs), start+page.Limit)
	return domain.Page[domain.Message]{Items: slices.Clone(msgs[start:end]), HasMore: end < len(msgs)}, nil
}

type workspaces map[string]domain.Workspace

func (w workspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	if ws, ok := w[id]; ok {
		return ws, nil
	}
	return domain.Workspace{}, domain.NotFound("workspace")
}

type agents map[string]domain.Agent

func (a agents) GetAgentByID(_ context.Context, workspaceID, id string) (domain.Agent, error) {
	if ag, ok := a[id]; ok && ag.WorkspaceID == workspaceID {
		return ag, nil
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func (a agents) GetAgentBySlug(_ context.Context, workspaceID, slug string) (domain.Agent, error) {
	for _, ag := range a {
		if ag.WorkspaceID == workspaceID && ag.Slug == slug {
			return ag, nil
		}
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func (a agents) FirstAgent(_ context.Context, workspaceID string) (domain.Agent, error) {
	var first *domain.Agent
	for _, ag := range a {
		if ag.WorkspaceID == workspaceID && (first == nil || ag.Seq < first.Seq) {
			first = &ag
		}
	}
	if first == nil {
		return domain.Agent{}, domain.NotFound("agent")
	}
	return *first, nil
}

// queue records the deliveries scheduled.
type queue struct {
	mu  sync.Mutex
	ids []string
}

func (q *queue) EnqueueDelivery(_ context.Context, d domain.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.ids = append(q.ids, d.ID)
	return nil
}

func (q *queue) scheduled() []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.ids)
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

var testNow = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

// world is a workspace with a published and an unpublished agent, and a
// lifecycle over the fakes.
type world struct {
	ws          domain.Workspace
	other       domain.Workspace
	agent       domain.Agent
	draft       domain.Agent
	store       *store
	queue       *queue
	bus         *flakyBus
	lifecycle   *Lifecycle
	workspaces  workspaces
	agentsByID  agents
	nextSession int
}

func newWorld() *world {
	w := &world{
		// Enterprise: handoff, outbound events and identity verification.
		ws:    domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Plan: domain.PlanEnterprise, WebhookSecret: "whsec_1", EventsURL: "https://events.example.com/hook", HelpdeskURL: "https://helpdesk.example.com/hook"},
		other: domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Plan: domain.PlanEnterprise, WebhookSecret: "whsec_2"},
		store: newStore(), queue: &queue{}, bus: &flakyBus{},
	}
	w.agent = domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: w.ws.ID, Slug: "support", Seq: 1, Config: domain.AgentConfig{Published: true}}
	w.draft = domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: w.ws.ID, Slug: "draft", Seq: 2}
	w.workspaces = workspaces{w.ws.ID: w.ws, w.other.ID: w.other}
	w.agentsByID = agents{w.agent.ID: w.agent, w.draft.ID: w.draft}
	w.lifecycle = New(Deps{
		Conversations: w.store, Workspaces: w.workspaces, Agents: w.agentsByID, Deliveries: w.queue, Bus: w.bus,
		Clock: fixedClock{testNow}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	return w
}

// session stores a conversation of agent in status, verified for userID
// when not empty.
func (w *world) session(agent domain.Agent, status domain.ConversationStatus, userID string) domain.Conversation {
	c := domain.NewConversation(agent.WorkspaceID, &agent, userID, testNow)
	c.Status = status
	w.store.put(c)
	return c
}

func (w *world) question(c domain.Conversation, text string) domain.Message {
	return domain.Message{
		ID: domain.NewID(domain.PrefixMessage), WorkspaceID: c.WorkspaceID, ConversationID: c.ID,
		Role: domain.RoleUser, Content: text, CreatedAt: testNow, ReplyID: domain.NewID(domain.PrefixMessage),
	}
}
