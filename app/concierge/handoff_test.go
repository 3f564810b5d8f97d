package main

import (
	"context"
	"encoding/json"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// End-to-end tests of human handoff and the conversation state machine
// (docs/api.md, "Handoff and conversation states"), through the real HTTP
// server, PostgreSQL and Redis of an in-process stack.

type wireMessage struct {
	ID             string `json:"id"`
	Role           string `json:"role"`
	Content        string `json:"content"`
	AuthorName     string `json:"authorName"`
	Status         string `json:"status"`
	FallbackReason string `json:"fallbackReason"`
}

type pollBody struct {
	SessionID string        `json:"sessionId"`
	Status    string        `json:"status"`
	Messages  []wireMessage `json:"messages"`
	HasMore   bool          `json:"hasMore"`
}

type sessionMessageBody struct {
	Messages     []wireMessage `json:"messages"`
	OfferHandoff bool          `json:"offerHandoff"`
}

// outboxEntry is a row of the outbox, read straight from PostgreSQL.
type outboxEntry struct {
	Target    string
	EventType string
	Payload   json.RawMessage
}

func (s *stack) outbox(conversationID string) []outboxEntry {
	s.t.Helper()
	var rows []outboxEntry
	err := s.sys.db.Gorm.Raw(`SELECT target, event_type, payload FROM outbox WHERE conversation_id = ? ORDER BY created_at, id`, conversationID).
		Scan(&rows).Error
	if err != nil {
		s.t.Fatal(err)
	}
	return rows
}

func kinds(rows []outboxEntry) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Target+":"+r.EventType)
	}
	return out
}

func (s *stack) sendMessage(session, text string) sessionMessageBody {
	s.t.Helper()
	r := s.do("POST", "/api/chat/"+session+"/message", map[string]any{"message": text}, nil)
	s.mustStatus(r, 200)
	var out sessionMessageBody
	r.decode(s.t, &out)
	return out
}

func (s *stack) poll(session, after string) pollBody {
	s.t.Helper()
	path := "/api/chat/" + session + "/poll"
	if after != "" {
		path += "?after=" + url.QueryEscape(after)
	}
	r := s.do("GET", path, nil, nil)
	s.mustStatus(r, 200)
	var out pollBody
	r.decode(s.t, &out)
	return out
}

func (s *stack) conversationStatus(tn tenant, session string) string {
	s.t.Helper()
	r := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth())
	s.mustStatus(r, 200)
	st, _ := r.JSON(s.t)["status"].(string)
	return st
}

func roles(msgs []wireMessage) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, m.Role)
	}
	return out
}

// sessionOnPlan opens a session with a published agent in a workspace of
// any plan, as the widget would (v1 sessions need a Standard key).
func (s *stack) sessionOnPlan(plan domain.Plan) (tenant, string) {
	s.t.Helper()
	tn := s.newTenant(plan)
	ctx := context.Background()
	if _, err := s.sys.agents.Create(ctx, tn.ID, domain.Agent{Slug: "support", Name: "Support", Config: domain.AgentConfig{Published: true}}); err != nil {
		s.t.Fatal(err)
	}
	ws, err := s.sys.store.GetWorkspace(ctx, tn.ID)
	if err != nil {
		s.t.Fatal(err)
	}
	conv, err := s.sys.conversations.StartSession(ctx, &ws, "support", nil)
	if err != nil {
		s.t.Fatal(err)
	}
	return tn, conv.ID
}

