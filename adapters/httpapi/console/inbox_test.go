package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// The inbox's conversations: in ws_a, two waiting (the older one 12
// minutes, by a verified user with an earlier conversation), one with
// the admin, one resolved, one with the agent still answering; in ws_b,
// one waiting.
const (
	inWait1    = "ses_1nbx0000000000000000000001"
	inWait2    = "ses_1nbx0000000000000000000002"
	inAdmin    = "ses_1nbx0000000000000000000003"
	inResolved = "ses_1nbx0000000000000000000004"
	inAI       = "ses_1nbx0000000000000000000005"
	inOther    = "ses_1nbx0000000000000000000006" // ws_b's
)

func (h *harness) seedInbox(t testing.TB) {
	t.Helper()
	h.seedAgent(t, "support", "Support", true)
	h.seedAgent(t, "sales", "Sales", true)
	support, err := h.agents.Get(context.Background(), "ws_a", "support")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	add := func(c domain.Conversation, ago time.Duration, msgs ...domain.Message) {
		c.LastActivityAt, c.CreatedAt = now.Add(-ago), now.Add(-ago)
		if c.WorkspaceID == "" {
			c.WorkspaceID, c.AgentID, c.AgentSlug = "ws_a", support.ID, support.Slug
		}
		h.convs.add(c, msgs...)
	}
	add(domain.Conversation{ID: inResolved, Status: domain.StatusResolved, VerifiedUserID: "cust-42", ContactName: "Grace Hopper"}, 48*time.Hour,
		domain.Message{Role: domain.RoleUser, Content: "An old question"})
	// inWait1 asked for a person 40 minutes ago and wrote since; it has
	// waited since the request.
	add(domain.Conversation{ID: inWait1, Status: domain.StatusHandoffRequested, VerifiedUserID: "cust-42",
		ContactName: "Grace Hopper", ContactEmail: "grace@example.com", HandoffRequestedAt: now.Add(-40*time.Minute - 30*time.Second)}, 12*time.Minute+30*time.Second,
		domain.Message{Role: domain.RoleUser, Content: "My parcel never arrived"},
		domain.Message{Role: domain.RoleAssistant, Content: "I do not know.", FallbackReason: domain.FallbackNoKnowledge},
		domain.Message{Role: domain.RoleSystem, Status: domain.StatusHandoffRequested})
	add(domain.Conversation{ID: inWait2, Status: domain.StatusHandoffRequested, ContactEmail: "bob@example.com", HandoffRequestedAt: now.Add(-3 * time.Minute)}, 3*time.Minute,
		domain.Message{Role: domain.RoleUser, Content: "Can I talk to someone?"})
	add(domain.Conversation{ID: inAdmin, Status: domain.StatusHuman, AssigneeID: "admin", ContactName: "Linus"}, 2*time.Minute,
		domain.Message{Role: domain.RoleUser, Content: "Hello"},
		domain.Message{Role: domain.RoleHuman, Content: "Adam here.", AuthorName: "Adam Admin"},
		domain.Message{Role: "NOTE", Content: "VIP customer, be kind.", AuthorName: "Adam Admin"})
	add(domain.Conversation{ID: inAI, Status: domain.StatusAI}, time.Minute, domain.Message{Role: domain.RoleUser, Content: "Hi"})
	add(domain.Conversation{ID: inOther, WorkspaceID: "ws_b", AgentSlug: "other", Status: domain.StatusHandoffRequested, ContactName: "Beta's visitor"}, time.Minute,
		domain.Message{Role: domain.RoleUser, Content: "Beta's secret"})
	h.replies.seed(domain.SavedReply{ID: domain.NewID(domain.PrefixSavedReply), WorkspaceID: "ws_a", Shortcut: "refund", Title: "Refunds", Body: "Refunds take 5 days."})
}

