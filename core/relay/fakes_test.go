package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/memory"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// world is a conversation's outside world as the relay sees it: the store
// holding the conversation and its messages, the session's log and the
// feed's subscriptions. publish does what the event bus does (log, then
// every subscriber).
type world struct {
	t  *testing.T
	mu sync.Mutex

	ws    domain.Workspace
	conv  domain.Conversation
	agent domain.Agent

	convs   *memory.Conversations
	log     []*domain.LiveEvent
	logSeq  int
	subs    []*fakeSub
	buffer  int
	subErr  error
	closedN int
	// beforeRead, when set, runs once before the next log read: what is
	// published between a subscription and the read reaches both.
	beforeRead func()
	// transcriptReads counts MessagesFrom calls (the world is the
	// relay's Transcript: it counts, then reads the store).
	transcriptReads int
	// failReads fails that many of the next log reads with ErrUnavailable,
	// as Redis does while it restarts; logReads counts the reads.
	failReads int
	logReads  int
	clock     *fakeClock
	// keepAlive is the streams' keep-alive period.
	keepAlive time.Duration
}

func (w *world) reads() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.transcriptReads
}

// failLogReads makes the next n log reads fail.
func (w *world) failLogReads(n int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.failReads = n
}

func (w *world) logReadCount() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.logReads
}

func (w *world) readHook() {
	w.mu.Lock()
	hook := w.beforeRead
	w.beforeRead = nil
	w.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func newWorld(t *testing.T) *world {
	ws := domain.Workspace{ID: "ws_1", Plan: domain.PlanStandard, WebhookSecret: "whsec_test"}
	agent := domain.Agent{ID: "agt_1", WorkspaceID: ws.ID, Slug: "support", Config: domain.AgentConfig{Published: true}}
	conv := domain.Conversation{ID: domain.NewID(domain.PrefixSession), WorkspaceID: ws.ID, AgentID: agent.ID, AgentSlug: agent.Slug, Status: domain.StatusAI}
	convs := memory.NewConversations()
	convs.Put(conv)
	return &world{t: t, ws: ws, conv: conv, agent: agent, convs: convs, buffer: 64,
		clock: &fakeClock{now: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}, keepAlive: time.Hour}
}

func (w *world) service() *Service {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	return NewService(Deps{
		Feed: w, Recent: w, Transcript: w, Conversations: w.convs,
		Lifecycle: conversation.New(conversation.Deps{Conversations: w.convs, Workspaces: &fakeWorkspaces{w: w}, Agents: &fakeAgents{w: w}, Clock: w.clock, Log: log}),
		Clock:     w.clock, Log: log,
	}, Options{KeepAlive: w.keepAlive, PageSize: 3, OutageLimit: 30 * time.Second})
}

// store appends a message to the conversation, as the answer engine
// commits it, and returns it as stored.
func (w *world) store(m domain.Message) domain.Message {
	m.WorkspaceID, m.ConversationID = w.ws.ID, w.conv.ID
	stored, _, err := w.convs.AppendMessage(context.Background(), m, "")
	if err != nil {
		panic("storing a message: " + err.Error())
	}
	return stored
}

// publish logs and relays events, as the bus does.
func (w *world) publish(events ...domain.SessionEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range events {
		w.logSeq++
		live := &domain.LiveEvent{SessionEvent: ev, LogID: strconv.Itoa(w.logSeq) + "-0"}
		w.log = append(w.log, live)
		for _, s := range w.subs {
			s.events <- live
		}
	}
}

// publishLogOnly logs events no subscriber receives: published while the
// feed's connection was down.
func (w *world) publishLogOnly(events ...domain.SessionEvent) {
	subs := w.subs
	w.subs = nil
	w.publish(events...)
	w.subs = subs
}

// relayLate hands logged events to the subscribers again, as the pod's
// feed does with events Redis sent it just before a follower joined a
// channel the pod already followed: older than the follower's position.
func (w *world) relayLate(events ...*domain.LiveEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, ev := range events {
		for _, s := range w.subs {
			s.events <- ev
		}
	}
}

// logged returns the log's events.
func (w *world) logged() []*domain.LiveEvent {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.log)
}