func TestHandoffNeedsStandardPlan(t *testing.T) {
	s := newStack(t, stackOptions{})
	for _, plan := range domain.Plans {
		t.Run(string(plan), func(t *testing.T) {
			_, session := s.sessionOnPlan(plan)
			r := s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"name": "Ada"}, nil)
			if plan == domain.PlanFree || plan == domain.PlanHobby {
				if r.Status != 403 || r.errorCode(t) != "PLAN_UPGRADE_REQUIRED" {
					t.Fatalf("got %d %s, want 403 PLAN_UPGRADE_REQUIRED", r.Status, r.Body)
				}
				if rows := s.outbox(session); len(rows) != 0 {
					t.Errorf("a refused handoff wrote %v", kinds(rows))
				}
				// Polling is not plan-gated: the conversation is still with the agent.
				if p := s.poll(session, ""); p.Status != "AI" {
					t.Errorf("status %s after a refused handoff", p.Status)
				}
				return
			}
			s.mustStatus(r, 200)
			var body struct{ SessionID, Status string }
			r.decode(t, &body)
			if body.SessionID != session || body.Status != "HANDOFF_REQUESTED" {
				t.Fatalf("body %s", r.Body)
			}
			// Asking again is idempotent: no second notice or delivery.
			again := s.do("POST", "/api/chat/"+session+"/handoff", nil, nil)
			s.mustStatus(again, 200)
			if got := kinds(s.outbox(session)); !slices.Equal(got, []string{"helpdesk:handoff.requested"}) {
				t.Errorf("outbox %v, want one helpdesk handoff.requested", got)
			}
			if p := s.poll(session, ""); !slices.Equal(roles(p.Messages), []string{"SYSTEM"}) || p.Messages[0].Status != "HANDOFF_REQUESTED" {
				t.Errorf("messages %+v, want one notice", p.Messages)
			}
		})
	}
}

