package main

import (
	"context"
	"encoding/base64"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/outcome"
)

// movedClock is the real clock moved by a fixed offset: the outcome job
// runs hours and days ahead of the conversations the test just had.
type movedClock struct{ by time.Duration }

func (c movedClock) Now() time.Time { return domain.SystemClock{}.Now().Add(c.by) }

// TestConversationOutcomes drives real conversations through the HTTP API,
// runs the outcome job with a clock moved ahead (as the worker's sweep
// would, a day later), and checks the stored outcomes on the v2
// conversation objects: each rule, idempotence, and the late events (a
// thumbs up, a re-contact of a verified user, a reopen) deciding again.
func TestConversationOutcomes(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanEnterprise)
	supportAgent(s, tn)
	// The worker indexed the knowledge; its own outcome sweep, on the real
	// clock, would race the moved clocks below.
	s.stopWorkerAndWait()
	ctx := context.Background()
	sweep := func(by time.Duration) int {
		t.Helper()
		n, err := outcome.NewService(s.sys.store, movedClock{by}, 0).Sweep(ctx)
		if err != nil {
			t.Fatalf("Sweep: %v", err)
		}
		return n
	}
	outcomeOf := func(session string) any {
		t.Helper()
		r := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth())
		s.mustStatus(r, 200)
		return r.JSON(t)["outcome"]
	}
	ask := func(session, message string) answerBody {
		t.Helper()
		body := map[string]any{"agent": "support", "message": message}
		if session != "" {
			body["sessionId"] = session
		}
		r, a := s.chat(tn, body)
		s.mustStatus(r, 200)
		return a
	}
	identity := base64.RawURLEncoding.EncodeToString([]byte(`{"userId":"u-outcomes"}`))
	verified := header{"X-Service-Identity": identity, "X-Service-Signature": domain.SignIdentity(tn.WebhookSecret, identity)}
	verifiedSession := func(question string) string {
		t.Helper()
		h := tn.auth()
		for k, v := range verified {
			h[k] = v
		}
		r := s.do("POST", "/api/v1/sessions", map[string]any{"slug": "support"}, h)
		s.mustStatus(r, 200)
		session := r.JSON(t)["sessionId"].(string)
		s.mustStatus(s.do("POST", "/api/chat/"+session+"/message", map[string]any{"message": question}, verified), 200)
		return session
	}

	answered := ask("", "How long does shipping take?")
	if answered.IsFallback || answered.MessageID == nil {
		t.Fatalf("shipping answer = %+v", answered)
	}
	fallback := ask("", "What is the airspeed velocity of an unladen swallow?")
	if !fallback.IsFallback {
		t.Fatalf("expected a fallback, got %+v", fallback)
	}
	helped := ask("", "How do I reset my password?")
	ask(helped.SessionID, "Thanks, that helped!")
	person := ask("", "Can I return an item?")
	s.mustStatus(s.do("POST", "/api/v2/conversations/"+person.SessionID+"/messages",
		map[string]any{"role": "HUMAN", "content": "Hi, Marta here: yes, within 30 days.", "authorName": "Marta"}, tn.auth()), 201)
	s.mustStatus(s.do("POST", "/api/v2/conversations/"+person.SessionID+"/status", map[string]any{"status": "RESOLVED"}, tn.auth()), 200)
	firstVisit := verifiedSession("How do I reset my password?")

	sessions := []string{answered.SessionID, fallback.SessionID, helped.SessionID, person.SessionID, firstVisit}
	for _, id := range sessions {
		if o := outcomeOf(id); o != nil {
			t.Fatalf("%s: outcome %v before the job ran, want null", id, o)
		}
	}
	if n := sweep(23 * time.Hour); n != len(sessions) {
		t.Fatalf("a sweep before 24 h of quiet looked at %d conversations, want %d", n, len(sessions))
	}
	for _, id := range sessions {
		if o := outcomeOf(id); o != nil {
			t.Fatalf("%s: outcome %v before 24 h of quiet, want null", id, o)
		}
	}

	day := 25 * time.Hour
	sweep(day)
	want := map[string]any{
		answered.SessionID: "RESOLVED_UNCONFIRMED",
		fallback.SessionID: "ABANDONED_AFTER_FALLBACK",
		helped.SessionID:   "RESOLVED_CONFIRMED",
		person.SessionID:   "RESOLVED_BY_PERSON",
		firstVisit:         "RESOLVED_UNCONFIRMED",
	}
	check := func(when string) {
		t.Helper()
		for id, o := range want {
			if got := outcomeOf(id); got != o {
				t.Errorf("%s: %s outcome %v, want %v", when, id, got, o)
			}
		}
	}
	check("a day later")
	if n := sweep(day); n != 0 {
		t.Errorf("a second sweep decided %d conversations, want 0", n)
	}
	check("after a second sweep")
	list := s.do("GET", "/api/v2/conversations?limit=100", nil, tn.auth())
	s.mustStatus(list, 200)
	for _, item := range list.JSON(t)["data"].([]any) {
		c := item.(map[string]any)
		if w, ok := want[c["id"].(string)]; ok && c["outcome"] != w {
			t.Errorf("list: %s outcome %v, want %v", c["id"], c["outcome"], w)
		}
	}

	// Late events: a thumbs up on the unconfirmed answer, and the verified
	// user back on the same topic.
	rated := s.do("POST", "/api/chat/"+answered.SessionID+"/messages/"+*answered.MessageID+"/feedback", map[string]any{"rating": "up"}, nil)
	s.mustStatus(rated, 200)
	verifiedSession("The password reset email never arrives")
	sweep(day + time.Hour)
	want[answered.SessionID] = "RESOLVED_CONFIRMED"
	want[firstVisit] = "RECONTACT"
	check("after the late events")

	// The visitor reopens the conversation the person resolved: undecided
	// while active, handed off once quiet (nobody resolved it again).
	s.sendMessage(person.SessionID, "One more thing: do you refund shipping?")
	sweep(time.Hour)
	if o := outcomeOf(person.SessionID); o != nil {
		t.Errorf("reopened conversation's outcome %v while active, want null", o)
	}
	sweep(day + 2*time.Hour)
	want[person.SessionID] = "HANDED_OFF"
	check("a day after the reopen")
	if n := sweep(day + 2*time.Hour); n != 0 {
		t.Errorf("a sweep after everything was decided decided %d, want 0", n)
	}
}
