package handoff

import (
	"context"
	"errors"
	"github.com/conciergehq/concierge/adapters/memory"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Hand-written fakes of the ports the handoff use cases need; each embeds
// its port, so a method the use cases start calling unnoticed panics. The
// PostgreSQL store is tested against the real database in its own package
// and end to end in app/concierge.

type memWorkspaces struct {
	ports.WorkspaceStore
	byID map[string]domain.Workspace
}

func (s *memWorkspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	ws, ok := s.byID[id]
	if !ok {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	return ws, nil
}

type memAgents struct {
	ports.AgentLookups
	byID map[string]domain.Agent
}

func (s *memAgents) GetAgentByID(_ context.Context, workspaceID, id string) (domain.Agent, error) {
	a, ok := s.byID[id]
	if !ok || a.WorkspaceID != workspaceID {
		return domain.Agent{}, domain.NotFound("agent")
	}
	return a, nil
}

type memConversations struct{ *memory.Conversations }

func (s memConversations) of(id string) []domain.Message { return s.Messages(id) }
func (s memConversations) conv(id string) domain.Conversation {
	c, _ := s.Conversation(id)
	return c
}
func (s memConversations) written() []domain.Delivery { return s.Deliveries() }

type recordingBus struct {
	mu     sync.Mutex
	events []domain.SessionEvent
	err    error
}

func (b *recordingBus) Publish(_ context.Context, events ...domain.SessionEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	b.events = append(b.events, events...)
	return nil
}

func (b *recordingBus) types() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, e := range b.events {
		out = append(out, e.Type)
	}
	return out
}

type recordingQueue struct {
	mu  sync.Mutex
	ids []string
	err error
}

func (q *recordingQueue) EnqueueDelivery(_ context.Context, d domain.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.ids = append(q.ids, d.ID)
	return nil
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// rig is the service on fakes, with one workspace per plan, each with a
// published agent and an unpublished one.
type rig struct {
	svc       *Service
	convs     memConversations
	wss       *memWorkspaces
	bus       *recordingBus
	queue     *recordingQueue
	ws        map[domain.Plan]*domain.Workspace
	agent     map[domain.Plan]domain.Agent
	draft     map[domain.Plan]domain.Agent
	clockTime time.Time
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{
		convs:     memConversations{memory.NewConversations()},
		wss:       &memWorkspaces{byID: map[string]domain.Workspace{}},
		bus:       &recordingBus{},
		queue:     &recordingQueue{},
		ws:        map[domain.Plan]*domain.Workspace{},
		agent:     map[domain.Plan]domain.Agent{},
		draft:     map[domain.Plan]domain.Agent{},
		clockTime: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
	}
	agents := &memAgents{byID: map[string]domain.Agent{}}
	for _, plan := range domain.Plans {
		ws := &domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Plan: plan, WebhookSecret: domain.NewSecret(domain.PrefixWebhookSecret)}
		r.wss.byID[ws.ID] = *ws
		r.ws[plan] = ws
		a := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "support", Config: domain.AgentConfig{Published: true}}
		d := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "draft"}
		agents.byID[a.ID], agents.byID[d.ID] = a, d
		r.agent[plan], r.draft[plan] = a, d
	}
	lifecycle := conversation.New(conversation.Deps{
		Conversations: r.convs, Workspaces: r.wss, Agents: agents, Deliveries: r.queue, Bus: r.bus,
		Clock: fixedClock{r.clockTime}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	r.svc = NewService(Deps{Conversations: r.convs, Lifecycle: lifecycle, Clock: fixedClock{r.clockTime}}, 50)
	return r
}

// session stores a conversation of plan's agent in the given state, with a
// USER message.
func (r *rig) session(plan domain.Plan, status domain.ConversationStatus) string {
	return r.sessionOf(r.agent[plan], status)
}

func (r *rig) sessionOf(a domain.Agent, status domain.ConversationStatus) string {
	c := domain.NewConversation(a.WorkspaceID, &a, "", r.clockTime)
	c.Status = status
	r.convs.Put(c, domain.Message{
		ID: domain.NewID(domain.PrefixMessage), WorkspaceID: c.WorkspaceID, ConversationID: c.ID,
		Role: domain.RoleUser, Content: "My lamp flickers.", CreatedAt: r.clockTime,
	})
	return c.ID
}

func (r *rig) setEventsURL(plan domain.Plan, url string) {
	r.ws[plan].EventsURL = url
	r.wss.byID[r.ws[plan].ID] = *r.ws[plan]
}

func describe(ds []domain.Delivery) []string {
	var out []string
	for _, d := range ds {
		out = append(out, string(d.Target)+":"+d.Type)
	}
	return out
}

func TestRequestHandoff(t *testing.T) {
	tests := []struct {
		name      string
		plan      domain.Plan
		status    domain.ConversationStatus
		eventsURL string
		wantErr   error
		want      domain.ConversationStatus
		// wantDeliveries are target:type of what is written.
		wantDeliveries []string
	}{
		{name: "free", plan: domain.PlanFree, status: domain.StatusAI, wantErr: domain.ErrForbidden},
		{name: "hobby", plan: domain.PlanHobby, status: domain.StatusAI, wantErr: domain.ErrForbidden},
		{name: "standard from AI", plan: domain.PlanStandard, status: domain.StatusAI, want: domain.StatusHandoffRequested,
			wantDeliveries: []string{"helpdesk:handoff.requested"}},
		{name: "enterprise from RESOLVED with events", plan: domain.PlanEnterprise, status: domain.StatusResolved, eventsURL: "https://hooks.example/e",
			want: domain.StatusHandoffRequested, wantDeliveries: []string{"helpdesk:handoff.requested", "events:handoff.requested"}},
		{name: "already requested", plan: domain.PlanStandard, status: domain.StatusHandoffRequested, want: domain.StatusHandoffRequested},
		{name: "a person owns it", plan: domain.PlanStandard, status: domain.StatusHuman, wantErr: domain.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			r.setEventsURL(tt.plan, tt.eventsURL)
			sess := r.session(tt.plan, tt.status)
			conv, err := r.svc.RequestHandoff(t.Context(), Request{
				Session: conversation.SessionRef{ID: sess}, Name: " Ada ", Email: "ada@example.com", Note: "Please call back",
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if st := r.convs.conv(sess).Status; tt.wantErr != nil && st != tt.status {
				t.Errorf("refused request moved the conversation to %s", st)
			}
			if tt.wantErr != nil {
				if len(r.convs.written()) != 0 || len(r.bus.types()) != 0 {
					t.Errorf("refused request wrote %v and published %v", describe(r.convs.written()), r.bus.types())
				}
				return
			}
			if conv.ID != sess || conv.Status != tt.want || r.convs.conv(sess).Status != tt.want {
				t.Errorf("conversation %+v, want %s", conv, tt.want)
			}
			written := r.convs.written()
			if got := describe(written); !slices.Equal(got, tt.wantDeliveries) {
				t.Fatalf("deliveries %v, want %v", got, tt.wantDeliveries)
			}
			if len(written) == 0 {
				if len(r.bus.types()) != 0 || len(r.queue.ids) != 0 {
					t.Errorf("a repeated request published %v and enqueued %v", r.bus.types(), r.queue.ids)
				}
				return
			}
			for _, d := range written {
				if d.Contact == nil || d.Contact.Name != "Ada" || d.Contact.Email != "ada@example.com" || d.Contact.Note != "Please call back" {
					t.Errorf("delivery contact %+v", d.Contact)
				}
				if len(d.Transcript) != 1 || d.Transcript[0].Content != "My lamp flickers." {
					t.Errorf("transcript %+v, want the conversation so far", d.Transcript)
				}
				if d.Conversation.Status != domain.StatusHandoffRequested || d.Conversation.ContactName != "Ada" {
					t.Errorf("snapshot %+v, want the conversation after the change", d.Conversation)
				}
			}
			if c := r.convs.conv(sess); c.ContactName != "Ada" || c.ContactEmail != "ada@example.com" {
				t.Errorf("stored contact %q %q", c.ContactName, c.ContactEmail)
			}
			msgs := r.convs.of(sess)
			if last := msgs[len(msgs)-1]; last.Role != domain.RoleSystem || last.Status != domain.StatusHandoffRequested {
				t.Errorf("last message %+v, want the notice", last)
			}
			if got := r.bus.types(); !slices.Equal(got, []string{domain.EventStatus}) {
				t.Errorf("published %v, want the status event", got)
			}
			if len(r.queue.ids) != len(written) {
				t.Errorf("enqueued %v, want every delivery", r.queue.ids)
			}
		})
	}
}

func TestRequestHandoffRefusals(t *testing.T) {
	r := newRig(t)
	sess := r.session(domain.PlanStandard, domain.StatusAI)
	draft := r.sessionOf(r.draft[domain.PlanStandard], domain.StatusAI)
	other := r.ws[domain.PlanEnterprise]
	tests := []struct {
		name    string
		req     Request
		wantErr error
		field   string
	}{
		{"bad email", Request{Session: conversation.SessionRef{ID: sess}, Email: "ada at example"}, domain.ErrInvalidInput, "email"},
		{"long name", Request{Session: conversation.SessionRef{ID: sess}, Name: strings.Repeat("a", 201)}, domain.ErrInvalidInput, "name"},
		{"unknown session", Request{Session: conversation.SessionRef{ID: domain.NewID(domain.PrefixSession)}}, domain.ErrNotFound, ""},
		{"malformed session", Request{Session: conversation.SessionRef{ID: "ses_nope"}}, domain.ErrNotFound, ""},
		{"unpublished agent, keyless", Request{Session: conversation.SessionRef{ID: draft}}, domain.ErrNotFound, ""},
		{"another workspace's session", Request{Session: conversation.SessionRef{Workspace: other, ID: sess}}, domain.ErrNotFound, ""},
		{"bad identity", Request{Session: conversation.SessionRef{ID: sess, IdentityHeader: "x"}}, domain.ErrInvalidInput, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.svc.RequestHandoff(t.Context(), tt.req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var verr *domain.ValidationError
			if tt.field != "" && (!errors.As(err, &verr) || verr.Fields[tt.field] == "") {
				t.Errorf("err = %v, want a reason for %s", err, tt.field)
			}
		})
	}
	if len(r.convs.written()) != 0 || r.convs.conv(sess).Status != domain.StatusAI {
		t.Error("a refused request changed something")
	}
	// The unpublished agent's session is reachable with the workspace's key.
	if _, err := r.svc.RequestHandoff(t.Context(), Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard], ID: draft}}); err != nil {
		t.Errorf("keyed request for an unpublished agent's session: %v", err)
	}
	// A person owning the conversation is a conflict that says so.
	human := r.session(domain.PlanStandard, domain.StatusHuman)
	_, err := r.svc.RequestHandoff(t.Context(), Request{Session: conversation.SessionRef{ID: human}})
	var cerr *domain.ConflictError
	if !errors.As(err, &cerr) || cerr.Message != "a person already owns this conversation" || cerr.Details["from"] != "HUMAN" || cerr.Details["to"] != "HANDOFF_REQUESTED" {
		t.Errorf("err = %#v", err)
	}
}

