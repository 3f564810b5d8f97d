package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/report"
	"github.com/conciergehq/concierge/core/unanswered"
)

// secTail is the part of an API key that is never stored or shown: everything
// after the display prefix.
func secTail(secret string) string {
	return secret[len(domain.PrefixAPIKeySecret)+6:]
}

func TestDatabaseHoldsNoPlaintextAPIKey(t *testing.T) {
	s := newStack(t, stackOptions{withWorker: true, env: crawlEnv})
	ctx := context.Background()
	tn := s.newTenant(domain.PlanStandard)
	k2, secret2, err := s.sys.workspaces.CreateAPIKey(ctx, tn.ID, "ci")
	if err != nil {
		t.Fatal(err)
	}
	k3, secret3, err := s.sys.workspaces.CreateAPIKey(ctx, tn.ID, "old")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]string{tn.KeyID: tn.Key, k2.ID: secret2, k3.ID: secret3}

	// Use every key, so every table has rows written through real requests:
	// an agent, a session, an inbound event and its message, lastUsedAt.
	sess := whSession(s, tn, "support")
	for _, secret := range keys {
		s.mustStatus(s.do("GET", "/api/v2/agents", nil, header{"Authorization": "Bearer " + secret}), 200)
	}
	s.mustStatus(s.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "qa", "question": "Key?", "answer": "Never here."}, tn.auth()), 201)
	s.mustStatus(s.do("POST", "/api/v2/saved-replies", map[string]any{"shortcut": "keys", "title": "Keys", "body": "We never store keys."}, tn.auth()), 201)
	s.mustStatus(s.upload(tn, "support", map[string]string{"type": "file"}, "guide.md", []byte("# Guide\n\nKeys are never stored in plain text.")), 201)
	s.waitIndexed(tn, "support")
	ack := whMustAck(s, whPost(s, tn.WebhookSecret, whChat(sess, "hello"), nil), tn.ID)
	whEventually(t, 10*time.Second, "the inbound event to be processed", func() bool {
		return whEventStatus(s, ack.EventID) == string(domain.InboundProcessed)
	})
	// A handoff, delivered to the built-in inbox: the outbox and the delivery log.
	s.mustStatus(s.do("POST", "/api/chat/"+sess+"/handoff", map[string]any{"name": "Ada"}, nil), 200)
	whEventually(t, 10*time.Second, "the handoff to be delivered", func() bool {
		var n int64
		return s.sys.db.Gorm.Raw(`SELECT count(*) FROM delivery_attempts`).Scan(&n).Error == nil && n > 0
	})
	// The worker's report rollup (conversation_facts, report_days) and its
	// grouping of unanswered questions (the handoff above is one), run
	// here rather than waited for, then the team's answer to that topic
	// (unanswered_topic_sources).
	if _, err := report.NewRollup(s.sys.store, s.sys.clock, 0).Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.sys.unanswered.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	topics, err := s.sys.unanswered.List(ctx, tn.ID, unanswered.ListRequest{AgentSlug: "support"})
	if err != nil || len(topics.Items) == 0 {
		t.Fatalf("unanswered topics after the handoff: %+v, %v", topics, err)
	}
	if _, _, err := s.sys.unanswered.Answer(ctx, tn.ID, "support", topics.Items[0].ID,
		domain.TopicAnswer{Question: "Can I talk to a person?", Answer: "Yes: ask for one any time."}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.sys.workspaces.RevokeAPIKey(ctx, tn.ID, k3.ID); err != nil {
		t.Fatal(err)
	}
	// An answer in progress: rows of answers_in_progress live only while a
	// reply streams, so one is started by hand.
	question := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: tn.ID, ConversationID: sess, Role: domain.RoleUser,
		Content: "Still there?", ReplyID: domain.NewID(domain.PrefixMessage), CreatedAt: time.Now()}
	if _, _, err := s.sys.store.AppendMessage(ctx, question, ""); err != nil {
		t.Fatal(err)
	}
	// A crawl under way, held at its second page: its log in PostgreSQL.
	site := newCrawlSite(t, 2, "", func(path string) bool { return path == "/p/1" })
	s.mustStatus(s.do("POST", "/api/v2/agents/support/sources", map[string]any{"type": "website", "url": site.URL + "/"}, tn.auth()), 201)
	whEventually(t, 30*time.Second, "the crawl to reach /p/1", func() bool { return site.waitingNow() == 1 })

	// The people side: an owner invited and signed in (users, memberships,
	// console_sessions, an accepted invitation), a pending invitation, a
	// reset link. Their tokens, link secrets and password are secrets too.
	const ownerPassword = "owner password 1"
	inv, err := s.sys.accounts.InviteByOperator(ctx, tn.ID, account.InviteRequest{Email: "owner@example.com", Role: domain.MemberOwner})
	if err != nil {
		t.Fatal(err)
	}
	invToken := inv.Link[strings.LastIndex(inv.Link, "/")+1:]
	signed, err := s.sys.accounts.AcceptInvitation(ctx, account.AcceptRequest{Token: invToken, Name: "Owner", Password: ownerPassword})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := s.sys.accounts.InviteByOperator(ctx, tn.ID, account.InviteRequest{Email: "agent@example.com", Role: domain.MemberAgent})
	if err != nil {
		t.Fatal(err)
	}
	resetLink, err := s.sys.accounts.ResetLink(ctx, "owner@example.com")
	if err != nil {
		t.Fatal(err)
	}
	accountSecrets := map[string]string{
		"session token": signed.Token, "accepted invitation link": invToken,
		"pending invitation link": pending.Link[strings.LastIndex(pending.Link, "/")+1:],
		"reset link":              resetLink[strings.LastIndex(resetLink, "/")+1:], "password": ownerPassword,
	}

	var tables []string
	if err := s.sys.db.Gorm.Raw(`SELECT table_name FROM information_schema.tables
		WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY table_name`).Scan(&tables).Error; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"workspaces", "api_keys", "agents", "sources", "conversations", "messages", "inbound_events"} {
		found := false
		for _, tbl := range tables {
			found = found || tbl == want
		}
		if !found {
			t.Fatalf("table %s not in the public schema (%v): the scan below would miss it", want, tables)
		}
	}
	rowsSeen := 0
	for _, tbl := range tables {
		var rows []string
		if err := s.sys.db.Gorm.Raw(`SELECT t::text FROM "` + strings.ReplaceAll(tbl, `"`, `""`) + `" t`).Scan(&rows).Error; err != nil {
			t.Fatalf("reading %s: %v", tbl, err)
		}
		if len(rows) == 0 {
			t.Errorf("table %s is empty; the test should have written to it", tbl)
		}
		rowsSeen += len(rows)
		for _, row := range rows {
			lower := strings.ToLower(row)
			for id, secret := range keys {
				if strings.Contains(lower, strings.ToLower(secTail(secret))) {
					t.Errorf("table %s holds API key %s in plaintext: %.200s", tbl, id, row)
				}
			}
			for what, secret := range accountSecrets {
				if strings.Contains(lower, strings.ToLower(secret)) {
					t.Errorf("table %s holds the %s in plaintext: %.200s", tbl, what, row)
				}
			}
		}
	}
	t.Logf("scanned %d rows in %d tables: %v", rowsSeen, len(tables), tables)

	for id, secret := range keys {
		var row struct {
			Hash          string
			DisplayPrefix string
		}
		if err := s.sys.db.Gorm.Raw(`SELECT hash, display_prefix FROM api_keys WHERE id = ?`, id).Scan(&row).Error; err != nil {
			t.Fatal(err)
		}
		if row.Hash != domain.HashSecret(secret) {
			t.Errorf("key %s: stored hash %q, want HashSecret(key) %q", id, row.Hash, domain.HashSecret(secret))
		}
		sum := sha256.Sum256([]byte(secret))
		if row.Hash != hex.EncodeToString(sum[:]) {
			t.Errorf("key %s: stored hash is not the hex SHA-256 of the key", id)
		}
		if !strings.HasPrefix(secret, row.DisplayPrefix) || len(row.DisplayPrefix) > len(domain.PrefixAPIKeySecret)+8 {
			t.Errorf("key %s: display prefix %q is not a short prefix of the key", id, row.DisplayPrefix)
		}
	}
}