// The whole life of a handed-off conversation: asked for, the agent falls
// silent, a person answers and owns it, it is resolved, and a new question
// gives it back to the agent.
func TestHandoffStateMachine(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	session := s.startSession(tn, "support")

	first := s.sendMessage(session, "How long does shipping take?")
	if !slices.Equal(roles(first.Messages), []string{"USER", "ASSISTANT"}) {
		t.Fatalf("before handoff: %+v", first.Messages)
	}

	// The visitor asks for a person.
	r := s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "note": "Order 1234"}, nil)
	s.mustStatus(r, 200)
	if st := s.conversationStatus(tn, session); st != "HANDOFF_REQUESTED" {
		t.Fatalf("status %s", st)
	}
	conv := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth()).JSON(t)
	if conv["contactName"] != "Ada Lovelace" || conv["contactEmail"] != "ada@example.com" || conv["contactNote"] != "Order 1234" {
		t.Errorf("contact on the conversation: %v %v %v", conv["contactName"], conv["contactEmail"], conv["contactNote"])
	}
	rows := s.outbox(session)
	if got := kinds(rows); !slices.Equal(got, []string{"helpdesk:handoff.requested"}) {
		t.Fatalf("outbox %v", got)
	}
	var payload struct {
		Conversation struct{ Status, ContactName string }
		Contact      struct{ Name, Email, Note string }
		Transcript   []struct{ Role, Content string }
	}
	if err := json.Unmarshal(rows[0].Payload, &payload); err != nil {
		t.Fatal(err)
	}
	if payload.Conversation.Status != "HANDOFF_REQUESTED" || payload.Contact.Note != "Order 1234" || payload.Contact.Email != "ada@example.com" ||
		len(payload.Transcript) != 2 || payload.Transcript[0].Content != "How long does shipping take?" {
		t.Errorf("handoff payload %s", rows[0].Payload)
	}

	// No AI reply while the request is pending: the message is stored and
	// goes to the helpdesk.
	waiting := s.sendMessage(session, "How long does shipping take?")
	if !slices.Equal(roles(waiting.Messages), []string{"USER"}) || waiting.OfferHandoff {
		t.Fatalf("while HANDOFF_REQUESTED: %+v", waiting)
	}
	_, a := s.chat(tn, map[string]any{"sessionId": session, "message": "Is anyone there?"})
	if a.Message != "" || a.MessageID != nil || a.FallbackReason == nil || *a.FallbackReason != "HUMAN_ACTIVE" {
		t.Fatalf("v2 chat while HANDOFF_REQUESTED: %+v", a)
	}
	if got := kinds(s.outbox(session)); !slices.Equal(got, []string{"helpdesk:handoff.requested", "helpdesk:message.created", "helpdesk:message.created"}) {
		t.Errorf("outbox %v, want the user messages delivered to the helpdesk", got)
	}

	// The inbox lists it among the conversations waiting for a person.
	var waitingList listBody[map[string]any]
	lr := s.do("GET", "/api/v2/conversations?status=HANDOFF_REQUESTED", nil, tn.auth())
	s.mustStatus(lr, 200)
	lr.decode(t, &waitingList)
	if len(waitingList.Data) != 1 || waitingList.Data[0]["id"] != session {
		t.Errorf("HANDOFF_REQUESTED list: %v", waitingList.Data)
	}

	// A person replies through v2: the conversation is theirs.
	mark := s.poll(session, "").Messages
	last := mark[len(mark)-1].ID
	hr := s.do("POST", "/api/v2/conversations/"+session+"/messages", map[string]any{"role": "HUMAN", "content": "Hi, Marta here. Let me check.", "authorName": "Marta"}, tn.auth())
	s.mustStatus(hr, 201)
	var human wireMessage
	hr.decode(t, &human)
	if human.Role != "HUMAN" || human.AuthorName != "Marta" || human.Content != "Hi, Marta here. Let me check." {
		t.Fatalf("reply %s", hr.Body)
	}
	p := s.poll(session, last)
	if p.Status != "HUMAN" || !slices.Equal(roles(p.Messages), []string{"SYSTEM", "HUMAN"}) || p.Messages[0].Status != "HUMAN" ||
		p.Messages[1].ID != human.ID || p.Messages[1].AuthorName != "Marta" {
		t.Fatalf("poll after the reply: %+v", p)
	}
	// The reply that took the conversation over is its newest message, so
	// its preview, in the conversation and in the list.
	if got := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth()).JSON(t)["lastMessage"]; got != human.Content {
		t.Errorf("lastMessage after the takeover %q, want the reply %q", got, human.Content)
	}
	var humans listBody[map[string]any]
	s.do("GET", "/api/v2/conversations?status=HUMAN", nil, tn.auth()).decode(t, &humans)
	if len(humans.Data) != 1 || humans.Data[0]["lastMessage"] != human.Content {
		t.Errorf("HUMAN list %v, want the reply as lastMessage", humans.Data)
	}

	// Still no AI reply while the person owns it.
	owned := s.sendMessage(session, "Thanks! How long does shipping take?")
	if !slices.Equal(roles(owned.Messages), []string{"USER"}) {
		t.Fatalf("while HUMAN: %+v", owned.Messages)
	}
	if p := s.poll(session, human.ID); !slices.Equal(roles(p.Messages), []string{"USER"}) {
		t.Errorf("after the human reply: %v, want only the USER message (no ASSISTANT)", roles(p.Messages))
	}

	// The state machine refuses to ask for a person a person already is.
	bad := s.do("POST", "/api/v2/conversations/"+session+"/status", map[string]any{"status": "HANDOFF_REQUESTED"}, tn.auth())
	if bad.Status != 409 || bad.errorCode(t) != "CONFLICT" {
		t.Fatalf("HUMAN -> HANDOFF_REQUESTED: %d %s", bad.Status, bad.Body)
	}
	var conflict struct {
		Error struct{ Details map[string]string }
	}
	bad.decode(t, &conflict)
	if conflict.Error.Details["from"] != "HUMAN" || conflict.Error.Details["to"] != "HANDOFF_REQUESTED" {
		t.Errorf("conflict details %v", conflict.Error.Details)
	}
	r = s.do("POST", "/api/chat/"+session+"/handoff", nil, nil)
	conflict.Error.Details = nil
	r.decode(t, &conflict)
	if r.Status != 409 || !strings.Contains(string(r.Body), "a person already owns this conversation") ||
		conflict.Error.Details["from"] != "HUMAN" || conflict.Error.Details["to"] != "HANDOFF_REQUESTED" {
		t.Errorf("v1 handoff while HUMAN: %d %s, want 409 with details.from and details.to", r.Status, r.Body)
	}

	// Resolved: the helpdesk hears the handoff is over; resolving again is a no-op.
	res := s.do("POST", "/api/v2/conversations/"+session+"/status", map[string]any{"status": "RESOLVED"}, tn.auth())
	s.mustStatus(res, 200)
	if st, _ := res.JSON(t)["status"].(string); st != "RESOLVED" {
		t.Fatalf("status %s", st)
	}
	before := len(s.outbox(session))
	s.mustStatus(s.do("POST", "/api/v2/conversations/"+session+"/status", map[string]any{"status": "RESOLVED"}, tn.auth()), 200)
	rows = s.outbox(session)
	if len(rows) != before || rows[len(rows)-1].Target != "helpdesk" || rows[len(rows)-1].EventType != "handoff.resolved" {
		t.Errorf("outbox %v, want it to end with one handoff.resolved", kinds(rows))
	}

	// A new question reopens the conversation with the agent, who answers.
	reopened := s.sendMessage(session, "One more thing: how long does shipping take?")
	if !slices.Equal(roles(reopened.Messages), []string{"USER", "ASSISTANT"}) || !strings.Contains(reopened.Messages[1].Content, "business days") {
		t.Fatalf("after RESOLVED: %+v", reopened.Messages)
	}
	if st := s.conversationStatus(tn, session); st != "AI" {
		t.Errorf("status %s, want AI", st)
	}
	p = s.poll(session, reopened.Messages[0].ID)
	if !slices.Equal(roles(p.Messages), []string{"SYSTEM", "ASSISTANT"}) || p.Messages[0].Status != "AI" || p.Status != "AI" {
		t.Errorf("poll after reopening: %+v", p)
	}
	if len(s.outbox(session)) != before {
		t.Errorf("reopening wrote deliveries: %v", kinds(s.outbox(session)))
	}
}