// TestFailedReplyLeavesTheConversationAsItWas: a person's reply takes the
// conversation over, so the move and the reply are one write. Before, the
// move and its notice were committed and then the reply failed: the agent
// stopped answering and nobody else did.
func TestFailedReplyLeavesTheConversationAsItWas(t *testing.T) {
	for _, from := range []domain.ConversationStatus{domain.StatusAI, domain.StatusHandoffRequested, domain.StatusHuman, domain.StatusResolved} {
		t.Run(string(from), func(t *testing.T) {
			r := newRig(t)
			r.setEventsURL(domain.PlanStandard, "https://hooks.example/e")
			sess := r.session(domain.PlanStandard, from)
			before := r.convs.of(sess)
			broken := errors.New("the disk is full")
			r.convs.FailMessages(func(m domain.Message) error {
				if m.Role == domain.RoleHuman {
					return broken
				}
				return nil
			})
			_, err := r.svc.PostHumanMessage(t.Context(), r.ws[domain.PlanStandard], sess, HumanMessage{Role: "HUMAN", Content: "Hi, Marta here.", AuthorName: "Marta"})
			if !errors.Is(err, broken) {
				t.Fatalf("err = %v, want the store's", err)
			}
			if st := r.convs.conv(sess).Status; st != from {
				t.Errorf("status %s after a failed reply, want %s as before", st, from)
			}
			if after := r.convs.of(sess); len(after) != len(before) {
				t.Errorf("stored %d messages, want the %d there were", len(after), len(before))
			}
			if got := r.bus.types(); len(got) != 0 {
				t.Errorf("published %v for a reply that failed", got)
			}
			if got := r.convs.written(); len(got) != 0 {
				t.Errorf("deliveries %v for a reply that failed", describe(got))
			}
		})
	}
}

