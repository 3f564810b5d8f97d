package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// End-to-end tests of POST /api/webhooks/inbound against a real process:
// PostgreSQL, Redis and the asynq worker are all real.

const webhookPath = "/api/webhooks/inbound"

// whSession creates an agent (slug) in the tenant's workspace and opens a
// session with it through the public API, returning the session id.
func whSession(s *stack, tn tenant, slug string) string {
	s.t.Helper()
	r := s.do("POST", "/api/v2/agents", map[string]any{"slug": slug, "name": "Agent " + slug}, tn.auth())
	if r.Status != 201 && r.Status != 409 {
		s.t.Fatalf("create agent %s: status %d: %s", slug, r.Status, r.Body)
	}
	return s.startSession(tn, slug)
}

// whPost posts body to the webhook with the given secret ("" sends none) and
// extra headers.
func whPost(s *stack, secret string, body any, extra header) response {
	s.t.Helper()
	h := header{"x-webhook-secret": secret}
	for k, v := range extra {
		h[k] = v
	}
	return s.do("POST", webhookPath, body, h)
}

func whChat(sessionID, message string) map[string]any {
	return map[string]any{"event": "chat.message", "sessionId": sessionID, "message": message}
}

// whCount runs a SELECT count(*) query on the stack's database.
func whCount(s *stack, query string, args ...any) int64 {
	s.t.Helper()
	var n int64
	if err := s.sys.db.Gorm.Raw(query, args...).Scan(&n).Error; err != nil {
		s.t.Fatalf("%s: %v", query, err)
	}
	return n
}

// whEventStatus returns the stored status of an inbound event ("" if absent).
func whEventStatus(s *stack, eventID string) string {
	s.t.Helper()
	var status []string
	if err := s.sys.db.Gorm.Raw(`SELECT status FROM inbound_events WHERE id = ?`, eventID).Scan(&status).Error; err != nil {
		s.t.Fatal(err)
	}
	if len(status) == 0 {
		return ""
	}
	return status[0]
}

// whEventually polls cond every 20 ms until it holds or the deadline passes.
func whEventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// whAck is the 200 body of the webhook.
type whAck struct {
	Received    bool   `json:"received"`
	WorkspaceID string `json:"workspaceId"`
	EventID     string `json:"eventId"`
}

func whMustAck(s *stack, r response, workspaceID string) whAck {
	s.t.Helper()
	s.mustStatus(r, 200)
	var ack whAck
	r.decode(s.t, &ack)
	if !ack.Received || ack.WorkspaceID != workspaceID || !domain.ValidID(domain.PrefixInboundEvent, ack.EventID) {
		s.t.Fatalf("ack = %+v, want received true, workspaceId %s and an evt_ id", ack, workspaceID)
	}
	return ack
}

