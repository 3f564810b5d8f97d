package main

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Auto-assignment end to end, through the wired service and its worker: a
// visitor asks for a person through the public widget API in a workspace
// that turned auto-assignment on (v2 PATCH /integrations); the worker gives
// the conversation to an available member, the team's stream
// (GET /api/v2/events) says so with conversation.assigned, and an outbound
// conversation.assigned is written, as for a manual assignment. The
// conversation stays HANDOFF_REQUESTED. Two available members take turns;
// an away member gets none; with nobody available a handoff waits
// unassigned.
func TestAutoAssignEndToEnd(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: true})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	ctx := context.Background()

	r := s.do("PATCH", "/api/v2/integrations", map[string]any{"autoAssign": "on"}, tn.auth())
	s.mustStatus(r, 400)
	r = s.do("PATCH", "/api/v2/integrations", map[string]any{"autoAssign": true, "eventsUrl": "https://events.example.com/in"}, tn.auth())
	s.mustStatus(r, 200)
	if got := r.JSON(t); got["autoAssign"] != true {
		t.Fatalf("PATCH integrations: %v", got)
	}
	s.member(tn, "Olga", domain.MemberOwner) // away
	ada := s.member(tn, "Ada", domain.MemberAgent)
	bob := s.member(tn, "Bob", domain.MemberAdmin)
	for _, m := range []domain.Member{ada, bob} {
		if _, err := s.sys.availability.SetAvailable(ctx, m, true); err != nil {
			t.Fatal(err)
		}
	}
	// Equal (nothing open, never auto-assigned): the lowest user id first.
	ids := []string{ada.UserID, bob.UserID}
	sort.Strings(ids)

	inbox := openLive(t, "GET", s.base+"/api/v2/events", nil, tn.auth())
	defer inbox.close()
	handoff := func(name string) string {
		session := s.startSession(tn, "support")
		s.sendMessage(session, "Can I talk to someone?")
		s.mustStatus(s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"name": name}, nil), 200)
		return session
	}
	// handedOff skips the stream's events of other kinds (the visitor's
	// messages) until the handoff's conversation.status, and its
	// conversation.assigned too when one is expected, have come. They come
	// in either order, as a take-over's do: the status is published by the
	// pod that stored the handoff, after it enqueued the assignment, and
	// the worker's event was measured 6 to 91 ms behind it on a loaded
	// machine, close enough to overtake it.
	handedOff := func(assigned bool) (status, assignment sseEvent) {
		t.Helper()
		for status.Event == "" || assigned && assignment.Event == "" {
			ev := inbox.next()
			switch {
			case ev.Event == "conversation.status" && status.Event == "":
				status = ev
			case ev.Event == "conversation.assigned" && assigned && assignment.Event == "":
				assignment = ev
			}
		}
		return status, assignment
	}
	for i, want := range ids {
		session := handoff("Visitor")
		status, ev := handedOff(true)
		wsEvent(t, status, "conversation.status", session, "HANDOFF_REQUESTED", "")
		wsEvent(t, ev, "conversation.assigned", session, "HANDOFF_REQUESTED", "")
		if ev.Data["assigneeId"] != want {
			t.Fatalf("handoff %d assigned to %v, want %s (ids %v)", i+1, ev.Data["assigneeId"], want, ids)
		}
		r := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth())
		s.mustStatus(r, 200)
		if got := r.JSON(t); got["status"] != "HANDOFF_REQUESTED" || got["assigneeId"] != want {
			t.Fatalf("conversation after auto-assignment: %v", got)
		}
		assigned := 0
		for _, row := range s.outbox(session) {
			if row.EventType == domain.EventConversationAssigned {
				assigned++
			}
		}
		if assigned != 1 {
			t.Fatalf("%d outbound conversation.assigned, want 1", assigned)
		}
	}

	// Nobody available: the handoff waits in "Needs a person".
	for _, m := range []domain.Member{ada, bob} {
		if _, err := s.sys.availability.SetAvailable(ctx, m, false); err != nil {
			t.Fatal(err)
		}
	}
	session := handoff("Late visitor")
	status, _ := handedOff(false)
	wsEvent(t, status, "conversation.status", session, "HANDOFF_REQUESTED", "")
	time.Sleep(500 * time.Millisecond) // the worker's turn
	r = s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth())
	s.mustStatus(r, 200)
	if got := r.JSON(t); got["status"] != "HANDOFF_REQUESTED" || got["assigneeId"] != nil {
		t.Fatalf("with nobody available: %v, want HANDOFF_REQUESTED and unassigned", got)
	}
}