func TestPostHumanMessage(t *testing.T) {
	tests := []struct {
		from        domain.ConversationStatus
		eventsURL   string
		wantNotice  bool
		wantWritten []string
	}{
		{domain.StatusAI, "", true, nil},
		{domain.StatusHandoffRequested, "", true, nil},
		{domain.StatusHuman, "", false, nil},
		{domain.StatusResolved, "https://hooks.example/e", true, []string{"events:message.created"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.from), func(t *testing.T) {
			r := newRig(t)
			r.setEventsURL(domain.PlanStandard, tt.eventsURL)
			sess := r.session(domain.PlanStandard, tt.from)
			msg, err := r.svc.PostHumanMessage(t.Context(), r.ws[domain.PlanStandard], sess, HumanMessage{Role: "HUMAN", Content: "Hi, Marta here.", AuthorName: " Marta "})
			if err != nil {
				t.Fatal(err)
			}
			if msg.Role != domain.RoleHuman || msg.Content != "Hi, Marta here." || msg.AuthorName != "Marta" || msg.ConversationID != sess {
				t.Errorf("message %+v", msg)
			}
			if st := r.convs.conv(sess).Status; st != domain.StatusHuman {
				t.Errorf("status %s, want HUMAN", st)
			}
			msgs := r.convs.of(sess)
			wantTypes := []string{domain.EventMessage}
			if tt.wantNotice {
				wantTypes = []string{domain.EventStatus, domain.EventMessage}
				if n := msgs[len(msgs)-2]; n.Role != domain.RoleSystem || n.Status != domain.StatusHuman || n.Content != "Marta joined the conversation." {
					t.Errorf("notice %+v", n)
				}
			} else if len(msgs) != 2 {
				t.Errorf("stored %d messages, want the USER message and the reply", len(msgs))
			}
			if got := r.bus.types(); !slices.Equal(got, wantTypes) {
				t.Errorf("published %v, want %v", got, wantTypes)
			}
			if got := describe(r.convs.written()); !slices.Equal(got, tt.wantWritten) {
				t.Errorf("deliveries %v, want %v", got, tt.wantWritten)
			}
		})
	}
}