// Every inbox route is open to owners, admins and agents; another
// workspace's user gets 404 and a signed-out visitor the sign-in page.
func TestInboxRoleMatrix(t *testing.T) {
	const ok, see, nf, bad = http.StatusOK, http.StatusSeeOther, http.StatusNotFound, http.StatusBadRequest
	thread := "/console/w/ws_a/inbox/" + inWait1
	routes := []struct {
		method, path string
		form         url.Values
		want         [5]int // owner, admin, agent, other, signed out
	}{
		{"GET", "/console/inbox", nil, [5]int{see, see, see, see, see}},
		{"GET", "/console/w/ws_a/inbox", nil, [5]int{ok, ok, ok, nf, see}},
		{"GET", "/console/w/ws_a/inbox?view=resolved", nil, [5]int{ok, ok, ok, nf, see}},
		{"GET", thread, nil, [5]int{ok, ok, ok, nf, see}},
		{"POST", thread + "/messages", url.Values{"kind": {"reply"}, "content": {"Hello"}}, [5]int{see, see, see, nf, see}},
		{"POST", thread + "/messages", url.Values{"kind": {"note"}, "content": {"Note"}}, [5]int{see, see, see, nf, see}},
		{"POST", thread + "/take-over", nil, [5]int{see, see, see, nf, see}},
		{"POST", thread + "/assignee", url.Values{"assigneeId": {""}}, [5]int{see, see, see, nf, see}},
		{"POST", thread + "/status", url.Values{"status": {"RESOLVED"}}, [5]int{see, see, see, nf, see}},
		{"POST", thread + "/status", url.Values{"status": {"OPEN"}}, [5]int{bad, bad, bad, nf, see}},
	}
	for _, rt := range routes {
		for i, as := range []string{"owner", "admin", "agent", "other", ""} {
			t.Run(rt.method+" "+rt.path+" as "+as, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedInbox(t)
				r := h.do(t, req{Method: rt.method, Path: rt.path, As: as, Form: rt.form})
				if r.Status != rt.want[i] {
					t.Fatalf("status %d, want %d; Location %q\n%s", r.Status, rt.want[i], r.location(), r.Body)
				}
				if as == "" && !strings.HasPrefix(r.location(), "/console/sign-in") {
					t.Fatalf("signed out: Location %q", r.location())
				}
			})
		}
	}
}

func TestInboxHomeGoesToTheWorkspacesInbox(t *testing.T) {
	h := newHarness(t, publicURL)
	for as, want := range map[string]string{"agent": "/console/w/ws_a/inbox", "other": "/console/w/ws_b/inbox"} {
		if r := h.do(t, req{Path: "/console/inbox", As: as}); r.location() != want {
			t.Errorf("%s: Location %q, want %q", as, r.location(), want)
		}
	}
	// The agent role's workspace home is the inbox; owners keep agents.
	if r := h.do(t, req{Path: "/console/w/ws_a", As: "agent"}); r.location() != "/console/w/ws_a/inbox" {
		t.Errorf("agent's home: %q", r.location())
	}
}

// rowsOf returns the thread links of an inbox page in order.
var threadLink = regexp.MustCompile(`href="/console/w/ws_a/inbox/(ses_[0-9a-z]+)"`)