// Newer compares the log's ids ("<n>-0") as Redis orders stream ids.
func (w *world) Newer(a, b string) bool {
	if b == "" {
		return true
	}
	na, _ := strconv.Atoi(strings.TrimSuffix(a, "-0"))
	nb, _ := strconv.Atoi(strings.TrimSuffix(b, "-0"))
	return na > nb
}

// loseLog empties the log, as a Redis restart without persistence does.
func (w *world) loseLog() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.log = nil
}

// gap tells every subscriber the feed reconnected.
func (w *world) gap() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.subs {
		s.events <- &domain.LiveEvent{Gap: true}
	}
}

func (w *world) Subscribe(_ context.Context, sessionID string) (ports.Subscription, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.subErr != nil {
		return nil, w.subErr
	}
	if sessionID != w.conv.ID {
		w.t.Fatalf("subscribed to %s", sessionID)
	}
	s := &fakeSub{w: w, events: make(chan *domain.LiveEvent, w.buffer), done: make(chan struct{})}
	w.subs = append(w.subs, s)
	return s, nil
}

func (w *world) open() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.subs)
}

func (w *world) Tail(context.Context, string) (string, error) {
	w.readHook()
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.log) == 0 {
		return "", nil
	}
	return w.log[len(w.log)-1].LogID, nil
}

func (w *world) Since(_ context.Context, _ string, logID string) ([]*domain.LiveEvent, bool, error) {
	w.readHook()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.logReads++
	if w.failReads > 0 {
		w.failReads--
		return nil, false, domain.Unavailable("redis log read", errors.New("connection refused"))
	}
	if logID == "" {
		return slices.Clone(w.log), true, nil
	}
	for i, ev := range w.log {
		if ev.LogID == logID {
			return slices.Clone(w.log[i+1:]), true, nil
		}
	}
	return slices.Clone(w.log), false, nil
}

func (w *world) After(_ context.Context, _ string, eventID string) ([]*domain.LiveEvent, string, error) {
	w.readHook()
	w.mu.Lock()
	defer w.mu.Unlock()
	for i, ev := range w.log {
		if ev.EventID() == eventID {
			return slices.Clone(w.log[i+1:]), ev.LogID, nil
		}
	}
	return slices.Clone(w.log), "", nil
}

func (w *world) MessagesFrom(ctx context.Context, workspaceID, conversationID, messageID string, limit int) ([]domain.Message, error) {
	w.mu.Lock()
	w.transcriptReads++
	w.mu.Unlock()
	return w.convs.MessagesFrom(ctx, workspaceID, conversationID, messageID, limit)
}

type fakeSub struct {
	w      *world
	events chan *domain.LiveEvent
	done   chan struct{}
	once   sync.Once
	err    error
}

func (s *fakeSub) Events() <-chan *domain.LiveEvent { return s.events }
func (s *fakeSub) Done() <-chan struct{}            { return s.done }
func (s *fakeSub) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}
func (s *fakeSub) Close() { s.end(nil) }
func (s *fakeSub) end(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
		s.w.mu.Lock()
		defer s.w.mu.Unlock()
		s.w.subs = slices.DeleteFunc(s.w.subs, func(o *fakeSub) bool { return o == s })
		s.w.closedN++
	})
}

type fakeWorkspaces struct {
	ports.WorkspaceStore
	w *world
}

