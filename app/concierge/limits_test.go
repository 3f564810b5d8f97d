package main

import (
	"context"
	"strconv"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// Rate limits, counted in the real Redis so that every pod shares them.

// limHeaders reads the rate-limit headers of a counted response.
func limHeaders(t *testing.T, r response) (limit, remaining, reset int) {
	t.Helper()
	get := func(name string) int {
		v := r.Header.Get(name)
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			t.Fatalf("%s = %q, want a non-negative integer (status %d: %s)", name, v, r.Status, r.Body)
		}
		return n
	}
	return get("X-RateLimit-Limit"), get("X-RateLimit-Remaining"), get("X-RateLimit-Reset")
}

// limMustBeLimited checks a 429 RATE_LIMITED with a usable Retry-After.
func limMustBeLimited(t *testing.T, r response, limit int) {
	t.Helper()
	if r.Status != 429 || r.errorCode(t) != "RATE_LIMITED" {
		t.Fatalf("status %d %s, want 429 RATE_LIMITED", r.Status, r.Body)
	}
	retry, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || retry < 1 || retry > 60 {
		t.Fatalf("Retry-After = %q, want whole seconds from 1 to 60", r.Header.Get("Retry-After"))
	}
	l, remaining, reset := limHeaders(t, r)
	if l != limit || remaining != 0 || reset < 1 {
		t.Fatalf("429 headers: limit %d remaining %d reset %d; want limit %d, remaining 0, reset >= 1", l, remaining, reset, limit)
	}
}

// limExpect checks a counted success and its remaining budget.
func limExpect(t *testing.T, r response, status, limit, remaining int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	l, rem, _ := limHeaders(t, r)
	if l != limit || rem != remaining {
		t.Fatalf("X-RateLimit-Limit %d, X-RateLimit-Remaining %d; want %d and %d", l, rem, limit, remaining)
	}
}

func TestRateLimitPerAPIKeySharedAcrossPods(t *testing.T) {
	podA := newStack(t, stackOptions{env: map[string]string{"CONCIERGE_RATE_LIMIT_API_PER_MINUTE": "3"}})
	// Pod B: another process on the same PostgreSQL and Redis.
	podB := newStack(t, stackOptions{env: map[string]string{
		"CONCIERGE_RATE_LIMIT_API_PER_MINUTE": "3",
		"CONCIERGE_DATABASE_URL":              podA.env["CONCIERGE_DATABASE_URL"],
		"CONCIERGE_REDIS_URL":                 podA.env["CONCIERGE_REDIS_URL"],
	}})

	t.Run("one key on one pod", func(t *testing.T) {
		tn := podA.newTenant(domain.PlanStandard)
		for want := 2; want >= 0; want-- {
			limExpect(t, podA.do("GET", "/api/v2/agents", nil, tn.auth()), 200, 3, want)
		}
		limMustBeLimited(t, podA.do("GET", "/api/v2/agents", nil, tn.auth()), 3)
		// Every route behind the key shares the budget.
		limMustBeLimited(t, podA.do("GET", "/api/v2/conversations", nil, tn.auth()), 3)
		limMustBeLimited(t, podA.do("POST", "/api/v1/sessions", map[string]any{}, tn.auth()), 3)

		// Another key of the same workspace has its own budget.
		_, second, err := podA.sys.workspaces.CreateAPIKey(context.Background(), tn.ID, "second")
		if err != nil {
			t.Fatal(err)
		}
		other := header{"Authorization": "Bearer " + second}
		limExpect(t, podA.do("GET", "/api/v2/agents", nil, other), 200, 3, 2)
		// And the first key is still limited.
		limMustBeLimited(t, podA.do("GET", "/api/v2/agents", nil, tn.auth()), 3)

		// A key of another workspace is unaffected.
		fresh := podA.newTenant(domain.PlanEnterprise)
		limExpect(t, podA.do("GET", "/api/v2/agents", nil, fresh.auth()), 200, 3, 2)
	})

	t.Run("one key on two pods", func(t *testing.T) {
		tn := podA.newTenant(domain.PlanStandard)
		limExpect(t, podA.do("GET", "/api/v2/agents", nil, tn.auth()), 200, 3, 2)
		limExpect(t, podA.do("GET", "/api/v2/agents", nil, tn.auth()), 200, 3, 1)
		limExpect(t, podB.do("GET", "/api/v2/agents", nil, tn.auth()), 200, 3, 0)
		limMustBeLimited(t, podA.do("GET", "/api/v2/agents", nil, tn.auth()), 3)
		limMustBeLimited(t, podB.do("GET", "/api/v2/agents", nil, tn.auth()), 3)
	})

	// Rate-limited calls did nothing: no session was opened by the refused POST.
	var sessions int64
	if err := podA.sys.db.Gorm.Raw(`SELECT count(*) FROM conversations`).Scan(&sessions).Error; err != nil {
		t.Fatal(err)
	}
	if sessions != 0 {
		t.Fatalf("%d sessions opened by rate-limited calls", sessions)
	}
}

