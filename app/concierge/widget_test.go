package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/widget"
)

// End-to-end tests of the widget's server side (docs/api.md, "Widget"):
// the page at /chat/{slug} with its embedded assets, the public session
// endpoint, streamed session messages, and feedback on answers. The page is
// rendered from the front end's real embedded templates; these tests check
// what the contract promises (status, headers, the config JSON, assets
// that resolve), not the markup.

const widgetCSP = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' https: data:; connect-src 'self'; " +
	"font-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors "

// widgetPageConfig is the JSON in <script id="concierge-config">.
type widgetPageConfig struct {
	Agent struct {
		Slug               string   `json:"slug"`
		Name               string   `json:"name"`
		AvatarURL          string   `json:"avatarUrl"`
		PrimaryColor       string   `json:"primaryColor"`
		WelcomeMessage     string   `json:"welcomeMessage"`
		SuggestedQuestions []string `json:"suggestedQuestions"`
	} `json:"agent"`
	WidgetSlug       string `json:"widgetSlug"`
	HandoffAvailable bool   `json:"handoffAvailable"`
	PoweredBy        bool   `json:"poweredBy"`
	API              struct {
		Base string `json:"base"`
	} `json:"api"`
}

var configScript = regexp.MustCompile(`(?s)<script type="application/json" id="concierge-config">(.*?)</script>`)

