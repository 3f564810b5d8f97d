package main

import (
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// A person's reply posted on one pod reaches the widget's live stream
// served by another: two `concierge serve` processes sharing PostgreSQL and
// Redis (the cluster harness of the relay tests), nothing sticky between
// them.
func TestHumanReplyReachesTheWidgetOnAnotherPod(t *testing.T) {
	c := newCluster(t, clusterOptions{pods: 2})
	a, b := c.pods[0], c.pods[1]
	tn := c.newTenant(domain.PlanStandard)
	c.must(c.do(a, "POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Acme Support"}, tn.auth()), 201)
	session := c.startSession(a, tn)
	widget := openLive(t, "GET", b.base+"/api/chat/"+session+"/events", nil, nil)

	status := func(want string) {
		t.Helper()
		ev := widget.next()
		if ev.Data["type"] != "status" || ev.Data["status"] != want {
			t.Fatalf("widget got %s %v, want status %s", ev.ID, ev.Data, want)
		}
	}

	// The visitor asks for a person on pod A; the widget on pod B sees it.
	c.must(c.do(a, "POST", "/api/chat/"+session+"/handoff", map[string]any{"name": "Ada"}, nil), 200)
	status("HANDOFF_REQUESTED")

	// A person replies through v2 on pod A.
	r := c.do(a, "POST", "/api/v2/conversations/"+session+"/messages", map[string]any{"role": "HUMAN", "content": "Hi Ada, Marta here.", "authorName": "Marta"}, tn.auth())
	c.must(r, 201)
	var reply wireMessage
	r.decode(t, &reply)
	status("HUMAN")
	ev := widget.next()
	msg, _ := ev.Data["message"].(map[string]any)
	if ev.Data["type"] != "message" || msg["id"] != reply.ID || msg["role"] != "HUMAN" || msg["content"] != "Hi Ada, Marta here." ||
		msg["authorName"] != "Marta" || ev.ID != reply.ID+":1" {
		t.Fatalf("widget got %s %v, want the HUMAN reply %s", ev.ID, ev.Data, reply.ID)
	}

	// The visitor answers on pod B: the message is relayed, and no agent
	// reply follows while the person owns the conversation.
	c.must(c.do(b, "POST", "/api/chat/"+session+"/message", map[string]any{"message": "Thanks Marta!"}, nil), 200)
	ev = widget.next()
	if msg, _ := ev.Data["message"].(map[string]any); ev.Data["type"] != "message" || msg["role"] != "USER" || msg["content"] != "Thanks Marta!" {
		t.Fatalf("widget got %s %v, want the visitor's message", ev.ID, ev.Data)
	}
	widget.quiet(time.Second)

	// Resolved on pod A.
	c.must(c.do(a, "POST", "/api/v2/conversations/"+session+"/status", map[string]any{"status": "RESOLVED"}, tn.auth()), 200)
	status("RESOLVED")
}
