package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/workspace"
)

// The services the wiring will pass fit the settings interfaces.
var (
	_ console.APIKeys        = (*workspace.Service)(nil)
	_ console.WebhookSecrets = (*workspace.Service)(nil)
	_ console.Deliveries     = (*delivery.Service)(nil)
)

// Fixed ids, so routes can name what the fakes hold.
var (
	seededKeyID = "key_" + strings.Repeat("0", 25) + "1"
	failedID    = "dlv_" + strings.Repeat("0", 25) + "1"
	deliveredID = "dlv_" + strings.Repeat("0", 25) + "2"
)

const ownerPassword = "correct horse owner" // the fakes' password of "owner"

// seedSettings gives ws_a a key, a failed and a delivered delivery.
func (h *harness) seedSettings(t testing.TB) {
	t.Helper()
	h.settings.keys["ws_a"] = []domain.APIKey{{ID: seededKeyID, WorkspaceID: "ws_a", Name: "CRM sync", DisplayPrefix: "sk_live_abcdef", CreatedAt: fakeNow}}
	h.deliveries.add(domain.Delivery{ID: failedID, Target: domain.TargetHelpdesk, Type: domain.EventHandoffRequested,
		ConversationID: "conv_1", Status: domain.DeliveryFailed, Attempts: 2, LastError: "receiver answered 500"},
		domain.DeliveryAttempt{DeliveryID: failedID, Attempt: 1, At: fakeNow, StatusCode: 500, Error: "receiver answered 500", Duration: 120 * time.Millisecond},
		domain.DeliveryAttempt{DeliveryID: failedID, Attempt: 2, At: fakeNow.Add(time.Minute), Error: "connection refused", Duration: 3 * time.Millisecond})
	h.deliveries.add(domain.Delivery{ID: deliveredID, Target: domain.TargetEvents, Type: domain.EventMessageCreated,
		ConversationID: "conv_2", Status: domain.DeliveryDelivered, Attempts: 1, DeliveredAt: fakeNow})
}