func rowsOf(body string) []string {
	var out []string
	for _, m := range threadLink.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestInboxViews(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	tests := []struct {
		path     string
		as       string
		want     []string
		contains []string
	}{
		{"/console/w/ws_a/inbox", "agent", []string{inWait1, inWait2}, []string{">waiting 40 min<", ">waiting 3 min<", "Grace Hopper", "bob@example.com", `aria-current="page">Needs a person`}},
		{"/console/w/ws_a/inbox?view=mine", "admin", []string{inAdmin}, []string{"Adam Admin"}},
		{"/console/w/ws_a/inbox?view=mine", "agent", nil, []string{"You own no open conversation."}},
		{"/console/w/ws_a/inbox?view=unassigned", "agent", []string{inWait2, inWait1}, nil},
		{"/console/w/ws_a/inbox?view=open", "agent", []string{inAdmin, inWait2, inWait1}, nil},
		{"/console/w/ws_a/inbox?view=resolved", "agent", []string{inResolved}, nil},
		{"/console/w/ws_a/inbox?q=parcel", "agent", []string{inWait1}, nil},
		{"/console/w/ws_a/inbox?agent=sales", "agent", nil, []string{"No conversation in this view matches the filter."}},
	}
	for _, tt := range tests {
		t.Run(tt.path+" as "+tt.as, func(t *testing.T) {
			r := h.do(t, req{Path: tt.path, As: tt.as})
			if r.Status != http.StatusOK {
				t.Fatalf("status %d\n%s", r.Status, r.Body)
			}
			if got := rowsOf(r.Body); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("rows %v, want %v", got, tt.want)
			}
			for _, s := range tt.contains {
				if !strings.Contains(r.Body, s) {
					t.Errorf("missing %q", s)
				}
			}
			if strings.Contains(r.Body, "Beta") {
				t.Errorf("another workspace's conversation is listed")
			}
		})
	}
	// A conversation id typed into the search box opens its thread, in any
	// view; an unknown id, or another workspace's, finds nothing.
	for _, path := range []string{"/console/w/ws_a/inbox?q=" + inWait1, "/console/w/ws_a/inbox?view=resolved&q=" + inWait1} {
		if r := h.do(t, req{Path: path, As: "agent"}); r.Status != http.StatusSeeOther || r.location() != "/console/w/ws_a/inbox/"+inWait1 {
			t.Errorf("%s: %d to %q, want the thread", path, r.Status, r.location())
		}
	}
	for _, id := range []string{domain.NewID(domain.PrefixSession), inOther} {
		r := h.do(t, req{Path: "/console/w/ws_a/inbox?q=" + id, As: "agent"})
		if r.Status != http.StatusOK || len(rowsOf(r.Body)) != 0 || !strings.Contains(r.Body, "No conversation in this view matches the filter.") {
			t.Errorf("q=%s: %d, rows %v", id, r.Status, rowsOf(r.Body))
		}
	}
	// Each tab shows its count; the page loads inbox.js and knows its stream.
	r := h.do(t, req{Path: "/console/w/ws_a/inbox", As: "agent"})
	for _, s := range []string{"Needs a person <span class=\"count\" aria-hidden=\"true\">2</span>", "All open <span class=\"count\" aria-hidden=\"true\">3</span>",
		`/console/assets/inbox.js`, `data-events="/console/w/ws_a/inbox/events"`} {
		if !strings.Contains(r.Body, s) {
			t.Errorf("missing %q", s)
		}
	}
	// Other pages do not load inbox.js.
	if r := h.do(t, req{Path: "/console/w/ws_a/conversations", As: "agent"}); strings.Contains(r.Body, "inbox.js") {
		t.Error("inbox.js on the conversations page")
	}
}

func TestInboxPagesWithCursors(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	support, _ := h.agents.Get(context.Background(), "ws_a", "support")
	for i := range 30 {
		at := time.Now().Add(time.Duration(i) * time.Second)
		h.convs.add(domain.Conversation{WorkspaceID: "ws_a", AgentID: support.ID, AgentSlug: "support", Status: domain.StatusHandoffRequested,
			LastActivityAt: at, HandoffRequestedAt: at})
	}
	r := h.do(t, req{Path: "/console/w/ws_a/inbox?view=needs", As: "agent"})
	first := rowsOf(r.Body)
	next := regexp.MustCompile(`href="(/console/w/ws_a/inbox\?view=needs&amp;cursor=[^"]+)"`).FindStringSubmatch(r.Body)
	if len(first) != 25 || next == nil {
		t.Fatalf("first page: %d rows, next %v", len(first), next)
	}
	r = h.do(t, req{Path: html.UnescapeString(next[1]), As: "agent"})
	if second := rowsOf(r.Body); r.Status != http.StatusOK || len(second) != 7 || second[0] == first[24] {
		t.Fatalf("second page: %d, %d rows", r.Status, len(second))
	}
	// A cursor of another view (or made up) is refused.
	cursor := strings.SplitN(html.UnescapeString(next[1]), "cursor=", 2)[1]
	for _, path := range []string{"/console/w/ws_a/inbox?view=open&cursor=" + cursor, "/console/w/ws_a/inbox?cursor=garbage"} {
		if r := h.do(t, req{Path: path, As: "agent"}); r.Status != http.StatusBadRequest {
			t.Errorf("%s: status %d", path, r.Status)
		}
	}
}