// A note is stored with its author and nothing else happens: no move, no
// takeover, nothing published to the session, nothing delivered, in every
// state and whether or not the workspace has an events URL.
func TestPostNote(t *testing.T) {
	for _, from := range []domain.ConversationStatus{domain.StatusAI, domain.StatusHandoffRequested, domain.StatusHuman, domain.StatusResolved} {
		t.Run(string(from), func(t *testing.T) {
			r := newRig(t)
			r.setEventsURL(domain.PlanStandard, "https://hooks.example/e")
			sess := r.session(domain.PlanStandard, from)
			author := domain.NewID(domain.PrefixUser)
			msg, err := r.svc.PostHumanMessage(t.Context(), r.ws[domain.PlanStandard], sess,
				HumanMessage{Role: "NOTE", Content: "VIP: refund without asking.", AuthorName: " Marta ", AuthorID: author})
			if err != nil {
				t.Fatal(err)
			}
			if msg.Role != domain.RoleNote || msg.AuthorName != "Marta" || msg.AuthorID != author || msg.ConversationID != sess {
				t.Errorf("note %+v", msg)
			}
			if c := r.convs.conv(sess); c.Status != from || c.AssigneeID != "" {
				t.Errorf("conversation %s %q, want %s unassigned", c.Status, c.AssigneeID, from)
			}
			if msgs := r.convs.of(sess); len(msgs) != 2 || msgs[1].ID != msg.ID || msgs[1].AuthorID != author {
				t.Errorf("stored %+v, want the USER message and the note", msgs)
			}
			if got := r.bus.types(); len(got) != 0 {
				t.Errorf("published %v to the session", got)
			}
			if got := describe(r.convs.written()); len(got) != 0 {
				t.Errorf("deliveries %v", got)
			}
		})
	}
}