// The role matrix of the settings routes: owners and admins have the
// settings, owners alone the webhook secret; helpers neither; another
// workspace's user gets 404; signed out goes to sign-in.
func TestSettingsRoleMatrix(t *testing.T) {
	const ok, see, forbid, nf = http.StatusOK, http.StatusSeeOther, http.StatusForbidden, http.StatusNotFound
	type want = roleStatuses
	pw := url.Values{"password": {ownerPassword}}
	routes := []struct {
		method, path string
		form         url.Values
		want         want
	}{
		{"GET", "/console/w/ws_a/settings", nil, want{ok, ok, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/api-keys", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/settings/api-keys", url.Values{"name": {"CI"}}, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/api-keys/" + seededKeyID + "/revoke", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/settings/api-keys/" + seededKeyID + "/revoke", nil, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/webhook-secret", nil, want{ok, forbid, forbid, nf, see}},
		{"POST", "/console/w/ws_a/settings/webhook-secret/reveal", pw, want{see, forbid, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/webhook-secret/rotate?grace=24h", nil, want{ok, forbid, forbid, nf, see}},
		{"POST", "/console/w/ws_a/settings/webhook-secret/rotate", url.Values{"grace": {"24h"}, "password": {ownerPassword}}, want{see, forbid, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/integrations", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/settings/integrations", url.Values{"eventsUrl": {"https://hooks.example.com/c"}}, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/integrations/signing-secret", nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/settings/integrations/signing-secret", nil, want{see, see, forbid, nf, see}},
		{"POST", "/console/w/ws_a/settings/integrations/auto-assign", url.Values{"autoAssign": {"true"}}, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/deliveries", nil, want{ok, ok, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/deliveries/" + failedID, nil, want{ok, ok, forbid, nf, see}},
		{"POST", "/console/w/ws_a/settings/deliveries/" + failedID + "/retry", nil, want{see, see, forbid, nf, see}},
		{"GET", "/console/w/ws_a/settings/plan", nil, want{ok, ok, forbid, nf, see}},
		{"GET", "/console/w/ws_b/settings/api-keys", nil, want{nf, nf, nf, ok, see}},
		{"GET", "/console/w/ws_b/settings/webhook-secret", nil, want{nf, nf, nf, ok, see}},
	}
	for _, rt := range routes {
		for _, who := range rt.want.roles() {
			t.Run(rt.method+" "+rt.path+" as "+who.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedSettings(t)
				r := h.do(t, req{Method: rt.method, Path: rt.path, As: who.as, Form: rt.form, Header: map[string]string{"Sec-Fetch-Site": "same-origin"}})
				if r.Status != who.want {
					t.Fatalf("status %d, want %d; Location %q; body:\n%s", r.Status, who.want, r.location(), r.Body)
				}
				if who.as == "" && !strings.HasPrefix(r.location(), "/console/sign-in") {
					t.Fatalf("signed out: Location %q, want the sign-in page", r.location())
				}
				if who.want == nf && !strings.Contains(r.Body, "There is nothing here, or you do not have access to it.") {
					t.Fatalf("404 without the not-found page:\n%s", r.Body)
				}
				if who.want == forbid {
					reason := "your role does not include the workspace&#39;s settings"
					if strings.Contains(rt.path, "webhook-secret") {
						reason = "only owners see and change the workspace&#39;s secrets"
					}
					if !strings.Contains(r.Body, "You may not do this: "+reason) {
						t.Fatalf("403 without the reason %q:\n%s", reason, r.Body)
					}
				}
				if who.want != ok && strings.Contains(r.Body, "whsec_never_shown") {
					t.Fatal("a refused page shows the webhook secret")
				}
			})
		}
	}
}

// Every settings POST needs the session's CSRF token; refused, it changes
// nothing.
func TestSettingsCSRF(t *testing.T) {
	posts := []struct {
		path string
		form url.Values
	}{
		{"/console/w/ws_a/settings/api-keys", url.Values{"name": {"CI"}}},
		{"/console/w/ws_a/settings/api-keys/" + seededKeyID + "/revoke", nil},
		{"/console/w/ws_a/settings/webhook-secret/reveal", url.Values{"password": {ownerPassword}}},
		{"/console/w/ws_a/settings/webhook-secret/rotate", url.Values{"grace": {"none"}, "password": {ownerPassword}}},
		{"/console/w/ws_a/settings/integrations", url.Values{"eventsUrl": {"https://hooks.example.com/c"}}},
		{"/console/w/ws_a/settings/integrations/signing-secret", nil},
		{"/console/w/ws_a/settings/integrations/auto-assign", url.Values{"autoAssign": {"true"}}},
		{"/console/w/ws_a/settings/deliveries/" + failedID + "/retry", nil},
	}
	for _, p := range posts {
		for _, tt := range []struct {
			name string
			r    req
		}{
			{"no token", req{NoCSRF: true}},
			{"another session's token", req{CSRF: "csrf_admin"}},
			{"cross-site", req{Header: map[string]string{"Sec-Fetch-Site": "cross-site"}}},
		} {
			t.Run(p.path+" "+tt.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedSettings(t)
				r := tt.r
				r.Method, r.Path, r.As, r.Form = "POST", p.path, "owner", p.form
				res := h.do(t, r)
				if res.Status != http.StatusForbidden {
					t.Fatalf("status %d, want 403:\n%s", res.Status, res.Body)
				}
				if strings.Contains(res.Body, "whsec_never_shown") {
					t.Fatal("the refusal shows the secret")
				}
				keys := h.settings.keys["ws_a"]
				if len(keys) != 1 || keys[0].RevokedAt != nil {
					t.Fatalf("keys changed: %+v", keys)
				}
				if len(h.settings.secrets) != 0 || h.settings.integrations["ws_a"] != (fakeIntegrations{}) || len(h.deliveries.retried) != 0 {
					t.Fatalf("state changed: secrets %v, integrations %+v, retried %v", h.settings.secrets, h.settings.integrations, h.deliveries.retried)
				}
			})
		}
	}
}

// Key names, typed URLs and delivery errors are rendered escaped.
func TestSettingsEscaping(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedSettings(t)
	h.settings.keys["ws_a"][0].Name = xss
	x := h.deliveries.add(domain.Delivery{Target: domain.TargetEvents, Type: domain.EventMessageCreated, Status: domain.DeliveryFailed,
		Attempts: 1, LastError: xss}, domain.DeliveryAttempt{Attempt: 1, At: fakeNow, Error: xss})
	pages := []req{
		{Method: "POST", Path: "/console/w/ws_a/settings/api-keys", As: "owner", Form: url.Values{"name": {xss}}},
		{Path: "/console/w/ws_a/settings/api-keys", As: "owner"},
		{Path: "/console/w/ws_a/settings/api-keys/" + seededKeyID + "/revoke", As: "owner"},
		{Method: "POST", Path: "/console/w/ws_a/settings/integrations", As: "owner", Form: url.Values{"eventsUrl": {xss}}},
		{Method: "POST", Path: "/console/w/ws_a/settings/integrations", As: "owner", Form: url.Values{"helpdeskUrl": {xss}}},
		{Path: "/console/w/ws_a/settings/deliveries", As: "owner"},
		{Path: "/console/w/ws_a/settings/deliveries/" + x.ID, As: "owner"},
	}
	for _, p := range pages {
		t.Run(p.Method+" "+p.Path, func(t *testing.T) {
			r := h.do(t, p)
			if r.Status == http.StatusSeeOther {
				r = h.follow(t, r, p.As) // a new key's name is shown after the redirect
			}
			if r.Status >= 500 {
				t.Fatalf("status %d:\n%s", r.Status, r.Body)
			}
			if strings.Contains(r.Body, "<script>alert") || strings.Contains(r.Body, "<img src=x") {
				t.Fatalf("unescaped input on the page:\n%s", r.Body)
			}
			if !strings.Contains(r.Body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
				t.Fatalf("the input is not shown (escaped) at all:\n%s", r.Body)
			}
		})
	}
}

// checkPage asserts what every console page keeps to: the CSP (no inline
// script, handler or style), CSRF tokens in POST forms, labelled inputs,
// landmarks.
func checkPage(t *testing.T, r resp, as string) {
	t.Helper()
	if !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("headers: %v", r.Header)
	}
	for _, tag := range scriptTag.FindAllString(r.Body, -1) {
		if !strings.Contains(tag, ` src="/console/assets/`) {
			t.Errorf("a script not from our assets: %s", tag)
		}
	}
	for name, re := range map[string]*regexp.Regexp{"inline script": inlineScript, "event handler attribute": inlineHandler, "inline style": inlineStyle} {
		if m := re.FindString(r.Body); m != "" {
			t.Errorf("%s: %q", name, m)
		}
	}
	for _, form := range regexp.MustCompile(`(?s)<form[^>]*method="post".*?</form>`).FindAllString(r.Body, -1) {
		if !strings.Contains(form, `name="csrf" value="csrf_`+as+`"`) {
			t.Errorf("a POST form without the CSRF token: %s", form)
		}
	}
	for _, id := range regexp.MustCompile(`<(?:input|textarea|select) id="([^"]+)"`).FindAllStringSubmatch(r.Body, -1) {
		if !strings.Contains(r.Body, `for="`+id[1]+`"`) {
			t.Errorf("input %s has no label", id[1])
		}
	}
	for _, landmark := range []string{`<main id="main"`, `<h1>`, `lang="en"`, `aria-live="polite"`, `<nav class="side"`} {
		if !strings.Contains(r.Body, landmark) {
			t.Errorf("no %s", landmark)
		}
	}
}

func TestSettingsPagesKeepToTheCSP(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedSettings(t)
	for _, p := range []req{
		{Path: "/console/w/ws_a/settings", As: "owner"}, {Path: "/console/w/ws_a/settings", As: "admin"},
		{Path: "/console/w/ws_a/settings/api-keys", As: "admin"},
		{Method: "POST", Path: "/console/w/ws_a/settings/api-keys", As: "admin", Form: url.Values{"name": {"CI"}}},
		{Path: "/console/w/ws_a/settings/api-keys/" + seededKeyID + "/revoke", As: "admin"},
		{Path: "/console/w/ws_a/settings/webhook-secret", As: "owner"},
		{Method: "POST", Path: "/console/w/ws_a/settings/webhook-secret/reveal", As: "owner", Form: url.Values{"password": {ownerPassword}}},
		{Path: "/console/w/ws_a/settings/webhook-secret/rotate?grace=1h", As: "owner"},
		{Path: "/console/w/ws_a/settings/integrations", As: "admin"},
		{Path: "/console/w/ws_a/settings/integrations/signing-secret", As: "admin"},
		{Path: "/console/w/ws_a/settings/deliveries", As: "admin"},
		{Path: "/console/w/ws_a/settings/deliveries/" + failedID, As: "admin"},
		{Path: "/console/w/ws_a/settings/plan", As: "admin"},
	} {
		t.Run(p.Method+" "+p.Path+" "+p.As, func(t *testing.T) {
			r := h.do(t, p)
			if p.Method == "POST" {
				r = h.follow(t, r, p.As) // the page showing the secret
			}
			if r.Status != http.StatusOK {
				t.Fatalf("status %d:\n%s", r.Status, r.Body)
			}
			checkPage(t, r, p.As)
		})
	}
}

// A new key's secret is on the one page the POST that made it redirects
// to and on no later page, not even a reload of that one; the list shows
// name, prefix, creation, last use and revocation.
func TestAPIKeys(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedSettings(t)
	used := fakeNow.Add(time.Hour)
	h.settings.keys["ws_a"][0].LastUsedAt = &used
	posted := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/api-keys", As: "admin", Form: url.Values{"name": {"  Nightly export "}}})
	if posted.Status != http.StatusSeeOther || strings.Contains(posted.Body, "sk_") {
		t.Fatalf("create: %d\n%s", posted.Status, posted.Body)
	}
	r := h.follow(t, posted, "admin")
	if r.Status != http.StatusOK {
		t.Fatalf("created page: %d\n%s", r.Status, r.Body)
	}
	keys := h.settings.keys["ws_a"]
	if len(keys) != 2 || keys[0].Name != "Nightly export" {
		t.Fatalf("keys: %+v", keys)
	}
	secret := regexp.MustCompile(`<code id="key-secret" class="break">([^<]+)</code>`).FindStringSubmatch(r.Body)
	if secret == nil || !strings.HasPrefix(secret[1], keys[0].DisplayPrefix) || domain.HashSecret(secret[1]) != keys[0].Hash {
		t.Fatalf("the new key's secret is not shown:\n%s", r.Body)
	}
	for _, want := range []string{"you will not see it again", `data-copy="key-secret"`, "Nightly export"} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("no %q on the created page", want)
		}
	}
	reload := h.do(t, req{Path: posted.location(), As: "admin"})
	if reload.Status != http.StatusOK || strings.Contains(reload.Body, secret[1]) || strings.Contains(reload.Body, `id="key-secret"`) ||
		!strings.Contains(reload.Body, "This secret was shown once already") || len(h.settings.keys["ws_a"]) != 2 {
		t.Fatalf("a reload shows the secret again, or made a key (%d keys):\n%s", len(h.settings.keys["ws_a"]), reload.Body)
	}
	list := h.do(t, req{Path: "/console/w/ws_a/settings/api-keys", As: "admin"})
	if strings.Contains(list.Body, secret[1]) || strings.Contains(list.Body, `id="key-secret"`) {
		t.Fatal("the list shows the secret again")
	}
	for _, want := range []string{"Nightly export", keys[0].DisplayPrefix + "…", "CRM sync", "sk_live_abcdef…",
		"2027-03-01 09:30 UTC", "2027-03-01 10:30 UTC", "never", "Active"} {
		if !strings.Contains(list.Body, want) {
			t.Errorf("the list lacks %q", want)
		}
	}

	confirm := h.do(t, req{Path: "/console/w/ws_a/settings/api-keys/" + seededKeyID + "/revoke", As: "admin"})
	if !strings.Contains(confirm.Body, "Revoke the key CRM sync?") || !strings.Contains(confirm.Body, "cannot be undone") {
		t.Fatalf("no confirmation:\n%s", confirm.Body)
	}
	if h.settings.keys["ws_a"][1].RevokedAt != nil {
		t.Fatal("the confirmation page revoked the key")
	}
	r = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/api-keys/" + seededKeyID + "/revoke", As: "admin"})
	if r.Status != http.StatusSeeOther || r.location() != "/console/w/ws_a/settings/api-keys?done=keyrevoked" {
		t.Fatalf("revoke: %d %q", r.Status, r.location())
	}
	if h.settings.keys["ws_a"][1].RevokedAt == nil {
		t.Fatal("not revoked")
	}
	list = h.do(t, req{Path: r.location(), As: "admin"})
	if !strings.Contains(list.Body, "The key is revoked.") || !strings.Contains(list.Body, "Revoked 2027-03-01 09:30 UTC") ||
		strings.Contains(list.Body, seededKeyID+"/revoke") {
		t.Fatalf("after revoking:\n%s", list.Body)
	}
	if r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/api-keys/key_nope/revoke", As: "admin"}); r.Status != http.StatusNotFound {
		t.Fatalf("unknown key: %d", r.Status)
	}
}