func TestRateLimitWebhookPerWorkspace(t *testing.T) {
	podA := newStack(t, stackOptions{env: map[string]string{"CONCIERGE_RATE_LIMIT_WEBHOOK_PER_MINUTE": "2"}})
	podB := newStack(t, stackOptions{env: map[string]string{
		"CONCIERGE_RATE_LIMIT_WEBHOOK_PER_MINUTE": "2",
		"CONCIERGE_DATABASE_URL":                  podA.env["CONCIERGE_DATABASE_URL"],
		"CONCIERGE_REDIS_URL":                     podA.env["CONCIERGE_REDIS_URL"],
	}})
	a := podA.newTenant(domain.PlanStandard)
	b := podA.newTenant(domain.PlanStandard)
	ping := map[string]any{"event": "user.typing"}

	limExpect(t, whPost(podA, a.WebhookSecret, ping, nil), 200, 2, 1)
	limExpect(t, whPost(podB, a.WebhookSecret, ping, nil), 200, 2, 0)
	limMustBeLimited(t, whPost(podA, a.WebhookSecret, ping, nil), 2)
	limMustBeLimited(t, whPost(podB, a.WebhookSecret, ping, nil), 2)

	// The limit is per workspace: another workspace still has its budget.
	limExpect(t, whPost(podA, b.WebhookSecret, ping, nil), 200, 2, 1)

	// A rotated secret does not give the workspace a new budget.
	if _, err := podA.sys.workspaces.RotateWebhookSecret(context.Background(), a.ID, 0); err != nil {
		t.Fatal(err)
	}
	ws, err := podA.sys.workspaces.GetWorkspace(context.Background(), a.ID)
	if err != nil {
		t.Fatal(err)
	}
	limMustBeLimited(t, whPost(podA, ws.WebhookSecret, ping, nil), 2)

	// Only the accepted calls were stored.
	var n int64
	if err := podA.sys.db.Gorm.Raw(`SELECT count(*) FROM inbound_events WHERE workspace_id = ?`, a.ID).Scan(&n).Error; err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("workspace A has %d stored events, want the 2 accepted ones", n)
	}
}

func TestRateLimitFailedAuthenticationPerIP(t *testing.T) {
	s := newStack(t, stackOptions{env: map[string]string{"CONCIERGE_RATE_LIMIT_PUBLIC_PER_MINUTE": "2"}})
	good := s.newTenant(domain.PlanStandard)

	bad := header{"Authorization": "Bearer " + domain.NewSecret(domain.PrefixAPIKeySecret)}
	r := s.do("GET", "/api/v2/agents", nil, bad)
	if r.Status != 401 || r.errorCode(t) != "UNAUTHORIZED" {
		t.Fatalf("unknown key: status %d %s, want 401", r.Status, r.Body)
	}
	if l, rem, _ := limHeaders(t, r); l != 2 || rem != 1 {
		t.Fatalf("first failed attempt: limit %d remaining %d, want 2 and 1", l, rem)
	}
	// A missing key is a failed authentication too.
	r = s.do("GET", "/api/v2/conversations", nil, nil)
	if r.Status != 401 {
		t.Fatalf("missing key: status %d %s, want 401", r.Status, r.Body)
	}
	// The third failure from this address is refused before any lookup.
	limMustBeLimited(t, s.do("GET", "/api/v2/agents", nil, header{"Authorization": "Bearer not-even-a-key"}), 2)
	limMustBeLimited(t, s.do("POST", "/api/v1/sessions", map[string]any{}, bad), 2)

	// The failures are not charged to a real key's own budget.
	r = s.do("GET", "/api/v2/agents", nil, good.auth())
	if r.Status != 200 {
		t.Fatalf("valid key after failed attempts from the same address: status %d %s", r.Status, r.Body)
	}
	if l, rem, _ := limHeaders(t, r); l != 100000 || rem != 99999 {
		t.Fatalf("valid key: limit %d remaining %d, want its own full API budget", l, rem)
	}
}

// api.md counts "failed authentication" per client IP; a wrong webhook secret
// is a failed authentication like a wrong API key, and each one costs a
// database lookup, so unauthenticated callers must not get them unmetered.
func TestRateLimitFailedWebhookSecretPerIP(t *testing.T) {
	s := newStack(t, stackOptions{env: map[string]string{"CONCIERGE_RATE_LIMIT_PUBLIC_PER_MINUTE": "2"}})
	tn := s.newTenant(domain.PlanStandard)
	ping := map[string]any{"event": "user.typing"}

	for i := range 2 {
		r := whPost(s, domain.NewSecret(domain.PrefixWebhookSecret), ping, nil)
		if r.Status != 401 {
			t.Fatalf("wrong secret #%d: status %d %s, want 401", i+1, r.Status, r.Body)
		}
	}
	limMustBeLimited(t, whPost(s, domain.NewSecret(domain.PrefixWebhookSecret), ping, nil), 2)
	limMustBeLimited(t, whPost(s, "", ping, nil), 2)
	// The workspace's own sender, with the right secret, is not locked out.
	whMustAck(s, whPost(s, tn.WebhookSecret, ping, nil), tn.ID)
}