func TestInboxBadInput(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	for path, want := range map[string]string{
		"/console/w/ws_a/inbox?view=bogus":   "Choose one of the inbox",
		"/console/w/ws_a/inbox?agent=nobody": "Choose one of the workspace's agents.",
		"/console/w/ws_a/inbox?q=ab":         "Type 3 to 200 characters",
	} {
		r := h.do(t, req{Path: path, As: "agent"})
		if r.Status != http.StatusBadRequest || !strings.Contains(html.UnescapeString(r.Body), want) {
			t.Errorf("%s: status %d, want 400 with %q\n%s", path, r.Status, want, r.Body)
		}
	}
}

func TestThreadPage(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	r := h.do(t, req{Path: "/console/w/ws_a/inbox/" + inAdmin, As: "agent"})
	if r.Status != http.StatusOK {
		t.Fatalf("status %d\n%s", r.Status, r.Body)
	}
	for _, s := range []string{
		`class="msg msg-note"`, "Internal note by Adam Admin", "VIP customer, be kind.", "Person: Adam Admin",
		"Assigned to: <strong>Adam Admin</strong>", `action="/console/w/ws_a/inbox/` + inAdmin + `/take-over"`,
		`name="kind" value="note"`, `role="listbox"`, `data-suggest="/console/w/ws_a/inbox/` + inAdmin + `/suggestion"`,
		`value="RESOLVED"`, `value="AI"`, `<option value="admin" selected>Adam Admin</option>`,
	} {
		if !strings.Contains(r.Body, s) {
			t.Errorf("missing %q", s)
		}
	}
	// The saved replies are in the page, hidden, for the "/" list.
	if !strings.Contains(r.Body, `<ul id="saved-replies" hidden><li data-shortcut="refund" data-title="Refunds">Refunds take 5 days.</li></ul>`) {
		t.Errorf("saved replies missing")
	}
	// The contact, the fallback reason and the earlier conversation.
	r = h.do(t, req{Path: "/console/w/ws_a/inbox/" + inWait1, As: "agent"})
	for _, s := range []string{"grace@example.com", "cust-42", "Fallback answer", `href="/console/w/ws_a/inbox/` + inResolved + `"`, `value="HANDOFF_REQUESTED"`} {
		if s == `value="HANDOFF_REQUESTED"` {
			if strings.Contains(r.Body, s) {
				t.Errorf("the ownership bar offers a status it should not")
			}
			continue
		}
		if !strings.Contains(r.Body, s) {
			t.Errorf("missing %q", s)
		}
	}
	// The header says when the visitor asked for a person, and how long
	// they have waited; a conversation that never asked says nothing.
	if !regexp.MustCompile(`<p id="thread-requested">Asked for a person: <time datetime="\d{4}-\d\d-\d\dT[0-9:]+Z">[0-9-]+ [0-9:]+ UTC \(waiting 40 min\)</time></p>`).MatchString(r.Body) {
		t.Errorf("the handoff request time is missing from the header")
	}
	if r := h.do(t, req{Path: "/console/w/ws_a/inbox/" + inAdmin, As: "agent"}); strings.Contains(r.Body, "thread-requested") {
		t.Errorf("a conversation that never asked for a person shows a request time")
	}
	// A resolved conversation offers Reopen, not Resolve.
	r = h.do(t, req{Path: "/console/w/ws_a/inbox/" + inResolved, As: "agent"})
	if !strings.Contains(r.Body, `value="HUMAN"`) || strings.Contains(r.Body, `value="RESOLVED"`) {
		t.Errorf("resolved thread's actions wrong")
	}
}

// Another workspace's conversation, an unknown and a malformed id are the
// same 404, on every thread route.
func TestThreadTenantIsolation(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	for _, id := range []string{inOther, "ses_1nbx0000000000000000000099", "nope"} {
		for _, rt := range []req{
			{Path: "/console/w/ws_a/inbox/" + id},
			{Method: "POST", Path: "/console/w/ws_a/inbox/" + id + "/messages", Form: url.Values{"kind": {"reply"}, "content": {"Hi"}}},
			{Method: "POST", Path: "/console/w/ws_a/inbox/" + id + "/take-over"},
			{Method: "POST", Path: "/console/w/ws_a/inbox/" + id + "/assignee", Form: url.Values{"assigneeId": {"usr_0000000000000000000000000a"}}},
			{Method: "POST", Path: "/console/w/ws_a/inbox/" + id + "/status", Form: url.Values{"status": {"RESOLVED"}}},
		} {
			rt.As = "owner"
			if r := h.do(t, rt); r.Status != http.StatusNotFound || strings.Contains(r.Body, "Beta") {
				t.Errorf("%s %s: status %d", rt.Method, rt.Path, r.Status)
			}
		}
	}
	if len(h.composer.posts) != 0 {
		t.Fatalf("posted to another workspace: %+v", h.composer.posts)
	}
}

