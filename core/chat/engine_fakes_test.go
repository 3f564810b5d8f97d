package chat

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"github.com/conciergehq/concierge/adapters/memory"
	"io"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Hand-written fakes of the ports the answer engine uses, in the style of
// core/inbound: each implements what the engine calls and embeds its port, so
// a method the engine starts using unnoticed panics instead of passing
// silently. The stores honour context cancellation like the real PostgreSQL
// adapters do, which is what makes the cancellation tests meaningful.

var (
	_ ports.WorkspaceStore    = (*memWorkspaces)(nil)
	_ ports.AgentStore        = (*memAgents)(nil)
	_ ports.ConversationStore = (*memConversations)(nil)
	_ ports.Retriever         = (*stubRetriever)(nil)
	_ ports.LLM               = (*scriptedLLM)(nil)
	_ ports.EventBus          = (*recordingBus)(nil)
	_ ports.DeliveryQueue     = (*recordingQueue)(nil)
	_ ports.Clock             = fixedClock{}
)

type memWorkspaces struct {
	ports.WorkspaceStore
	mu   sync.Mutex
	byID map[string]domain.Workspace
}

func (s *memWorkspaces) GetWorkspace(ctx context.Context, id string) (domain.Workspace, error) {
	if err := ctx.Err(); err != nil {
		return domain.Workspace{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ws, ok := s.byID[id]
	if !ok {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	return ws, nil
}

type memAgents struct {
	ports.AgentStore
	mu     sync.Mutex
	agents []domain.Agent
}

func (s *memAgents) find(match func(domain.Agent) bool) (domain.Agent, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, a := range s.agents {
		if match(a) {
			return a, nil
		}
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func (s *memAgents) GetAgentBySlug(ctx context.Context, workspaceID, slug string) (domain.Agent, error) {
	if err := ctx.Err(); err != nil {
		return domain.Agent{}, err
	}
	return s.find(func(a domain.Agent) bool { return a.WorkspaceID == workspaceID && a.Slug == slug })
}

func (s *memAgents) GetAgentByID(ctx context.Context, workspaceID, id string) (domain.Agent, error) {
	if err := ctx.Err(); err != nil {
		return domain.Agent{}, err
	}
	return s.find(func(a domain.Agent) bool { return a.WorkspaceID == workspaceID && a.ID == id })
}

func (s *memAgents) FirstAgent(ctx context.Context, workspaceID string) (domain.Agent, error) {
	if err := ctx.Err(); err != nil {
		return domain.Agent{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var first *domain.Agent
	for i, a := range s.agents {
		if a.WorkspaceID == workspaceID && (first == nil || a.Seq < first.Seq) {
			first = &s.agents[i]
		}
	}
	if first == nil {
		return domain.Agent{}, domain.NotFound("agent")
	}
	return *first, nil
}

// memConversations is the memory store with the views these tests use.
type memConversations struct{ *memory.Conversations }

func (s *memConversations) written() []domain.Delivery { return s.Deliveries() }

// all returns every stored message: in append order within a
// conversation, in no order across conversations.
func (s *memConversations) all() []domain.Message { return s.Messages("") }
func (s *memConversations) count() int            { return s.Len() }
func (s *memConversations) conv(id string) domain.Conversation {
	c, _ := s.Conversation(id)
	return c
}

// notice returns the stored SYSTEM notice with the id, or nil.
func (r *rig) notice(id string) *domain.Message {
	for _, m := range r.convs.all() {
		if m.ID == id && m.Role == domain.RoleSystem {
			return &m
		}
	}
	return nil
}

// stubRetriever finds chunks by agent, and by agent and query text for the
// queries a test cares about. It records every query.
type stubRetriever struct {
	mu      sync.Mutex
	byAgent map[string][]domain.Chunk // what any query of the agent finds
	byQuery map[string][]domain.Chunk // agentID + "|" + text: overrides byAgent
	failOn  map[string]error          // query text: the error returned
	before  func(ctx context.Context) // runs before each query
	// judged, when not nil, is the answerability the trace reports, with
	// a verdict, as a reranking retriever's trace does.
	judged  *float64
	queries []ports.RetrievalQuery
}

func (r *stubRetriever) Retrieve(ctx context.Context, q ports.RetrievalQuery) ([]domain.Chunk, error) {
	if r.before != nil {
		r.before(ctx)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.queries = append(r.queries, q)
	if q.Trace != nil {
		// As the real retrievers do, it writes the trace whole.
		query := q.Text
		if q.Context != "" {
			query += "\n" + q.Context
		}
		*q.Trace = domain.RetrievalTrace{Query: query, Method: "hybrid", TopK: q.Limit, Threshold: q.Threshold}
		if r.judged != nil {
			q.Trace.Answerability, q.Trace.Verdict = *r.judged, domain.VerdictAnswer
		}
	}
	if err := r.failOn[q.Text]; err != nil {
		return nil, err
	}
	found, ok := r.byQuery[q.AgentID+"|"+q.Text]
	if !ok {
		found = r.byAgent[q.AgentID]
	}
	if q.Limit > 0 && len(found) > q.Limit {
		found = found[:q.Limit]
	}
	return slices.Clone(found), nil
}

func (r *stubRetriever) calls() []ports.RetrievalQuery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.queries)
}

// llmRound is what the scripted model does in one Complete call.
type llmRound struct {
	deltas    []string
	toolCalls []domain.ToolCall
	cited     []string
	// declined is the model saying the passages do not answer, after deltas.
	declined bool
	usage    domain.Usage
	// err is returned after the deltas were delivered.
	err error
	// afterDelta runs after onDelta accepted delta i.
	afterDelta func(i int)
}

// scriptedLLM replays one llmRound per call and records the requests. With
// honourCtx it stops between deltas once its context is done, as the HTTP
// adapters do when their request context is cancelled.
type scriptedLLM struct {
	name      string
	honourCtx bool

	mu       sync.Mutex
	rounds   []llmRound
	requests []ports.CompletionRequest
	stops    []error // what onDelta returned when it stopped a round
}

func (m *scriptedLLM) script(rounds ...llmRound) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.rounds = rounds
}

func (m *scriptedLLM) Complete(ctx context.Context, req ports.CompletionRequest, onDelta func(string) error) (ports.Completion, error) {
	m.mu.Lock()
	n := len(m.requests)
	m.requests = append(m.requests, cloneRequest(req))
	var r llmRound
	scripted := n < len(m.rounds)
	if scripted {
		r = m.rounds[n]
	}
	m.mu.Unlock()
	if !scripted {
		return ports.Completion{}, fmt.Errorf("%s: unscripted call %d: %w", m.name, n+1, domain.ErrUnavailable)
	}
	var content strings.Builder
	for i, d := range r.deltas {
		if m.honourCtx && ctx.Err() != nil {
			return ports.Completion{Content: content.String(), Usage: r.usage, Model: m.name}, ctx.Err()
		}
		content.WriteString(d)
		if err := onDelta(d); err != nil {
			m.mu.Lock()
			m.stops = append(m.stops, err)
			m.mu.Unlock()
			return ports.Completion{Content: content.String(), Usage: r.usage, Model: m.name}, err
		}
		if r.afterDelta != nil {
			r.afterDelta(i)
		}
	}
	if m.honourCtx && ctx.Err() != nil {
		return ports.Completion{Content: content.String(), Usage: r.usage, Model: m.name}, ctx.Err()
	}
	if r.err != nil {
		return ports.Completion{Content: content.String(), Usage: r.usage, Model: m.name}, r.err
	}
	return ports.Completion{Content: content.String(), ToolCalls: r.toolCalls, Cited: r.cited, Declined: r.declined, Usage: r.usage, Model: m.name}, nil
}

func (m *scriptedLLM) calls() []ports.CompletionRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.requests)
}

func (m *scriptedLLM) stopped() []error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.stops)
}

// cloneRequest copies what the engine may append to after the call.
func cloneRequest(req ports.CompletionRequest) ports.CompletionRequest {
	req.Messages = slices.Clone(req.Messages)
	for i := range req.Messages {
		req.Messages[i].ToolCalls = slices.Clone(req.Messages[i].ToolCalls)
	}
	req.Knowledge = slices.Clone(req.Knowledge)
	req.Tools = slices.Clone(req.Tools)
	return req
}

// recordingBus records published events. failFrom makes the n-th and later
// publishes fail; hold, when set, makes Publish block until it is closed or
// the context given to Publish is done.
type recordingBus struct {
	mu       sync.Mutex
	events   []domain.SessionEvent
	calls    int
	failFrom int
	hold     chan struct{}
}

func (b *recordingBus) Publish(ctx context.Context, events ...domain.SessionEvent) error {
	if b.hold != nil {
		select {
		case <-b.hold:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	// Counted per event, so failFrom means the same whatever the batching.
	for _, ev := range events {
		b.calls++
		if b.failFrom > 0 && b.calls >= b.failFrom {
			return domain.Unavailable("redis", fmt.Errorf("connection refused"))
		}
		b.events = append(b.events, ev)
	}
	return nil
}

func (b *recordingBus) all() []domain.SessionEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.events)
}

// recordingQueue records enqueued deliveries; err, when set, fails them.
type recordingQueue struct {
	mu       sync.Mutex
	enqueued []domain.Delivery
	err      error
}

func (q *recordingQueue) EnqueueDelivery(_ context.Context, d domain.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.enqueued = append(q.enqueued, d)
	return nil
}

func (q *recordingQueue) all() []domain.Delivery {
	q.mu.Lock()
	defer q.mu.Unlock()
	return slices.Clone(q.enqueued)
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// recorder is an Emit that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	events []domain.SessionEvent
}

func (r *recorder) emit(ev domain.SessionEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
}

func (r *recorder) all() []domain.SessionEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// Fixture data.
const (
	// testPrompt is long enough for the output filter's leak check.
	testPrompt = "You help customers of Lumen Lamps, a small workshop in Lisbon that sells handmade ceramic desk lamps. " +
		"Be warm and brief. Internal note: never offer discounts above fifteen percent, and send every warranty claim " +
		"older than two years to Marta in the workshop."
	testFallback = "Sorry, I can't help with that one. Would you like to talk to someone from our team?"
	leakText     = "I can't share my instructions, but I'm happy to help with your question."
)

var (
	chunkRefund = domain.Chunk{ID: "chk_refund_1", SourceID: "src_refunds", SourceType: domain.SourceText, DocumentName: "Refund policy",
		URL: "https://lumen.example/refunds", Text: "Refunds are accepted within 30 days of delivery.", Score: 0.91}
	chunkRefund2 = domain.Chunk{ID: "chk_refund_2", SourceID: "src_refunds", SourceType: domain.SourceText, DocumentName: "Refund policy",
		Text: "Return shipping is paid by the customer unless the lamp arrived broken.", Score: 0.72}
	chunkShipping = domain.Chunk{ID: "chk_ship_1", SourceID: "src_shipping", SourceType: domain.SourceQA, DocumentName: "How long does shipping take?",
		Question: "How long does shipping take?", Text: "Shipping   takes\n3 to 5 working days in Europe. " + strings.Repeat("Tracking is emailed on dispatch. ", 12), Score: 0.55}
	chunkWarranty = domain.Chunk{ID: "chk_warranty_1", SourceID: "src_warranty", SourceType: domain.SourceText, DocumentName: "Warranty",
		Text: "Every lamp has a two year warranty on the electrics.", Score: 0.8}
)

// rig is one engine wired to fakes: one workspace per plan, each with a
// published agent "support" (the first) and an unpublished agent "draft".
type rig struct {
	svc       *Service
	workspace *memWorkspaces
	agents    *memAgents
	convs     *memConversations
	retriever *stubRetriever
	local     *scriptedLLM
	openai    *scriptedLLM
	bus       *recordingBus
	queue     *recordingQueue
	clock     fixedClock
	limits    Limits
	busMark   int // bus events published before the last ask
	observed  *recordingObserver

	ws    map[domain.Plan]*domain.Workspace
	agent map[domain.Plan]domain.Agent
	draft map[domain.Plan]domain.Agent
}

func newRig(t *testing.T, limits Limits, tweak ...func(*domain.Agent)) *rig {
	t.Helper()
	r := &rig{
		workspace: &memWorkspaces{byID: map[string]domain.Workspace{}},
		agents:    &memAgents{},
		retriever: &stubRetriever{byAgent: map[string][]domain.Chunk{}, byQuery: map[string][]domain.Chunk{}, failOn: map[string]error{}},
		local:     &scriptedLLM{name: "local"},
		openai:    &scriptedLLM{name: "openai"},
		bus:       &recordingBus{},
		queue:     &recordingQueue{},
		clock:     fixedClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)},
		ws:        map[domain.Plan]*domain.Workspace{},
		agent:     map[domain.Plan]domain.Agent{},
		draft:     map[domain.Plan]domain.Agent{},
	}
	r.convs = &memConversations{memory.NewConversations()}
	r.observed = &recordingObserver{}
	for _, plan := range domain.Plans {
		ws := &domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Name: plan.Title() + " Co", Plan: plan,
			WebhookSecret: domain.NewSecret(domain.PrefixWebhookSecret)}
		r.workspace.byID[ws.ID] = *ws
		r.ws[plan] = ws
		a := domain.Agent{
			ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "support", Name: "Ada", Seq: 1,
			Config: domain.AgentConfig{SystemPrompt: testPrompt, FallbackMessage: testFallback, Published: true,
				BlockedTopics: []string{"bet", "sports betting"}},
		}
		for _, f := range tweak {
			f(&a)
		}
		d := domain.Agent{
			ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "draft", Name: "Draft", Seq: 2,
			Config: domain.AgentConfig{SystemPrompt: "Draft agent.", FallbackMessage: testFallback},
		}
		r.agents.agents = append(r.agents.agents, a, d)
		r.convs.AddAgent(a)
		r.convs.AddAgent(d)
		r.agent[plan], r.draft[plan] = a, d
		r.retriever.byAgent[a.ID] = []domain.Chunk{chunkRefund, chunkRefund2, chunkShipping}
		r.retriever.byAgent[d.ID] = []domain.Chunk{chunkWarranty}
	}
	r.limits = limits
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	lifecycle := conversation.New(conversation.Deps{
		Conversations: r.convs, Workspaces: r.workspace, Agents: r.agents, Deliveries: r.queue, Bus: r.bus, Clock: r.clock, Log: log,
	})
	svc, err := NewService(Deps{
		Workspaces: r.workspace, Agents: r.agents, Conversations: r.convs, Retriever: r.retriever,
		Models: map[string]ports.LLM{"local": r.local, "openai": r.openai}, DefaultModel: "local",
		Lifecycle: lifecycle, Clock: r.clock, Log: log, Observer: r.observed,
	}, limits)
	if err != nil {
		t.Fatal(err)
	}
	r.svc = svc
	return r
}

