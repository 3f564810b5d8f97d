package main

import (
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// A follow-up in a continued conversation is searched with the earlier
// question, through the real retriever and the local model, and the
// answer's trace shows the query used.
func TestChatFollowUp(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	const fallback = "Sorry, I don't know that one. Shall I find a person?"
	s.mustStatus(s.do("POST", "/api/v2/agents", map[string]any{"slug": "shop", "name": "Shop", "fallbackMessage": fallback}, tn.auth()), 201)
	for _, src := range []map[string]any{
		{"type": "text", "name": "Shipping", "content": "Standard delivery takes 3-5 business days and costs 4.95 GBP. Express next-day delivery costs 9.50 GBP when ordered before 2pm."},
		{"type": "text", "name": "Refund policy", "content": "You can return unused items within 30 days of delivery for a full refund. Refunds go back to the original payment method within 5 business days of receiving the return."},
	} {
		s.mustStatus(s.do("POST", "/api/v2/agents/shop/sources", src, tn.auth()), 201)
	}
	for _, src := range s.waitIndexed(tn, "shop") {
		if src["status"] != "READY" {
			t.Fatalf("source not indexed: %v", src)
		}
	}
	// conversation asks first, then next in the same session, and returns
	// the second answer.
	conversation := func(t *testing.T, first, next string) answerBody {
		t.Helper()
		r, a := s.chat(tn, map[string]any{"agent": "shop", "message": first})
		s.mustStatus(r, 200)
		r, b := s.chat(tn, map[string]any{"sessionId": a.SessionID, "message": next})
		s.mustStatus(r, 200)
		if b.SessionID != a.SessionID {
			t.Fatalf("the follow-up went to session %s, want %s", b.SessionID, a.SessionID)
		}
		return b
	}
	trace := func(t *testing.T, a answerBody) map[string]any {
		t.Helper()
		r := s.do("GET", "/api/v2/conversations/"+a.SessionID+"/messages/"+*a.MessageID+"/trace", nil, tn.auth())
		s.mustStatus(r, 200)
		return r.JSON(t)
	}

	t.Run("express after standard delivery", func(t *testing.T) {
		a := conversation(t, "How long does standard delivery take?", "and how much is express?")
		if a.IsFallback || !strings.Contains(a.Message, "9.50") || len(a.Citations) == 0 || a.Citations[0].DocumentName != "Shipping" {
			t.Fatalf("answer = %+v", a)
		}
		tr := trace(t, a)
		if tr["question"] != "and how much is express?" || tr["query"] != "and how much is express?\nHow long does standard delivery take?" ||
			tr["queryNote"] != "follow-up: the query adds the conversation's previous question" {
			t.Fatalf("trace question %q, query %q, note %v", tr["question"], tr["query"], tr["queryNote"])
		}
	})
	t.Run("returns after shipping abroad", func(t *testing.T) {
		// The earlier question comes second: refunds must still be found.
		a := conversation(t, "Do you ship to Germany?", "what about returns?")
		if a.IsFallback || len(a.Citations) == 0 || a.Citations[0].DocumentName != "Refund policy" || !strings.Contains(a.Message, "30 days") {
			t.Fatalf("answer = %+v", a)
		}
		if tr := trace(t, a); tr["query"] != "what about returns?\nDo you ship to Germany?" {
			t.Fatalf("trace query %q", tr["query"])
		}
	})
	t.Run("a stand-alone question is searched as asked", func(t *testing.T) {
		a := conversation(t, "How long does standard delivery take?", "Can I return unused items for a full refund?")
		if a.IsFallback || len(a.Citations) == 0 || a.Citations[0].DocumentName != "Refund policy" {
			t.Fatalf("answer = %+v", a)
		}
		if tr := trace(t, a); tr["question"] != tr["query"] || tr["queryNote"] != nil {
			t.Fatalf("trace question %q, query %q, note %v", tr["question"], tr["query"], tr["queryNote"])
		}
	})
}