func TestComposer(t *testing.T) {
	path := "/console/w/ws_a/inbox/" + inWait1 + "/messages"
	long := strings.Repeat("a", domain.MaxMessageLength+1)
	// A browser sends each line break of a text box as CRLF: 9,000
	// characters as sent, 7,500 as typed and stored.
	lines := strings.Repeat("line\r\n", 1500)
	tests := []struct {
		name     string
		form     url.Values
		status   int
		want     string // on the page after, or in the redirect
		wantRole domain.Role
	}{
		{"reply", url.Values{"kind": {"reply"}, "content": {"We are on it."}}, http.StatusSeeOther, "done=sent", domain.RoleHuman},
		{"note", url.Values{"kind": {"note"}, "content": {"Check the order first."}}, http.StatusSeeOther, "done=noted", "NOTE"},
		{"line breaks as a browser sends them", url.Values{"kind": {"reply"}, "content": {lines}}, http.StatusSeeOther, "done=sent", domain.RoleHuman},
		{"empty", url.Values{"kind": {"reply"}, "content": {"  \n "}}, http.StatusBadRequest, "Write a message first.", ""},
		{"too long", url.Values{"kind": {"note"}, "content": {long}}, http.StatusBadRequest, "A message is at most 8000 characters.", ""},
		{"no kind", url.Values{"content": {"Hello"}}, http.StatusBadRequest, "Choose reply or internal note.", ""},
		{"bad kind", url.Values{"kind": {"SYSTEM"}, "content": {"Hello"}}, http.StatusBadRequest, "Choose reply or internal note.", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			h.seedInbox(t)
			r := h.do(t, req{Method: "POST", Path: path, As: "agent", Form: tt.form})
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d\n%s", r.Status, tt.status, r.Body)
			}
			if tt.status == http.StatusSeeOther {
				if !strings.Contains(r.location(), tt.want) {
					t.Fatalf("Location %q", r.location())
				}
				if len(h.composer.posts) != 1 {
					t.Fatalf("posts %+v", h.composer.posts)
				}
				p := h.composer.posts[0]
				typed := strings.ReplaceAll(tt.form.Get("content"), "\r\n", "\n")
				if domain.Role(p.Role) != tt.wantRole || p.AuthorID != "agent" || p.AuthorName != "Agnes Agent" || p.Content != typed {
					t.Fatalf("posted %+v", p)
				}
				after := h.follow(t, r, "agent")
				if !strings.Contains(after.Body, html.EscapeString(typed)) {
					t.Fatalf("the message is not in the thread after:\n%s", after.Body)
				}
				return
			}
			if !strings.Contains(r.Body, tt.want) || len(h.composer.posts) != 0 {
				t.Fatalf("want %q and nothing posted (%d)\n%s", tt.want, len(h.composer.posts), r.Body)
			}
			// What was typed is kept (bar the too long one, which is kept too).
			if tt.form.Get("content") != "" && strings.TrimSpace(tt.form.Get("content")) != "" && !strings.Contains(r.Body, tt.form.Get("content")[:5]) {
				t.Fatalf("the typed text was lost")
			}
		})
	}
}

