package console_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// agentForm is a valid agent settings form.
func agentForm(slug, name string) url.Values {
	return url.Values{"slug": {slug}, "name": {name}, "systemPrompt": {"Be kind."}, "retrievalTopK": {"5"},
		"retrievalThreshold": {"0.35"}, "primaryColor": {"#2563eb"}}
}

// The role matrix: every console route, as each kind of caller. Signed-out
// callers are sent to sign-in; another workspace's user gets the same 404
// as for an unknown workspace; a helper (agent role) gets 403 on settings.
func TestRoleMatrix(t *testing.T) {
	type want = roleStatuses
	const (
		ok     = http.StatusOK
		see    = http.StatusSeeOther
		forbid = http.StatusForbidden
		nf     = http.StatusNotFound
	)
	routes := []struct {
		method, path string
		form         url.Values
		want         want
	}{
		{"GET", "/console", nil, want{see, see, see, see, see}},
		{"GET", "/console/account", nil, want{ok, ok, ok, ok, see}},
		{"POST", "/console/account/password", url.Values{"current": {"x"}, "password": {"y"}}, want{400, 400, 400, 400, see}},
		{"POST", "/console/account/sign-out-others", nil, want{see, see, see, see, see}},
		{"POST", "/console/sign-out", nil, want{see, see, see, see, see}},
		{"GET", "/console/w/ws_a", nil, want{see, see, see, nf, see}}, // agents; inbox
		{"GET", "/console/w/ws_a/agents", nil, want{ok, ok, forbid, nf, see}},
		{"GET", "/console/w/ws_a/agents/new", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents", agentForm("fresh", "Fresh"), want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/agents/support", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents/support", agentForm("", "Renamed"), want{see, see, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents/support/publish", nil, want{see, see, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents/support/unpublish", nil, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/agents/support/delete", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents/support/delete", nil, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/members", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/members/invitations", url.Values{"email": {"x@example.com"}, "role": {"agent"}}, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/members/agent/role?role=admin", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/members/agent/role", url.Values{"role": {"admin"}}, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/members/agent/remove", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/members/agent/remove", nil, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/invitations/inv_1/revoke", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/invitations/inv_1/revoke", nil, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_unknown/agents", nil, want{nf, nf, nf, nf, see}},
		// Knowledge
		{"GET", "/console/w/ws_a/knowledge", nil, want{ok, ok, forbid, nf, see}},
		{"GET", "/console/w/ws_a/agents/support/knowledge", nil, want{ok, ok, forbid, nf, see}},
		{"GET", "/console/w/ws_a/agents/support/knowledge/list", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents/support/knowledge/sources", url.Values{"type": {"qa"}, "question": {"Q?"}, "answer": {"A."}}, want{see, see, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents/support/knowledge/files", nil, want{see, see, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents/support/knowledge/" + matrixSource + "/reindex", nil, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/agents/support/knowledge/" + matrixSource + "/delete", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/agents/support/knowledge/" + matrixSource + "/delete", nil, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/agents/nobody/knowledge", nil, want{nf, nf, forbid, nf, see}},
		// Availability: every member, for themselves.
		{"POST", "/console/w/ws_a/availability", url.Values{"available": {"true"}}, want{see, see, see, nf, see}},
		// Suggestions: every member who reads conversations.
		{"POST", "/console/w/ws_a/inbox/" + suggestedConv + "/suggestion", nil, want{ok, ok, ok, nf, see}},
	}
	for _, rt := range routes {
		for _, who := range rt.want.roles() {
			t.Run(rt.method+" "+rt.path+" as "+who.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedAgent(t, "support", "Support", true)
				h.seedSource(t, "support", domain.Source{ID: matrixSource, Type: domain.SourceText, Name: "Refunds", Status: domain.SourceReady}) // Knowledge
				r := h.do(t, req{Method: rt.method, Path: rt.path, As: who.as, Form: rt.form, Header: map[string]string{"Sec-Fetch-Site": "same-origin"},
					Files: matrixFiles(rt.path)})
				if r.Status != who.want {
					t.Fatalf("status %d, want %d; Location %q; body:\n%s", r.Status, who.want, r.location(), r.Body)
				}
				if who.as == "" && !strings.HasPrefix(r.location(), "/console/sign-in") {
					t.Fatalf("signed out: Location %q, want the sign-in page", r.location())
				}
				if who.want == nf && !strings.Contains(r.Body, "There is nothing here, or you do not have access to it.") {
					t.Fatalf("404 without the not-found page:\n%s", r.Body)
				}
				if who.want == forbid && !strings.Contains(r.Body, "You may not do this: your role does not include managing") {
					t.Fatalf("403 without the reason:\n%s", r.Body)
				}
			})
		}
	}
}

// A signed-out GET comes back to the page it asked for after signing in.
func TestSignedOutRedirectKeepsThePage(t *testing.T) {
	h := newHarness(t, publicURL)
	r := h.do(t, req{Path: "/console/w/ws_a/agents"})
	if want := "/console/sign-in?next=%2Fconsole%2Fw%2Fws_a%2Fagents"; r.location() != want {
		t.Fatalf("Location %q, want %q", r.location(), want)
	}
}

func TestCSRF(t *testing.T) {
	tests := []struct {
		name   string
		r      req
		status int
	}{
		{"no token", req{NoCSRF: true}, http.StatusForbidden},
		{"wrong token", req{CSRF: "csrf_admin"}, http.StatusForbidden},
		{"token of another session", req{CSRF: "csrf_other"}, http.StatusForbidden},
		{"empty header, no field", req{NoCSRF: true, Header: map[string]string{"X-CSRF-Token": ""}}, http.StatusForbidden},
		{"wrong header", req{NoCSRF: true, Header: map[string]string{"X-CSRF-Token": "csrf_owneR"}}, http.StatusForbidden},
		{"right form field", req{}, http.StatusSeeOther},
		{"right header (htmx)", req{NoCSRF: true, Header: map[string]string{"X-CSRF-Token": "csrf_owner"}}, http.StatusSeeOther},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			h.seedAgent(t, "support", "Support", false)
			r := tt.r
			r.Method, r.Path, r.As = "POST", "/console/w/ws_a/agents/support/publish", "owner"
			got := h.do(t, r)
			if got.Status != tt.status {
				t.Fatalf("status %d, want %d:\n%s", got.Status, tt.status, got.Body)
			}
			a, _ := h.agents.Get(t.Context(), "ws_a", "support")
			if refused := tt.status == http.StatusForbidden; refused == a.Config.Published {
				t.Fatalf("published = %v after a request answered %d", a.Config.Published, got.Status)
			}
			if tt.status == http.StatusForbidden && !strings.Contains(got.Body, "This form has expired") {
				t.Fatalf("403 without its explanation:\n%s", got.Body)
			}
		})
	}
}