func TestAPIKeyBadNames(t *testing.T) {
	for _, tt := range []struct{ name, input, want string }{
		{"empty", "", "Give the key a name."},
		{"blank", "   ", "Give the key a name."},
		{"too long", strings.Repeat("é", 101), "must be at most 100 characters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/api-keys", As: "owner", Form: url.Values{"name": {tt.input}}})
			if r.Status != http.StatusBadRequest {
				t.Fatalf("status %d:\n%s", r.Status, r.Body)
			}
			if !strings.Contains(r.Body, `<p class="field-error" id="f-name-error">`+tt.want+`</p>`) || !strings.Contains(r.Body, `aria-invalid="true"`) {
				t.Fatalf("no field error %q:\n%s", tt.want, r.Body)
			}
			if len(h.settings.keys["ws_a"]) != 0 || strings.Contains(r.Body, `id="key-secret"`) {
				t.Fatal("a key was made")
			}
		})
	}
}

// The webhook secret is hidden until the owner's password is entered
// again; a wrong or throttled attempt shows nothing.
func TestWebhookSecretReveal(t *testing.T) {
	h := newHarness(t, publicURL)
	page := h.do(t, req{Path: "/console/w/ws_a/settings/webhook-secret", As: "owner"})
	if page.Status != http.StatusOK || strings.Contains(page.Body, "whsec_never_shown") || !strings.Contains(page.Body, "The secret is hidden.") {
		t.Fatalf("the page shows the secret or no hint:\n%s", page.Body)
	}
	reveal := func(password string) resp {
		return h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/webhook-secret/reveal", As: "owner", Form: url.Values{"password": {password}}})
	}
	for _, wrong := range []string{"", "correct horse admin", ownerPassword + " "} {
		r := reveal(wrong)
		if r.Status != http.StatusUnauthorized || strings.Contains(r.Body, "whsec_never_shown") ||
			!strings.Contains(r.Body, `<p class="field-error" id="f-password-error">The password is wrong.</p>`) {
			t.Fatalf("wrong password %q: %d\n%s", wrong, r.Status, r.Body)
		}
	}
	h.accounts.confirmLimited = true
	r := reveal(ownerPassword)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "42" || strings.Contains(r.Body, "whsec_never_shown") ||
		!strings.Contains(r.Body, "Too many attempts. Please wait 42 seconds and try again.") {
		t.Fatalf("throttled: %d %q\n%s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	h.accounts.confirmLimited = false
	r = reveal(ownerPassword)
	if r.Status != http.StatusSeeOther || strings.Contains(r.Body, "whsec_never_shown") {
		t.Fatalf("the reveal answers with the secret: %d\n%s", r.Status, r.Body)
	}
	shown := r.location()
	r = h.follow(t, r, "owner")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, `<code id="webhook-secret" class="break">whsec_never_shown</code>`) ||
		!strings.Contains(r.Body, "reloading hides it again") {
		t.Fatalf("right password: %d\n%s", r.Status, r.Body)
	}
	if again := h.do(t, req{Path: shown, As: "owner"}); strings.Contains(again.Body, "whsec_never_shown") ||
		!strings.Contains(again.Body, "This secret was shown once already") {
		t.Fatalf("a reload shows the secret:\n%s", again.Body)
	}
	if again := h.do(t, req{Path: "/console/w/ws_a/settings/webhook-secret", As: "owner"}); strings.Contains(again.Body, "whsec_never_shown") {
		t.Fatal("the page shows the secret")
	}
}

// Rotating asks for a grace period and, on a confirmation page, the
// password; the new secret is shown once and the old one's end is said.
func TestWebhookSecretRotation(t *testing.T) {
	h := newHarness(t, publicURL)
	bad := h.do(t, req{Path: "/console/w/ws_a/settings/webhook-secret/rotate?grace=3y", As: "owner"})
	if bad.Status != http.StatusBadRequest || !strings.Contains(bad.Body, "choose one of the offered periods") {
		t.Fatalf("unknown grace: %d\n%s", bad.Status, bad.Body)
	}
	confirm := h.do(t, req{Path: "/console/w/ws_a/settings/webhook-secret/rotate?grace=7d", As: "owner"})
	for _, want := range []string{"Make a new webhook secret?", "keeps working for: 7 days", `name="grace" value="7d"`, `type="password"`} {
		if !strings.Contains(confirm.Body, want) {
			t.Errorf("the confirmation lacks %q", want)
		}
	}
	if len(h.settings.secrets) != 0 {
		t.Fatal("the confirmation page rotated")
	}
	post := func(grace, password string) resp {
		return h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/webhook-secret/rotate", As: "owner",
			Form: url.Values{"grace": {grace}, "password": {password}}})
	}
	for _, tt := range []struct {
		grace, password string
		status          int
		want            string
	}{
		{"7d", "wrong", http.StatusUnauthorized, "The password is wrong."},
		{"", ownerPassword, http.StatusBadRequest, "choose one of the offered periods"},
		{"168h", ownerPassword, http.StatusBadRequest, "choose one of the offered periods"},
	} {
		r := post(tt.grace, tt.password)
		if r.Status != tt.status || !strings.Contains(r.Body, tt.want) || len(h.settings.secrets) != 0 {
			t.Fatalf("grace %q password %q: %d\n%s", tt.grace, tt.password, r.Status, r.Body)
		}
	}
	h.accounts.confirmLimited = true
	if r := post("7d", ownerPassword); r.Status != http.StatusTooManyRequests || len(h.settings.secrets) != 0 {
		t.Fatalf("throttled rotation: %d", r.Status)
	}
	h.accounts.confirmLimited = false

	posted := post("7d", ownerPassword)
	sec := h.settings.secrets["ws_a"]
	if posted.Status != http.StatusSeeOther || strings.Contains(posted.Body, sec.current) {
		t.Fatalf("the rotation answers with the secret: %d\n%s", posted.Status, posted.Body)
	}
	r := h.follow(t, posted, "owner")
	if r.Status != http.StatusOK || sec.current == "" || sec.previous != "whsec_never_shown" || time.Until(sec.until) < 167*time.Hour {
		t.Fatalf("rotate: %d %+v\n%s", r.Status, sec, r.Body)
	}
	if !strings.Contains(r.Body, `<code id="webhook-secret" class="break">`+sec.current+`</code>`) ||
		!strings.Contains(r.Body, "A new secret is made.") || !strings.Contains(r.Body, "The previous secret is still accepted until") ||
		strings.Contains(r.Body, "whsec_never_shown") {
		t.Fatalf("the new secret or the grace is not shown (or the old secret is):\n%s", r.Body)
	}
	after := h.do(t, req{Path: posted.location(), As: "owner"})
	if strings.Contains(after.Body, sec.current) || !strings.Contains(after.Body, "The previous secret is still accepted until") ||
		h.settings.secrets["ws_a"] != sec {
		t.Fatalf("after a reload (rotated again: %v):\n%s", h.settings.secrets["ws_a"] != sec, after.Body)
	}
	if r := h.follow(t, post("none", ownerPassword), "owner"); r.Status != http.StatusOK || h.settings.secrets["ws_a"].previous != "" ||
		strings.Contains(r.Body, "still accepted") {
		t.Fatalf("no grace: %d %+v", r.Status, h.settings.secrets["ws_a"])
	}
}

