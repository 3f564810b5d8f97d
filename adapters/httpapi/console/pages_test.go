package console_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

const xss = `<script>alert(1)</script>"'><img src=x onerror=alert(2)>`

// Everything people type is rendered escaped: agent fields, member names
// and emails, invitation emails.
func TestUserSuppliedFieldsAreEscaped(t *testing.T) {
	h := newHarness(t, publicURL)
	form := agentForm("xss", xss)
	for _, f := range []string{"systemPrompt", "welcomeMessage", "suggestedQuestions", "fallbackMessage", "blockedTopics"} {
		form.Set(f, xss)
	}
	if r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/agents", As: "owner", Form: form}); r.Status != http.StatusSeeOther {
		t.Fatalf("create: %d\n%s", r.Status, r.Body)
	}
	h.accounts.members = append(h.accounts.members, domain.Member{WorkspaceID: "ws_a", UserID: "usr_x", Name: xss, Email: "x@example.com", Role: domain.MemberAgent})
	h.accounts.invitations["lt_x"] = h.accounts.invitations["lt_open"]
	inv := h.accounts.invitations["lt_x"]
	inv.Email = xss
	inv.ID = "inv_x"
	h.accounts.invitations["lt_x"] = inv
	// A refused form echoes what was typed, escaped too.
	bad := agentForm("bad", xss)
	bad.Set("avatarUrl", xss)
	pages := []req{
		{Path: "/console/w/ws_a/agents", As: "owner"},
		{Path: "/console/w/ws_a/agents/xss", As: "owner"},
		{Path: "/console/w/ws_a/agents/xss/delete", As: "owner"},
		{Path: "/console/w/ws_a/members", As: "owner"},
		{Path: "/console/w/ws_a/members/usr_x/remove", As: "owner"},
		{Path: "/console/w/ws_a/invitations/inv_x/revoke", As: "owner"},
		{Path: "/console/invitations/lt_x"},
		{Method: "POST", Path: "/console/w/ws_a/agents", As: "owner", Form: bad},
		{Method: "POST", Path: "/console/sign-in", Form: url.Values{"email": {xss}, "password": {"x"}}},
		{Method: "POST", Path: "/console/w/ws_a/members/invitations", As: "owner", Form: url.Values{"email": {xss}, "role": {"agent"}}},
	}
	for _, p := range pages {
		t.Run(p.Method+" "+p.Path, func(t *testing.T) {
			r := h.do(t, p)
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

var (
	inlineScript  = regexp.MustCompile(`<script(?:\s[^>]*)?>\s*[^<\s]`)
	scriptTag     = regexp.MustCompile(`<script[^>]*>`)
	inlineHandler = regexp.MustCompile(`(?i)<[^>]+\son[a-z]+\s*=`)
	inlineStyle   = regexp.MustCompile(`(?i)<style|<[^>]+\sstyle\s*=`)
)

// Every page renders with only what the CSP allows: no inline scripts,
// event handler attributes or inline styles; each form posting state
// carries the CSRF token; each input has a label.
func TestPagesKeepToTheCSP(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	pages := []req{
		{Path: "/console/sign-in"}, {Path: "/console/password-reset"}, {Path: "/console/password-reset/lt_reset"},
		{Path: "/console/invitations/lt_open"}, {Path: "/console/invitations/lt_gone"},
		{Path: "/console/account", As: "owner"},
		{Path: "/console/w/ws_a/agents", As: "owner"}, {Path: "/console/w/ws_a/agents/new", As: "owner"},
		{Path: "/console/w/ws_a/agents/support", As: "owner"}, {Path: "/console/w/ws_a/agents/support/delete", As: "owner"},
		{Path: "/console/w/ws_a/members", As: "owner"}, {Path: "/console/w/ws_a/members/agent/role?role=admin", As: "owner"},
		{Path: "/console/w/ws_a/members/agent/remove", As: "owner"}, {Path: "/console/w/ws_a/invitations/inv_1/revoke", As: "owner"},
		{Path: "/console/w/ws_a/agents", As: "agent"}, {Path: "/console/nothing", As: "owner"},
		// Knowledge
		{Path: "/console/w/ws_a/knowledge", As: "owner"}, {Path: "/console/w/ws_a/agents/support/knowledge", As: "owner"},
		{Path: "/console/w/ws_a/agents/support/knowledge/" + matrixSource + "/delete", As: "owner"},
		// Conversations
		{Path: "/console/w/ws_a/conversations", As: "agent"}, {Path: "/console/w/ws_a/conversations?status=OPEN", As: "agent"},
		{Path: "/console/w/ws_a/conversations/" + convA, As: "agent"}, {Path: "/console/w/ws_a/playground", As: "agent"},
		{Path: "/console/w/ws_a/playground?session=" + convA, As: "agent"},
		{Method: "POST", Path: "/console/w/ws_a/playground", As: "agent", Form: url.Values{"agent": {"support"}, "question": {" "}}},
		// Inbox
		{Path: "/console/w/ws_a/inbox", As: "agent"}, {Path: "/console/w/ws_a/inbox?view=open", As: "agent"},
		{Path: "/console/w/ws_a/inbox?view=bogus", As: "agent"}, {Path: "/console/w/ws_a/inbox/" + convA, As: "agent"},
		{Method: "POST", Path: "/console/w/ws_a/inbox/" + convA + "/messages", As: "agent", Form: url.Values{"kind": {"reply"}, "content": {" "}}},
	}
	h.seedSource(t, "support", domain.Source{ID: matrixSource, Type: domain.SourceText, Name: "Refunds", Status: domain.SourcePending}) // Knowledge
	// Conversations
	h.seedConversations(t)
	for _, p := range pages {
		t.Run(p.Path+" "+p.As, func(t *testing.T) {
			r := h.do(t, p)
			if r.Status >= 500 || !strings.HasPrefix(r.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("status %d, %s:\n%s", r.Status, r.Header.Get("Content-Type"), r.Body)
			}
			for _, tag := range scriptTag.FindAllString(r.Body, -1) {
				if !strings.Contains(tag, ` src="/console/assets/`) {
					t.Errorf("a script not from our assets: %s", tag)
				}
			}
			for name, re := range map[string]*regexp.Regexp{"inline script": inlineScript,
				"event handler attribute": inlineHandler, "inline style": inlineStyle} {
				if m := re.FindString(r.Body); m != "" {
					t.Errorf("%s: %q", name, m)
				}
			}
			for _, form := range regexp.MustCompile(`(?s)<form[^>]*method="post".*?</form>`).FindAllString(r.Body, -1) {
				if p.As != "" && !strings.Contains(form, `name="csrf" value="csrf_`+p.As+`"`) {
					t.Errorf("a POST form without the CSRF token: %s", form)
				}
			}
			for _, id := range regexp.MustCompile(`<(?:input|textarea|select) id="([^"]+)"`).FindAllStringSubmatch(r.Body, -1) {
				if !strings.Contains(r.Body, `for="`+id[1]+`"`) {
					t.Errorf("input %s has no label", id[1])
				}
			}
			for _, landmark := range []string{`<main id="main"`, `<h1>`, `lang="en"`, `aria-live="polite"`} {
				if !strings.Contains(r.Body, landmark) {
					t.Errorf("no %s", landmark)
				}
			}
		})
	}
}

// Every field the v2 API takes is on the agent form, and saving it
// changes the agent.
func TestAgentFormSavesEveryField(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", false)
	form := url.Values{
		"name": {"Help desk"}, "systemPrompt": {"Answer briefly."}, "welcomeMessage": {"Hi!"},
		"suggestedQuestions": {"How do I pay?\r\n\r\nWhere is my order?\n"}, "fallbackMessage": {"Ask a person."},
		"model": {"openai:gpt-4o-mini"}, "blockedTopics": {"politics\nweather"}, "retrievalTopK": {"7"},
		"retrievalThreshold": {"0.5"}, "primaryColor": {"#FF0000"}, "avatarUrl": {"https://cdn.example/a.png"},
		"allowedOrigins": {"https://www.example.com\nhttp://localhost:3000"},
	}
	r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/agents/support", As: "admin", Form: form})
	if r.Status != http.StatusSeeOther || r.location() != "/console/w/ws_a/agents/support?done=saved" {
		t.Fatalf("%d %q:\n%s", r.Status, r.location(), r.Body)
	}
	a, _ := h.agents.Get(t.Context(), "ws_a", "support")
	c := a.Config
	got := fmt.Sprintf("%s|%s|%s|%q|%s|%s|%q|%d|%v|%s|%s|%q", a.Name, c.SystemPrompt, c.WelcomeMessage, c.SuggestedQuestions, c.FallbackMessage,
		c.Model, c.BlockedTopics, c.RetrievalTopK, c.RetrievalThreshold, c.PrimaryColor, c.AvatarURL, c.AllowedOrigins)
	want := `Help desk|Answer briefly.|Hi!|["How do I pay?" "Where is my order?"]|Ask a person.|openai:gpt-4o-mini|["politics" "weather"]|7|0.5|#ff0000|https://cdn.example/a.png|["https://www.example.com" "http://localhost:3000"]`
	if got != want {
		t.Fatalf("saved\n%s\nwant\n%s", got, want)
	}
	page := h.do(t, req{Path: r.location(), As: "admin"})
	for _, s := range []string{"Your changes are saved.", "Where is my order?", "http://localhost:3000", `value="openai:gpt-4o-mini"`,
		"https://console.example/chat/support", "Publish the agent to preview"} {
		if !strings.Contains(page.Body, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
}

// Refused fields are shown next to the field, with what was typed kept.
func TestAgentValidationErrorsNextToFields(t *testing.T) {
	tests := []struct {
		field, value, message string
	}{
		{"slug", "Not A Slug", "must be 1 to 64 lowercase letters"},
		{"name", " ", "is required"},
		{"retrievalTopK", "many", "must be a number"},
		{"retrievalTopK", "99", "must be between 1 and 20"},
		{"retrievalTopK", "0", "must be between 1 and 20"},
		{"retrievalThreshold", "2", "must be between 0 and 1"},
		{"primaryColor", "red", "must be a colour in the form #rrggbb"},
		{"avatarUrl", "http://insecure.example/a.png", "must be an absolute https:// URL"},
		{"allowedOrigins", "https://example.com/path", "entries must be origins"},
		{"model", "gpt-4", "must be local, openai or openai:"},
	}
	for _, tt := range tests {
		t.Run(tt.field+"="+tt.value, func(t *testing.T) {
			h := newHarness(t, publicURL)
			form := agentForm("fresh", "Fresh")
			form.Set(tt.field, tt.value)
			r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/agents", As: "owner", Form: form})
			if r.Status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400:\n%s", r.Status, r.Body)
			}
			re := regexp.MustCompile(`(?s)id="f-` + tt.field + `"[^>]*aria-invalid="true".*?<p class="field-error" id="f-` + tt.field + `-error">[^<]*` + regexp.QuoteMeta(tt.message))
			if !re.MatchString(r.Body) {
				t.Fatalf("no error %q next to %s:\n%s", tt.message, tt.field, r.Body)
			}
			if !strings.Contains(r.Body, "Please correct the fields marked below.") {
				t.Fatal("no summary above the form")
			}
			if strings.TrimSpace(tt.value) != "" && !strings.Contains(r.Body, tt.value) {
				t.Fatalf("the typed value %q is lost", tt.value)
			}
		})
	}
	t.Run("slug taken", func(t *testing.T) {
		h := newHarness(t, publicURL)
		h.seedAgent(t, "support", "Support", false)
		r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/agents", As: "owner", Form: agentForm("support", "Again")})
		if r.Status != http.StatusConflict || !strings.Contains(r.Body, `id="f-slug-error">Another agent of this workspace has this slug: choose another.`) ||
			!strings.Contains(r.Body, `value="Again"`) {
			t.Fatalf("%d:\n%s", r.Status, r.Body)
		}
	})
}

func TestAgentLifecycle(t *testing.T) {
	h := newHarness(t, publicURL)
	empty := h.do(t, req{Path: "/console/w/ws_a/agents", As: "owner"})
	if !strings.Contains(empty.Body, "No agents yet.") {
		t.Fatalf("no empty state:\n%s", empty.Body)
	}
	r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/agents", As: "owner", Form: agentForm("help", "Help")})
	if r.location() != "/console/w/ws_a/agents/help?done=created" {
		t.Fatalf("create: %d %q", r.Status, r.location())
	}
	if a, _ := h.agents.Get(t.Context(), "ws_a", "help"); a.Config.Published {
		t.Fatal("a new agent is published before anyone published it")
	}
	h.do(t, req{Method: "POST", Path: "/console/w/ws_a/agents/help/publish", As: "owner"})
	page := h.do(t, req{Path: "/console/w/ws_a/agents/help", As: "owner"})
	if !strings.Contains(page.Body, `<iframe class="preview" src="/chat/help"`) {
		t.Fatalf("a published agent without its preview:\n%s", page.Body)
	}
	// Unpublished, it has no preview (the widget would not answer), and
	// says why.
	h.do(t, req{Method: "POST", Path: "/console/w/ws_a/agents/help/unpublish", As: "owner"})
	page = h.do(t, req{Path: "/console/w/ws_a/agents/help?done=unpublished", As: "owner"})
	if strings.Contains(page.Body, `<iframe class="preview"`) || !strings.Contains(page.Body, "Publish the agent to preview its widget") ||
		!strings.Contains(page.Body, "The agent is unpublished") {
		t.Fatalf("preview of an unpublished agent:\n%s", page.Body)
	}
	// Deleting asks first: the GET changes nothing.
	confirm := h.do(t, req{Path: "/console/w/ws_a/agents/help/delete", As: "owner"})
	if !strings.Contains(confirm.Body, "This cannot be undone.") {
		t.Fatalf("no confirmation:\n%s", confirm.Body)
	}
	if _, err := h.agents.Get(t.Context(), "ws_a", "help"); err != nil {
		t.Fatal("the confirmation page deleted the agent")
	}
	del := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/agents/help/delete", As: "owner"})
	if del.location() != "/console/w/ws_a/agents?done=deleted" {
		t.Fatalf("delete: %d %q", del.Status, del.location())
	}
	if _, err := h.agents.Get(t.Context(), "ws_a", "help"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	// Another workspace's agent with the same slug is the same 404.
	if r := h.do(t, req{Path: "/console/w/ws_a/agents/help", As: "owner"}); r.Status != http.StatusNotFound {
		t.Fatalf("deleted agent: %d", r.Status)
	}
}

func TestMembers(t *testing.T) {
	t.Run("the invite link is shown once to the inviter", func(t *testing.T) {
		h := newHarness(t, publicURL)
		posted := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/members/invitations", As: "admin", Form: url.Values{"email": {"Nia@Example.com"}, "role": {"agent"}}})
		if strings.Contains(posted.Body, "/console/invitations/lt_") {
			t.Fatalf("the POST answers with the link:\n%s", posted.Body)
		}
		r := h.follow(t, posted, "admin")
		if r.Status != http.StatusOK || !regexp.MustCompile(`<code id="invite-link" class="break">https://console.example/console/invitations/lt_[0-9a-f]+</code>`).MatchString(r.Body) {
			t.Fatalf("%d, no link:\n%s", r.Status, r.Body)
		}
		again := h.do(t, req{Path: posted.location(), As: "admin"})
		if strings.Contains(again.Body, "/console/invitations/lt_") || !strings.Contains(again.Body, "nia@example.com") ||
			!strings.Contains(again.Body, "This secret was shown once already") {
			t.Fatalf("the link is shown again, or the invitation is not listed:\n%s", again.Body)
		}
	})
	t.Run("bad invitations are explained", func(t *testing.T) {
		h := newHarness(t, publicURL)
		r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/members/invitations", As: "admin", Form: url.Values{"email": {"not an email"}, "role": {"agent"}}})
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, `id="f-email-error">must be an email address`) {
			t.Fatalf("%d:\n%s", r.Status, r.Body)
		}
		r = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/members/invitations", As: "admin", Form: url.Values{"email": {"a@example.com"}, "role": {"king"}}})
		if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "must be one of owner, admin, agent") {
			t.Fatalf("%d:\n%s", r.Status, r.Body)
		}
		r = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/members/invitations", As: "admin", Form: url.Values{"email": {"a@example.com"}, "role": {"owner"}}})
		if r.Status != http.StatusForbidden || !strings.Contains(r.Body, "only owners may invite owners") {
			t.Fatalf("%d:\n%s", r.Status, r.Body)
		}
	})
	t.Run("the last owner stays, and says why", func(t *testing.T) {
		h := newHarness(t, publicURL)
		for _, r := range []req{
			{Method: "POST", Path: "/console/w/ws_a/members/owner/remove", As: "owner"},
			{Method: "POST", Path: "/console/w/ws_a/members/owner/role", As: "owner", Form: url.Values{"role": {"admin"}}},
		} {
			got := h.do(t, r)
			if got.Status != http.StatusConflict || !strings.Contains(got.Body, "a workspace keeps at least one owner") || !strings.Contains(got.Body, `role="alert"`) {
				t.Fatalf("%s: %d:\n%s", r.Path, got.Status, got.Body)
			}
		}
	})
	t.Run("changing a role is confirmed first", func(t *testing.T) {
		h := newHarness(t, publicURL)
		c := h.do(t, req{Path: "/console/w/ws_a/members/agent/role?role=admin", As: "owner"})
		if !strings.Contains(c.Body, "Make Agnes Agent admin?") || !strings.Contains(c.Body, `name="role" value="admin"`) {
			t.Fatalf("%d:\n%s", c.Status, c.Body)
		}
		if m, _ := h.accounts.Member(t.Context(), "agent", "ws_a"); m.Role != domain.MemberAgent {
			t.Fatal("the confirmation page changed the role")
		}
		r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/members/agent/role", As: "owner", Form: url.Values{"role": {"admin"}}})
		if m, _ := h.accounts.Member(t.Context(), "agent", "ws_a"); r.location() != "/console/w/ws_a/members?done=role" || m.Role != domain.MemberAdmin {
			t.Fatalf("%d %q, role %s", r.Status, r.location(), m.Role)
		}
		if bad := h.do(t, req{Path: "/console/w/ws_a/members/agent/role?role=king", As: "owner"}); bad.Status != http.StatusBadRequest {
			t.Fatalf("unknown role: %d", bad.Status)
		}
		if other := h.do(t, req{Path: "/console/w/ws_a/members/other/remove", As: "owner"}); other.Status != http.StatusNotFound {
			t.Fatalf("another workspace's member: %d", other.Status)
		}
	})
}

func TestPublicLinks(t *testing.T) {
	t.Run("accepting an invitation signs in with a new session", func(t *testing.T) {
		h := newHarness(t, publicURL)
		page := h.do(t, req{Path: "/console/invitations/lt_open"})
		if page.Status != http.StatusOK || !strings.Contains(page.Body, "You are invited to join Acme as agent with the email new@example.com.") {
			t.Fatalf("%d:\n%s", page.Status, page.Body)
		}
		bad := h.do(t, req{Method: "POST", Path: "/console/invitations/lt_open", Form: url.Values{"name": {"Nia"}, "password": {"short"}}})
		if bad.Status != http.StatusBadRequest || !strings.Contains(bad.Body, `id="f-password-error">must be at least 12 characters`) || h.sessionCookie(bad) != nil {
			t.Fatalf("%d:\n%s", bad.Status, bad.Body)
		}
		r := h.do(t, req{Method: "POST", Path: "/console/invitations/lt_open", Form: url.Values{"name": {"Nia"}, "password": {"a long enough password"}}})
		if r.Status != http.StatusSeeOther || r.location() != "/console/w/ws_a" || h.sessionCookie(r) == nil {
			t.Fatalf("%d %q", r.Status, r.location())
		}
		used := h.do(t, req{Path: "/console/invitations/lt_open"})
		if used.Status != http.StatusNotFound || !strings.Contains(used.Body, "may have been used already or have expired") {
			t.Fatalf("a used link: %d:\n%s", used.Status, used.Body)
		}
	})
	t.Run("password reset", func(t *testing.T) {
		h := newHarness(t, publicURL)
		sent := h.do(t, req{Method: "POST", Path: "/console/password-reset", Form: url.Values{"email": {"nobody@example.com"}}})
		if sent.Status != http.StatusOK || !strings.Contains(sent.Body, "If that email has an account") {
			t.Fatalf("%d:\n%s", sent.Status, sent.Body)
		}
		gone := h.do(t, req{Method: "POST", Path: "/console/password-reset/lt_used", Form: url.Values{"password": {"a long enough password"}}})
		if gone.Status != http.StatusNotFound || !strings.Contains(gone.Body, "This link is not valid") {
			t.Fatalf("%d:\n%s", gone.Status, gone.Body)
		}
		ok := h.do(t, req{Method: "POST", Path: "/console/password-reset/lt_reset", Form: url.Values{"password": {"a long enough password"}}})
		if ok.location() != "/console/sign-in?done=reset" {
			t.Fatalf("%d %q", ok.Status, ok.location())
		}
		if p := h.do(t, req{Path: ok.location()}); !strings.Contains(p.Body, "Your password is changed. Sign in with it.") {
			t.Fatalf("no notice:\n%s", p.Body)
		}
	})
	t.Run("sign-in refusals", func(t *testing.T) {
		h := newHarness(t, publicURL)
		wrong := h.do(t, req{Method: "POST", Path: "/console/sign-in", Form: url.Values{"email": {"olive@example.com"}, "password": {"nope"}}})
		unknown := h.do(t, req{Method: "POST", Path: "/console/sign-in", Form: url.Values{"email": {"ghost@example.com"}, "password": {"nope"}}})
		if wrong.Status != http.StatusUnauthorized || wrong.Body != strings.Replace(unknown.Body, "ghost@example.com", "olive@example.com", 1) {
			t.Fatalf("an unknown email and a wrong password answer differently: %d / %d", wrong.Status, unknown.Status)
		}
		limited := h.do(t, req{Method: "POST", Path: "/console/sign-in", Form: url.Values{"email": {"limited@example.com"}, "password": {"x"}}})
		if limited.Status != http.StatusTooManyRequests || limited.Header.Get("Retry-After") != "30" || !strings.Contains(limited.Body, "wait 30 seconds") {
			t.Fatalf("%d %q:\n%s", limited.Status, limited.Header.Get("Retry-After"), limited.Body)
		}
	})
}

func TestAccountAndWorkspaces(t *testing.T) {
	h := newHarness(t, publicURL)
	// One workspace: straight there. Several: a picker, and a switcher.
	if r := h.do(t, req{Path: "/console", As: "owner"}); r.location() != "/console/w/ws_a" {
		t.Fatalf("one workspace: %q", r.location())
	}
	h.accounts.members = append(h.accounts.members, domain.Member{WorkspaceID: "ws_b", UserID: "owner", Role: domain.MemberAgent})
	picker := h.do(t, req{Path: "/console", As: "owner"})
	if picker.Status != http.StatusOK || !strings.Contains(picker.Body, `href="/console/w/ws_b">Beta</a>`) {
		t.Fatalf("%d:\n%s", picker.Status, picker.Body)
	}
	if p := h.do(t, req{Path: "/console/w/ws_a/agents", As: "owner"}); !strings.Contains(p.Body, `<summary>Switch workspace</summary>`) {
		t.Fatalf("no switcher:\n%s", p.Body)
	}
	if p := h.do(t, req{Path: "/console/w/ws_b/agents", As: "owner"}); p.Status != http.StatusForbidden {
		t.Fatalf("as a helper in Beta: %d", p.Status)
	}
	// Password change: a wrong or empty current password, and a new one
	// refused, are each shown on their field.
	for _, tt := range []struct{ current, next, want string }{
		{"x", "a long enough password", `id="f-current-error">The current password is wrong.`},
		{"", "a long enough password", `id="f-current-error">Type your current password.`},
		{"correct horse owner", "short", `id="f-password-error">must be at least 12 characters`},
	} {
		wrong := h.do(t, req{Method: "POST", Path: "/console/account/password", As: "owner", Form: url.Values{"current": {tt.current}, "password": {tt.next}}})
		if wrong.Status != http.StatusBadRequest || !strings.Contains(wrong.Body, tt.want) || !strings.Contains(wrong.Body, `aria-invalid="true"`) {
			t.Fatalf("current %q, new %q: %d, want %q:\n%s", tt.current, tt.next, wrong.Status, tt.want, wrong.Body)
		}
	}
	ok := h.do(t, req{Method: "POST", Path: "/console/account/password", As: "owner", Form: url.Values{"current": {"correct horse owner"}, "password": {"a long enough password"}}})
	if ok.location() != "/console/account?done=password" {
		t.Fatalf("%d %q:\n%s", ok.Status, ok.location(), ok.Body)
	}
	// Sign out the others: another session of the owner ends, this one stays.
	in := h.do(t, req{Method: "POST", Path: "/console/sign-in", Form: url.Values{"email": {"olive@example.com"}, "password": {"a long enough password"}}})
	second := h.sessionCookie(in).Value
	acct := h.do(t, req{Path: "/console/account", As: "owner"})
	if strings.Count(acct.Body, "<tr><td>") != 2 || !strings.Contains(acct.Body, "(this browser)") {
		t.Fatalf("sessions list:\n%s", acct.Body)
	}
	h.do(t, req{Method: "POST", Path: "/console/account/sign-out-others", As: "owner"})
	if _, live := h.accounts.sessions[second]; live {
		t.Fatal("the other session survived")
	}
	// The ended session's cookie now leads to sign-in, and is cleared.
	ended := h.do(t, req{Path: "/console/account", Cookie: second})
	if ended.Status != http.StatusSeeOther || !strings.HasPrefix(ended.location(), "/console/sign-in") || h.sessionCookie(ended).Value != "" {
		t.Fatalf("an ended session: %d %q", ended.Status, ended.location())
	}
	if _, live := h.accounts.sessions["cs_owner"]; !live {
		t.Fatal("this session ended too")
	}
	// The webhook secret never reaches a page.
	if strings.Contains(acct.Body, "whsec_") {
		t.Fatal("a secret on the page")
	}
}

// An unexpected failure is a 500 page with a reference, never the error.
func TestInternalErrorsAreNotShown(t *testing.T) {
	h := newHarness(t, publicURL)
	h.accounts.fail = errFakeDatabase
	r := h.do(t, req{Path: "/console/w/ws_a/members", As: "owner"})
	if r.Status != http.StatusInternalServerError || strings.Contains(r.Body, "10.0.0.7") || strings.Contains(r.Body, "pq:") ||
		!strings.Contains(r.Body, "quote this reference: "+r.Header.Get("X-Request-Id")+".") {
		t.Fatalf("%d:\n%s", r.Status, r.Body)
	}
}

func TestAssets(t *testing.T) {
	h := newHarness(t, publicURL)
	page := h.do(t, req{Path: "/console/sign-in"})
	for _, m := range regexp.MustCompile(`(?:src|href)="(/console/assets/[^"]+)"`).FindAllStringSubmatch(page.Body, -1) {
		r := h.do(t, req{Path: strings.ReplaceAll(m[1], "&amp;", "&")})
		if r.Status != http.StatusOK || r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" || len(r.Body) == 0 {
			t.Fatalf("%s: %d %q", m[1], r.Status, r.Header.Get("Cache-Control"))
		}
	}
	if r := h.do(t, req{Path: "/console/assets/../console.go"}); r.Status != http.StatusNotFound {
		t.Fatalf("traversal: %d", r.Status)
	}
}

func TestSignInPageWhenSignedIn(t *testing.T) {
	h := newHarness(t, publicURL)
	r := h.do(t, req{Path: "/console/sign-in?next=%2Fconsole%2Faccount", As: "owner"})
	if r.Status != http.StatusSeeOther || r.location() != "/console/account" {
		t.Fatalf("%d %q", r.Status, r.location())
	}
	// An htmx request whose session ended moves the whole page to sign-in.
	hx := h.do(t, req{Path: "/console/w/ws_a/agents", Header: map[string]string{"HX-Request": "true"}})
	if hx.Status != http.StatusNoContent || !strings.HasPrefix(hx.Header.Get("HX-Redirect"), "/console/sign-in") {
		t.Fatalf("htmx: %d %q", hx.Status, hx.Header.Get("HX-Redirect"))
	}
}

func TestOnlyOwnersAreOfferedTheOwnerRole(t *testing.T) {
	h := newHarness(t, publicURL)
	owner := h.do(t, req{Path: "/console/w/ws_a/members", As: "owner"})
	admin := h.do(t, req{Path: "/console/w/ws_a/members", As: "admin"})
	if !strings.Contains(owner.Body, `id="invite-role-owner"`) || strings.Contains(admin.Body, `id="invite-role-owner"`) {
		t.Fatal("the owner role is offered to the wrong people")
	}
	// An admin sees no controls on an owner's row; an owner does.
	if strings.Contains(admin.Body, `/members/owner/remove`) || !strings.Contains(admin.Body, "Only owners manage owners.") ||
		!strings.Contains(admin.Body, `/members/agent/remove`) || !strings.Contains(owner.Body, `/members/owner/remove`) {
		t.Fatal("member controls shown to the wrong people")
	}
}

// The budget: a page's HTML, scripts and styles under 250 KB
// uncompressed. The agent page is the largest (form, snippet, preview).
func TestPageWeight(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	page := h.do(t, req{Path: "/console/w/ws_a/agents/support", As: "owner"})
	total := len(page.Body)
	for _, m := range regexp.MustCompile(`(?:src|href)="(/console/assets/[^"]+)"`).FindAllStringSubmatch(page.Body, -1) {
		total += len(h.do(t, req{Path: m[1]}).Body)
	}
	t.Logf("agent page: %d bytes of HTML, %d bytes with its scripts and styles", len(page.Body), total)
	if total > 250_000 {
		t.Fatalf("page weight %d bytes, budget 250,000", total)
	}
}

func BenchmarkAgentPage(b *testing.B) {
	h := newHarness(b, publicURL)
	h.seedAgent(b, "support", "Support", true)
	for b.Loop() {
		if r := h.do(b, req{Path: "/console/w/ws_a/agents/support", As: "owner"}); r.Status != http.StatusOK {
			b.Fatal(r.Status)
		}
	}
}

// Every page names the console's icon, so browsers do not ask for a
// /favicon.ico that does not exist (a 404 in every page's console).
func TestPagesNameTheirIcon(t *testing.T) {
	h := newHarness(t, publicURL)
	for _, page := range []req{{Path: "/console/sign-in"}, {Path: "/console/w/ws_a/agents", As: "owner"}} {
		r := h.do(t, page)
		m := regexp.MustCompile(`<link rel="icon" href="(/console/assets/favicon\.svg\?v=[0-9a-f]+)" type="image/svg\+xml">`).FindStringSubmatch(r.Body)
		if r.Status != http.StatusOK || m == nil {
			t.Fatalf("%s: %d, no icon link", page.Path, r.Status)
		}
		icon := h.do(t, req{Path: m[1]})
		if icon.Status != http.StatusOK || icon.Header.Get("Content-Type") != "image/svg+xml" || !strings.HasPrefix(icon.Body, "<svg") {
			t.Fatalf("the icon: %d %q", icon.Status, icon.Header.Get("Content-Type"))
		}
	}
}
