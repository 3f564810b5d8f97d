package conversation

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/conciergehq/concierge/adapters/memory"
	"github.com/conciergehq/concierge/core/domain"
)

// store is the memory conversation store with the hooks the lifecycle's
// tests need: one that changes a conversation between a read and a write,
// as a concurrent request would, and one after a transcript is read. It
// counts the write attempts and records the changes that were applied.
type store struct {
	*memory.Conversations

	mu sync.Mutex
	// beforeWrite, when set, runs before each AppendMessage or
	// ChangeStatus decides (under no lock), with the write's number from 1.
	beforeWrite func(n int)
	writes      int
	// afterTranscript, when set, runs after each HandoffTranscript read.
	afterTranscript func()
	changes         []domain.StatusChange
}

func newStore() *store {
	return &store{Conversations: memory.NewConversations()}
}

func (s *store) conv(id string) domain.Conversation {
	c, _ := s.Conversation(id)
	return c
}

func (s *store) setStatus(id string, st domain.ConversationStatus) {
	c := s.conv(id)
	c.Status = st
	s.Put(c)
}

func (s *store) messages(id string) []domain.Message { return s.Messages(id) }

func (s *store) hook() {
	s.mu.Lock()
	s.writes++
	n, h := s.writes, s.beforeWrite
	s.mu.Unlock()
	if h != nil {
		h(n)
	}
}

func (s *store) AppendMessage(ctx context.Context, m domain.Message, while domain.ConversationStatus, deliveries ...domain.Delivery) (domain.Message, bool, error) {
	s.hook()
	return s.Conversations.AppendMessage(ctx, m, while, deliveries...)
}

func (s *store) ChangeStatus(ctx context.Context, change domain.StatusChange) (domain.Conversation, bool, error) {
	s.hook()
	c, changed, err := s.Conversations.ChangeStatus(ctx, change)
	if changed {
		s.mu.Lock()
		s.changes = append(s.changes, change)
		s.mu.Unlock()
	}
	return c, changed, err
}

func (s *store) HandoffTranscript(ctx context.Context, workspaceID, id string, limit int) (domain.HandoffTranscript, error) {
	tr, err := s.Conversations.HandoffTranscript(ctx, workspaceID, id, limit)
	s.mu.Lock()
	h := s.afterTranscript
	s.mu.Unlock()
	if err == nil && h != nil {
		h()
	}
	return tr, err
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
	w.store.AddAgent(w.agent)
	w.store.AddAgent(w.draft)
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
	w.store.Put(c)
	return c
}

func (w *world) question(c domain.Conversation, text string) domain.Message {
	return domain.Message{
		ID: domain.NewID(domain.PrefixMessage), WorkspaceID: c.WorkspaceID, ConversationID: c.ID,
		Role: domain.RoleUser, Content: text, CreatedAt: testNow, ReplyID: domain.NewID(domain.PrefixMessage),
	}
}