// State-changing inbox routes refuse a request without the session's CSRF
// token, and a cross-origin one.
func TestInboxRefusesCSRF(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	thread := "/console/w/ws_a/inbox/" + inWait1
	for _, path := range []string{"/messages", "/take-over", "/assignee", "/status"} {
		form := url.Values{"kind": {"reply"}, "content": {"Hi"}, "status": {"RESOLVED"}}
		for _, r := range []req{
			{Method: "POST", Path: thread + path, As: "agent", Form: form, NoCSRF: true},
			{Method: "POST", Path: thread + path, As: "agent", Form: form, CSRF: "csrf_owner"},
			{Method: "POST", Path: thread + path, As: "agent", Form: form, Header: map[string]string{"Sec-Fetch-Site": "cross-site"}},
		} {
			if got := h.do(t, r); got.Status != http.StatusForbidden {
				t.Errorf("%s: status %d", path, got.Status)
			}
		}
	}
	if len(h.composer.posts) != 0 || len(h.ownership.calls) != 0 {
		t.Fatalf("something changed: %+v %+v", h.composer.posts, h.ownership.calls)
	}
}

func TestTakeOver(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/inbox/" + inWait1 + "/take-over", As: "agent"})
	if r.Status != http.StatusSeeOther || !strings.Contains(r.location(), "done=taken") {
		t.Fatalf("take over: %d %q", r.Status, r.location())
	}
	after := h.follow(t, r, "agent")
	if !strings.Contains(after.Body, "You took this conversation over.") || !strings.Contains(after.Body, "Assigned to: <strong>you</strong>") {
		t.Fatalf("after:\n%s", after.Body)
	}
	// The admin was a moment too late: 409, and the page says who won.
	r = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/inbox/" + inWait1 + "/take-over", As: "admin"})
	if r.Status != http.StatusConflict || !strings.Contains(r.Body, "Agnes Agent took this conversation over.") {
		t.Fatalf("race lost: %d\n%s", r.Status, r.Body)
	}
}

func TestAssignee(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	path := "/console/w/ws_a/inbox/" + inWait1 + "/assignee"
	// The fake accounts' user ids are short words; the console checks the
	// id's form, so give a member a real one.
	h.accounts.mu.Lock()
	h.accounts.members = append(h.accounts.members, domain.Member{WorkspaceID: "ws_a", UserID: "usr_0000000000000000000000000b", Name: "Bea Member", Role: domain.MemberAgent})
	h.accounts.mu.Unlock()
	tests := []struct {
		name   string
		id     string
		status int
		want   string
	}{
		{"assign", "usr_0000000000000000000000000b", http.StatusSeeOther, "done=assigned"},
		{"unassign", "", http.StatusSeeOther, "done=unassigned"},
		{"not an id", "bea", http.StatusBadRequest, "Choose a member of this workspace."},
		{"not a member", "usr_0000000000000000000000000z", http.StatusBadRequest, "Choose a member of this workspace."},
	}
	for _, tt := range tests {
		r := h.do(t, req{Method: "POST", Path: path, As: "agent", Form: url.Values{"assigneeId": {tt.id}}})
		got := r.location()
		if r.Status != http.StatusSeeOther {
			got = r.Body
		}
		if r.Status != tt.status || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %d, want %d with %q\n%s", tt.name, r.Status, tt.status, tt.want, got)
		}
	}
	if want := "assign " + inWait1 + " usr_0000000000000000000000000b"; len(h.ownership.calls) < 2 || h.ownership.calls[0] != want || h.ownership.calls[1] != "unassign "+inWait1 {
		t.Fatalf("calls %v", h.ownership.calls)
	}
}

func TestThreadStatus(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	path := "/console/w/ws_a/inbox/" + inWait1 + "/status"
	steps := []struct {
		status string
		code   int
		want   string
	}{
		{"RESOLVED", http.StatusSeeOther, "done=resolved"},
		{"HUMAN", http.StatusSeeOther, "done=reopened"},
		{"AI", http.StatusSeeOther, "done=handedback"},
		{"HANDOFF_REQUESTED", http.StatusBadRequest, "Choose resolve, reopen or hand back."},
		{"", http.StatusBadRequest, "Choose resolve, reopen or hand back."},
	}
	for _, s := range steps {
		r := h.do(t, req{Method: "POST", Path: path, As: "agent", Form: url.Values{"status": {s.status}}})
		got := r.location()
		if r.Status != http.StatusSeeOther {
			got = r.Body
		}
		if r.Status != s.code || !strings.Contains(got, s.want) {
			t.Errorf("%q: %d, want %d with %q", s.status, r.Status, s.code, s.want)
		}
	}
	// A move the state machine refuses: the fake refuses every move from
	// a state it does not know, as a conflict.
	h.convs.mu.Lock()
	for i := range h.convs.convs {
		if h.convs.convs[i].ID == inAdmin {
			h.convs.convs[i].Status = "ARCHIVED" // no move leads anywhere from an unknown state
		}
	}
	h.convs.mu.Unlock()
	r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/inbox/" + inAdmin + "/status", As: "agent", Form: url.Values{"status": {"RESOLVED"}}})
	if r.Status != http.StatusConflict || !strings.Contains(r.Body, "cannot move there") {
		t.Fatalf("refused move: %d\n%s", r.Status, r.Body)
	}
}