// The URLs are checked as the v2 API checks them, with the message next to
// the field; the first URL's signing secret and a rotated one are shown
// once.
func TestIntegrations(t *testing.T) {
	h := newHarness(t, publicURL)
	save := func(helpdesk, events string) resp {
		return h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/integrations", As: "admin",
			Form: url.Values{"helpdeskUrl": {helpdesk}, "eventsUrl": {events}}})
	}
	page := h.do(t, req{Path: "/console/w/ws_a/settings/integrations", As: "admin"})
	if !strings.Contains(page.Body, "No signing secret yet") || !strings.Contains(page.Body, "Sending handoffs to a helpdesk needs the Standard plan.") {
		t.Fatalf("empty integrations:\n%s", page.Body)
	}
	for _, tt := range []struct {
		name, helpdesk, events, field, want string
		status                              int
	}{
		{"plain http", "", "http://hooks.example.com/c", "eventsUrl", "must use https", 400},
		{"not a URL", "", "hooks", "eventsUrl", "must be an absolute URL", 400},
		{"user info", "", "https://u:p@hooks.example.com/c", "eventsUrl", "must not contain a user name or password", 400},
		{"internal address", "", "https://127.0.0.1/c", "eventsUrl", "", 400},
		{"too long", "", "https://hooks.example.com/" + strings.Repeat("a", 2048), "eventsUrl", "must be at most 2048 characters", 400},
		{"helpdesk on the free plan", "https://desk.example.com/in", "", "helpdeskUrl", "the Free plan does not send handoffs to a helpdesk; the Standard plan does", 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := save(tt.helpdesk, tt.events)
			if r.Status != tt.status || !strings.Contains(r.Body, `<p class="field-error" id="f-`+tt.field+`-error">`+tt.want) {
				t.Fatalf("status %d, want %d with %q next to %s:\n%s", r.Status, tt.status, tt.want, tt.field, r.Body)
			}
			if h.settings.integrations["ws_a"] != (fakeIntegrations{}) {
				t.Fatalf("saved: %+v", h.settings.integrations["ws_a"])
			}
		})
	}

	r := h.follow(t, save("", "https://hooks.example.com/c"), "admin")
	first := h.settings.integrations["ws_a"].signing
	if r.Status != http.StatusOK || first == "" || !strings.Contains(r.Body, `<code id="signing-secret" class="break">`+escaped(first)+`</code>`) ||
		!strings.Contains(r.Body, "you will not see it again") || !strings.Contains(r.Body, `value="https://hooks.example.com/c"`) {
		t.Fatalf("first URL: %d\n%s", r.Status, r.Body)
	}
	page = h.do(t, req{Path: "/console/w/ws_a/settings/integrations", As: "admin"})
	if strings.Contains(page.Body, escaped(first)) || !strings.Contains(page.Body, "It is shown only when made.") {
		t.Fatal("a reload shows the signing secret")
	}
	if r := save("", "https://hooks.example.com/other"); r.Status != http.StatusSeeOther ||
		r.location() != "/console/w/ws_a/settings/integrations?done=integrations" || h.settings.integrations["ws_a"].signing != first {
		t.Fatalf("second save: %d %q", r.Status, r.location())
	}
	h.settings.plans["ws_a"] = domain.PlanStandard
	if r := save("https://desk.example.com/in", "https://hooks.example.com/other"); r.Status != http.StatusSeeOther ||
		h.settings.integrations["ws_a"].helpdesk != "https://desk.example.com/in" {
		t.Fatalf("helpdesk on standard: %d\n%s", r.Status, r.Body)
	}

	// Back on the free plan, the kept helpdesk URL does not stop editing
	// the events URL; clearing a URL is saving it empty.
	h.settings.plans["ws_a"] = domain.PlanFree
	if r := save("https://desk.example.com/in", ""); r.Status != http.StatusSeeOther ||
		h.settings.integrations["ws_a"].helpdesk != "https://desk.example.com/in" || h.settings.integrations["ws_a"].events != "" {
		t.Fatalf("events URL cleared after a downgrade: %d %+v\n%s", r.Status, h.settings.integrations["ws_a"], r.Body)
	}

	confirm := h.do(t, req{Path: "/console/w/ws_a/settings/integrations/signing-secret", As: "admin"})
	if !strings.Contains(confirm.Body, "Replace the signing secret?") || h.settings.integrations["ws_a"].signing != first {
		t.Fatalf("confirmation:\n%s", confirm.Body)
	}
	r = h.follow(t, h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/integrations/signing-secret", As: "admin"}), "admin")
	rotated := h.settings.integrations["ws_a"].signing
	if r.Status != http.StatusOK || rotated == first || !strings.Contains(r.Body, escaped(rotated)) ||
		strings.Contains(r.Body, escaped(first)) {
		t.Fatalf("rotation: %d\n%s", r.Status, r.Body)
	}
	if page := h.do(t, req{Path: "/console/w/ws_a/settings/integrations", As: "admin"}); strings.Contains(page.Body, escaped(rotated)) {
		t.Fatal("a reload shows the rotated secret")
	}
}