func TestSecretsNeverLoggedOrEchoed(t *testing.T) {
	sink := &syncBuffer{}
	s := newStack(t, stackOptions{withWorker: true, logSink: sink, env: map[string]string{"CONCIERGE_LOG_LEVEL": "debug"}})
	ctx := context.Background()

	tn := s.newTenant(domain.PlanEnterprise)
	_, revokedKey, err := s.sys.workspaces.CreateAPIKey(ctx, tn.ID, "revoked")
	if err != nil {
		t.Fatal(err)
	}
	revoked, err := s.sys.workspaces.ListAPIKeys(ctx, tn.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range revoked {
		if k.Name == "revoked" {
			if _, err := s.sys.workspaces.RevokeAPIKey(ctx, tn.ID, k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	free := s.newTenant(domain.PlanFree)
	unknownKey := domain.NewSecret(domain.PrefixAPIKeySecret)
	wrongSecret := domain.NewSecret(domain.PrefixWebhookSecret)

	// A valid key, through several routes.
	sess := whSession(s, tn, "support")
	s.mustStatus(s.do("GET", "/api/v2/agents", nil, tn.auth()), 200)
	s.mustStatus(s.do("GET", "/api/v2/conversations/"+sess, nil, tn.auth()), 200)

	// A valid webhook secret, processed by the worker.
	ack := whMustAck(s, whPost(s, tn.WebhookSecret, whChat(sess, "hello"), nil), tn.ID)
	whEventually(t, 10*time.Second, "the inbound event to be processed", func() bool {
		return whEventStatus(s, ack.EventID) == string(domain.InboundProcessed)
	})

	// An identity signature keyed with the webhook secret, right and wrong.
	identity := base64.RawURLEncoding.EncodeToString([]byte(`{"userId":"u_123"}`))
	mac := hmac.New(sha256.New, []byte(tn.WebhookSecret))
	mac.Write([]byte(identity))
	goodSig := hex.EncodeToString(mac.Sum(nil))
	badSig := hex.EncodeToString(bytes.Repeat([]byte{0xab}, 32))
	verified := header{"Authorization": "Bearer " + tn.Key, "X-Service-Identity": identity, "X-Service-Signature": goodSig}
	s.mustStatus(s.do("POST", "/api/v1/sessions", map[string]any{"slug": "support"}, verified), 200)

	refused := []struct {
		name   string
		method string
		path   string
		body   any
		h      header
		status int
	}{
		{"unknown key", "GET", "/api/v2/agents", nil, header{"Authorization": "Bearer " + unknownKey}, 401},
		{"revoked key", "GET", "/api/v2/agents", nil, header{"Authorization": "Bearer " + revokedKey}, 401},
		{"key of a Free workspace", "GET", "/api/v2/agents", nil, free.auth(), 403},
		{"key in a malformed header", "GET", "/api/v2/agents", nil, header{"Authorization": "Token " + tn.Key}, 401},
		{"wrong webhook secret", "POST", webhookPath, map[string]any{"event": "user.typing"}, header{"x-webhook-secret": wrongSecret}, 401},
		{"API key as webhook secret", "POST", webhookPath, map[string]any{"event": "user.typing"}, header{"x-webhook-secret": tn.Key}, 401},
		{"webhook secret of a Free workspace", "POST", webhookPath, map[string]any{"event": "user.typing"}, header{"x-webhook-secret": free.WebhookSecret}, 403},
		{"wrong identity signature", "POST", "/api/v1/sessions", map[string]any{"slug": "support"},
			header{"Authorization": "Bearer " + tn.Key, "X-Service-Identity": identity, "X-Service-Signature": badSig}, 401},
	}
	// Everything secret this test has sent.
	secrets := map[string]string{
		"API key": tn.Key, "revoked API key": revokedKey, "unknown API key": unknownKey, "Free workspace API key": free.Key,
		"webhook secret": tn.WebhookSecret, "wrong webhook secret": wrongSecret, "Free workspace webhook secret": free.WebhookSecret,
		"identity signature": goodSig, "wrong identity signature": badSig,
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do(tt.method, tt.path, tt.body, tt.h)
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d: %s", r.Status, tt.status, r.Body)
			}
			for what, secret := range secrets {
				if bytes.Contains(r.Body, []byte(secret)) || strings.Contains(strings.Join(secFlattenHeader(r.Header), "\n"), secret) {
					t.Fatalf("the %d response echoes the %s: %s", r.Status, what, r.Body)
				}
			}
		})
	}

	// Stop the process so every log line is written, then search them all.
	s.shutdown()
	logs := sink.String()
	for _, want := range []string{"path=/api/v2/agents", "status=401", "status=403", "path=/api/webhooks/inbound"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("the captured logs lack %q; is the access log captured?\n%s", want, logs)
		}
	}
	for what, secret := range secrets {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs contain the %s", what)
		}
	}
	for what, secret := range map[string]string{"API key": tn.Key, "revoked API key": revokedKey, "unknown API key": unknownKey} {
		if strings.Contains(logs, secTail(secret)) {
			t.Errorf("the logs contain the secret part of the %s", what)
		}
	}
	t.Logf("checked %d log lines", strings.Count(logs, "\n"))
}

func secFlattenHeader(h http.Header) []string {
	var out []string
	for k, vs := range h {
		for _, v := range vs {
			out = append(out, k+": "+v)
		}
	}
	return out
}
