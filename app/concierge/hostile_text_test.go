package main

import (
	"bufio"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/core/domain"
)

// The text rule (docs/api.md, Errors): text that is not valid UTF-8 or
// holds a NUL character is refused with 400 VALIDATION_ERROR naming the
// field, on every route and header, and nothing of the request is stored.
// PostgreSQL refuses both in text columns, so before the rule each of these
// was a 500, some after part of the request's work was committed.

// rowCounts counts the rows a refused request must not add.
func (s *stack) rowCounts() map[string]int64 {
	s.t.Helper()
	counts := map[string]int64{}
	for _, table := range []string{"agents", "sources", "conversations", "messages", "inbound_events", "outbox"} {
		var n int64
		if err := s.sys.db.Gorm.Table(table).Count(&n).Error; err != nil {
			s.t.Fatalf("count %s: %v", table, err)
		}
		counts[table] = n
	}
	return counts
}

// rawRequest sends request bytes as they are over a new connection and
// returns the answer: Go's client refuses to send a NUL in a header, an
// attacker's client does not.
func (s *stack) rawRequest(request string) response {
	s.t.Helper()
	conn, err := net.DialTimeout("tcp", strings.TrimPrefix(s.base, "http://"), 5*time.Second)
	if err != nil {
		s.t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		s.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		s.t.Fatalf("reading the answer to a raw request: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{Status: resp.StatusCode, Header: resp.Header, Body: body}
}

func TestHostileTextIsRefused(t *testing.T) {
	s := newStack(t, stackOptions{})
	std := s.newTenant(domain.PlanStandard)
	ent := s.newTenant(domain.PlanEnterprise)
	for _, tn := range []tenant{std, ent} {
		s.mustStatus(s.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()), 201)
		s.mustStatus(s.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "text", "name": "Shipping", "content": "We ship in 2 days."}, tn.auth()), 201)
	}
	// A session with an answer, for the session routes and the reply's feedback.
	var chat struct {
		SessionID string `json:"sessionId"`
		MessageID string `json:"messageId"`
	}
	first := s.do("POST", "/api/v2/chat", map[string]any{"message": "How long does shipping take?"}, std.auth())
	s.mustStatus(first, 200)
	first.decode(t, &chat)

	identity := func(payload string) header {
		id := base64.RawURLEncoding.EncodeToString([]byte(payload))
		return header{"Authorization": "Bearer " + ent.Key, "X-Service-Identity": id, "X-Service-Signature": domain.SignIdentity(ent.WebhookSecret, id)}
	}
	hook := header{"x-webhook-secret": std.WebhookSecret}

	tests := []struct {
		name   string
		method string
		path   string
		body   string
		h      header
		field  string // the details key; "" for a body-wide refusal
	}{
		{"agent name with NUL", "POST", "/api/v2/agents", `{"slug":"second","name":"A\u0000B"}`, std.auth(), "name"},
		{"agent prompt with NUL", "PATCH", "/api/v2/agents/support", `{"systemPrompt":"be kind\u0000"}`, std.auth(), "systemPrompt"},
		{"agent topics with NUL", "PATCH", "/api/v2/agents/support", `{"blockedTopics":["ok","b\u0000d"]}`, std.auth(), "blockedTopics[1]"},
		{"agent body not UTF-8", "POST", "/api/v2/agents", "{\"slug\":\"second\",\"name\":\"A\xff\xfeB\"}", std.auth(), ""},
		{"source content with NUL", "POST", "/api/v2/agents/support/sources", `{"type":"text","name":"x","content":"a\u0000b"}`, std.auth(), "content"},
		{"v2 chat message with NUL", "POST", "/api/v2/chat", `{"message":"hello\u0000there"}`, std.auth(), "message"},
		{"v2 chat message not UTF-8", "POST", "/api/v2/chat", "{\"message\":\"hello \xc3\x28 there\"}", std.auth(), ""},
		{"v2 stream with NUL", "POST", "/api/v2/chat", `{"message":"hello\u0000","stream":true}`, std.auth(), "message"},
		{"retrieve query with NUL", "POST", "/api/v2/agents/support/retrieve", `{"query":"ship\u0000"}`, std.auth(), "query"},
		{"v1 message with NUL", "POST", "/api/chat/" + chat.SessionID + "/message", `{"message":"hi\u0000"}`, header{}, "message"},
		{"feedback comment with NUL", "POST", "/api/chat/" + chat.SessionID + "/messages/" + chat.MessageID + "/feedback", `{"rating":"up","comment":"gr\u0000eat"}`, header{}, "comment"},
		{"handoff note with NUL", "POST", "/api/chat/" + chat.SessionID + "/handoff", `{"name":"Ann","note":"call\u0000me"}`, header{}, "note"},
		{"human reply with NUL", "POST", "/api/v2/conversations/" + chat.SessionID + "/messages", `{"role":"HUMAN","content":"hi\u0000"}`, std.auth(), "content"},
		{"human reply author with NUL", "POST", "/api/v2/conversations/" + chat.SessionID + "/messages", `{"role":"HUMAN","content":"hi","authorName":"A\u0000"}`, std.auth(), "authorName"},
		{"webhook message with NUL", "POST", "/api/webhooks/inbound", `{"event":"chat.message","sessionId":"` + chat.SessionID + `","message":"a\u0000b"}`, hook, "message"},
		{"unknown webhook event with NUL", "POST", "/api/webhooks/inbound", `{"event":"custom.note","message":"a\u0000b"}`, hook, "message"},
		{"webhook Idempotency-Key not UTF-8", "POST", "/api/webhooks/inbound", `{"event":"chat.message","sessionId":"` + chat.SessionID + `","message":"ab"}`,
			header{"x-webhook-secret": std.WebhookSecret, "Idempotency-Key": "key-\xff\xfe"}, "Idempotency-Key"},
		{"identity userId with NUL", "POST", "/api/v2/chat", `{"message":"hello"}`, identity(`{"userId":"u\u0000"}`), ""},
		{"identity name with NUL", "POST", "/api/v1/sessions", `{}`, identity(`{"userId":"u1","name":"A\u0000"}`), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := s.rowCounts()
			r := s.do(tt.method, tt.path, tt.body, tt.h)
			if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
				t.Fatalf("status %d %s, want 400 VALIDATION_ERROR", r.Status, r.Body)
			}
			if tt.field != "" {
				var body struct {
					Error struct {
						Details map[string]string `json:"details"`
					} `json:"error"`
				}
				r.decode(t, &body)
				if body.Error.Details[tt.field] == "" {
					t.Errorf("details %v do not name %s", body.Error.Details, tt.field)
				}
			}
			if after := s.rowCounts(); !equalCounts(before, after) {
				t.Errorf("rows before %v, after %v: a refused request stored something", before, after)
			}
		})
	}

	t.Run("multipart fields", func(t *testing.T) {
		for name, tc := range map[string]struct {
			fields   map[string]string
			filename string
		}{
			"name with NUL":      {map[string]string{"type": "file", "name": "guide\x00"}, "guide.md"},
			"name not UTF-8":     {map[string]string{"type": "file", "name": "guide\xff"}, "guide.md"},
			"filename not UTF-8": {map[string]string{"type": "file"}, "gu\xffide.md"},
		} {
			t.Run(name, func(t *testing.T) {
				before := s.rowCounts()
				r := s.upload(std, "support", tc.fields, tc.filename, []byte("# Guide\n\nShipping takes 2 days."))
				if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
					t.Fatalf("status %d %s, want 400 VALIDATION_ERROR", r.Status, r.Body)
				}
				if after := s.rowCounts(); !equalCounts(before, after) {
					t.Errorf("rows before %v, after %v", before, after)
				}
			})
		}
	})

	t.Run("NUL in a header", func(t *testing.T) {
		before := s.rowCounts()
		body := `{"event":"chat.message","sessionId":"` + chat.SessionID + `","message":"ab"}`
		r := s.rawRequest("POST /api/webhooks/inbound HTTP/1.1\r\nHost: test\r\nConnection: close\r\n" +
			"x-webhook-secret: " + std.WebhookSecret + "\r\nIdempotency-Key: a\x00b\r\nContent-Type: application/json\r\n" +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
		if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
			t.Fatalf("status %d %s, want 400 VALIDATION_ERROR", r.Status, r.Body)
		}
		if after := s.rowCounts(); !equalCounts(before, after) {
			t.Errorf("rows before %v, after %v", before, after)
		}
	})

	// The same routes still take good text, NUL-free UTF-8 of every plane.
	t.Run("good text still passes", func(t *testing.T) {
		r := s.do("POST", "/api/v2/chat", map[string]any{"message": "Où est ma commande 📦 ? 送料は？"}, std.auth())
		s.mustStatus(r, 200)
		r = s.do("POST", "/api/webhooks/inbound", map[string]any{"event": "chat.message", "sessionId": chat.SessionID, "message": "Ça va 👍"},
			header{"x-webhook-secret": std.WebhookSecret, "Idempotency-Key": "clé-1"})
		s.mustStatus(r, 200)
	})
}