// session stores a conversation of plan's support agent in the given state.
func (r *rig) session(plan domain.Plan, status domain.ConversationStatus) string {
	a := r.agent[plan]
	c := domain.NewConversation(a.WorkspaceID, &a, "", r.clock.Now())
	c.Status = status
	r.convs.Put(c)
	return c.ID
}

// signedIdentity returns X-Service-Identity and X-Service-Signature values
// for userID, signed with the workspace's webhook secret.
func signedIdentity(ws *domain.Workspace, userID string) (identity, signature string) {
	identity = base64.RawURLEncoding.EncodeToString([]byte(`{"userId":"` + userID + `"}`))
	mac := hmac.New(sha256.New, []byte(ws.WebhookSecret))
	mac.Write([]byte(identity))
	return identity, hex.EncodeToString(mac.Sum(nil))
}

// ask runs Answer with a recording Emit.
func (r *rig) ask(t *testing.T, req Request) (domain.Answer, []domain.SessionEvent, error) {
	t.Helper()
	return r.askCtx(t, t.Context(), req)
}

func (r *rig) askCtx(t *testing.T, ctx context.Context, req Request) (domain.Answer, []domain.SessionEvent, error) {
	t.Helper()
	rec := &recorder{}
	r.busMark = len(r.bus.all())
	ans, err := answerTurn(ctx, r.svc, req, rec.emit)
	return ans, rec.all(), err
}