// The delivery log lists, filters (as v2 does) and pages deliveries; a
// detail shows every attempt; a failed one can be retried.
func TestDeliveryLog(t *testing.T) {
	h := newHarness(t, publicURL)
	empty := h.do(t, req{Path: "/console/w/ws_a/settings/deliveries", As: "admin"})
	if !strings.Contains(empty.Body, "No deliveries match.") {
		t.Fatalf("no empty state:\n%s", empty.Body)
	}
	h.seedSettings(t)
	h.deliveries.add(domain.Delivery{WorkspaceID: "ws_b", Target: domain.TargetEvents, Type: domain.EventMessageCreated,
		Status: domain.DeliveryFailed, LastError: "other workspace's"})
	all := h.do(t, req{Path: "/console/w/ws_a/settings/deliveries", As: "admin"})
	for _, want := range []string{failedID, deliveredID, "receiver answered 500", "FAILED", "DELIVERED", "Helpdesk", "Events", domain.EventHandoffRequested} {
		if !strings.Contains(all.Body, want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if strings.Contains(all.Body, "other workspace") {
		t.Fatal("another workspace's delivery is listed")
	}
	failed := h.do(t, req{Path: "/console/w/ws_a/settings/deliveries?status=FAILED&target=helpdesk", As: "admin"})
	if !strings.Contains(failed.Body, failedID) || strings.Contains(failed.Body, deliveredID) || !strings.Contains(failed.Body, `<option value="FAILED" selected>`) {
		t.Fatalf("filtered:\n%s", failed.Body)
	}
	for _, q := range []string{"status=LOST", "target=sms", "type=message.deleted", "cursor=bogus"} {
		r := h.do(t, req{Path: "/console/w/ws_a/settings/deliveries?" + q, As: "admin"})
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, `class="field-error"`) {
			t.Fatalf("%s: %d\n%s", q, r.Status, r.Body)
		}
	}

	for range 55 {
		h.deliveries.add(domain.Delivery{Target: domain.TargetEvents, Type: domain.EventConversationCreated, Status: domain.DeliveryDelivered})
	}
	first := h.do(t, req{Path: "/console/w/ws_a/settings/deliveries?type=conversation.created", As: "admin"})
	next := regexp.MustCompile(`href="(/console/w/ws_a/settings/deliveries\?[^"]+)">Older deliveries`).FindStringSubmatch(first.Body)
	if n := strings.Count(first.Body, "<td><code>conversation.created</code></td>"); n != 50 || next == nil {
		t.Fatalf("first page: %d rows, next %v", n, next)
	}
	second := h.do(t, req{Path: strings.ReplaceAll(next[1], "&amp;", "&"), As: "admin"})
	if n := strings.Count(second.Body, "<td><code>conversation.created</code></td>"); second.Status != http.StatusOK || n != 5 ||
		strings.Contains(second.Body, "Older deliveries") {
		t.Fatalf("second page: %d, %d rows\n%s", second.Status, n, second.Body)
	}

	detail := h.do(t, req{Path: "/console/w/ws_a/settings/deliveries/" + failedID, As: "admin"})
	for _, want := range []string{"conv_1", "120 ms", "connection refused", "<td>500</td>", "Retry now"} {
		if !strings.Contains(detail.Body, want) {
			t.Errorf("the detail lacks %q", want)
		}
	}
	if d := h.do(t, req{Path: "/console/w/ws_a/settings/deliveries/" + deliveredID, As: "admin"}); strings.Contains(d.Body, "Retry now") ||
		!strings.Contains(d.Body, "No attempt yet.") {
		t.Fatal("a delivered delivery offers a retry or shows attempts it lacks")
	}
	r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/deliveries/" + failedID + "/retry", As: "admin"})
	if r.Status != http.StatusSeeOther || r.location() != "/console/w/ws_a/settings/deliveries/"+failedID+"?done=retried" ||
		len(h.deliveries.retried) != 1 {
		t.Fatalf("retry: %d %q", r.Status, r.location())
	}
	if d := h.do(t, req{Path: r.location(), As: "admin"}); !strings.Contains(d.Body, "The delivery is queued again.") || !strings.Contains(d.Body, "PENDING") {
		t.Fatalf("after retry:\n%s", d.Body)
	}
	r = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/settings/deliveries/" + deliveredID + "/retry", As: "admin"})
	if r.Status != http.StatusConflict || !strings.Contains(r.Body, "Only a failed delivery can be retried") {
		t.Fatalf("retry of a delivered one: %d\n%s", r.Status, r.Body)
	}
	for _, id := range []string{"dlv_nope", h.deliveries.items[len(h.deliveries.items)-3].ID} {
		if d, _, _ := h.deliveries.Get(t.Context(), "ws_a", id); d.ID != "" {
			continue // only ids that are not ws_a's
		}
		if r := h.do(t, req{Path: "/console/w/ws_a/settings/deliveries/" + id, As: "admin"}); r.Status != http.StatusNotFound {
			t.Fatalf("%s: %d", id, r.Status)
		}
	}
}

// Every feature is listed; those the plan lacks say the plan that has
// them (and whether an add-on does).
func TestPlanPage(t *testing.T) {
	row := func(body, feature string) string {
		m := regexp.MustCompile(`(?s)<th scope="row">` + regexp.QuoteMeta(feature) + `</th>\s*<td>([^<]*)</td>\s*<td>([^<]*)</td>`).FindStringSubmatch(body)
		if m == nil {
			return "missing"
		}
		return m[1] + " | " + m[2]
	}
	for _, tt := range []struct {
		name   string
		plan   domain.Plan
		addons []domain.Feature
		want   map[string]string
	}{
		{"free", domain.PlanFree, nil, map[string]string{
			"Chat widget":                         "Yes | Free plan or above",
			"API access (keys and the v2 API)":    "No | Standard plan or above",
			"Tool calling":                        "No | Standard plan or above",
			"Handoff to a person or helpdesk":     "No | Standard plan or above",
			"Identity verification":               "No | Enterprise plan or above, or as an add-on",
			"White label (no Concierge branding)": "No | Enterprise plan or above, or as an add-on",
		}},
		{"hobby with white label", domain.PlanHobby, []domain.Feature{domain.FeatureWhiteLabel}, map[string]string{
			"White label (no Concierge branding)": "Yes, as an add-on | Enterprise plan or above, or as an add-on",
			"Identity verification":               "No | Enterprise plan or above, or as an add-on",
			"Handoff to a person or helpdesk":     "No | Standard plan or above",
		}},
		{"standard", domain.PlanStandard, nil, map[string]string{
			"Handoff to a person or helpdesk": "Yes | Standard plan or above",
			"Identity verification":           "No | Enterprise plan or above, or as an add-on",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			h.settings.plans["ws_a"], h.settings.addons["ws_a"] = tt.plan, tt.addons
			r := h.do(t, req{Path: "/console/w/ws_a/settings/plan", As: "admin"})
			if r.Status != http.StatusOK || !strings.Contains(r.Body, "Your plan: "+tt.plan.Title()) {
				t.Fatalf("%d\n%s", r.Status, r.Body)
			}
			for feature, want := range tt.want {
				if got := row(r.Body, feature); got != want {
					t.Errorf("%s: %q, want %q", feature, got, want)
				}
			}
			if n := strings.Count(r.Body, `<th scope="row">`); n != 6 {
				t.Errorf("%d features listed, want 6", n)
			}
		})
	}
}

// The landing page links what the role may open, and the navigation
// offers the webhook secret to owners only.
func TestSettingsLanding(t *testing.T) {
	h := newHarness(t, publicURL)
	owner := h.do(t, req{Path: "/console/w/ws_a/settings", As: "owner"})
	admin := h.do(t, req{Path: "/console/w/ws_a/settings", As: "admin"})
	for _, link := range []string{"/settings/api-keys", "/settings/integrations", "/settings/deliveries", "/settings/plan", "/members"} {
		if !strings.Contains(owner.Body, `href="/console/w/ws_a`+link+`"`) || !strings.Contains(admin.Body, `href="/console/w/ws_a`+link+`"`) {
			t.Errorf("no link to %s", link)
		}
	}
	if !strings.Contains(owner.Body, `href="/console/w/ws_a/settings/webhook-secret"`) || strings.Contains(admin.Body, "webhook-secret") {
		t.Error("the webhook secret link is not for owners only")
	}
	if agent := h.do(t, req{Path: "/console/w/ws_a", As: "agent"}); strings.Contains(agent.Body, "/settings") {
		t.Error("helpers are offered settings")
	}
}

// Built without the delivery service, the pages that need it answer 503
// and the others still work.
func TestSettingsWithoutDeliveries(t *testing.T) {
	h := newHarness(t, publicURL)
	c, err := console.New(h.accounts, fakeWorkspaces{names: map[string]string{"ws_a": "Acme"}, settings: newFakeSettings()}, h.agents, console.Options{PublicURL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	h2 := *h
	h2.app = newApp(c)
	if r := h2.do(t, req{Path: "/console/w/ws_a/settings/integrations", As: "admin"}); r.Status != http.StatusServiceUnavailable ||
		!strings.Contains(r.Body, "A service the console needs is unavailable.") {
		t.Fatalf("integrations: %d\n%s", r.Status, r.Body)
	}
	if r := h2.do(t, req{Path: "/console/w/ws_a/settings/api-keys", As: "admin"}); r.Status != http.StatusOK {
		t.Fatalf("api keys: %d", r.Status)
	}
}

// escaped is s as html/template writes it in element text (it escapes "+"
// too, which signing secrets hold).
func escaped(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// BenchmarkDeliveriesPage renders a full page of the delivery log (50
// rows, scripted service): the console's own share of the page budget.
func BenchmarkDeliveriesPage(b *testing.B) {
	h := newHarness(b, publicURL)
	for range 60 {
		h.deliveries.add(domain.Delivery{Target: domain.TargetEvents, Type: domain.EventMessageCreated, Status: domain.DeliveryFailed,
			Attempts: 3, LastError: "receiver answered 503"})
	}
	r := req{Path: "/console/w/ws_a/settings/deliveries", As: "admin"}
	b.ReportAllocs()
	for b.Loop() {
		if res := h.do(b, r); res.Status != http.StatusOK {
			b.Fatal(res.Status)
		}
	}
}

// The auto-assignment switch on the integrations page: off at first,
// turned on and off again with a notice, the URLs left alone; anything but
// true or false is refused with the field named.
func TestAutoAssignSwitch(t *testing.T) {
	h := newHarness(t, publicURL)
	h.settings.integrations["ws_a"] = fakeIntegrations{events: "https://hooks.example.com/c"}
	path := "/console/w/ws_a/settings/integrations"
	switchOf := func(body string) string {
		i := strings.Index(body, `name="autoAssign"`)
		if i < 0 {
			t.Fatalf("no auto-assignment switch:\n%s", body)
		}
		return body[i : i+strings.Index(body[i:], ">")]
	}
	page := h.do(t, req{Path: path, As: "admin"})
	if s := switchOf(page.Body); !strings.Contains(s, `value="true"`) || !strings.Contains(s, `aria-checked="false"`) ||
		!strings.Contains(page.Body, "Off: handed-off conversations wait in Needs a person.") {
		t.Fatalf("initial switch %q", s)
	}
	for _, tt := range []struct {
		as, value, notice, checked, next string
		on                               bool
	}{
		{"owner", "true", "Auto-assignment is on.", "true", "false", true},
		{"admin", "false", "Auto-assignment is off.", "false", "true", false},
	} {
		r := h.do(t, req{Method: "POST", Path: path + "/auto-assign", As: tt.as, Form: url.Values{"autoAssign": {tt.value}}})
		if r.Status != http.StatusSeeOther || h.settings.integrations["ws_a"].autoAssign != tt.on || h.settings.integrations["ws_a"].events == "" {
			t.Fatalf("%s turns it %s: %d %+v\n%s", tt.as, tt.value, r.Status, h.settings.integrations["ws_a"], r.Body)
		}
		page := h.follow(t, r, tt.as)
		if s := switchOf(page.Body); !strings.Contains(page.Body, tt.notice) || !strings.Contains(s, `aria-checked="`+tt.checked+`"`) || !strings.Contains(s, `value="`+tt.next+`"`) {
			t.Fatalf("after %s: switch %q\n%s", tt.value, s, page.Body)
		}
	}
	for _, bad := range []string{"", "yes", "TRUE"} {
		r := h.do(t, req{Method: "POST", Path: path + "/auto-assign", As: "owner", Form: url.Values{"autoAssign": {bad}}})
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "must be true or false") || h.settings.integrations["ws_a"].autoAssign {
			t.Fatalf("autoAssign=%q: %d %+v\n%s", bad, r.Status, h.settings.integrations["ws_a"], r.Body)
		}
	}
}