func equalCounts(a, b map[string]int64) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return len(a) == len(b)
}

// TestOversizeMessagesAreNotStored: a message over the limit is refused
// before anything is kept, in PostgreSQL or in the session's Redis log,
// however it arrives; before, an anonymous visitor's 1 MiB message got a
// guardrail answer and was stored whole in both.
func TestOversizeMessagesAreNotStored(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	s.mustStatus(s.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()), 201)
	session := s.startSession(tn, "support")
	huge := strings.Repeat("where is my parcel ", 50_000) // 950,000 characters, under the 1 MiB body limit
	over := strings.Repeat("é", 8001)                     // one character over, in 16 KB
	logKey := redisadapter.LogKeyFor(session)
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		h          header
	}{
		{"widget message of 950,000 characters", "/api/chat/" + session + "/message", map[string]any{"message": huge}, header{}},
		{"widget message one character over", "/api/chat/" + session + "/message", map[string]any{"message": over}, header{}},
		{"v2 chat", "/api/v2/chat", map[string]any{"sessionId": session, "message": huge}, tn.auth()},
		{"v2 stream", "/api/v2/chat", map[string]any{"sessionId": session, "message": huge, "stream": true}, tn.auth()},
		{"webhook message", "/api/webhooks/inbound", map[string]any{"event": "chat.message", "sessionId": session, "message": huge}, header{"x-webhook-secret": tn.WebhookSecret}},
		{"human reply", "/api/v2/conversations/" + session + "/messages", map[string]any{"role": "HUMAN", "content": over}, tn.auth()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := s.rowCounts()
			logBefore, err := s.sys.redis.XLen(context.Background(), logKey).Result()
			if err != nil {
				t.Fatal(err)
			}
			r := s.do("POST", tc.path, tc.body, tc.h)
			if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
				t.Fatalf("status %d %.300s, want 400 VALIDATION_ERROR", r.Status, r.Body)
			}
			if after := s.rowCounts(); !equalCounts(before, after) {
				t.Errorf("rows before %v, after %v: an oversize message was stored", before, after)
			}
			if logAfter, _ := s.sys.redis.XLen(context.Background(), logKey).Result(); logAfter != logBefore {
				t.Errorf("the session's Redis log grew from %d to %d entries", logBefore, logAfter)
			}
		})
	}
	// At the limit is still a message.
	r := s.do("POST", "/api/chat/"+session+"/message", map[string]any{"message": strings.Repeat("é", 8000)}, header{})
	s.mustStatus(r, 200)
}
