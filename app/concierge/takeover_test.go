package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// member makes a member of the tenant's workspace through an invitation,
// as the console does.
func (s *stack) member(tn tenant, name string, role domain.MemberRole) domain.Member {
	s.t.Helper()
	ctx := context.Background()
	email := strings.ToLower(name) + "-" + strings.ToLower(tn.ID) + "@example.com"
	inv, err := s.sys.accounts.InviteByOperator(ctx, tn.ID, account.InviteRequest{Email: email, Role: role})
	if err != nil {
		s.t.Fatal(err)
	}
	token := inv.Link[strings.LastIndex(inv.Link, "/")+1:]
	signed, err := s.sys.accounts.AcceptInvitation(ctx, account.AcceptRequest{Token: token, Name: name, Password: "a long enough password", IP: "127.0.0.1"})
	if err != nil {
		s.t.Fatal(err)
	}
	m, err := s.sys.accounts.Member(ctx, signed.User.ID, tn.ID)
	if err != nil {
		s.t.Fatal(err)
	}
	return m
}

// A take-over through the wired service: the visitor's widget sees the
// notice live, a second member is told who holds it, v2 reassigns it, every
// change is an outbound conversation.assigned, and removing the member
// unassigns.
func TestTakeOverEndToEnd(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	r, _ := s.integrations(tn, "PATCH", map[string]any{"eventsUrl": "https://events.example.com/in"})
	s.mustStatus(r, 200)
	owner := s.member(tn, "Olga", domain.MemberOwner)
	ada := s.member(tn, "Ada", domain.MemberAgent)
	bob := s.member(tn, "Bob", domain.MemberAdmin)
	session := s.startSession(tn, "support")
	s.sendMessage(session, "How long does shipping take?")
	widget := openLive(t, "GET", s.base+"/api/chat/"+session+"/events", nil, nil)
	inbox := openLive(t, "GET", s.base+"/api/v2/events", nil, tn.auth())
	defer inbox.close()
	ctx := context.Background()
	ws, err := s.sys.store.GetWorkspace(ctx, tn.ID)
	if err != nil {
		t.Fatal(err)
	}

	conv, err := s.sys.assignments.TakeOver(ctx, &ws, session, ada)
	if err != nil || conv.Status != domain.StatusHuman || conv.AssigneeID != ada.UserID {
		t.Fatalf("Ada takes over: %+v, %v", conv, err)
	}
	if ev := widget.next(); ev.Data["type"] != "status" || ev.Data["status"] != "HUMAN" {
		t.Fatalf("widget got %v, want the status HUMAN", ev.Data)
	}
	p := s.poll(session, "")
	if last := p.Messages[len(p.Messages)-1]; last.Role != "SYSTEM" || last.Content != "Ada joined the conversation." {
		t.Fatalf("notice %+v", last)
	}
	// The team's inbox sees the move and who took it, in either order.
	seen := map[string]any{}
	for _, ev := range inbox.nextN(2) {
		seen[ev.Event] = ev.Data
	}
	if st, _ := seen["conversation.status"].(map[string]any); st == nil || st["status"] != "HUMAN" {
		t.Fatalf("inbox after the take-over: %v", seen)
	}
	if as, _ := seen["conversation.assigned"].(map[string]any); as == nil || as["assigneeId"] != ada.UserID || as["status"] != "HUMAN" {
		t.Fatalf("inbox after the take-over: %v", seen)
	}
	_, err = s.sys.assignments.TakeOver(ctx, &ws, session, bob)
	var c *domain.ConflictError
	if !errors.As(err, &c) || c.Details["assigneeId"] != ada.UserID {
		t.Fatalf("Bob takes over: %v, want a conflict naming Ada", err)
	}

	// v2 hands it to Bob; assigning it to Bob again changes nothing.
	for range 2 {
		r = s.do("PUT", "/api/v2/conversations/"+session+"/assignee", map[string]any{"assigneeId": bob.UserID}, tn.auth())
		s.mustStatus(r, 200)
		if got := r.JSON(t); got["assigneeId"] != bob.UserID || got["status"] != "HUMAN" {
			t.Fatalf("PUT assignee: %v", got)
		}
	}
	if ev := inbox.next(); ev.Event != "conversation.assigned" || ev.Data["assigneeId"] != bob.UserID {
		t.Fatalf("inbox after assigning Bob: %s %v", ev.Event, ev.Data)
	}
	inbox.quiet(300 * time.Millisecond) // assigning Bob again told nobody

	// A note reaches the team's stream, with its author.
	r = s.do("POST", "/api/v2/conversations/"+session+"/messages", map[string]any{"role": "NOTE", "content": "VIP customer", "authorName": "Bob"}, tn.auth())
	s.mustStatus(r, 201)
	if ev := inbox.next(); ev.Event != "message.created" {
		t.Fatalf("inbox after a note: %s %v", ev.Event, ev.Data)
	} else if m, _ := ev.Data["message"].(map[string]any); m["role"] != "NOTE" || m["authorName"] != "Bob" || m["content"] != "VIP customer" {
		t.Fatalf("the note's event: %v", ev.Data)
	}

	var assigned []string
	for _, row := range s.outbox(session) {
		if row.EventType != domain.EventConversationAssigned {
			continue
		}
		var payload struct {
			Conversation struct {
				AssigneeID string `json:"assigneeId"`
				Status     string `json:"status"`
			} `json:"conversation"`
		}
		if err := json.Unmarshal(row.Payload, &payload); err != nil {
			t.Fatal(err)
		}
		if row.Target != "events" || payload.Conversation.Status != "HUMAN" {
			t.Fatalf("delivery %s %s", row.Target, row.Payload)
		}
		assigned = append(assigned, payload.Conversation.AssigneeID)
	}
	if len(assigned) != 2 || assigned[0] != ada.UserID || assigned[1] != bob.UserID {
		t.Fatalf("conversation.assigned to %v, want Ada then Bob", assigned)
	}

	// Removing Bob from the workspace unassigns the conversation, tells
	// the team's inboxes on the real stream (it moves to Unassigned) and
	// delivers conversation.assigned with nobody as the assignee.
	if err := s.sys.accounts.RemoveMember(ctx, owner, bob.UserID); err != nil {
		t.Fatal(err)
	}
	if got := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth()).JSON(t); got["assigneeId"] != nil {
		t.Fatalf("after removing Bob: assigneeId %v", got["assigneeId"])
	}
	if ev := inbox.next(); ev.Event != "conversation.assigned" || ev.Data["assigneeId"] != "" || ev.Data["conversationId"] != session || ev.Data["status"] != "HUMAN" {
		t.Fatalf("inbox after removing Bob: %s %v", ev.Event, ev.Data)
	}
	var last []byte
	n := 0
	for _, row := range s.outbox(session) {
		if row.EventType == domain.EventConversationAssigned {
			n, last = n+1, row.Payload
		}
	}
	var payload struct {
		Conversation struct {
			AssigneeID *string `json:"assigneeId"`
			Status     string  `json:"status"`
		} `json:"conversation"`
	}
	if err := json.Unmarshal(last, &payload); err != nil {
		t.Fatal(err)
	}
	if n != 3 || payload.Conversation.AssigneeID != nil || payload.Conversation.Status != "HUMAN" {
		t.Fatalf("%d conversation.assigned deliveries, the last %s; want a third, with nobody assigned", n, last)
	}
}