// askWhole asks as a caller that waits for the whole answer (no Emit, as
// the JSON endpoints do) and returns what reached the bus.
func (r *rig) askWhole(t *testing.T, req Request) (domain.Answer, []domain.SessionEvent, error) {
	t.Helper()
	r.busMark = len(r.bus.all())
	ans, err := answerTurn(t.Context(), r.svc, req, nil)
	return ans, r.bus.all()[r.busMark:], err
}

// askAs asks as a streaming caller (ask) or as one that waits (askWhole).
func (r *rig) askAs(t *testing.T, streaming bool, req Request) (domain.Answer, []domain.SessionEvent, error) {
	t.Helper()
	if streaming {
		return r.ask(t, req)
	}
	return r.askWhole(t, req)
}

// messagesOf returns the stored messages of a conversation.
func (r *rig) messagesOf(convID string) []domain.Message {
	var out []domain.Message
	for _, m := range r.convs.all() {
		if m.ConversationID == convID {
			out = append(out, m)
		}
	}
	return out
}

// words splits text the way models stream it: each word with the space after it.
func words(text string) []string {
	var out []string
	start := 0
	for i, r := range text {
		if r == ' ' && i+1 < len(text) && text[i+1] != ' ' {
			out = append(out, text[start:i+1])
			start = i + 1
		}
	}
	return append(out, text[start:])
}

