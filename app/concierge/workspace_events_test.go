package main

import (
	"maps"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// withHeader is h plus one more header.
func withHeader(h header, k, v string) header {
	out := maps.Clone(h)
	out[k] = v
	return out
}

// wsEvent checks a workspace event's type line, data type, conversation
// and, when set, status and message role, and returns its data.
func wsEvent(t *testing.T, ev sseEvent, typ, conversation, status, role string) map[string]any {
	t.Helper()
	msg, _ := ev.Data["message"].(map[string]any)
	switch {
	case ev.Event != typ || ev.Data["type"] != typ || ev.Data["conversationId"] != conversation || ev.ID == "":
		t.Fatalf("got %s %s %v, want %s of %s", ev.ID, ev.Event, ev.Data, typ, conversation)
	case status != "" && ev.Data["status"] != status:
		t.Fatalf("got status %v, want %s: %v", ev.Data["status"], status, ev.Data)
	case role != "" && (msg == nil || msg["role"] != role):
		t.Fatalf("got message %v, want role %s", msg, role)
	case ev.Data["agentId"] == nil || ev.Data["at"] == nil:
		t.Fatalf("event without its agent or time: %v", ev.Data)
	}
	return msg
}

// The workspace event stream end to end, across two pods sharing
// PostgreSQL and Redis: an integration follows GET /api/v2/events on pod
// B while a visitor talks and asks for a person on pod A, and a person
// replies, and the visitor writes again through the inbound webhook; each
// change arrives, in order. Another workspace's key never
// sees them. Resuming with Last-Event-ID gives only newer events; a
// position the log no longer keeps starts with a reset.
func TestWorkspaceEventsAcrossPods(t *testing.T) {
	c := newCluster(t, clusterOptions{pods: 2, workers: 1})
	a, b := c.pods[0], c.pods[1]
	tn, other := c.newTenant(domain.PlanStandard), c.newTenant(domain.PlanStandard)
	c.must(c.do(a, "POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Acme Support"}, tn.auth()), 201)
	c.must(c.do(a, "POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Other Support"}, other.auth()), 201)
	session := c.startSession(a, tn)

	inbox := openLive(t, "GET", b.base+"/api/v2/events", nil, tn.auth())
	defer inbox.close()
	stranger := openLive(t, "GET", b.base+"/api/v2/events", nil, other.auth())
	defer stranger.close()

	// The visitor asks; the agent answers.
	c.must(c.do(a, "POST", "/api/chat/"+session+"/message", map[string]any{"message": "Do you ship to Norway?"}, nil), 200)
	asked := inbox.next()
	if msg := wsEvent(t, asked, "message.created", session, "", "USER"); msg["content"] != "Do you ship to Norway?" {
		t.Fatalf("the visitor's message: %v", msg)
	}
	wsEvent(t, inbox.next(), "message.created", session, "", "ASSISTANT")

	// The visitor asks for a person.
	c.must(c.do(a, "POST", "/api/chat/"+session+"/handoff", map[string]any{"name": "Ada"}, nil), 200)
	handoff := inbox.next()
	wsEvent(t, handoff, "conversation.status", session, "HANDOFF_REQUESTED", "")

	// A person replies through v2.
	c.must(c.do(a, "POST", "/api/v2/conversations/"+session+"/messages",
		map[string]any{"role": "HUMAN", "content": "Hi Ada, Marta here.", "authorName": "Marta"}, tn.auth()), 201)
	human := inbox.next()
	wsEvent(t, human, "conversation.status", session, "HUMAN", "")
	reply := inbox.next()
	if msg := wsEvent(t, reply, "message.created", session, "", "HUMAN"); msg["authorName"] != "Marta" {
		t.Fatalf("the reply: %v", msg)
	}

	// The visitor writes through the inbound webhook (stored and published
	// by the worker): it arrives too.
	r := c.do(a, "POST", "/api/webhooks/inbound", map[string]any{"event": "chat.message", "sessionId": session, "message": "Thanks, Marta."},
		header{"x-webhook-secret": tn.WebhookSecret})
	if r.Status != 200 && r.Status != 202 {
		t.Fatalf("inbound webhook: %d %s", r.Status, r.Body)
	}
	if msg := wsEvent(t, inbox.next(), "message.created", session, "", "USER"); msg["content"] != "Thanks, Marta." {
		t.Fatalf("the inbound message: %v", msg)
	}

	// The other workspace saw none of it, and sees its own.
	stranger.quiet(500 * time.Millisecond)
	otherSession := c.startSession(a, other)
	c.must(c.do(a, "POST", "/api/chat/"+otherSession+"/handoff", map[string]any{"name": "Bo"}, nil), 200)
	wsEvent(t, stranger.next(), "conversation.status", otherSession, "HANDOFF_REQUESTED", "")
	inbox.quiet(500 * time.Millisecond)

	// Resuming after the handoff, on pod A: only what came after it.
	resumed := openLive(t, "GET", a.base+"/api/v2/events", nil, withHeader(tn.auth(), "Last-Event-ID", handoff.ID))
	defer resumed.close()
	if got := resumed.nextN(3); got[0].ID != human.ID || got[1].ID != reply.ID || got[2].Data["type"] != "message.created" {
		t.Fatalf("resumed after %s: %v, want %s, %s, then the inbound message", handoff.ID, eventIDs(got), human.ID, reply.ID)
	}
	resumed.quiet(300 * time.Millisecond)
	// The query parameter does the same, for a client opening a new URL.
	byQuery := openLive(t, "GET", b.base+"/api/v2/events?lastEventId="+human.ID, nil, tn.auth())
	defer byQuery.close()
	if got := byQuery.next(); got.ID != reply.ID {
		t.Fatalf("resumed after %s by query: %s", human.ID, got.ID)
	}

	// A position older than the log keeps: reset first, then live.
	stale := openLive(t, "GET", b.base+"/api/v2/events", nil, withHeader(tn.auth(), "Last-Event-ID", "1-0"))
	defer stale.close()
	if ev := stale.next(); ev.Event != "reset" || ev.ID != "" || len(ev.Data) != 0 {
		t.Fatalf("resumed from a forgotten position: %s %s %v, want a reset", ev.ID, ev.Event, ev.Data)
	}
	c.must(c.do(b, "POST", "/api/v2/conversations/"+session+"/status", map[string]any{"status": "RESOLVED"}, tn.auth()), 200)
	wsEvent(t, stale.next(), "conversation.status", session, "RESOLVED", "")
	wsEvent(t, inbox.next(), "conversation.status", session, "RESOLVED", "")

	// Not a position at all: 400 with the error body; no key: 401.
	r = c.do(b, "GET", "/api/v2/events", nil, withHeader(tn.auth(), "Last-Event-ID", "msg_1:1"))
	c.must(r, 400)
	c.must(c.do(b, "GET", "/api/v2/events", nil, nil), 401)
}