// pageConfig parses the widget configuration out of a page.
func pageConfig(t *testing.T, page []byte) widgetPageConfig {
	t.Helper()
	m := configScript.FindSubmatch(page)
	if m == nil {
		t.Fatalf("no #concierge-config script in the page:\n%s", page)
	}
	var cfg widgetPageConfig
	dec := json.NewDecoder(bytes.NewReader(m[1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		t.Fatalf("#concierge-config is not the documented JSON: %v: %s", err, m[1])
	}
	return cfg
}

var assetLink = regexp.MustCompile(`(?:href|src)="(/chat/_assets/[^"]+)"`)

// checkPageHeaders checks what every widget page and 404 page sends.
func checkPageHeaders(t *testing.T, r response, frameAncestors string) {
	t.Helper()
	want := map[string]string{
		"Content-Type":            "text/html; charset=utf-8",
		"Content-Security-Policy": widgetCSP + frameAncestors,
		"X-Content-Type-Options":  "nosniff",
		"Referrer-Policy":         "strict-origin-when-cross-origin",
		"Cache-Control":           "no-store",
	}
	for h, v := range want {
		if got := r.Header.Get(h); got != v {
			t.Errorf("%s = %q, want %q", h, got, v)
		}
	}
}

// widgetAgent creates an agent through the use case, which works on every
// plan (v2 needs Standard).
func (s *stack) widgetAgent(tn tenant, a domain.Agent) domain.Agent {
	s.t.Helper()
	created, err := s.sys.agents.Create(context.Background(), tn.ID, a)
	if err != nil {
		s.t.Fatal(err)
	}
	return created
}

func TestWidgetPage(t *testing.T) {
	s := newStack(t, stackOptions{})
	std := s.newTenant(domain.PlanStandard)
	r := s.do("POST", "/api/v2/agents", map[string]any{
		"slug": "support", "name": "Acme <Support>", "welcomeMessage": "Hi! </script><script>alert(1)</script>",
		"suggestedQuestions": []string{"Where is my order?"}, "primaryColor": "#AABBCC",
		"avatarUrl": "https://cdn.example.com/acme.png", "allowedOrigins": []string{"https://Shop.Example.com/", "http://localhost:3000"},
	}, std.auth())
	s.mustStatus(r, 201)
	var created map[string]any
	r.decode(t, &created)
	if created["primaryColor"] != "#aabbcc" || created["widgetUrl"] != s.sys.cfg.PublicURL+"/chat/support" ||
		fmt.Sprint(created["allowedOrigins"]) != "[https://shop.example.com http://localhost:3000]" {
		t.Fatalf("created agent = %v", created)
	}

	t.Run("page", func(t *testing.T) {
		r := s.raw("GET", "/chat/support", nil, nil)
		s.mustStatus(r, 200)
		checkPageHeaders(t, r, "'self' https://shop.example.com http://localhost:3000")
		cfg := pageConfig(t, r.Body)
		if cfg.Agent.Slug != "support" || cfg.Agent.Name != "Acme <Support>" || cfg.Agent.PrimaryColor != "#aabbcc" ||
			cfg.Agent.AvatarURL != "https://cdn.example.com/acme.png" || cfg.Agent.WelcomeMessage != "Hi! </script><script>alert(1)</script>" ||
			len(cfg.Agent.SuggestedQuestions) != 1 || cfg.WidgetSlug != "support" || !cfg.HandoffAvailable || !cfg.PoweredBy || cfg.API.Base != "/api" {
			t.Fatalf("config = %+v", cfg)
		}
		if bytes.Contains(r.Body, []byte("<script>alert(1)")) {
			t.Fatal("the welcome message broke out of the config script")
		}
		if !bytes.Contains(r.Body, []byte(html.EscapeString("Acme <Support>"))) {
			t.Fatal("the title is not the escaped agent name")
		}
		links := assetLink.FindAllSubmatch(r.Body, -1)
		if len(links) < 2 {
			t.Fatalf("the page links %d assets, want widget.js and widget.css at least", len(links))
		}
		for _, l := range links {
			checkAsset(t, s, html.UnescapeString(string(l[1])))
		}
	})

	t.Run("by agent id when another agent holds the slug", func(t *testing.T) {
		other := s.newTenant(domain.PlanEnterprise)
		a := s.widgetAgent(other, domain.Agent{Slug: "support", Name: "Other", Config: domain.AgentConfig{Published: true}})
		r := s.do("GET", "/api/v2/agents/support", nil, other.auth())
		s.mustStatus(r, 200)
		if got := r.JSON(t)["widgetUrl"]; got != s.sys.cfg.PublicURL+"/chat/"+a.ID {
			t.Fatalf("widgetUrl = %v, want the id address", got)
		}
		page := s.raw("GET", "/chat/"+a.ID, nil, nil)
		s.mustStatus(page, 200)
		checkPageHeaders(t, page, "*")
		cfg := pageConfig(t, page.Body)
		if cfg.WidgetSlug != a.ID || cfg.Agent.Name != "Other" || cfg.PoweredBy || !cfg.HandoffAvailable ||
			cfg.Agent.PrimaryColor != domain.DefaultPrimaryColor || cfg.Agent.SuggestedQuestions == nil {
			t.Fatalf("config = %+v", cfg)
		}
	})

	t.Run("plans", func(t *testing.T) {
		tests := []struct {
			plan               domain.Plan
			addons             []domain.Feature
			handoff, poweredBy bool
		}{
			{domain.PlanFree, nil, false, true},
			{domain.PlanHobby, []domain.Feature{domain.FeatureWhiteLabel}, false, false},
			{domain.PlanStandard, nil, true, true},
			{domain.PlanEnterprise, nil, true, false},
		}
		for i, tt := range tests {
			tn := s.newTenant(tt.plan)
			for _, f := range tt.addons {
				if _, err := s.sys.workspaces.SetAddon(context.Background(), tn.ID, f, true); err != nil {
					t.Fatal(err)
				}
			}
			slug := fmt.Sprintf("plan-%d", i)
			s.widgetAgent(tn, domain.Agent{Slug: slug, Name: "P", Config: domain.AgentConfig{Published: true}})
			r := s.raw("GET", "/chat/"+slug, nil, nil)
			s.mustStatus(r, 200)
			if cfg := pageConfig(t, r.Body); cfg.HandoffAvailable != tt.handoff || cfg.PoweredBy != tt.poweredBy {
				t.Errorf("%s %v: handoffAvailable %v poweredBy %v, want %v %v", tt.plan, tt.addons, cfg.HandoffAvailable, cfg.PoweredBy, tt.handoff, tt.poweredBy)
			}
		}
	})

	t.Run("not found", func(t *testing.T) {
		s.widgetAgent(std, domain.Agent{Slug: "draft", Name: "Draft", Config: domain.AgentConfig{Published: false}})
		gone := s.widgetAgent(std, domain.Agent{Slug: "gone", Name: "Gone", Config: domain.AgentConfig{Published: true}})
		s.mustStatus(s.raw("GET", "/chat/gone", nil, nil), 200)
		s.mustStatus(s.do("DELETE", "/api/v2/agents/gone", nil, std.auth()), 204)
		for _, path := range []string{"/chat/nobody", "/chat/draft", "/chat/gone", "/chat/" + gone.ID, "/chat/" + domain.NewID(domain.PrefixAgent), "/chat/Not%20A%20Slug"} {
			r := s.raw("GET", path, nil, nil)
			if r.Status != 404 {
				t.Fatalf("%s: status %d, want 404", path, r.Status)
			}
			checkPageHeaders(t, r, "*")
			if configScript.Match(r.Body) || json.Valid(r.Body) {
				t.Fatalf("%s: the 404 page shows a widget config or is JSON:\n%s", path, r.Body)
			}
			for _, l := range assetLink.FindAllSubmatch(r.Body, -1) {
				checkAsset(t, s, html.UnescapeString(string(l[1])))
			}
		}
		// Unpublishing takes effect at once (no cached page).
		s.mustStatus(s.do("PATCH", "/api/v2/agents/support", map[string]any{"published": false}, std.auth()), 200)
		s.mustStatus(s.raw("GET", "/chat/support", nil, nil), 404)
		s.mustStatus(s.do("PATCH", "/api/v2/agents/support", map[string]any{"published": true}, std.auth()), 200)
		s.mustStatus(s.raw("GET", "/chat/support", nil, nil), 200)
	})

	t.Run("assets", func(t *testing.T) {
		for _, path := range []string{"/chat/_assets/nope.js", "/chat/_assets/page.html.tmpl", "/chat/_assets/../widget.go"} {
			if r := s.raw("GET", path, nil, nil); r.Status != 404 {
				t.Fatalf("%s: status %d, want 404", path, r.Status)
			}
		}
		// Without its version (a module's relative import) an asset is
		// revalidated rather than cached for a year.
		r := s.raw("GET", "/chat/_assets/widget.js", nil, nil)
		s.mustStatus(r, 200)
		if r.Header.Get("Cache-Control") != "public, no-cache" || r.Header.Get("ETag") == "" {
			t.Fatalf("unversioned asset: Cache-Control %q, ETag %q", r.Header.Get("Cache-Control"), r.Header.Get("ETag"))
		}
	})

	t.Run("agent settings are validated", func(t *testing.T) {
		for field, value := range map[string]any{
			"primaryColor":   "blue",
			"avatarUrl":      "http://cdn.example.com/a.png",
			"allowedOrigins": []string{"https://example.com/path"},
		} {
			r := s.do("PATCH", "/api/v2/agents/support", map[string]any{field: value}, std.auth())
			if r.Status != 400 || r.errorCode(t) != "VALIDATION_ERROR" || !strings.Contains(string(r.Body), `"`+field+`"`) {
				t.Fatalf("%s = %v: got %d %s", field, value, r.Status, r.Body)
			}
		}
		r := s.do("PATCH", "/api/v2/agents/support", map[string]any{"allowedOrigins": []string{}, "avatarUrl": ""}, std.auth())
		s.mustStatus(r, 200)
		if got := r.JSON(t); fmt.Sprint(got["allowedOrigins"]) != "[]" || got["avatarUrl"] != "" || got["primaryColor"] != "#aabbcc" {
			t.Fatalf("after clearing: %v", got)
		}
		checkPageHeaders(t, s.raw("GET", "/chat/support", nil, nil), "*")
	})
}

// checkAsset fetches an asset the page links to and checks its headers,
// then revalidates it with its ETag.
func checkAsset(t *testing.T, s *stack, link string) {
	t.Helper()
	r := s.raw("GET", link, nil, nil)
	if r.Status != 200 || len(r.Body) == 0 {
		t.Fatalf("%s: status %d", link, r.Status)
	}
	wantType := map[string]string{".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	path, _, _ := strings.Cut(link, "?")
	for ext, ct := range wantType {
		if strings.HasSuffix(path, ext) && r.Header.Get("Content-Type") != ct {
			t.Errorf("%s: Content-Type %q, want %q", link, r.Header.Get("Content-Type"), ct)
		}
	}
	if !strings.Contains(link, "?v=") || r.Header.Get("Cache-Control") != "public, max-age=31536000, immutable" ||
		r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("ETag") == "" {
		t.Errorf("%s: Cache-Control %q, nosniff %q, ETag %q", link, r.Header.Get("Cache-Control"), r.Header.Get("X-Content-Type-Options"), r.Header.Get("ETag"))
	}
	again := s.raw("GET", link, nil, header{"If-None-Match": r.Header.Get("ETag")})
	if again.Status != 304 || len(again.Body) != 0 {
		t.Errorf("%s revalidated: status %d, %d bytes; want 304", link, again.Status, len(again.Body))
	}
}

type widgetSession struct {
	SessionID string `json:"sessionId"`
	Status    string `json:"status"`
}

func (s *stack) widgetSession(slug string, h header) widgetSession {
	s.t.Helper()
	r := s.do("POST", "/api/widget/"+slug+"/sessions", map[string]any{}, h)
	s.mustStatus(r, 201)
	var out widgetSession
	r.decode(s.t, &out)
	if !domain.ValidID(domain.PrefixSession, out.SessionID) || out.Status != "AI" {
		s.t.Fatalf("session = %+v", out)
	}
	return out
}

func TestWidgetSessions(t *testing.T) {
	s := newStack(t, stackOptions{})
	free := s.newTenant(domain.PlanFree)
	s.widgetAgent(free, domain.Agent{Slug: "support", Name: "Support", Config: domain.AgentConfig{Published: true}})
	s.widgetAgent(free, domain.Agent{Slug: "draft", Name: "Draft"})
	ent := s.newTenant(domain.PlanEnterprise)
	entAgent := s.widgetAgent(ent, domain.Agent{Slug: "support", Name: "Enterprise", Config: domain.AgentConfig{Published: true}})

	t.Run("a free workspace's widget opens sessions without a key", func(t *testing.T) {
		sess := s.widgetSession("support", nil)
		// And the session works like any other: a message, then polling.
		reply := s.sendMessage(sess.SessionID, "Hello?")
		if len(reply.Messages) != 2 || s.poll(sess.SessionID, "").Status != "AI" {
			t.Fatalf("reply = %+v", reply)
		}
		r := s.do("POST", "/api/widget/support/sessions", nil, nil) // no body at all
		s.mustStatus(r, 201)
	})

	identity := base64.RawURLEncoding.EncodeToString([]byte(`{"userId":"u_42","email":"ada@example.com"}`))
	t.Run("a verified identity is kept on the session", func(t *testing.T) {
		sess := s.widgetSession(entAgent.ID, header{
			"X-Service-Identity": identity, "X-Service-Signature": domain.SignIdentity(ent.WebhookSecret, identity),
		})
		r := s.do("GET", "/api/v2/conversations/"+sess.SessionID, nil, ent.auth())
		s.mustStatus(r, 200)
		if got := r.JSON(t)["verifiedUserId"]; got != "u_42" {
			t.Fatalf("verifiedUserId = %v", got)
		}
	})

	tests := []struct {
		name   string
		slug   string
		body   any
		h      header
		status int
		code   string
	}{
		{"unknown slug", "nobody", map[string]any{}, nil, 404, "NOT_FOUND"},
		{"unpublished agent", "draft", map[string]any{}, nil, 404, "NOT_FOUND"},
		{"unknown agent id", domain.NewID(domain.PrefixAgent), map[string]any{}, nil, 404, "NOT_FOUND"},
		{"unknown field", "support", map[string]any{"slug": "other"}, nil, 400, "VALIDATION_ERROR"},
		{"bad JSON", "support", "{", nil, 400, "VALIDATION_ERROR"},
		{"bad signature", entAgent.ID, map[string]any{}, header{"X-Service-Identity": identity, "X-Service-Signature": strings.Repeat("0", 64)}, 401, "UNAUTHORIZED"},
		{"identity on a plan without it", "support", map[string]any{}, header{"X-Service-Identity": identity, "X-Service-Signature": domain.SignIdentity(free.WebhookSecret, identity)}, 403, "PLAN_UPGRADE_REQUIRED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := s.do("POST", "/api/widget/"+tt.slug+"/sessions", tt.body, tt.h)
			if r.Status != tt.status || r.errorCode(t) != tt.code {
				t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tt.status, tt.code)
			}
		})
	}
}

func TestWidgetSessionsRateLimit(t *testing.T) {
	s := newStack(t, stackOptions{env: map[string]string{"CONCIERGE_RATE_LIMIT_WIDGET_SESSIONS_PER_MINUTE": "2"}})
	tn := s.newTenant(domain.PlanFree)
	s.widgetAgent(tn, domain.Agent{Slug: "support", Name: "Support", Config: domain.AgentConfig{Published: true}})
	limExpect(t, s.do("POST", "/api/widget/support/sessions", nil, nil), 201, 2, 1)
	limExpect(t, s.do("POST", "/api/widget/support/sessions", nil, nil), 201, 2, 0)
	limMustBeLimited(t, s.do("POST", "/api/widget/support/sessions", nil, nil), 2)
	// Unknown addresses count too: the limit guards the lookup as well.
	limMustBeLimited(t, s.do("POST", "/api/widget/nobody/sessions", nil, nil), 2)
	// Messages have their own (public) limit.
	sess, err := s.sys.widgets.StartSession(context.Background(), widget.SessionRequest{Address: "support"})
	if err != nil {
		t.Fatal(err)
	}
	s.mustStatus(s.do("POST", "/api/chat/"+sess.ID+"/message", map[string]any{"message": "hi"}, nil), 200)
}

// postSessionStream posts a session message with stream set.
func (s *stack) postSessionStream(session string, body map[string]any) *http.Response {
	s.t.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", s.base+"/api/chat/"+session+"/message", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	return resp
}

func TestSessionMessageStream(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	s.widgetAgent(tn, domain.Agent{Slug: "support", Name: "Support", Config: domain.AgentConfig{Published: true}})
	sess := s.widgetSession("support", nil)

	events := s.readStream(s.postSessionStream(sess.SessionID, map[string]any{"message": "Do you ship to Norway?", "stream": true}))
	first, done := events[0], events[len(events)-1]
	question, _ := first.Data["message"].(map[string]any)
	if first.Data["type"] != "message" || question["role"] != "USER" || question["content"] != "Do you ship to Norway?" ||
		first.ID != fmt.Sprint(question["id"])+":1" || question["createdAt"] == nil {
		t.Fatalf("first event = %+v", first)
	}
	var text strings.Builder
	for i, ev := range events[1 : len(events)-1] {
		if ev.Data["type"] != "token" || ev.ID != fmt.Sprintf("%s:%d", done.Data["messageId"], i+1) {
			t.Fatalf("event %d = %+v", i+1, ev)
		}
		text.WriteString(ev.Data["content"].(string))
	}
	if done.Data["type"] != "done" || done.Data["message"] != text.String() || done.Data["sessionId"] != sess.SessionID {
		t.Fatalf("done = %v (tokens %q)", done.Data, text.String())
	}
	// Both messages are stored, as poll shows.
	if got := roles(s.poll(sess.SessionID, "").Messages); strings.Join(got, ",") != "USER,ASSISTANT" {
		t.Fatalf("stored roles = %v", got)
	}

	t.Run("JSON is unchanged", func(t *testing.T) {
		if out := s.sendMessage(sess.SessionID, "And to Sweden?"); len(out.Messages) != 2 || out.Messages[0].Role != "USER" {
			t.Fatalf("JSON answer = %+v", out)
		}
	})
	t.Run("errors before the stream are plain JSON", func(t *testing.T) {
		for _, tt := range []struct {
			session string
			body    map[string]any
			status  int
		}{
			{sess.SessionID, map[string]any{"message": " ", "stream": true}, 400},
			{domain.NewID(domain.PrefixSession), map[string]any{"message": "hi", "stream": true}, 404},
			{sess.SessionID, map[string]any{"message": "hi", "stream": "yes"}, 400},
		} {
			resp := s.postSessionStream(tt.session, tt.body)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tt.status || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
				t.Fatalf("%v: got %d %s %s", tt.body, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
		}
	})
	t.Run("while a person is asked for, the agent does not answer", func(t *testing.T) {
		s.mustStatus(s.do("POST", "/api/chat/"+sess.SessionID+"/handoff", map[string]any{}, nil), 200)
		resp := s.postSessionStream(sess.SessionID, map[string]any{"message": "Anyone there?", "stream": true})
		events := readSSE(t, resp.Body, 0)
		resp.Body.Close()
		if len(events) != 2 || events[0].Data["type"] != "message" || events[1].Data["type"] != "done" ||
			events[1].Data["messageId"] != nil || events[1].Data["message"] != "" {
			t.Fatalf("events = %+v", events)
		}
	})
}

func TestFeedback(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanStandard)
	s.mustStatus(s.do("POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Support"}, tn.auth()), 201)
	s.mustStatus(s.do("POST", "/api/v2/agents", map[string]any{"slug": "sales", "name": "Sales"}, tn.auth()), 201)
	sess := s.widgetSession("support", nil)
	turn := s.sendMessage(sess.SessionID, "Do you ship to Norway?")
	question, answer := turn.Messages[0].ID, turn.Messages[1].ID
	other := s.widgetSession("sales", nil)
	otherAnswer := s.sendMessage(other.SessionID, "Prices?").Messages[1].ID

	feedbackPath := func(session, message string) string {
		return "/api/chat/" + session + "/messages/" + message + "/feedback"
	}
	type feedbackBody struct {
		MessageID string  `json:"messageId"`
		Rating    *string `json:"rating"`
		Comment   string  `json:"comment"`
		UpdatedAt string  `json:"updatedAt"`
	}
	rate := func(session, message string, body any) feedbackBody {
		t.Helper()
		r := s.do("POST", feedbackPath(session, message), body, nil)
		s.mustStatus(r, 200)
		var out feedbackBody
		r.decode(t, &out)
		return out
	}

	got := rate(sess.SessionID, answer, map[string]any{"rating": "down", "comment": "  It was wrong.  "})
	if got.MessageID != answer || got.Rating == nil || *got.Rating != "down" || got.Comment != "It was wrong." || got.UpdatedAt == "" {
		t.Fatalf("feedback = %+v", got)
	}
	rate(other.SessionID, otherAnswer, map[string]any{"rating": "up"})

	t.Run("shown on the message", func(t *testing.T) {
		for _, path := range []string{"/api/chat/" + sess.SessionID + "/poll", "/api/v2/conversations/" + sess.SessionID} {
			h := header(nil)
			if strings.HasPrefix(path, "/api/v2") {
				h = tn.auth()
			}
			r := s.do("GET", path, nil, h)
			s.mustStatus(r, 200)
			var body struct {
				Messages json.RawMessage `json:"messages"`
			}
			r.decode(t, &body)
			var msgs []map[string]any
			if err := json.Unmarshal(body.Messages, &msgs); err != nil {
				var list struct {
					Data []map[string]any `json:"data"`
				}
				if err := json.Unmarshal(body.Messages, &list); err != nil {
					t.Fatal(err)
				}
				msgs = list.Data
			}
			if len(msgs) != 2 || msgs[0]["feedback"] != nil {
				t.Fatalf("%s: messages = %v", path, msgs)
			}
			fb, _ := msgs[1]["feedback"].(map[string]any)
			if fb["rating"] != "down" || fb["comment"] != "It was wrong." || fb["updatedAt"] != got.UpdatedAt {
				t.Fatalf("%s: feedback = %v", path, msgs[1]["feedback"])
			}
		}
	})

	t.Run("listed newest first with filters", func(t *testing.T) {
		tests := []struct {
			query string
			want  []string
		}{
			{"", []string{otherAnswer, answer}},
			{"?rating=down", []string{answer}},
			{"?agent=sales", []string{otherAnswer}},
			{"?agent=support&rating=up", nil},
		}
		for _, tt := range tests {
			r := s.do("GET", "/api/v2/feedback"+tt.query, nil, tn.auth())
			s.mustStatus(r, 200)
			var list listBody[map[string]any]
			r.decode(t, &list)
			var ids []string
			for _, item := range list.Data {
				ids = append(ids, item["messageId"].(string))
			}
			if strings.Join(ids, ",") != strings.Join(tt.want, ",") || list.Meta.HasMore {
				t.Fatalf("%s: %v, want %v", tt.query, ids, tt.want)
			}
		}
		r := s.do("GET", "/api/v2/feedback?rating=down", nil, tn.auth())
		var list listBody[map[string]any]
		r.decode(t, &list)
		item := list.Data[0]
		if item["conversationId"] != sess.SessionID || item["agent"] != "support" || item["comment"] != "It was wrong." ||
			item["content"] != turn.Messages[1].Content || item["rating"] != "down" {
			t.Fatalf("item = %v", item)
		}
		// Paging: one at a time, following the cursor.
		r = s.do("GET", "/api/v2/feedback?limit=1", nil, tn.auth())
		r.decode(t, &list)
		if len(list.Data) != 1 || !list.Meta.HasMore || list.Meta.NextCursor == nil {
			t.Fatalf("first page = %+v", list)
		}
		r = s.do("GET", "/api/v2/feedback?limit=1&cursor="+*list.Meta.NextCursor, nil, tn.auth())
		r.decode(t, &list)
		if len(list.Data) != 1 || list.Data[0]["messageId"] != answer || list.Meta.HasMore {
			t.Fatalf("second page = %+v", list)
		}
		// Another workspace sees none of it.
		stranger := s.newTenant(domain.PlanStandard)
		r = s.do("GET", "/api/v2/feedback", nil, stranger.auth())
		r.decode(t, &list)
		if len(list.Data) != 0 {
			t.Fatalf("a stranger sees %v", list.Data)
		}
	})

	t.Run("bad list queries", func(t *testing.T) {
		for _, tt := range []struct {
			query  string
			status int
		}{
			{"?rating=sideways", 400},
			{"?limit=0", 400},
			{"?cursor=nonsense", 400},
			{"?agent=nobody", 404},
		} {
			r := s.do("GET", "/api/v2/feedback"+tt.query, nil, tn.auth())
			if r.Status != tt.status {
				t.Fatalf("%s: got %d %s, want %d", tt.query, r.Status, r.Body, tt.status)
			}
		}
		if r := s.do("GET", "/api/v2/feedback", nil, nil); r.Status != 401 {
			t.Fatalf("without a key: %d", r.Status)
		}
	})

	t.Run("bad ratings", func(t *testing.T) {
		tests := []struct {
			name             string
			session, message string
			body             any
			status           int
			field            string
		}{
			{"a question", sess.SessionID, question, map[string]any{"rating": "up"}, 400, "messageId"},
			{"another session's answer", sess.SessionID, otherAnswer, map[string]any{"rating": "up"}, 404, ""},
			{"unknown message", sess.SessionID, domain.NewID(domain.PrefixMessage), map[string]any{"rating": "up"}, 404, ""},
			{"unknown session", domain.NewID(domain.PrefixSession), answer, map[string]any{"rating": "up"}, 404, ""},
			{"unknown rating", sess.SessionID, answer, map[string]any{"rating": "meh"}, 400, "rating"},
			{"missing rating", sess.SessionID, answer, map[string]any{"comment": "x"}, 400, "rating"},
			{"number rating", sess.SessionID, answer, map[string]any{"rating": 1}, 400, "rating"},
			{"comment too long", sess.SessionID, answer, map[string]any{"rating": "down", "comment": strings.Repeat("x", 1001)}, 400, "comment"},
			{"unknown field", sess.SessionID, answer, map[string]any{"rating": "up", "stars": 5}, 400, "stars"},
			{"empty body", sess.SessionID, answer, nil, 400, ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := s.do("POST", feedbackPath(tt.session, tt.message), tt.body, nil)
				if r.Status != tt.status {
					t.Fatalf("got %d %s, want %d", r.Status, r.Body, tt.status)
				}
				if tt.field != "" && !strings.Contains(string(r.Body), `"`+tt.field+`"`) {
					t.Fatalf("error does not name %s: %s", tt.field, r.Body)
				}
			})
		}
	})

	t.Run("null clears", func(t *testing.T) {
		got := rate(sess.SessionID, answer, map[string]any{"rating": nil})
		if got.Rating != nil || got.Comment != "" || got.UpdatedAt == "" {
			t.Fatalf("cleared = %+v", got)
		}
		r := s.do("GET", "/api/chat/"+sess.SessionID+"/poll", nil, nil)
		if strings.Contains(string(r.Body), `"feedback"`) {
			t.Fatalf("cleared feedback still shown: %s", r.Body)
		}
		r = s.do("GET", "/api/v2/feedback?agent=support", nil, tn.auth())
		var list listBody[map[string]any]
		r.decode(t, &list)
		if len(list.Data) != 0 {
			t.Fatalf("cleared feedback still listed: %v", list.Data)
		}
	})

	t.Run("another verified user cannot rate", func(t *testing.T) {
		ent := s.newTenant(domain.PlanEnterprise)
		s.widgetAgent(ent, domain.Agent{Slug: "verified", Name: "Verified", Config: domain.AgentConfig{Published: true}})
		sign := func(user string) header {
			id := base64.RawURLEncoding.EncodeToString([]byte(`{"userId":"` + user + `"}`))
			return header{"X-Service-Identity": id, "X-Service-Signature": domain.SignIdentity(ent.WebhookSecret, id)}
		}
		mine := s.widgetSession("verified", sign("u_1"))
		r := s.do("POST", "/api/chat/"+mine.SessionID+"/message", map[string]any{"message": "hi"}, sign("u_1"))
		s.mustStatus(r, 200)
		var turn sessionMessageBody
		r.decode(t, &turn)
		path := feedbackPath(mine.SessionID, turn.Messages[1].ID)
		if r := s.do("POST", path, map[string]any{"rating": "up"}, sign("u_2")); r.Status != 404 {
			t.Fatalf("another user: %d %s", r.Status, r.Body)
		}
		s.mustStatus(s.do("POST", path, map[string]any{"rating": "up"}, sign("u_1")), 200)
	})
}