func (f *fakeWorkspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	if id != f.w.ws.ID {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	return f.w.ws, nil
}

type fakeAgents struct {
	ports.AgentLookups
	w *world
}

func (f *fakeAgents) GetAgentByID(_ context.Context, workspaceID, id string) (domain.Agent, error) {
	if workspaceID != f.w.ws.ID || id != f.w.agent.ID {
		return domain.Agent{}, domain.NotFound("agent")
	}
	return f.w.agent, nil
}

// fakeClock is a clock tests move.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// sink records what a stream wrote, as "<id> <type> <content>" lines.
type sink struct {
	mu         sync.Mutex
	lines      []string
	events     []*domain.LiveEvent
	keepAlives int
	failAfter  int // fail the n-th and later sends; 0 never
	wrote      chan struct{}
}

func newSink() *sink { return &sink{wrote: make(chan struct{}, 1024)} }

func (s *sink) Send(ev *domain.LiveEvent) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failAfter > 0 && len(s.lines)+1 >= s.failAfter {
		return io.ErrClosedPipe
	}
	s.lines = append(s.lines, describe(ev))
	s.events = append(s.events, ev)
	s.wrote <- struct{}{}
	return nil
}

func (s *sink) KeepAlive() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keepAlives++
	return nil
}

func (s *sink) got() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.lines)
}

// waitFor waits until the sink holds n lines.
func (s *sink) waitFor(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		if got := s.got(); len(got) >= n {
			return got
		}
		select {
		case <-s.wrote:
		case <-deadline:
			t.Fatalf("sink has %d of %d events:\n%s", len(s.got()), n, strings.Join(s.got(), "\n"))
		}
	}
}

// nothingMore fails if the sink gets more than n lines within a moment:
// the events after the expected ones that must not come.
func (s *sink) nothingMore(t *testing.T, n int) {
	t.Helper()
	time.Sleep(20 * time.Millisecond)
	if got := s.got(); len(got) != n {
		t.Fatalf("extra events: %v", got)
	}
}

func describe(ev *domain.LiveEvent) string {
	id := ""
	if ev.MessageID != "" {
		id = fmt.Sprintf("%s:%d", ev.MessageID, ev.Seq)
	}
	switch ev.Type {
	case domain.EventToken:
		return id + " token " + ev.Content
	case domain.EventDone:
		return id + " done " + ev.Answer.Reply.Content
	case domain.EventMessage:
		return id + " message " + string(ev.Message.Role) + " " + ev.Message.Content
	case domain.EventStatus:
		return id + " status " + string(ev.Status)
	default:
		return id + " error " + ev.ErrorCode
	}
}

// answer is a reply as the engine produces it: its events and its stored
// copy (with token ends).
type answer struct {
	msg    domain.Message
	events []domain.SessionEvent
}

func newAnswer(w *world, id string, tokens ...string) answer {
	var content strings.Builder
	var ends []int
	var events []domain.SessionEvent
	for i, tok := range tokens {
		content.WriteString(tok)
		ends = append(ends, content.Len())
		events = append(events, domain.SessionEvent{Type: domain.EventToken, SessionID: w.conv.ID, MessageID: id, Seq: i + 1, Content: tok})
	}
	msg := domain.Message{ID: id, WorkspaceID: w.ws.ID, ConversationID: w.conv.ID, Role: domain.RoleAssistant, Content: content.String(), TokenEnds: ends}
	events = append(events, domain.SessionEvent{Type: domain.EventDone, SessionID: w.conv.ID, MessageID: id, Seq: len(tokens) + 1,
		Answer: &domain.Answer{SessionID: w.conv.ID, Reply: msg}})
	return answer{msg: msg, events: events}
}

// userMessage stores and returns the event of a USER (or other) message.
func (w *world) message(role domain.Role, id, content string) domain.SessionEvent {
	m := w.store(domain.Message{ID: id, Role: role, Content: content})
	return domain.MessageEvent(m)
}

func (w *world) notice(id string, status domain.ConversationStatus) domain.SessionEvent {
	m := w.store(domain.Message{ID: id, Role: domain.RoleSystem, Content: "status", Status: status})
	return domain.MessageEvent(m)
}

// msgID is a valid message id with a readable tag.
func msgID(tag string) string {
	id := "msg_" + strings.Repeat("0", 26-len(tag)) + tag
	if !domain.ValidID(domain.PrefixMessage, id) {
		panic("bad tag " + tag)
	}
	return id
}