// What visitors and members type is text on every inbox page: contact
// names, messages, notes and author names.
func TestInboxEscapesEverything(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	support, _ := h.agents.Get(context.Background(), "ws_a", "support")
	c := h.convs.add(domain.Conversation{WorkspaceID: "ws_a", AgentID: support.ID, AgentSlug: "support", Status: domain.StatusHandoffRequested,
		ContactName: evil, ContactEmail: evil, VerifiedUserID: evil, LastActivityAt: time.Now()},
		domain.Message{Role: domain.RoleUser, Content: evil},
		domain.Message{Role: domain.RoleHuman, Content: evil, AuthorName: evil},
		domain.Message{Role: "NOTE", Content: evil, AuthorName: evil})
	h.accounts.mu.Lock()
	h.accounts.members = append(h.accounts.members, domain.Member{WorkspaceID: "ws_a", UserID: "usr_evil", Name: evil, Role: domain.MemberAgent})
	h.accounts.mu.Unlock()
	h.replies.seed(domain.SavedReply{ID: domain.NewID(domain.PrefixSavedReply), WorkspaceID: "ws_a", Shortcut: "x", Title: evil, Body: "</script>" + evil})
	for _, path := range []string{"/console/w/ws_a/inbox", "/console/w/ws_a/inbox?view=unassigned", "/console/w/ws_a/inbox/" + c.ID} {
		r := h.do(t, req{Path: path, As: "agent"})
		if r.Status != http.StatusOK {
			t.Fatalf("%s: %d", path, r.Status)
		}
		if strings.Contains(r.Body, "<script>alert") || strings.Contains(r.Body, "<img src=x") || strings.Contains(r.Body, "</script>&lt;") {
			t.Fatalf("%s: unescaped input:\n%s", path, r.Body)
		}
		if !strings.Contains(r.Body, "&lt;script&gt;alert(1)") {
			t.Fatalf("%s: the text is not shown at all", path)
		}
	}
}

// The handoff form's note shows in the thread's contact panel, escaped
// (the visitor wrote it), also when it is the only contact detail given.
func TestThreadContactNote(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	support, err := h.agents.Get(context.Background(), "ws_a", "support")
	if err != nil {
		t.Fatal(err)
	}
	const withNote = "ses_1nbx0000000000000000000007"
	h.convs.add(domain.Conversation{ID: withNote, WorkspaceID: "ws_a", AgentID: support.ID, AgentSlug: support.Slug,
		Status: domain.StatusHandoffRequested, ContactNote: "<script>alert(1)</script> & \"order\" #42",
		LastActivityAt: time.Now(), CreatedAt: time.Now()},
		domain.Message{Role: domain.RoleUser, Content: "Help"})
	tests := []struct {
		name, id string
		want     []string
		absent   []string
	}{
		{"a note alone", withNote,
			[]string{"<dt>Note from the visitor</dt>", `<dd class="contact-note">&lt;script&gt;alert(1)&lt;/script&gt; &amp; &#34;order&#34; #42</dd>`},
			[]string{"<script>alert(1)", "The visitor left no contact details."}},
		{"no note", inWait1, []string{"grace@example.com"}, []string{"Note from the visitor"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(t, req{Path: "/console/w/ws_a/inbox/" + tt.id, As: "agent"})
			if r.Status != http.StatusOK {
				t.Fatalf("status %d\n%s", r.Status, r.Body)
			}
			for _, s := range tt.want {
				if !strings.Contains(r.Body, s) {
					t.Errorf("missing %q", s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(r.Body, s) {
					t.Errorf("found %q", s)
				}
			}
		})
	}
}