// runeChunks splits text into pieces of n runes.
func runeChunks(text string, n int) []string {
	var out []string
	r := []rune(text)
	for len(r) > 0 {
		k := min(n, len(r))
		out = append(out, string(r[:k]))
		r = r[k:]
	}
	return out
}

func tokenTexts(events []domain.SessionEvent) []string {
	var out []string
	for _, ev := range events {
		if ev.Type == domain.EventToken {
			out = append(out, ev.Content)
		}
	}
	return out
}

// promptRun returns a run of at least n runes of prompt that occurs in text
// (case-insensitively), or "".
func promptRun(text, prompt string, n int) string {
	lt, p := strings.ToLower(text), []rune(strings.ToLower(prompt))
	for i := 0; i+n <= len(p); i++ {
		if w := string(p[i : i+n]); strings.Contains(lt, w) {
			return w
		}
	}
	return ""
}

// checkStream asserts the invariants of a finished answer's events: the USER
// message first with seq 1, then the reply's tokens numbered 1..n, then done
// numbered n+1; tokens are valid UTF-8 and concatenate to the stored reply;
// the bus got exactly what Emit got (since the last ask), in the same order.
func checkStream(t *testing.T, r *rig, events []domain.SessionEvent, ans domain.Answer) {
	t.Helper()
	if len(events) < 2 {
		t.Fatalf("got %d events, want at least the USER message and done", len(events))
	}
	first := events[0]
	if first.Type != domain.EventMessage || first.Message == nil || first.Message.Role != domain.RoleUser ||
		first.Seq != 1 || first.MessageID != ans.UserMessage.ID || first.SessionID != ans.SessionID {
		t.Errorf("first event = %+v, want the USER message %s with seq 1", first, ans.UserMessage.ID)
	}
	last := events[len(events)-1]
	if last.Type != domain.EventDone || last.Answer == nil {
		t.Fatalf("last event = %+v, want done with the answer", last)
	}
	var text strings.Builder
	seq := 0
	for i, ev := range events[1 : len(events)-1] {
		if ev.Type == domain.EventStatus {
			// A state change (RESOLVED -> AI after the USER message, or a
			// handoff tool within the answer) is the event of its stored
			// SYSTEM notice, with that notice's own id.
			if n := r.notice(ev.MessageID); n == nil || n.Status != ev.Status || ev.Seq != 1 || ev.SessionID != ans.SessionID {
				t.Errorf("status event %+v is not the event of a stored notice", ev)
			}
			continue
		}
		if ev.Type != domain.EventToken {
			t.Errorf("event %d has type %q, want only tokens and status changes between the USER message and done", i+1, ev.Type)
			continue
		}
		seq++
		if ev.Seq != seq || ev.MessageID != ans.Reply.ID || ev.SessionID != ans.SessionID {
			t.Errorf("token %d: seq %d message %s session %s, want seq %d message %s session %s",
				seq, ev.Seq, ev.MessageID, ev.SessionID, seq, ans.Reply.ID, ans.SessionID)
		}
		if ev.Content == "" || !utf8.ValidString(ev.Content) {
			t.Errorf("token %d content %q is empty or not valid UTF-8", seq, ev.Content)
		}
		text.WriteString(ev.Content)
	}
	if last.Seq != seq+1 || last.MessageID != ans.Reply.ID {
		t.Errorf("done: seq %d message %s, want seq %d message %s (last of the answer)", last.Seq, last.MessageID, seq+1, ans.Reply.ID)
	}
	if got := text.String(); got != last.Answer.Reply.Content || got != ans.Reply.Content {
		t.Errorf("tokens concatenate to %q; done.Reply.Content = %q; returned reply = %q", got, last.Answer.Reply.Content, ans.Reply.Content)
	}
	if !reflect.DeepEqual(*last.Answer, ans) {
		t.Errorf("done carries %+v, Answer returned %+v", *last.Answer, ans)
	}
	if bus := r.bus.all()[r.busMark:]; r.bus.failFrom == 0 && !reflect.DeepEqual(bus, events) {
		t.Errorf("bus got %d events, Emit got %d, or in another order:\nbus:  %s\nemit: %s", len(bus), len(events), describe(bus), describe(events))
	}
}

func describe(events []domain.SessionEvent) string {
	var b strings.Builder
	for _, ev := range events {
		fmt.Fprintf(&b, "[%s %d %q] ", ev.Type, ev.Seq, ev.Content)
	}
	return b.String()
}

// observation is one ports.ChatObserver.Answered call.
type observation struct {
	stream            bool
	firstToken, total time.Duration
	fallback          domain.FallbackReason
}

// recordingObserver records what the engine reports of its answers.
type recordingObserver struct {
	mu  sync.Mutex
	got []observation
}

func (o *recordingObserver) Answered(_ context.Context, stream bool, firstToken, total time.Duration, fallback domain.FallbackReason) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, observation{stream, firstToken, total, fallback})
}

func (o *recordingObserver) all() []observation {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]observation(nil), o.got...)
}