// Before a session exists, the cross-origin check is the CSRF defence:
// a page on another site cannot sign a victim into an attacker's account.
func TestCrossOriginPostsAreRefused(t *testing.T) {
	good := url.Values{"email": {"olive@example.com"}, "password": {"correct horse owner"}}
	tests := []struct {
		name   string
		header map[string]string
		status int
	}{
		{"cross-site fetch metadata", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"same-site but another origin", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign Origin", map[string]string{"Origin": "https://evil.example"}, http.StatusForbidden},
		{"null Origin", map[string]string{"Origin": "null"}, http.StatusForbidden},
		{"our Origin", map[string]string{"Origin": "https://console.example"}, http.StatusSeeOther},
		{"our public Origin behind a proxy that rewrote Host", map[string]string{"Origin": "https://console.example", "Host": "internal:8080"}, http.StatusSeeOther},
		{"foreign Origin with our host as a prefix", map[string]string{"Origin": "https://console.example.evil.com"}, http.StatusForbidden},
		{"same-origin fetch metadata", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "https://console.example"}, http.StatusSeeOther},
		{"not a browser (no Origin, no metadata)", nil, http.StatusSeeOther},
	}
	for _, tt := range tests {
		for _, path := range []string{"/console/sign-in", "/console/invitations/lt_open", "/console/password-reset", "/console/password-reset/lt_reset"} {
			t.Run(tt.name+" "+path, func(t *testing.T) {
				h := newHarness(t, publicURL)
				form := good
				if strings.Contains(path, "invitations") {
					form = url.Values{"name": {"Nia"}, "password": {"a long enough password"}}
				}
				if path == "/console/password-reset" {
					form = url.Values{"email": {"olive@example.com"}}
				}
				if path == "/console/password-reset/lt_reset" {
					form = url.Values{"password": {"a long enough password"}}
				}
				r := h.do(t, req{Method: "POST", Path: path, Form: form, Header: tt.header})
				want := tt.status
				if path == "/console/password-reset" && want == http.StatusSeeOther {
					want = http.StatusOK // that form answers with its notice in place
				}
				if r.Status != want {
					t.Fatalf("status %d, want %d:\n%s", r.Status, want, r.Body)
				}
				if want == http.StatusForbidden && h.sessionCookie(r) != nil {
					t.Fatal("a refused request set a session cookie")
				}
			})
		}
	}
}