// A reply from the console carries its member.
func TestPostHumanMessageAuthorID(t *testing.T) {
	r := newRig(t)
	sess := r.session(domain.PlanStandard, domain.StatusHuman)
	author := domain.NewID(domain.PrefixUser)
	msg, err := r.svc.PostHumanMessage(t.Context(), r.ws[domain.PlanStandard], sess, HumanMessage{Role: "HUMAN", Content: "Hi", AuthorName: "Marta", AuthorID: author})
	if err != nil || msg.AuthorID != author {
		t.Fatalf("reply %+v, %v", msg, err)
	}
	if msgs := r.convs.of(sess); msgs[len(msgs)-1].AuthorID != author {
		t.Fatalf("stored %+v", msgs[len(msgs)-1])
	}
}

func TestPostHumanMessageRefusals(t *testing.T) {
	r := newRig(t)
	ws := r.ws[domain.PlanStandard]
	sess := r.session(domain.PlanStandard, domain.StatusAI)
	foreign := r.session(domain.PlanEnterprise, domain.StatusAI)
	ok := HumanMessage{Role: "HUMAN", Content: "Hello"}
	tests := []struct {
		name    string
		id      string
		m       HumanMessage
		wantErr error
		field   string
	}{
		{"missing role", sess, HumanMessage{Content: "Hello"}, domain.ErrInvalidInput, "role"},
		{"role not HUMAN", sess, HumanMessage{Role: "ASSISTANT", Content: "Hello"}, domain.ErrInvalidInput, "role"},
		{"lowercase role", sess, HumanMessage{Role: "human", Content: "Hello"}, domain.ErrInvalidInput, "role"},
		{"missing content", sess, HumanMessage{Role: "HUMAN"}, domain.ErrInvalidInput, "content"},
		{"blank content", sess, HumanMessage{Role: "HUMAN", Content: " \n "}, domain.ErrInvalidInput, "content"},
		{"content too long", sess, HumanMessage{Role: "HUMAN", Content: strings.Repeat("a", 51)}, domain.ErrInvalidInput, "content"},
		{"author too long", sess, HumanMessage{Role: "HUMAN", Content: "Hello", AuthorName: strings.Repeat("é", 201)}, domain.ErrInvalidInput, "authorName"},
		{"note without an author", sess, HumanMessage{Role: "NOTE", Content: "VIP"}, domain.ErrInvalidInput, "authorName"},
		{"note with a blank author", sess, HumanMessage{Role: "NOTE", Content: "VIP", AuthorName: "  "}, domain.ErrInvalidInput, "authorName"},
		{"malformed author id", sess, HumanMessage{Role: "HUMAN", Content: "Hello", AuthorID: "bob"}, domain.ErrInvalidInput, "authorId"},
		{"role SYSTEM", sess, HumanMessage{Role: "SYSTEM", Content: "Hello"}, domain.ErrInvalidInput, "role"},
		{"unknown conversation", domain.NewID(domain.PrefixSession), ok, domain.ErrNotFound, ""},
		{"malformed id", "nope", ok, domain.ErrNotFound, ""},
		{"another workspace's conversation", foreign, ok, domain.ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.svc.PostHumanMessage(t.Context(), ws, tt.id, tt.m)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var verr *domain.ValidationError
			if tt.field != "" && (!errors.As(err, &verr) || verr.Fields[tt.field] == "") {
				t.Errorf("err = %v, want a reason for %s", err, tt.field)
			}
		})
	}
	if r.convs.conv(sess).Status != domain.StatusAI || r.convs.conv(foreign).Status != domain.StatusAI || len(r.bus.types()) != 0 {
		t.Error("a refused reply changed or published something")
	}
}

