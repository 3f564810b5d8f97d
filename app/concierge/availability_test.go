package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// addMember makes a user a member of the tenant's workspace, through the
// store as an accepted invitation would.
func (s *stack) addMember(tn tenant, email string, role domain.MemberRole) domain.Member {
	s.t.Helper()
	ctx := context.Background()
	now := time.Now()
	u := domain.User{ID: domain.NewID(domain.PrefixUser), Email: email, Name: "Member " + email, CreatedAt: now, UpdatedAt: now}
	if err := s.sys.store.CreateUser(ctx, u); err != nil {
		s.t.Fatal(err)
	}
	inv := domain.Invitation{ID: domain.NewID(domain.PrefixInvitation), WorkspaceID: tn.ID, Email: email, Role: role,
		TokenHash: domain.HashSecret(domain.NewID(domain.PrefixLinkToken)), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.sys.store.CreateInvitation(ctx, inv); err != nil {
		s.t.Fatal(err)
	}
	m, err := s.sys.store.AcceptInvitation(ctx, inv.TokenHash, u, false, now)
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}

// The widget learns whether a person is available: when it opens a
// session and from GET /api/chat/{sessionId}/availability, which follow
// the members' own switches, per workspace.
func TestWidgetAvailability(t *testing.T) {
	s := newStack(t, stackOptions{})
	std := s.newTenant(domain.PlanStandard)
	s.widgetAgent(std, domain.Agent{Slug: "support", Name: "Support", Config: domain.AgentConfig{Published: true}})
	other := s.newTenant(domain.PlanStandard)
	ada := s.addMember(std, "ada-"+strings.ToLower(std.ID)+"@example.com", domain.MemberAgent)
	otto := s.addMember(other, "otto-"+strings.ToLower(other.ID)+"@example.com", domain.MemberOwner)

	availability := func(session string) bool {
		t.Helper()
		r := s.do("GET", "/api/chat/"+session+"/availability", nil, nil)
		s.mustStatus(r, 200)
		got, ok := r.JSON(t)["humanAvailable"].(bool)
		if !ok {
			t.Fatalf("body %s", r.Body)
		}
		return got
	}
	opened := func() (string, bool) {
		t.Helper()
		r := s.do("POST", "/api/widget/support/sessions", map[string]any{}, nil)
		s.mustStatus(r, 201)
		body := r.JSON(t)
		return body["sessionId"].(string), body["humanAvailable"].(bool)
	}
	set := func(m domain.Member, available bool) {
		t.Helper()
		if _, err := s.sys.availability.SetAvailable(context.Background(), m, available); err != nil {
			t.Fatal(err)
		}
	}

	session, avail := opened()
	if avail || availability(session) {
		t.Fatal("a person is available before anyone said so")
	}
	// Another workspace's member does not answer this one's visitors.
	set(otto, true)
	if availability(session) {
		t.Fatal("another workspace's member counts")
	}
	set(ada, true)
	if !availability(session) {
		t.Fatal("not available after ada said so")
	}
	if _, avail := opened(); !avail {
		t.Fatal("a new session does not say a person is available")
	}
	set(ada, false)
	if availability(session) {
		t.Fatal("still available after ada went away")
	}
	// Nobody available: the handoff is accepted all the same and waits.
	r := s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"email": "visitor@example.com"}, nil)
	s.mustStatus(r, 200)
	r = s.do("GET", "/api/v2/conversations/"+session, nil, std.auth())
	s.mustStatus(r, 200)
	if got := r.JSON(t)["status"]; got != "HANDOFF_REQUESTED" {
		t.Fatalf("status %v", got)
	}

	for name, id := range map[string]string{"unknown session": domain.NewID(domain.PrefixSession), "not a session id": "nope"} {
		r := s.do("GET", "/api/chat/"+id+"/availability", nil, nil)
		if r.Status != 404 || r.errorCode(t) != "NOT_FOUND" {
			t.Errorf("%s: %d %s", name, r.Status, r.Body)
		}
	}
}

// A suggested reply through v2 on the real stack: the agent's knowledge,
// indexed and retrieved, drafted by the embedded model; nothing stored.
func TestSuggestedReplyEndToEnd(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: true})
	std := s.newTenant(domain.PlanStandard)
	s.mustStatus(s.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Acme Help"}, std.auth()), 201)
	s.mustStatus(s.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "text", "name": "Returns and refunds",
		"content": "You can return any unused item within 30 days of delivery. Refunds are issued to the original payment method within 5 business days."},
		std.auth()), 201)
	s.waitIndexed(std, "support")
	sess := s.widgetSession("support", nil)
	s.sendMessage(sess.SessionID, "Hello")
	s.mustStatus(s.do("POST", "/api/chat/"+sess.SessionID+"/handoff", map[string]any{"email": "v@example.com"}, nil), 200)
	before := s.do("GET", "/api/v2/conversations/"+sess.SessionID+"?limit=100", nil, std.auth())
	s.mustStatus(before, 200)
	// The visitor's question comes while waiting for a person: stored, not answered.
	s.sendMessage(sess.SessionID, "How many days do I have to return an item?")
	before = s.do("GET", "/api/v2/conversations/"+sess.SessionID+"?limit=100", nil, std.auth())
	deliveriesBefore := s.do("GET", "/api/v2/deliveries?limit=100", nil, std.auth())

	r := s.do("POST", "/api/v2/conversations/"+sess.SessionID+"/suggested-reply", nil, std.auth())
	s.mustStatus(r, 200)
	body := r.JSON(t)
	draft, _ := body["draft"].(string)
	if body["fallback"] != false || !strings.Contains(draft, "30 days") {
		t.Fatalf("suggestion %s", r.Body)
	}
	cites, _ := body["citations"].([]any)
	if len(cites) == 0 || cites[0].(map[string]any)["title"] != "Returns and refunds" {
		t.Fatalf("citations %v", cites)
	}

	after := s.do("GET", "/api/v2/conversations/"+sess.SessionID+"?limit=100", nil, std.auth())
	if b, a := before.JSON(t), after.JSON(t); a["messageCount"] != b["messageCount"] || a["status"] != "HANDOFF_REQUESTED" ||
		len(a["messages"].(map[string]any)["data"].([]any)) != len(b["messages"].(map[string]any)["data"].([]any)) {
		t.Fatalf("the conversation changed:\nbefore %s\nafter %s", before.Body, after.Body)
	}
	// The same deliveries, none added (the worker may have delivered the
	// pending ones meanwhile: their status is not compared).
	deliveryIDs := func(r response) []string {
		var ids []string
		for _, d := range r.JSON(t)["data"].([]any) {
			ids = append(ids, d.(map[string]any)["id"].(string))
		}
		return ids
	}
	if a, b := deliveryIDs(s.do("GET", "/api/v2/deliveries?limit=100", nil, std.auth())), deliveryIDs(deliveriesBefore); !slices.Equal(a, b) {
		t.Fatalf("deliveries changed:\nbefore %v\nafter %v", b, a)
	}

	// Tenant isolation and the plan.
	other := s.newTenant(domain.PlanStandard)
	if r := s.do("POST", "/api/v2/conversations/"+sess.SessionID+"/suggested-reply", nil, other.auth()); r.Status != 404 {
		t.Fatalf("another workspace's key: %d %s", r.Status, r.Body)
	}
}
