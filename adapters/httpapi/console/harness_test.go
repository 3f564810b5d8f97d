package console_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi"
	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/report"
	"github.com/conciergehq/concierge/core/savedreply"
	"github.com/conciergehq/concierge/core/unanswered"
	"github.com/conciergehq/concierge/ports"
)

const publicURL = "https://console.example"

// site is the console's parsed pages and assets, loaded once for every
// harness of the test binary (parsing them per harness was most of this
// package's time under -race).
var site = sync.OnceValues(console.LoadSite)

// harness runs the console's exact route table (httpapi.ConsoleRoutes)
// behind the edge's one ErrorHandler, on scripted services.
type harness struct {
	events   *fakeEvents
	app      *fiber.App
	accounts *fakeAccounts
	agents   *fakeAgents
	cookie   string // the session cookie's name
	// Settings
	settings   *fakeSettings
	deliveries *fakeDeliveries
	// Conversations
	convs *fakeConversations
	chat  *fakeChat
	// Inbox
	inbox     *fakeInbox
	ownership *fakeOwnership
	composer  *fakeComposer
	replies   *fakeSavedReplies
	// Suggestions: the inbox's drafted replies.
	suggestions *fakeSuggestions
	// once keeps the secrets between a POST and the GET showing them,
	// unless the harness was built on another store.
	once *fakeOnce
	// Reports: the rollups report.Service reads (reports_test.go).
	reports *fakeReportStore
}

// harnessOptions change what newHarnessWith builds on: another one-time
// store (the real Redis one), a logger to read what was logged.
type harnessOptions struct {
	reveals ports.OneTimeStore
	log     *slog.Logger
	// noReveals builds the console without a one-time store.
	noReveals bool
	// noReports builds the console without reports.
	noReports bool
	// unanswered builds the unanswered service over the harness's agents;
	// nil leaves the console without one.
	unanswered func(unanswered.Agents) console.Unanswered
	// queues and operator are the queue monitor and the operator's
	// workspace (queues_test.go).
	queues   console.QueueMonitor
	operator string
}

func newHarness(t testing.TB, public string) *harness {
	t.Helper()
	return newHarnessWith(t, public, harnessOptions{})
}

func newHarnessWith(t testing.TB, public string, o harnessOptions) *harness {
	t.Helper()
	once := newFakeOnce()
	if o.reveals == nil && !o.noReveals {
		o.reveals = once
	}
	if o.log == nil {
		o.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	accounts, agents := newFakeAccounts(), newFakeAgents()
	settings := newFakeSettings()
	workspaces := fakeWorkspaces{names: map[string]string{"ws_a": "Acme", "ws_b": "Beta"}, settings: settings}
	deliveries := newFakeDeliveries(t, workspaces)
	convs := newFakeConversations(agents)                                      // Conversations
	chatter := &fakeChat{convs: convs, agents: agents, cited: "Refund policy"} // Conversations
	events := &fakeEvents{}                                                    // Inbox events
	// Inbox
	inb := &fakeInbox{convs: convs, accounts: accounts, agents: agents}
	owner := &fakeOwnership{convs: convs, accounts: accounts}
	composer := &fakeComposer{convs: convs}
	replies := &fakeSavedReplies{}
	replyService := savedreply.NewService(replies, fixedClock{time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)})
	suggestions := newFakeSuggestions()
	reportStore := &fakeReportStore{}
	var reports console.Reports
	if !o.noReports {
		reports = report.NewService(reportStore, reportAgents{agents}, fixedClock{time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}, reportPrices)
	}
	var unans console.Unanswered
	if o.unanswered != nil {
		unans = o.unanswered(agents)
	}
	parsed, err := site()
	if err != nil {
		t.Fatal(err)
	}
	h, err := console.New(accounts, workspaces, agents,
		console.Options{PublicURL: public, Deliveries: deliveries, Log: o.log, Reveals: o.reveals,
			Conversations: convs, Chat: chatter, // Conversations
			Events: events, Inbox: inb, Ownership: owner, Composer: composer, SavedReplies: replyService, // Inbox
			Availability: accounts, Suggestions: suggestions, Reports: reports, Unanswered: unans,
			Queues: o.queues, OperatorWorkspace: o.operator, Site: parsed})
	if err != nil {
		t.Fatal(err)
	}
	app := fiber.New(fiber.Config{
		ErrorHandler:          httpapi.ErrorHandler(o.log),
		DisableStartupMessage: true,
	})
	app.Use(func(c *fiber.Ctx) error {
		c.Set("X-Request-Id", "req_test")
		c.SetUserContext(context.Background())
		return c.Next()
	})
	httpapi.ConsoleRoutes(app, h)
	cookie := "__Host-concierge_session"
	if strings.HasPrefix(public, "http://127.") || strings.HasPrefix(public, "http://localhost") {
		cookie = "concierge_session"
	}
	return &harness{app: app, accounts: accounts, agents: agents, cookie: cookie, settings: settings, deliveries: deliveries,
		convs: convs, chat: chatter, once: once, events: events,
		inbox: inb, ownership: owner, composer: composer, replies: replies, suggestions: suggestions, reports: reportStore}
}