// Every pair of states through the status endpoint: allowed moves happen
// with a notice and their deliveries; the same state is a no-op; forbidden
// moves are conflicts naming from and to.
func TestSetStatus(t *testing.T) {
	states := []domain.ConversationStatus{domain.StatusAI, domain.StatusHandoffRequested, domain.StatusHuman, domain.StatusResolved}
	for _, from := range states {
		for _, to := range states {
			t.Run(string(from)+"->"+string(to), func(t *testing.T) {
				r := newRig(t)
				ws := r.ws[domain.PlanStandard]
				r.setEventsURL(domain.PlanStandard, "https://hooks.example/e")
				sess := r.session(domain.PlanStandard, from)
				conv, err := r.svc.SetStatus(t.Context(), ws, sess, to)
				switch {
				case from == to:
					if err != nil || conv.Status != to || len(r.bus.types()) != 0 || len(r.convs.written()) != 0 || len(r.convs.of(sess)) != 1 {
						t.Errorf("same state: %+v, %v; want a no-op", conv, err)
					}
				case !from.CanMoveTo(to):
					var cerr *domain.ConflictError
					if !errors.As(err, &cerr) || cerr.Details["from"] != string(from) || cerr.Details["to"] != string(to) {
						t.Fatalf("err = %#v, want a conflict naming from and to", err)
					}
					if r.convs.conv(sess).Status != from || len(r.convs.of(sess)) != 1 {
						t.Error("a forbidden move changed something")
					}
				default:
					if err != nil || conv.Status != to || r.convs.conv(sess).Status != to {
						t.Fatalf("conversation %+v, %v; want %s", conv, err, to)
					}
					msgs := r.convs.of(sess)
					if n := msgs[len(msgs)-1]; n.Role != domain.RoleSystem || n.Status != to {
						t.Errorf("last message %+v, want the notice", n)
					}
					want := describe(domain.StatusDeliveries(ws, conv, from, nil, nil, time.Time{}))
					if got := describe(r.convs.written()); !slices.Equal(got, want) {
						t.Errorf("deliveries %v, want %v", got, want)
					}
					if got := r.bus.types(); !slices.Equal(got, []string{domain.EventStatus}) {
						t.Errorf("published %v", got)
					}
				}
			})
		}
	}
}

func TestSetStatusRefusals(t *testing.T) {
	r := newRig(t)
	sess := r.session(domain.PlanStandard, domain.StatusAI)
	for _, st := range []domain.ConversationStatus{"", "CLOSED", "human"} {
		if _, err := r.svc.SetStatus(t.Context(), r.ws[domain.PlanStandard], sess, st); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("status %q: err = %v, want invalid input", st, err)
		}
	}
	if _, err := r.svc.SetStatus(t.Context(), r.ws[domain.PlanEnterprise], sess, domain.StatusHuman); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another workspace: err = %v, want not found", err)
	}
	if _, err := r.svc.SetStatus(t.Context(), r.ws[domain.PlanHobby], r.session(domain.PlanHobby, domain.StatusAI), domain.StatusHuman); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("hobby plan: err = %v, want forbidden", err)
	}
}

// Deliveries depend on the state a change starts from, so a change applies
// only from the state it was decided in: when another request moved the
// conversation meanwhile, the use case decides again from the new state.
func TestSetStatusDecidesAgainAfterAConcurrentChange(t *testing.T) {
	r := newRig(t)
	sess := r.session(domain.PlanStandard, domain.StatusHuman)
	once := false
	r.convs.BeforeChange(func(c *domain.Conversation) {
		if !once {
			once = true
			c.Status = domain.StatusAI // handed back to the agent meanwhile
		}
	})
	conv, err := r.svc.SetStatus(t.Context(), r.ws[domain.PlanStandard], sess, domain.StatusResolved)
	if err != nil || conv.Status != domain.StatusResolved {
		t.Fatalf("%+v, %v", conv, err)
	}
	// AI -> RESOLVED ends no handoff: no handoff.resolved was written for
	// the HUMAN state the first read saw.
	if w := r.convs.written(); len(w) != 0 {
		t.Errorf("deliveries %v, want none", describe(w))
	}
}

func TestSetStatusGivesUpOnAConversationThatKeepsChanging(t *testing.T) {
	r := newRig(t)
	sess := r.session(domain.PlanStandard, domain.StatusHuman)
	flip := []domain.ConversationStatus{domain.StatusAI, domain.StatusHandoffRequested}
	n := 0
	r.convs.BeforeChange(func(c *domain.Conversation) {
		c.Status = flip[n%2]
		n++
	})
	_, err := r.svc.SetStatus(t.Context(), r.ws[domain.PlanStandard], sess, domain.StatusResolved)
	if !errors.Is(err, domain.ErrConflict) || n != conversation.StatusAttempts {
		t.Errorf("err = %v after %d attempts, want a conflict after %d", err, n, conversation.StatusAttempts)
	}
}

