package domain

import (
	"testing"
	"time"
)

func TestPublic(t *testing.T) {
	u, n, h := Message{ID: "u", Role: RoleUser}, Message{ID: "n", Role: RoleNote}, Message{ID: "h", Role: RoleHuman}
	tests := []struct {
		name string
		in   []Message
		want string
	}{
		{"none", nil, ""},
		{"no notes", []Message{u, h}, "uh"},
		{"notes between", []Message{u, n, n, h, n}, "uh"},
		{"only notes", []Message{n, n}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			for _, m := range Public(tt.in) {
				got += m.ID
			}
			if got != tt.want {
				t.Fatalf("Public = %q, want %q", got, tt.want)
			}
		})
	}
}

// A note is delivered nowhere, in any state, with an events URL or not;
// the other roles are delivered as before.
func TestNoteDeliveries(t *testing.T) {
	ws := &Workspace{ID: "ws_1", EventsURL: "https://events.example.com/hook", HelpdeskURL: "https://helpdesk.example.com/hook"}
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	for _, st := range []ConversationStatus{StatusAI, StatusHandoffRequested, StatusHuman, StatusResolved} {
		conv := Conversation{ID: "ses_1", WorkspaceID: ws.ID, Status: st}
		if got := MessageDeliveries(ws, conv, Message{Role: RoleNote, Content: "VIP"}, now); len(got) != 0 {
			t.Errorf("%s: a note delivered as %+v", st, got)
		}
		if got := MessageDeliveries(ws, conv, Message{Role: RoleHuman, Content: "Hi"}, now); len(got) != 1 {
			t.Errorf("%s: a reply delivered %d times, want once as an event", st, len(got))
		}
	}
}

func TestAssignedDeliveries(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	conv := Conversation{ID: "ses_1", WorkspaceID: "ws_1", Status: StatusHuman, AssigneeID: "usr_1"}
	if got := AssignedDeliveries(&Workspace{ID: "ws_1"}, conv, now); len(got) != 0 {
		t.Fatalf("without an events URL: %+v", got)
	}
	got := AssignedDeliveries(&Workspace{ID: "ws_1", EventsURL: "https://events.example.com/hook"}, conv, now)
	if len(got) != 1 || got[0].Type != EventConversationAssigned || got[0].Target != TargetEvents ||
		got[0].Conversation.AssigneeID != "usr_1" || got[0].Conversation.Status != StatusHuman {
		t.Fatalf("deliveries %+v", got)
	}
	// A take-over's change reports the new assignee, once, only when it changes.
	ws := &Workspace{ID: "ws_1", EventsURL: "https://events.example.com/hook"}
	from := Conversation{ID: "ses_1", WorkspaceID: "ws_1", Status: StatusAI}
	change := NewStatusChange(ws, from, StatusHuman, "Ada", nil, nil, now).WithTakeOver(ws, from, "usr_1", now)
	if change.AssigneeID != "usr_1" || len(change.Deliveries) != 1 || change.Deliveries[0].Conversation.AssigneeID != "usr_1" || change.Deliveries[0].Conversation.Status != StatusHuman {
		t.Fatalf("take-over change %+v", change)
	}
	from.AssigneeID = "usr_1"
	if again := NewStatusChange(ws, from, StatusHuman, "Ada", nil, nil, now).WithTakeOver(ws, from, "usr_1", now); len(again.Deliveries) != 0 || again.AssigneeID != "usr_1" {
		t.Fatalf("take-over by the assignee %+v", again)
	}
}
