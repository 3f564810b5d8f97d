package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// An internal note written through v2 stays with the team on every path
// a visitor or a receiver reads: the widget's live stream and its resumed
// replay, v1 poll (the widget's restored transcript), the helpdesk's
// deliveries and outbound events, the helpdesk's handoff transcript; the
// team reads it in v2 with its role and author.
func TestNoteNeverLeavesTheTeam(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	r, _ := s.integrations(tn, "PATCH", map[string]any{"eventsUrl": "https://events.example.com/in", "helpdeskUrl": "https://helpdesk.example.com/in"})
	s.mustStatus(r, 200)
	session := s.startSession(tn, "support")
	first := s.sendMessage(session, "How long does shipping take?")
	widget := openLive(t, "GET", s.base+"/api/chat/"+session+"/events", nil, nil)

	secret := "VIP customer: refund without asking " + domain.NewID(domain.PrefixMessage)
	nr := s.do("POST", "/api/v2/conversations/"+session+"/messages", map[string]any{"role": "NOTE", "content": secret, "authorName": "Marta"}, tn.auth())
	s.mustStatus(nr, 201)
	var note wireMessage
	nr.decode(t, &note)
	if note.Role != "NOTE" || note.AuthorName != "Marta" || note.Content != secret {
		t.Fatalf("note %+v", note)
	}
	// Without an author a note is refused.
	bad := s.do("POST", "/api/v2/conversations/"+session+"/messages", map[string]any{"role": "NOTE", "content": "x"}, tn.auth())
	s.mustStatus(bad, 400)
	if !strings.Contains(string(bad.Body), "authorName") {
		t.Fatalf("note without an author: %s", bad.Body)
	}

	// The visitor asks for a person: the helpdesk's transcript has no note.
	s.mustStatus(s.do("POST", "/api/chat/"+session+"/handoff", map[string]any{"name": "Ada"}, nil), 200)
	ev := widget.next()
	if ev.Data["type"] != "status" || ev.Data["status"] != "HANDOFF_REQUESTED" {
		t.Fatalf("widget got %s %v first, want the handoff's status (not the note)", ev.ID, ev.Data)
	}
	// A second note while a person is asked for, then the visitor speaks.
	s.mustStatus(s.do("POST", "/api/v2/conversations/"+session+"/messages", map[string]any{"role": "NOTE", "content": secret, "authorName": "Marta"}, tn.auth()), 201)
	s.sendMessage(session, "Anyone?")
	ev = widget.next()
	if msg, _ := ev.Data["message"].(map[string]any); ev.Data["type"] != "message" || msg["role"] != "USER" {
		t.Fatalf("widget got %s %v, want the visitor's message (not the note)", ev.ID, ev.Data)
	}
	widget.quiet(500 * time.Millisecond)

	// v1 poll (and so the widget's restore) from the start.
	p := s.poll(session, "")
	for _, m := range p.Messages {
		if m.Role == "NOTE" || m.Content == secret {
			t.Fatalf("poll returned the note: %+v", p.Messages)
		}
	}
	if !slices.Equal(roles(p.Messages), []string{"USER", "ASSISTANT", "SYSTEM", "USER"}) {
		t.Fatalf("poll roles %v", roles(p.Messages))
	}
	// The stream resumed from the visitor's first message replays no note.
	resumed := openLive(t, "GET", s.base+"/api/chat/"+session+"/events", nil, header{"Last-Event-ID": first.Messages[0].ID + ":1"})
	for _, ev := range resumed.until(func(ev sseEvent) bool {
		msg, _ := ev.Data["message"].(map[string]any)
		return msg["content"] == "Anyone?"
	}) {
		if msg, _ := ev.Data["message"].(map[string]any); msg["role"] == "NOTE" || strings.Contains(string(mustJSON(t, ev.Data)), secret) {
			t.Fatalf("resumed stream sent the note: %v", ev.Data)
		}
	}
	// Nothing about the note in the outbox: not as a message, not in a transcript.
	rows := s.outbox(session)
	if len(rows) == 0 {
		t.Fatal("no deliveries at all")
	}
	for _, row := range rows {
		if strings.Contains(string(row.Payload), secret) || strings.Contains(string(row.Payload), note.ID) {
			t.Fatalf("%s:%s carries the note: %s", row.Target, row.EventType, row.Payload)
		}
	}
	// The team reads it in v2.
	conv := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth())
	s.mustStatus(conv, 200)
	var body struct {
		Messages struct {
			Data []map[string]any `json:"data"`
		} `json:"messages"`
	}
	conv.decode(t, &body)
	notes := 0
	for _, m := range body.Messages.Data {
		if m["role"] == "NOTE" {
			notes++
			if m["authorName"] != "Marta" || m["content"] != secret {
				t.Errorf("v2 note %v", m)
			}
			if _, ok := m["authorId"]; ok {
				t.Errorf("an API key's note has an authorId: %v", m)
			}
		}
	}
	if notes != 2 {
		t.Fatalf("v2 shows %d notes, want 2: %v", notes, body.Messages.Data)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