// The inbound webhook's messages follow the same rules: while a person owns
// the conversation they are stored, relayed and delivered to the helpdesk,
// and no answer is generated.
func TestInboundMessageWhileHumanOwnsTheConversation(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: true})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	session := s.startSession(tn, "support")
	s.mustStatus(s.do("POST", "/api/v2/conversations/"+session+"/messages", map[string]any{"role": "HUMAN", "content": "Hello from the team"}, tn.auth()), 201)

	r := s.do("POST", "/api/webhooks/inbound", map[string]any{"event": "chat.message", "sessionId": session, "message": "How long does shipping take?"},
		header{"x-webhook-secret": tn.WebhookSecret})
	s.mustStatus(r, 200)
	var p pollBody
	for range 300 {
		if p = s.poll(session, ""); len(p.Messages) >= 3 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !slices.Equal(roles(p.Messages), []string{"SYSTEM", "HUMAN", "USER"}) || p.Status != "HUMAN" {
		t.Fatalf("messages %v status %s, want the notice, the reply and the webhook's USER message, no answer", roles(p.Messages), p.Status)
	}
	if got := kinds(s.outbox(session)); !slices.Equal(got, []string{"helpdesk:message.created"}) {
		t.Errorf("outbox %v, want the helpdesk's message.created", got)
	}
}

