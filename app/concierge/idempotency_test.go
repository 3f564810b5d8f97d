package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// postStreamWith is postStream with extra headers.
func (s *stack) postStreamWith(path string, body map[string]any, h header) *http.Response {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", s.base+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range h {
		req.Header.Set(k, v)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

// messageCount is the conversation's stored message count.
func (s *stack) messageCount(tn tenant, session string) float64 {
	s.t.Helper()
	r := s.do("GET", "/api/v2/conversations/"+session, nil, tn.auth())
	s.mustStatus(r, 200)
	n, _ := r.JSON(s.t)["messageCount"].(float64)
	return n
}

// TestChatIdempotencyKey: docs/api.md tells a client whose JSON call failed
// to send it again; with an Idempotency-Key the retry gets the stored answer
// instead of a second question and a second answer (before: every retry
// stored a new turn, and a client that gave up had its turn stored anyway).
func TestChatIdempotencyKey(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	other := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	supportAgent(s, other)
	keyed := func(tn tenant, key string) header {
		h := tn.auth()
		h["Idempotency-Key"] = key
		return h
	}
	ask := map[string]any{"agent": "support", "message": "How long does shipping take?"}

	first := s.do("POST", "/api/v2/chat", ask, keyed(tn, "order-1234-q1"))
	s.mustStatus(first, 200)
	var a answerBody
	first.decode(t, &a)
	if a.MessageID == nil || !strings.Contains(a.Message, "business days") {
		t.Fatalf("first answer %+v", a)
	}

	t.Run("a JSON retry gets the stored answer", func(t *testing.T) {
		again := s.do("POST", "/api/v2/chat", ask, keyed(tn, "order-1234-q1"))
		s.mustStatus(again, 200)
		if string(again.Body) != string(first.Body) {
			t.Errorf("retry answered %s, want the first answer %s", again.Body, first.Body)
		}
		if n := s.messageCount(tn, a.SessionID); n != 2 {
			t.Errorf("%v messages stored after a retry, want the one question and its reply", n)
		}
	})
	t.Run("a streamed retry replays it", func(t *testing.T) {
		body := map[string]any{"agent": "support", "message": "How long does shipping take?", "stream": true}
		// The first call was JSON: its answer was stored as one token.
		resp := s.postStreamWith("/api/v2/chat", body, keyed(tn, "order-1234-q1"))
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); resp.StatusCode != 200 || !strings.HasPrefix(ct, "text/event-stream") {
			t.Fatalf("status %d, Content-Type %q", resp.StatusCode, ct)
		}
		events := readSSE(t, resp.Body, 0)
		var text strings.Builder
		for _, ev := range events {
			if ev.Data["type"] == "token" {
				text.WriteString(ev.Data["content"].(string))
			}
		}
		done := events[len(events)-1].Data
		if done["type"] != "done" || done["messageId"] != *a.MessageID || done["message"] != a.Message || text.String() != a.Message {
			t.Errorf("replayed stream ends %v with tokens %q, want the first answer %q", done, text.String(), a.Message)
		}
		if n := s.messageCount(tn, a.SessionID); n != 2 {
			t.Errorf("%v messages stored after a streamed retry", n)
		}
	})
	t.Run("the same key for another question is a conflict", func(t *testing.T) {
		r := s.do("POST", "/api/v2/chat", map[string]any{"agent": "support", "message": "Can I return an item?"}, keyed(tn, "order-1234-q1"))
		if r.Status != 409 || r.errorCode(t) != "CONFLICT" || !strings.Contains(string(r.Body), "Idempotency-Key") {
			t.Fatalf("status %d %s, want 409 CONFLICT naming the key", r.Status, r.Body)
		}
	})
	t.Run("keys are the workspace's own", func(t *testing.T) {
		r := s.do("POST", "/api/v2/chat", ask, keyed(other, "order-1234-q1"))
		s.mustStatus(r, 200)
		var b answerBody
		r.decode(t, &b)
		if b.SessionID == a.SessionID || b.MessageID == nil || *b.MessageID == *a.MessageID {
			t.Errorf("another workspace got this workspace's answer: %+v", b)
		}
	})
	t.Run("a new key asks again", func(t *testing.T) {
		r := s.do("POST", "/api/v2/chat", ask, keyed(tn, "order-1234-q2"))
		s.mustStatus(r, 200)
		var b answerBody
		r.decode(t, &b)
		if b.SessionID == a.SessionID {
			t.Errorf("a new key reused the first turn")
		}
	})
	t.Run("a bad key is refused", func(t *testing.T) {
		r := s.do("POST", "/api/v2/chat", ask, keyed(tn, strings.Repeat("k", 256)))
		if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
			t.Errorf("256-character key: %d %s", r.Status, r.Body)
		}
	})

	t.Run("the widget route, scoped to its session", func(t *testing.T) {
		session := s.startSession(tn, "support")
		otherSession := s.startSession(tn, "support")
		msg := map[string]any{"message": "Can I return an item?"}
		h := header{"Idempotency-Key": "widget-7"}
		first := s.do("POST", "/api/chat/"+session+"/message", msg, h)
		s.mustStatus(first, 200)
		again := s.do("POST", "/api/chat/"+session+"/message", msg, h)
		s.mustStatus(again, 200)
		if string(again.Body) != string(first.Body) {
			t.Errorf("retry answered %s, want %s", again.Body, first.Body)
		}
		if n := s.messageCount(tn, session); n != 2 {
			t.Errorf("%v messages after a retry, want 2", n)
		}
		// Another visitor's session with the same key is another question.
		elsewhere := s.do("POST", "/api/chat/"+otherSession+"/message", msg, h)
		s.mustStatus(elsewhere, 200)
		if string(elsewhere.Body) == string(first.Body) || s.messageCount(tn, otherSession) != 2 {
			t.Errorf("a key in another session returned this session's answer: %s", elsewhere.Body)
		}
	})
}