// follow GETs a redirect's target as the same user, as a browser does
// after a 303.
func (h *harness) follow(t testing.TB, r resp, as string) resp {
	t.Helper()
	if r.Status != http.StatusSeeOther || r.location() == "" {
		t.Fatalf("want a 303 redirect, got %d (Location %q):\n%s", r.Status, r.location(), r.Body)
	}
	return h.do(t, req{Path: r.location(), As: as})
}

// req is one request: as whom (a user id of the fakes, or "" signed out),
// its form, and extra headers. CSRF defaults to the user's right token on
// state-changing requests; set NoCSRF or CSRF to change that.
type req struct {
	Method, Path string
	As           string
	Form         url.Values
	Header       map[string]string
	CSRF         string
	NoCSRF       bool
	Cookie       string // a raw cookie value to send instead of As's
	// Knowledge: Files, when set, make the body multipart/form-data: the
	// CSRF token first, then Form, then each file as a part named file.
	Files []upload
}

// upload is a file part of a multipart request.
type upload struct{ Name, Content string }

type resp struct {
	Status int
	Header http.Header
	Body   string
}

func (h *harness) do(t testing.TB, r req) resp {
	t.Helper()
	form := url.Values{}
	for k, v := range r.Form {
		form[k] = v
	}
	post := r.Method != "" && r.Method != http.MethodGet
	if post && r.As != "" && !r.NoCSRF {
		tok := r.CSRF
		if tok == "" {
			tok = "csrf_" + r.As
		}
		form.Set("csrf", tok)
	}
	method := r.Method
	if method == "" {
		method = http.MethodGet
	}
	var body io.Reader
	contentType := "application/x-www-form-urlencoded"
	if post {
		body = strings.NewReader(form.Encode())
	}
	if r.Files != nil {
		body, contentType = multipartBody(t, form, r.Files)
	}
	hr := httptest.NewRequest(method, r.Path, body)
	hr.Host = "console.example"
	if post {
		hr.Header.Set("Content-Type", contentType)
	}
	switch {
	case r.Cookie != "":
		hr.AddCookie(&http.Cookie{Name: h.cookie, Value: r.Cookie})
	case r.As != "":
		hr.AddCookie(&http.Cookie{Name: h.cookie, Value: "cs_" + r.As})
	}
	for k, v := range r.Header {
		if k == "Host" {
			hr.Host = v
			continue
		}
		hr.Header.Set(k, v)
	}
	res, err := h.app.Test(hr, -1)
	if err != nil {
		t.Fatalf("%s %s: %v", method, r.Path, err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp{Status: res.StatusCode, Header: res.Header, Body: string(raw)}
}

// seedAgent stores an agent in workspace ws_a.
func (h *harness) seedAgent(t testing.TB, slug, name string, published bool) {
	t.Helper()
	if _, err := h.agents.Create(context.Background(), "ws_a", domain.Agent{Slug: slug, Name: name,
		Config: domain.AgentConfig{Published: published}}); err != nil {
		t.Fatal(err)
	}
}

func (r resp) location() string { return r.Header.Get("Location") }

func (h *harness) sessionCookie(r resp) *http.Cookie {
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == h.cookie {
			return c
		}
	}
	return nil
}

// multipartBody encodes a form as multipart/form-data as a browser does:
// fields in order (the CSRF token first), then the files.
func multipartBody(t testing.TB, form url.Values, files []upload) (io.Reader, string) {
	t.Helper()
	var buf bytes.Buffer
	w := multipart.NewWriter(&buf)
	if tok := form.Get("csrf"); tok != "" {
		_ = w.WriteField("csrf", tok)
	}
	for k, vs := range form {
		for _, v := range vs {
			if k != "csrf" {
				_ = w.WriteField(k, v)
			}
		}
	}
	for _, f := range files {
		part, err := w.CreateFormFile("file", f.Name)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(part, f.Content)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, w.FormDataContentType()
}

// roleStatuses is the status a route answers each kind of caller with in
// the role-matrix tests: the workspace's owner, admin and agent, the owner
// of another workspace, and nobody signed in.
type roleStatuses struct{ owner, admin, agent, other, out int }

// roleCase is one caller of a role-matrix row: as is the harness's
// identity ("" signed out), name the subtest's.
type roleCase struct {
	as, name string
	want     int
}

// roles lists the row's callers in a fixed order.
func (w roleStatuses) roles() []roleCase {
	return []roleCase{
		{"owner", "owner", w.owner}, {"admin", "admin", w.admin}, {"agent", "agent", w.agent},
		{"other", "other", w.other}, {"", "signed-out", w.out},
	}
}
