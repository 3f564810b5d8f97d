package main

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

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

	// Removing Bob from the workspace unassigns the conversation.
	if err := s.sys.accounts.RemoveMember(ctx, owner, bob.UserID); err != nil {
		t.Fatal(err)
	}
	if got := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth()).JSON(t); got["assigneeId"] != nil {
		t.Fatalf("after removing Bob: assigneeId %v", got["assigneeId"])
	}
}