func TestOpenRedirectIsRefused(t *testing.T) {
	tests := []struct{ next, want string }{
		{"/console/w/ws_a/agents", "/console/w/ws_a/agents"},
		{"/console/account?done=password", "/console/account?done=password"},
		{"", "/console"},
		{"//evil.com", "/console"},
		{"//evil.com/console", "/console"},
		{"/\\evil.com", "/console"},
		{"/console/\\evil.com", "/console"},
		{"https://evil.com", "/console"},
		{"https://evil.com/console/x", "/console"},
		{"http:evil.com", "/console"},
		{"javascript:alert(1)", "/console"},
		{"%2F%2Fevil.com", "/console"},
		{"/%2Fevil.com", "/console"},
		{"/%5Cevil.com", "/console"},
		{"%252F%252Fevil.com", "/console"},
		{"/console/%2F%2Fevil.com", "/console"},
		{"/console/../evil", "/console"},
		{"/console/%2e%2e/evil", "/console"},
		{"/consoleevil", "/console"},
		{"/api/v2/agents", "/console"},
		{"/console/\r\nSet-Cookie: x=y", "/console"},
		{" //evil.com", "/console"},
	}
	for _, tt := range tests {
		t.Run(tt.next, func(t *testing.T) {
			h := newHarness(t, publicURL)
			r := h.do(t, req{Method: "POST", Path: "/console/sign-in", Form: url.Values{
				"email": {"olive@example.com"}, "password": {"correct horse owner"}, "next": {tt.next},
			}})
			if r.Status != http.StatusSeeOther || r.location() != tt.want {
				t.Fatalf("status %d, Location %q, want 303 to %q", r.Status, r.location(), tt.want)
			}
			// The sign-in page keeps only a safe next in its form.
			page := h.do(t, req{Path: "/console/sign-in?next=" + url.QueryEscape(tt.next)})
			if strings.Contains(page.Body, "evil") {
				t.Fatalf("the sign-in page carries %q:\n%s", tt.next, page.Body)
			}
		})
	}
}

func TestCookieAttributes(t *testing.T) {
	tests := []struct {
		public, name string
		secure       bool
	}{
		{"https://console.example", "__Host-concierge_session", true},
		{"http://console.example", "__Host-concierge_session", true}, // behind a TLS proxy: still Secure
		{"http://127.0.0.1:8080", "concierge_session", false},
		{"http://localhost:8080", "concierge_session", false},
	}
	for _, tt := range tests {
		t.Run(tt.public, func(t *testing.T) {
			h := newHarness(t, tt.public)
			h.cookie = tt.name
			r := h.do(t, req{Method: "POST", Path: "/console/sign-in", Form: url.Values{
				"email": {"olive@example.com"}, "password": {"correct horse owner"},
			}})
			c := h.sessionCookie(r)
			if c == nil {
				t.Fatalf("no %s cookie; Set-Cookie: %q", tt.name, r.Header.Values("Set-Cookie"))
			}
			if !c.HttpOnly || c.Path != "/" || c.SameSite != http.SameSiteLaxMode || c.Secure != tt.secure || c.Domain != "" {
				t.Fatalf("cookie %+v: want HttpOnly, Path=/, SameSite=Lax, no Domain, Secure=%v", c, tt.secure)
			}
			if !strings.HasPrefix(c.Value, "cs_") {
				t.Fatalf("cookie value %q is not the service's token", c.Value)
			}
			// Signing out clears it.
			out := h.do(t, req{Method: "POST", Path: "/console/sign-out", Cookie: c.Value, As: "owner",
				CSRF: h.accounts.sessions[c.Value].Session.CSRFToken})
			if cleared := h.sessionCookie(out); cleared == nil || cleared.Value != "" || cleared.Expires.After(time.Now()) {
				t.Fatalf("sign-out answered %d without clearing the cookie: %+v", out.Status, cleared)
			}
			if _, live := h.accounts.sessions[c.Value]; live {
				t.Fatal("sign-out left the session alive")
			}
		})
	}
}