func TestHandoffBadInputs(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	other := s.newTenant(domain.PlanStandard)
	s.createAgent(tn, "support")
	s.createAgent(other, "support")
	session := s.startSession(tn, "support")
	foreign := s.startSession(other, "support")
	s.sendMessage(session, "hello")
	foreignMsg := s.sendMessage(foreign, "hello").Messages[0].ID
	unknown := domain.NewID(domain.PrefixSession)

	tests := []struct {
		name   string
		method string
		path   string
		body   any
		auth   header
		status int
		code   string
		field  string
	}{
		{"handoff: bad email", "POST", "/api/chat/" + session + "/handoff", map[string]any{"email": "not-an-email"}, nil, 400, "VALIDATION_ERROR", "email"},
		{"handoff: long name", "POST", "/api/chat/" + session + "/handoff", map[string]any{"name": strings.Repeat("a", 201)}, nil, 400, "VALIDATION_ERROR", "name"},
		{"handoff: unknown field", "POST", "/api/chat/" + session + "/handoff", map[string]any{"phone": "123"}, nil, 400, "VALIDATION_ERROR", ""},
		{"handoff: bad JSON", "POST", "/api/chat/" + session + "/handoff", `{"name":`, nil, 400, "VALIDATION_ERROR", ""},
		{"handoff: unknown session", "POST", "/api/chat/" + unknown + "/handoff", nil, nil, 404, "NOT_FOUND", ""},
		{"handoff: malformed session", "POST", "/api/chat/abc/handoff", nil, nil, 404, "NOT_FOUND", ""},
		{"poll: malformed after", "GET", "/api/chat/" + session + "/poll?after=nope", nil, nil, 400, "VALIDATION_ERROR", "after"},
		{"poll: another session's message", "GET", "/api/chat/" + session + "/poll?after=" + foreignMsg, nil, nil, 400, "VALIDATION_ERROR", "after"},
		{"poll: limit 0", "GET", "/api/chat/" + session + "/poll?limit=0", nil, nil, 400, "VALIDATION_ERROR", "limit"},
		{"poll: limit 101", "GET", "/api/chat/" + session + "/poll?limit=101", nil, nil, 400, "VALIDATION_ERROR", "limit"},
		{"poll: limit not a number", "GET", "/api/chat/" + session + "/poll?limit=ten", nil, nil, 400, "VALIDATION_ERROR", "limit"},
		{"poll: unknown session", "GET", "/api/chat/" + unknown + "/poll", nil, nil, 404, "NOT_FOUND", ""},
		{"reply: missing content", "POST", "/api/v2/conversations/" + session + "/messages", map[string]any{"role": "HUMAN"}, tn.auth(), 400, "VALIDATION_ERROR", "content"},
		{"reply: blank content", "POST", "/api/v2/conversations/" + session + "/messages", map[string]any{"role": "HUMAN", "content": "  "}, tn.auth(), 400, "VALIDATION_ERROR", "content"},
		{"reply: content too long", "POST", "/api/v2/conversations/" + session + "/messages", map[string]any{"role": "HUMAN", "content": strings.Repeat("a", 8001)}, tn.auth(), 400, "VALIDATION_ERROR", "content"},
		{"reply: role not HUMAN", "POST", "/api/v2/conversations/" + session + "/messages", map[string]any{"role": "ASSISTANT", "content": "hi"}, tn.auth(), 400, "VALIDATION_ERROR", "role"},
		{"reply: missing role", "POST", "/api/v2/conversations/" + session + "/messages", map[string]any{"content": "hi"}, tn.auth(), 400, "VALIDATION_ERROR", "role"},
		{"reply: author too long", "POST", "/api/v2/conversations/" + session + "/messages", map[string]any{"role": "HUMAN", "content": "hi", "authorName": strings.Repeat("a", 201)}, tn.auth(), 400, "VALIDATION_ERROR", "authorName"},
		{"reply: unknown conversation", "POST", "/api/v2/conversations/" + unknown + "/messages", map[string]any{"role": "HUMAN", "content": "hi"}, tn.auth(), 404, "NOT_FOUND", ""},
		{"reply: other workspace", "POST", "/api/v2/conversations/" + foreign + "/messages", map[string]any{"role": "HUMAN", "content": "hi"}, tn.auth(), 404, "NOT_FOUND", ""},
		{"reply: no key", "POST", "/api/v2/conversations/" + session + "/messages", map[string]any{"role": "HUMAN", "content": "hi"}, nil, 401, "UNAUTHORIZED", ""},
		{"status: bad status", "POST", "/api/v2/conversations/" + session + "/status", map[string]any{"status": "CLOSED"}, tn.auth(), 400, "VALIDATION_ERROR", "status"},
		{"status: missing status", "POST", "/api/v2/conversations/" + session + "/status", map[string]any{}, tn.auth(), 400, "VALIDATION_ERROR", "status"},
		{"status: no body", "POST", "/api/v2/conversations/" + session + "/status", nil, tn.auth(), 400, "VALIDATION_ERROR", ""},
		{"status: other workspace", "POST", "/api/v2/conversations/" + foreign + "/status", map[string]any{"status": "HUMAN"}, tn.auth(), 404, "NOT_FOUND", ""},
		{"status: unknown conversation", "POST", "/api/v2/conversations/" + unknown + "/status", map[string]any{"status": "HUMAN"}, tn.auth(), 404, "NOT_FOUND", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do(tt.method, tt.path, tt.body, tt.auth)
			if r.Status != tt.status || r.errorCode(t) != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tt.status, tt.code)
			}
			if tt.field != "" {
				var body struct {
					Error struct{ Details map[string]string }
				}
				r.decode(t, &body)
				if body.Error.Details[tt.field] == "" {
					t.Errorf("details %v, want a reason for %s", body.Error.Details, tt.field)
				}
			}
		})
	}
	// Nothing above changed either conversation.
	for _, c := range []struct {
		tn      tenant
		session string
	}{{tn, session}, {other, foreign}} {
		if st := s.conversationStatus(c.tn, c.session); st != "AI" {
			t.Errorf("%s is %s after refused requests", c.session, st)
		}
		if rows := s.outbox(c.session); len(rows) != 0 {
			t.Errorf("refused requests wrote %v", kinds(rows))
		}
	}
}