// whConversation fetches a conversation with (the first page of) its messages.
type whConv struct {
	ID           string `json:"id"`
	MessageCount int    `json:"messageCount"`
	LastMessage  string `json:"lastMessage"`
	Messages     struct {
		Data []struct {
			ID      string `json:"id"`
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"data"`
	} `json:"messages"`
}

func whGetConversation(s *stack, tn tenant, id string) whConv {
	s.t.Helper()
	r := s.do("GET", "/api/v2/conversations/"+id+"?limit=100", nil, tn.auth())
	s.mustStatus(r, 200)
	var c whConv
	r.decode(s.t, &c)
	return c
}

func TestWebhookRefusalsStoreNothing(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: true})
	std := s.newTenant(domain.PlanStandard)
	free := s.newTenant(domain.PlanFree)
	hobby := s.newTenant(domain.PlanHobby)
	other := s.newTenant(domain.PlanStandard)
	sess := whSession(s, std, "support")
	otherSess := whSession(s, other, "support")

	huge := `{"event":"chat.message","sessionId":"` + sess + `","message":"` + strings.Repeat("a", 1<<20+10) + `"}`
	tests := []struct {
		name   string
		secret string
		body   any
		status int
		code   string
	}{
		{"no secret", "", whChat(sess, "hi"), 401, "UNAUTHORIZED"},
		{"wrong secret", "whsec_" + strings.Repeat("x", 52), whChat(sess, "hi"), 401, "UNAUTHORIZED"},
		{"secret of the right shape for nobody", domain.NewSecret(domain.PrefixWebhookSecret), whChat(sess, "hi"), 401, "UNAUTHORIZED"},
		{"free plan", free.WebhookSecret, map[string]any{"event": "user.typing"}, 403, "PLAN_UPGRADE_REQUIRED"},
		{"hobby plan", hobby.WebhookSecret, map[string]any{"event": "user.typing"}, 403, "PLAN_UPGRADE_REQUIRED"},
		{"bad JSON", std.WebhookSecret, `{"event": "chat.message",`, 400, "VALIDATION_ERROR"},
		{"body is not an object", std.WebhookSecret, `["chat.message"]`, 400, "VALIDATION_ERROR"},
		{"empty body", std.WebhookSecret, " ", 400, "VALIDATION_ERROR"},
		{"missing event", std.WebhookSecret, map[string]any{"sessionId": sess, "message": "hi"}, 400, "VALIDATION_ERROR"},
		{"chat.message without sessionId", std.WebhookSecret, map[string]any{"event": "chat.message", "message": "hi"}, 400, "VALIDATION_ERROR"},
		{"chat.message without message", std.WebhookSecret, map[string]any{"event": "chat.message", "sessionId": sess}, 400, "VALIDATION_ERROR"},
		{"blank message", std.WebhookSecret, whChat(sess, " \n\t "), 400, "VALIDATION_ERROR"},
		{"message over 8000 characters", std.WebhookSecret, whChat(sess, strings.Repeat("é", 8001)), 400, "VALIDATION_ERROR"},
		{"unknown field", std.WebhookSecret, map[string]any{"event": "chat.message", "sessionId": sess, "message": "hi", "channel": "sms"}, 400, "VALIDATION_ERROR"},
		// The schema has additionalProperties: false and names are case-sensitive,
		// so a mis-cased field is an unknown field, not an alias.
		{"field name in another letter case", std.WebhookSecret, map[string]any{"event": "chat.message", "sessionID": sess, "message": "hi"}, 400, "VALIDATION_ERROR"},
		{"body over 1 MiB", std.WebhookSecret, huge, 413, "PAYLOAD_TOO_LARGE"},
		{"unknown session", std.WebhookSecret, whChat(domain.NewID(domain.PrefixSession), "hi"), 404, "NOT_FOUND"},
		{"malformed session id", std.WebhookSecret, whChat("ses_nope", "hi"), 404, "NOT_FOUND"},
		{"session of another workspace", std.WebhookSecret, whChat(otherSess, "hi"), 404, "NOT_FOUND"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Let any earlier (wrongly) accepted event finish first, so a failure
			// of one case cannot show up in the counts of the next.
			whWaitQueueIdle(t, s)
			events0 := whCount(s, `SELECT count(*) FROM inbound_events`)
			messages0 := whCount(s, `SELECT count(*) FROM messages`)
			r := whPost(s, tt.secret, tt.body, nil)
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d: %.300s", r.Status, tt.status, r.Body)
			}
			if code := r.errorCode(t); code != tt.code {
				t.Fatalf("error.code %q, want %q: %.300s", code, tt.code, r.Body)
			}
			if n := whCount(s, `SELECT count(*) FROM inbound_events`) - events0; n != 0 {
				t.Fatalf("%d inbound events stored by a refused request, want 0", n)
			}
			if n := whCount(s, `SELECT count(*) FROM messages`) - messages0; n != 0 {
				t.Fatalf("%d messages stored by a refused request, want 0", n)
			}
		})
	}

	// The plan refusal names the feature and the plan.
	r := whPost(s, free.WebhookSecret, whChat(sess, "hi"), nil)
	var body struct {
		Error struct {
			Details map[string]string `json:"details"`
		} `json:"error"`
	}
	r.decode(t, &body)
	if body.Error.Details["feature"] != "apiAccess" || body.Error.Details["plan"] != "free" {
		t.Fatalf("403 details = %v, want feature apiAccess and plan free", body.Error.Details)
	}

	// The refused requests of the other workspace's session left it untouched.
	if c := whGetConversation(s, other, otherSess); c.MessageCount != 0 || len(c.Messages.Data) != 0 {
		t.Fatalf("the other workspace's session got %d messages", c.MessageCount)
	}
}

func TestWebhookUnknownEventIsAcknowledged(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: true})
	tn := s.newTenant(domain.PlanStandard)
	sess := whSession(s, tn, "support")

	r := whPost(s, tn.WebhookSecret, map[string]any{"event": "user.typing", "sessionId": sess, "message": "typing"}, nil)
	ack := whMustAck(s, r, tn.ID)
	// The spec's 200 is exactly {received, workspaceId}, plus our eventId.
	if m := r.JSON(t); len(m) != 3 || m["received"] != true {
		t.Fatalf("body = %s, want only received, workspaceId and eventId", r.Body)
	}
	if got := whEventStatus(s, ack.EventID); got != string(domain.InboundIgnored) {
		t.Fatalf("stored status %q, want IGNORED", got)
	}
	// An unknown event without any other field is acknowledged too.
	whMustAck(s, whPost(s, tn.WebhookSecret, map[string]any{"event": "conversation.closed"}, nil), tn.ID)
	// So is one whose message no chat message could have, as the contract
	// has any other event acknowledged: it is kept without the message
	// (TestOversizeMessagesAreNotStored holds the chat routes to a 400).
	long := whMustAck(s, whPost(s, tn.WebhookSecret, map[string]any{"event": "ticket.note", "message": strings.Repeat("where is my parcel ", 50_000)}, nil), tn.ID)
	var kept string
	if err := s.sys.db.Gorm.Raw(`SELECT message FROM inbound_events WHERE id = ?`, long.EventID).Scan(&kept).Error; err != nil || kept != "" {
		t.Fatalf("stored message of %d characters (%v), want none", len(kept), err)
	}

	// Nothing is ever appended for them, even once the worker had time to run:
	// a chat.message sent afterwards is processed, and it is the only message.
	chat := whMustAck(s, whPost(s, tn.WebhookSecret, whChat(sess, "after the unknown events"), nil), tn.ID)
	whEventually(t, 10*time.Second, "the chat.message to be processed", func() bool {
		return whEventStatus(s, chat.EventID) == string(domain.InboundProcessed)
	})
	c := whGetConversation(s, tn, sess)
	if c.MessageCount != 1 || len(c.Messages.Data) != 1 || c.Messages.Data[0].Content != "after the unknown events" {
		t.Fatalf("conversation = %+v, want only the chat.message", c)
	}
}

func TestWebhookStoresBeforeAcknowledging(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: false})
	tn := s.newTenant(domain.PlanStandard)
	sess := whSession(s, tn, "support")
	// Message length is counted in characters: 8,000 two-byte runes are accepted.
	long := strings.Repeat("é", 8000)

	ack := whMustAck(s, whPost(s, tn.WebhookSecret, whChat(sess, "Where is my order?"), nil), tn.ID)
	longAck := whMustAck(s, whPost(s, tn.WebhookSecret, whChat(sess, long), nil), tn.ID)

	// The worker is not running: the 200 was given for a committed event only.
	var row struct {
		WorkspaceID string
		Event       string
		SessionID   string
		Message     string
		Status      string
		MessageID   *string
	}
	if err := s.sys.db.Gorm.Raw(`SELECT workspace_id, event, session_id, message, status, message_id FROM inbound_events WHERE id = ?`, ack.EventID).
		Scan(&row).Error; err != nil {
		t.Fatal(err)
	}
	if row.Status != string(domain.InboundPending) || row.WorkspaceID != tn.ID || row.Event != "chat.message" ||
		row.SessionID != sess || row.Message != "Where is my order?" || row.MessageID != nil {
		t.Fatalf("stored event = %+v, want a PENDING chat.message of this workspace and session", row)
	}
	if n := whCount(s, `SELECT count(*) FROM messages`); n != 0 {
		t.Fatalf("%d messages appended with no worker running, want 0", n)
	}
	if c := whGetConversation(s, tn, sess); c.MessageCount != 0 {
		t.Fatalf("messageCount %d before processing, want 0", c.MessageCount)
	}

	s.startWorker()
	whEventually(t, 15*time.Second, "both USER messages in the conversation", func() bool {
		return len(whGetConversation(s, tn, sess).Messages.Data) == 2
	})
	c := whGetConversation(s, tn, sess)
	if c.MessageCount != 2 {
		t.Fatalf("messageCount %d, want 2", c.MessageCount)
	}
	got := map[string]bool{}
	for _, m := range c.Messages.Data {
		if m.Role != "USER" {
			t.Fatalf("message %s has role %s, want USER", m.ID, m.Role)
		}
		got[m.Content] = true
	}
	if !got["Where is my order?"] || !got[long] {
		t.Fatalf("messages = %+v, want both contents", c.Messages.Data)
	}
	for _, id := range []string{ack.EventID, longAck.EventID} {
		whEventually(t, 10*time.Second, "event "+id+" PROCESSED", func() bool {
			return whEventStatus(s, id) == string(domain.InboundProcessed)
		})
	}
	// The event records which message it produced.
	if n := whCount(s, `SELECT count(*) FROM inbound_events e JOIN messages m ON m.id = e.message_id AND m.inbound_event_id = e.id WHERE e.id = ?`, ack.EventID); n != 1 {
		t.Fatalf("event %s is not linked to its message", ack.EventID)
	}
}

func TestWebhookIdempotencyKey(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: true})
	a := s.newTenant(domain.PlanStandard)
	b := s.newTenant(domain.PlanEnterprise)
	sessA := whSession(s, a, "support")
	sessB := whSession(s, b, "support")
	key := header{"Idempotency-Key": "order-42-message-1"}

	first := whMustAck(s, whPost(s, a.WebhookSecret, whChat(sessA, "hello once"), key), a.ID)
	again := whMustAck(s, whPost(s, a.WebhookSecret, whChat(sessA, "hello once"), key), a.ID)
	if again.EventID != first.EventID {
		t.Fatalf("retry got eventId %s, want the first one %s", again.EventID, first.EventID)
	}
	// The same JSON serialised differently is still the same request.
	reordered := `{ "message": "hello once",  "sessionId": "` + sessA + `", "event": "chat.message" }`
	if r := whMustAck(s, whPost(s, a.WebhookSecret, reordered, key), a.ID); r.EventID != first.EventID {
		t.Fatalf("re-serialised retry got eventId %s, want %s", r.EventID, first.EventID)
	}

	// Same key, another body: 409, nothing stored.
	r := whPost(s, a.WebhookSecret, whChat(sessA, "hello twice"), key)
	if r.Status != 409 || r.errorCode(t) != "CONFLICT" {
		t.Fatalf("same key with another body: status %d %s, want 409 CONFLICT", r.Status, r.Body)
	}

	// The same key in another workspace is another event.
	other := whMustAck(s, whPost(s, b.WebhookSecret, whChat(sessB, "hello from B"), key), b.ID)
	if other.EventID == first.EventID {
		t.Fatal("another workspace's event with the same key got the same eventId")
	}

	for _, id := range []string{first.EventID, other.EventID} {
		whEventually(t, 10*time.Second, "event "+id+" PROCESSED", func() bool {
			return whEventStatus(s, id) == string(domain.InboundProcessed)
		})
	}
	// A retry after processing still answers the first eventId and appends nothing.
	if r := whMustAck(s, whPost(s, a.WebhookSecret, whChat(sessA, "hello once"), key), a.ID); r.EventID != first.EventID {
		t.Fatalf("retry after processing got eventId %s, want %s", r.EventID, first.EventID)
	}
	whWaitQueueIdle(t, s)

	if n := whCount(s, `SELECT count(*) FROM inbound_events WHERE workspace_id = ?`, a.ID); n != 1 {
		t.Fatalf("workspace A has %d inbound events, want 1", n)
	}
	ca := whGetConversation(s, a, sessA)
	if ca.MessageCount != 1 || len(ca.Messages.Data) != 1 || ca.Messages.Data[0].Role != "USER" || ca.Messages.Data[0].Content != "hello once" {
		t.Fatalf("workspace A conversation = %+v, want exactly one USER message", ca)
	}
	cb := whGetConversation(s, b, sessB)
	if cb.MessageCount != 1 || len(cb.Messages.Data) != 1 || cb.Messages.Data[0].Content != "hello from B" {
		t.Fatalf("workspace B conversation = %+v, want its own message", cb)
	}

	// A key over 255 characters is refused.
	long := header{"Idempotency-Key": strings.Repeat("k", 256)}
	if r := whPost(s, a.WebhookSecret, whChat(sessA, "x"), long); r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" {
		t.Fatalf("256-character Idempotency-Key: status %d %s, want 400", r.Status, r.Body)
	}
}

// whWaitQueueIdle waits until the asynq queues hold no pending, active or
// retrying task, so "nothing more is appended" is checked after the worker
// is done rather than after a guessed sleep.
func whWaitQueueIdle(t *testing.T, s *stack) {
	t.Helper()
	ctx := context.Background()
	whEventually(t, 15*time.Second, "the task queues to drain", func() bool {
		var total int64
		for _, q := range []string{"inbound", "default"} {
			for _, state := range []string{"pending", "active", "retry", "scheduled"} {
				key := fmt.Sprintf("asynq:{%s}:%s", q, state)
				var n int64
				var err error
				if state == "pending" || state == "active" {
					n, err = s.sys.redis.LLen(ctx, key).Result()
				} else {
					n, err = s.sys.redis.ZCard(ctx, key).Result()
				}
				if err != nil {
					t.Fatalf("reading %s: %v", key, err)
				}
				total += n
			}
		}
		return total == 0
	})
}

func TestWebhookBacklogSurvivesWorkerRestart(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: false})
	tn := s.newTenant(domain.PlanStandard)
	sessions := []string{whSession(s, tn, "sales"), whSession(s, tn, "support"), whSession(s, tn, "billing")}

	const total = 200
	start := time.Now()
	for i := range total {
		whMustAck(s, whPost(s, tn.WebhookSecret, whChat(sessions[i%len(sessions)], fmt.Sprintf("backlog message %03d", i)), nil), tn.ID)
	}
	t.Logf("posted %d events in %s", total, time.Since(start).Round(time.Millisecond))
	if n := whCount(s, `SELECT count(*) FROM inbound_events WHERE status = 'PENDING'`); n != total {
		t.Fatalf("%d PENDING events with the worker stopped, want %d", n, total)
	}
	userMessages := func() int64 { return whCount(s, `SELECT count(*) FROM messages WHERE role = 'USER'`) }

	s.startWorker()
	whEventually(t, 15*time.Second, "at least 20 messages processed", func() bool { return userMessages() >= 20 })
	s.stopWorkerAndWait()
	mid := userMessages()
	if mid < total {
		t.Logf("worker stopped after %d of %d messages", mid, total)
	} else {
		t.Logf("the worker processed all %d messages before it could be stopped; the restart path was not exercised", total)
	}
	// Stopped means stopped: nothing more is appended while it is down.
	time.Sleep(200 * time.Millisecond)
	if now := userMessages(); now != mid {
		t.Fatalf("%d messages appended after the worker stopped (had %d)", now-mid, mid)
	}

	s.startWorker()
	whEventually(t, 30*time.Second, "all 200 messages appended", func() bool { return userMessages() >= total })
	whEventually(t, 10*time.Second, "all events PROCESSED", func() bool {
		return whCount(s, `SELECT count(*) FROM inbound_events WHERE status = 'PROCESSED'`) == total
	})
	whWaitQueueIdle(t, s)

	if n := userMessages(); n != total {
		t.Fatalf("%d USER messages, want exactly %d", n, total)
	}
	var dupes []string
	if err := s.sys.db.Gorm.Raw(`SELECT content FROM messages GROUP BY content HAVING count(*) > 1`).Scan(&dupes).Error; err != nil {
		t.Fatal(err)
	}
	if len(dupes) > 0 {
		t.Fatalf("messages appended more than once: %v", dupes)
	}
	// Every event is linked to a distinct message with its own content.
	if n := whCount(s, `SELECT count(*) FROM inbound_events e JOIN messages m ON m.id = e.message_id
		WHERE m.inbound_event_id = e.id AND m.content = e.message AND m.conversation_id = e.session_id AND m.role = 'USER'`); n != total {
		t.Fatalf("%d events linked to their message, want %d", n, total)
	}
	// The API agrees: message counts add up, and each session got its share.
	var sum int
	for i, id := range sessions {
		c := whGetConversation(s, tn, id)
		want := total / len(sessions)
		if i < total%len(sessions) {
			want++
		}
		if c.MessageCount != want {
			t.Errorf("session %d has messageCount %d, want %d", i, c.MessageCount, want)
		}
		sum += c.MessageCount
	}
	if sum != total {
		t.Fatalf("messageCount sums to %d, want %d", sum, total)
	}
}

func TestWebhookSecretRotation(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: false})
	tn := s.newTenant(domain.PlanStandard)
	other := s.newTenant(domain.PlanStandard)
	ctx := context.Background()
	ping := map[string]any{"event": "user.typing"}

	original := tn.WebhookSecret
	whMustAck(s, whPost(s, original, ping, nil), tn.ID)

	rotated, err := s.sys.workspaces.RotateWebhookSecret(ctx, tn.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	second := rotated.WebhookSecret
	if second == original || !strings.HasPrefix(second, domain.PrefixWebhookSecret) {
		t.Fatalf("rotated secret %q, want a new whsec_ secret", second)
	}
	for name, secret := range map[string]string{"new": second, "previous, within grace": original} {
		r := whPost(s, secret, ping, nil)
		if r.Status != 200 {
			t.Fatalf("%s secret: status %d %s, want 200", name, r.Status, r.Body)
		}
		whMustAck(s, r, tn.ID)
	}
	// Rotating one workspace changes nothing for another.
	whMustAck(s, whPost(s, other.WebhookSecret, ping, nil), other.ID)

	rotated, err = s.sys.workspaces.RotateWebhookSecret(ctx, tn.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	third := rotated.WebhookSecret
	if third == second || third == original {
		t.Fatal("second rotation did not make a new secret")
	}
	for name, secret := range map[string]string{"previous (grace 0)": second, "original": original} {
		r := whPost(s, secret, ping, nil)
		if r.Status != 401 || r.errorCode(t) != "UNAUTHORIZED" {
			t.Fatalf("%s secret after rotation with grace 0: status %d %s, want 401", name, r.Status, r.Body)
		}
	}
	whMustAck(s, whPost(s, third, ping, nil), tn.ID)

	// Out-of-range grace periods are refused and change nothing.
	for _, grace := range []time.Duration{-time.Second, 721 * time.Hour} {
		if _, err := s.sys.workspaces.RotateWebhookSecret(ctx, tn.ID, grace); err == nil {
			t.Fatalf("grace %s accepted", grace)
		}
	}
	whMustAck(s, whPost(s, third, ping, nil), tn.ID)
}