// A token planted in the browser before sign-in (session fixation) is never
// the one signed in: the cookie is set to the service's new token, and the
// planted one, if it was a live session, is ended.
func TestSessionFixation(t *testing.T) {
	h := newHarness(t, publicURL)
	planted := "cs_admin" // a live session the attacker knows
	r := h.do(t, req{Method: "POST", Path: "/console/sign-in", Cookie: planted, Form: url.Values{
		"email": {"olive@example.com"}, "password": {"correct horse owner"},
	}})
	c := h.sessionCookie(r)
	if r.Status != http.StatusSeeOther || c == nil {
		t.Fatalf("sign-in answered %d without a cookie", r.Status)
	}
	if c.Value == planted || c.Value == "" {
		t.Fatalf("signed in with the planted token %q", c.Value)
	}
	if _, live := h.accounts.sessions[planted]; live {
		t.Fatal("the planted session is still live")
	}
	// A token in the query string is never read.
	q := h.do(t, req{Path: "/console/account?token=cs_owner&session=cs_owner&" + h.cookie + "=cs_owner"})
	if q.Status != http.StatusSeeOther || !strings.HasPrefix(q.location(), "/console/sign-in") {
		t.Fatalf("a token in the URL was accepted: %d %q", q.Status, q.location())
	}
	// An unknown cookie is cleared and sent to sign-in.
	u := h.do(t, req{Path: "/console/account", Cookie: "cs_forged"})
	if u.Status != http.StatusSeeOther || h.sessionCookie(u) == nil || h.sessionCookie(u).Value != "" {
		t.Fatalf("a forged cookie: %d, cookie %+v", u.Status, h.sessionCookie(u))
	}
}

func TestSecurityHeaders(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	for _, r := range []req{
		{Path: "/console/sign-in"},
		{Path: "/console/w/ws_a/agents", As: "owner"},
		{Path: "/console/w/ws_a/agents/support", As: "owner"},
		{Path: "/console/w/ws_a/agents", As: "agent"}, // 403 page
		{Path: "/console/w/ws_b/agents", As: "owner"}, // 404 page
		{Path: "/console/no-such-page", As: "owner"},  // 404 page
		{Path: "/console/w/ws_a/agents"},              // redirect
		{Method: "POST", Path: "/console/sign-in", Header: map[string]string{"Origin": "https://evil.example"}}, // refused
	} {
		t.Run(r.Method+" "+r.Path+" "+r.As, func(t *testing.T) {
			got := h.do(t, r)
			want := map[string]string{
				"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'none'; object-src 'none'",
				"X-Content-Type-Options":  "nosniff",
				"Referrer-Policy":         "same-origin",
				"Cache-Control":           "no-store",
				"X-Frame-Options":         "DENY",
			}
			for k, v := range want {
				if got.Header.Get(k) != v {
					t.Errorf("%s = %q, want %q", k, got.Header.Get(k), v)
				}
			}
			if got.Status >= 400 && !strings.HasPrefix(got.Header.Get("Content-Type"), "text/html") {
				t.Errorf("error %d as %q, want an HTML page", got.Status, got.Header.Get("Content-Type"))
			}
		})
	}
}