func TestDeliveryQueueOutageIsNotAnError(t *testing.T) {
	r := newRig(t)
	r.queue.err = domain.Unavailable("redis", errors.New("connection refused"))
	r.bus.err = domain.Unavailable("redis", errors.New("connection refused"))
	sess := r.session(domain.PlanStandard, domain.StatusAI)
	conv, err := r.svc.RequestHandoff(t.Context(), Request{Session: conversation.SessionRef{ID: sess}})
	if err != nil || conv.Status != domain.StatusHandoffRequested {
		t.Fatalf("%+v, %v; want the stored change to succeed", conv, err)
	}
	if len(r.convs.written()) != 1 {
		t.Errorf("deliveries %v, want the helpdesk's", describe(r.convs.written()))
	}
}

func TestPoll(t *testing.T) {
	r := newRig(t)
	sess := r.session(domain.PlanFree, domain.StatusAI) // polling is not plan-gated
	first := r.convs.of(sess)[0]
	for _, text := range []string{"one", "two", "three"} {
		if _, _, err := r.convs.AppendMessage(t.Context(), domain.Message{
			ID: domain.NewID(domain.PrefixMessage), WorkspaceID: first.WorkspaceID, ConversationID: sess, Role: domain.RoleAssistant, Content: text,
		}, ""); err != nil {
			t.Fatal(err)
		}
	}
	other := r.session(domain.PlanFree, domain.StatusAI)
	all := r.convs.of(sess)

	res, err := r.svc.Poll(t.Context(), conversation.PollRequest{Session: conversation.SessionRef{ID: sess}})
	if err != nil || len(res.Messages) != 4 || res.HasMore || res.Conversation.Status != domain.StatusAI {
		t.Fatalf("from the start: %+v, %v", res, err)
	}
	res, err = r.svc.Poll(t.Context(), conversation.PollRequest{Session: conversation.SessionRef{ID: sess}, After: first.ID, Limit: 2})
	if err != nil || len(res.Messages) != 2 || res.Messages[0].Content != "one" || !res.HasMore {
		t.Fatalf("after the first, limit 2: %+v, %v", res, err)
	}
	res, err = r.svc.Poll(t.Context(), conversation.PollRequest{Session: conversation.SessionRef{ID: sess}, After: all[3].ID})
	if err != nil || len(res.Messages) != 0 || res.HasMore {
		t.Fatalf("after the last: %+v, %v", res, err)
	}

	tests := []struct {
		name    string
		req     conversation.PollRequest
		wantErr error
		field   string
	}{
		{"malformed after", conversation.PollRequest{Session: conversation.SessionRef{ID: sess}, After: "nope"}, domain.ErrInvalidInput, "after"},
		{"unknown after", conversation.PollRequest{Session: conversation.SessionRef{ID: sess}, After: domain.NewID(domain.PrefixMessage)}, domain.ErrInvalidInput, "after"},
		{"another session's message", conversation.PollRequest{Session: conversation.SessionRef{ID: sess}, After: r.convs.of(other)[0].ID}, domain.ErrInvalidInput, "after"},
		{"limit too large", conversation.PollRequest{Session: conversation.SessionRef{ID: sess}, Limit: 101}, domain.ErrInvalidInput, "limit"},
		{"negative limit", conversation.PollRequest{Session: conversation.SessionRef{ID: sess}, Limit: -1}, domain.ErrInvalidInput, "limit"},
		{"unknown session", conversation.PollRequest{Session: conversation.SessionRef{ID: domain.NewID(domain.PrefixSession)}}, domain.ErrNotFound, ""},
		{"unpublished agent", conversation.PollRequest{Session: conversation.SessionRef{ID: r.sessionOf(r.draft[domain.PlanFree], domain.StatusAI)}}, domain.ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.svc.Poll(t.Context(), tt.req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var verr *domain.ValidationError
			if tt.field != "" && (!errors.As(err, &verr) || verr.Fields[tt.field] == "") {
				t.Errorf("err = %v, want a reason for %s", err, tt.field)
			}
		})
	}
}