// With an events URL, every change of a conversation is written to the
// outbox as an outbound event, in the same transaction as the change.
func TestOutboundEventsAreWrittenWithTheChanges(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	// Before any request, so no pod caches the workspace without it.
	if err := s.sys.db.Gorm.Exec(`UPDATE workspaces SET events_url = 'https://hooks.example/concierge' WHERE id = ?`, tn.ID).Error; err != nil {
		t.Fatal(err)
	}
	supportAgent(s, tn)
	session := s.startSession(tn, "support")
	s.sendMessage(session, "How long does shipping take?")
	s.mustStatus(s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"email": "ada@example.com"}, nil), 200)
	s.sendMessage(session, "Hello?")
	s.mustStatus(s.do("POST", "/api/v2/conversations/"+session+"/messages", map[string]any{"role": "HUMAN", "content": "Hi!"}, tn.auth()), 201)
	s.mustStatus(s.do("POST", "/api/v2/conversations/"+session+"/status", map[string]any{"status": "RESOLVED"}, tn.auth()), 200)
	_, a := s.chat(tn, map[string]any{"agent": "support", "message": "How long does shipping take?"})

	want := []string{
		"events:conversation.created",
		"events:message.created", "events:message.created", // question and answer
		"helpdesk:handoff.requested", "events:handoff.requested",
		"helpdesk:message.created", "events:message.created", // the question while waiting
		"events:message.created", // the person's reply
		"helpdesk:handoff.resolved", "events:handoff.resolved",
	}
	got := kinds(s.outbox(session))
	// Rows written in one transaction share a time; compare as multisets.
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("outbox of the session:\n got %v\nwant %v", got, want)
	}
	// v2 chat's new conversation reports itself and its two messages.
	fresh := kinds(s.outbox(a.SessionID))
	slices.Sort(fresh)
	if !slices.Equal(fresh, []string{"events:conversation.created", "events:message.created", "events:message.created"}) {
		t.Errorf("outbox of a v2 chat: %v", fresh)
	}
}
