package console_test

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/savedreply"
)

// The service the wiring passes fits the console's interface.
var _ console.SavedReplies = (*savedreply.Service)(nil)

// Fixed ids, so routes can name what the store holds: a reply of ws_a and
// one of ws_b.
var (
	replyA = "rpl_" + strings.Repeat("0", 25) + "a"
	replyB = "rpl_" + strings.Repeat("0", 25) + "b"
)

const repliesPath = "/console/w/ws_a/settings/saved-replies"

// seedReplies gives ws_a the reply /refund (and "/hello", so a shortcut
// can be taken) and ws_b the reply /beta-secret.
func (h *harness) seedReplies() {
	h.replies.seed(
		domain.SavedReply{ID: replyA, WorkspaceID: "ws_a", Shortcut: "refund", Title: "Refunds",
			Body: "Refunds take 5 days.\nWrite again if it takes longer.", CreatedAt: fakeNow, UpdatedAt: fakeNow},
		domain.SavedReply{ID: domain.NewID(domain.PrefixSavedReply), WorkspaceID: "ws_a", Shortcut: "hello", Title: "Greeting",
			Body: "Hello!", CreatedAt: fakeNow, UpdatedAt: fakeNow},
		domain.SavedReply{ID: replyB, WorkspaceID: "ws_b", Shortcut: "beta-secret", Title: "Beta's reply",
			Body: "Beta's secret text", CreatedAt: fakeNow, UpdatedAt: fakeNow},
	)
}

func replyForm(shortcut, title, body string) url.Values {
	return url.Values{"shortcut": {shortcut}, "title": {title}, "body": {body}}
}

// The role matrix of the saved reply routes: every member of the
// workspace reads the list; owners and admins create, edit and delete;
// agents are refused those before the service is asked; another
// workspace's user gets 404, and so does a reply of another workspace
// named in this workspace's URLs; signed out goes to sign-in.
func TestSavedRepliesRoleMatrix(t *testing.T) {
	const ok, see, forbid, nf = http.StatusOK, http.StatusSeeOther, http.StatusForbidden, http.StatusNotFound
	type want = roleStatuses
	edit := replyForm("refund-v2", "Refunds", "Refunds take 3 days.")
	routes := []struct {
		method, path string
		form         url.Values
		want         want
	}{
		{"GET", repliesPath, nil, want{ok, ok, ok, nf, see}},
		{"POST", repliesPath, replyForm("new", "New", "A new reply."), want{see, see, forbid, nf, see}},
		{"GET", repliesPath + "/" + replyA, nil, want{ok, ok, forbid, nf, see}},
		{"POST", repliesPath + "/" + replyA, edit, want{see, see, forbid, nf, see}},
		{"GET", repliesPath + "/" + replyA + "/delete", nil, want{ok, ok, forbid, nf, see}},
		{"POST", repliesPath + "/" + replyA + "/delete", nil, want{see, see, forbid, nf, see}},
		// Another workspace's reply, named in ws_a's URLs.
		{"GET", repliesPath + "/" + replyB, nil, want{nf, nf, forbid, nf, see}},
		{"POST", repliesPath + "/" + replyB, edit, want{nf, nf, forbid, nf, see}},
		{"GET", repliesPath + "/" + replyB + "/delete", nil, want{nf, nf, forbid, nf, see}},
		{"POST", repliesPath + "/" + replyB + "/delete", nil, want{nf, nf, forbid, nf, see}},
		// Not a reply's id at all.
		{"GET", repliesPath + "/rpl_nope", nil, want{nf, nf, forbid, nf, see}},
		{"POST", repliesPath + "/rpl_nope/delete", nil, want{nf, nf, forbid, nf, see}},
		// ws_b's own page is its members' only.
		{"GET", "/console/w/ws_b/settings/saved-replies", nil, want{nf, nf, nf, ok, see}},
	}
	for _, rt := range routes {
		for _, who := range rt.want.roles() {
			t.Run(rt.method+" "+rt.path+" as "+who.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedReplies()
				before := h.replies.all()
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
				if who.want == forbid && !strings.Contains(r.Body, "You may not do this: your role does not include managing saved replies.") {
					t.Fatalf("403 without its reason:\n%s", r.Body)
				}
				if strings.Contains(r.Body, "Beta&#39;s secret text") && who.as != "other" {
					t.Fatal("ws_b's reply shown outside ws_b")
				}
				if who.want != see && !slices.Equal(h.replies.all(), before) {
					t.Fatalf("a refused request changed the replies: %+v", h.replies.all())
				}
			})
		}
	}
}

// The list is the same for every member; only those who may manage see
// the form and the edit and delete links, and the others are told whom to
// ask. Settings and the side navigation link the page for managers.
func TestSavedRepliesList(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedReplies()
	for _, tt := range []struct {
		as     string
		manage bool
	}{{"owner", true}, {"admin", true}, {"agent", false}} {
		t.Run(tt.as, func(t *testing.T) {
			r := h.do(t, req{Path: repliesPath, As: tt.as})
			if r.Status != http.StatusOK {
				t.Fatalf("status %d:\n%s", r.Status, r.Body)
			}
			checkPage(t, r, tt.as)
			// Shortcut order, the title and the first line only, the last edit.
			hello, refund := strings.Index(r.Body, "<code>/hello</code>"), strings.Index(r.Body, "<code>/refund</code>")
			if hello < 0 || refund < hello {
				t.Errorf("not listed in shortcut order:\n%s", r.Body)
			}
			for _, s := range []string{"<strong>Refunds</strong>", "Refunds take 5 days.</span>", `<time datetime="` + fakeNow.UTC().Format("2006-01-02T15:04:05Z") + `">`} {
				if !strings.Contains(r.Body, s) {
					t.Errorf("no %q", s)
				}
			}
			if strings.Contains(r.Body, "Write again if it takes longer.") {
				t.Error("the list shows more than the first line")
			}
			if strings.Contains(r.Body, "beta-secret") {
				t.Error("another workspace's reply is listed")
			}
			has := func(s string) bool { return strings.Contains(r.Body, s) }
			if has(`action="`+repliesPath+`"`) != tt.manage || has(repliesPath+"/"+replyA+"/delete") != tt.manage || has(repliesPath+"/"+replyA+`"`) != tt.manage {
				t.Errorf("manage controls shown = %v, want %v", !tt.manage, tt.manage)
			}
			if has("Owners and admins create and change saved replies") == tt.manage {
				t.Errorf("read-only hint shown = %v, want %v", tt.manage, !tt.manage)
			}
			if has(`href="`+repliesPath+`" aria-current="page"`) != tt.manage {
				t.Errorf("side navigation link (current) shown = %v, want %v", !tt.manage, tt.manage)
			}
		})
	}
	settings := h.do(t, req{Path: "/console/w/ws_a/settings", As: "admin"})
	if !strings.Contains(settings.Body, `<a href="`+repliesPath+`">Saved replies</a>`) {
		t.Errorf("Settings does not link the saved replies:\n%s", settings.Body)
	}
}

// A workspace with no replies says so; one with more than a page links
// the next, which continues in shortcut order; a bad position is the
// page's 400, not a crash.
func TestSavedRepliesPages(t *testing.T) {
	h := newHarness(t, publicURL)
	empty := h.do(t, req{Path: repliesPath, As: "owner"})
	if empty.Status != http.StatusOK || !strings.Contains(empty.Body, "No saved replies yet.") {
		t.Fatalf("empty list: %d\n%s", empty.Status, empty.Body)
	}
	for i := range domain.MaxPageLimit + 5 {
		h.replies.seed(domain.SavedReply{ID: domain.NewID(domain.PrefixSavedReply), WorkspaceID: "ws_a",
			Shortcut: fmt.Sprintf("r%03d", i), Title: "Reply", Body: "Text", CreatedAt: fakeNow, UpdatedAt: fakeNow})
	}
	first := h.do(t, req{Path: repliesPath, As: "agent"})
	next := repliesPath + "?after=r099"
	if !strings.Contains(first.Body, "<code>/r099</code>") || strings.Contains(first.Body, "<code>/r100</code>") || !strings.Contains(first.Body, `href="`+next+`"`) {
		t.Fatalf("first page:\n%s", first.Body)
	}
	second := h.do(t, req{Path: next, As: "agent"})
	if second.Status != http.StatusOK || !strings.Contains(second.Body, "<code>/r100</code>") || !strings.Contains(second.Body, "<code>/r104</code>") ||
		strings.Contains(second.Body, "<code>/r099</code>") || strings.Contains(second.Body, `href="`+repliesPath+"?after=") || !strings.Contains(second.Body, ">First page</a>") {
		t.Fatalf("second page: %d\n%s", second.Status, second.Body)
	}
	bad := h.do(t, req{Path: repliesPath + "?after=" + url.QueryEscape("NOT A SHORTCUT"), As: "agent"})
	if bad.Status != http.StatusBadRequest || !strings.Contains(bad.Body, `role="alert"`) {
		t.Fatalf("bad position: %d\n%s", bad.Status, bad.Body)
	}
}

// Creating: a good reply is stored with the member as its author and
// announced after the redirect; every refusal shows the form again, as
// typed, with the message next to its field (or above the form for a
// full workspace), and stores nothing.
func TestSavedReplyCreate(t *testing.T) {
	t.Run("good", func(t *testing.T) {
		h := newHarness(t, publicURL)
		r := h.do(t, req{Method: "POST", Path: repliesPath, As: "admin", Form: replyForm("  shipping ", "  Shipping times ", "We ship in 2 days.\nTracking follows.")})
		if r.Status != http.StatusSeeOther || r.location() != repliesPath+"?done=replycreated" {
			t.Fatalf("status %d, Location %q:\n%s", r.Status, r.location(), r.Body)
		}
		page := h.follow(t, r, "admin")
		if !strings.Contains(page.Body, "The saved reply is created.") || !strings.Contains(page.Body, "<code>/shipping</code>") {
			t.Fatalf("after the redirect:\n%s", page.Body)
		}
		got := h.replies.all()
		if len(got) != 1 || got[0].Shortcut != "shipping" || got[0].Title != "Shipping times" || got[0].Body != "We ship in 2 days.\nTracking follows." ||
			got[0].WorkspaceID != "ws_a" || got[0].CreatedBy != "admin" {
			t.Fatalf("stored %+v", got)
		}
	})
	long := func(n int) string { return strings.Repeat("a", n) }
	tests := []struct {
		name, shortcut, title, body string
		status                      int
		field, message              string
	}{
		{"no shortcut", "", "T", "B", 400, "shortcut", "is required"},
		{"upper case shortcut", "Refund", "T", "B", 400, "shortcut", "may contain only lowercase letters, digits and -"},
		{"spaces in the shortcut", "re fund", "T", "B", 400, "shortcut", "may contain only lowercase letters, digits and -"},
		{"long shortcut", long(domain.MaxSavedReplyShortcut + 1), "T", "B", 400, "shortcut", "must be at most 32 characters"},
		{"no title", "x", "   ", "B", 400, "title", "is required"},
		{"long title", "x", long(domain.MaxSavedReplyTitle + 1), "B", 400, "title", "must be at most 100 characters"},
		{"no text", "x", "T", " \n ", 400, "body", "is required"},
		{"long text", "x", "T", long(domain.MaxMessageLength + 1), 400, "body", fmt.Sprintf("must be at most %d characters", domain.MaxMessageLength)},
		{"taken shortcut", "refund", "T", "B", 409, "shortcut", "Another saved reply already uses /refund. Choose another shortcut."},
		{"taken shortcut, also a title's prefix", "hello", "T", "B", 409, "shortcut", "Another saved reply already uses /hello."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			h.seedReplies()
			h.replies.seed(domain.SavedReply{ID: domain.NewID(domain.PrefixSavedReply), WorkspaceID: "ws_a", Shortcut: "aaa", Title: "hello there", Body: "x"})
			before := h.replies.all()
			r := h.do(t, req{Method: "POST", Path: repliesPath, As: "owner", Form: replyForm(tt.shortcut, tt.title, tt.body)})
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d:\n%s", r.Status, tt.status, r.Body)
			}
			checkPage(t, r, "owner")
			if !strings.Contains(r.Body, `id="f-`+tt.field+`-error">`+escaped(tt.message)) || !strings.Contains(r.Body, "Please correct the fields marked below.") {
				t.Fatalf("no message %q on %s:\n%s", tt.message, tt.field, r.Body)
			}
			if !regexp.MustCompile(`id="f-` + tt.field + `"[^>]* aria-invalid="true" +aria-describedby="f-` + tt.field + `-hint f-` + tt.field + `-error"`).MatchString(r.Body) {
				t.Errorf("%s not marked invalid", tt.field)
			}
			if tt.title != "" && !strings.Contains(r.Body, `value="`+escaped(strings.TrimSpace(tt.title))) && !strings.Contains(r.Body, `value="`+escaped(tt.title)) {
				t.Errorf("the typed title is not kept")
			}
			if !slices.Equal(h.replies.all(), before) {
				t.Fatalf("a refused form stored something: %+v", h.replies.all())
			}
		})
	}
	t.Run("full workspace", func(t *testing.T) {
		h := newHarness(t, publicURL)
		for i := range domain.MaxSavedRepliesPerWorkspace {
			h.replies.seed(domain.SavedReply{ID: domain.NewID(domain.PrefixSavedReply), WorkspaceID: "ws_a", Shortcut: fmt.Sprintf("r%03d", i), Title: "T", Body: "B"})
		}
		r := h.do(t, req{Method: "POST", Path: repliesPath, As: "owner", Form: replyForm("one-more", "T", "B")})
		if r.Status != http.StatusConflict || !strings.Contains(r.Body, `<div class="error" role="alert"><p>a workspace keeps at most 500 saved replies; delete one first</p></div>`) {
			t.Fatalf("status %d:\n%s", r.Status, r.Body)
		}
		if len(h.replies.all()) != domain.MaxSavedRepliesPerWorkspace {
			t.Fatal("a reply over the limit was stored")
		}
	})
}

// Editing: the form shows the reply; saving changes every field, keeping
// its own shortcut is no conflict; refusals keep what was typed.
func TestSavedReplyEdit(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedReplies()
	path := repliesPath + "/" + replyA
	page := h.do(t, req{Path: path, As: "owner"})
	if page.Status != http.StatusOK || !strings.Contains(page.Body, "<h1>Edit /refund</h1>") || !strings.Contains(page.Body, `value="refund"`) ||
		!strings.Contains(page.Body, ">Refunds take 5 days.\nWrite again if it takes longer.</textarea>") {
		t.Fatalf("edit page: %d\n%s", page.Status, page.Body)
	}
	checkPage(t, page, "owner")

	tests := []struct {
		name                        string
		shortcut, title, body       string
		status                      int
		field, message, storedTitle string
	}{
		{"taken shortcut", "hello", "Refunds", "x", 409, "shortcut", "Another saved reply already uses /hello.", "Refunds"},
		{"no text", "refund", "Refunds", "", 400, "body", "is required", "Refunds"},
		{"bad shortcut", "REFUND", "Refunds", "x", 400, "shortcut", "may contain only lowercase letters, digits and -", "Refunds"},
		{"its own shortcut", "refund", "Refunds, new", "Refunds take 3 days.", 303, "", "", "Refunds, new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := h.do(t, req{Method: "POST", Path: path, As: "admin", Form: replyForm(tt.shortcut, tt.title, tt.body)})
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d:\n%s", r.Status, tt.status, r.Body)
			}
			got, err := h.replies.GetSavedReply(t.Context(), "ws_a", replyA)
			if err != nil || got.Title != tt.storedTitle {
				t.Fatalf("stored %+v, %v", got, err)
			}
			if tt.status == http.StatusSeeOther {
				if r.location() != repliesPath+"?done=replysaved" || got.Body != tt.body {
					t.Fatalf("Location %q, stored %+v", r.location(), got)
				}
				if f := h.follow(t, r, "admin"); !strings.Contains(f.Body, "The saved reply is saved.") {
					t.Fatalf("no notice:\n%s", f.Body)
				}
				return
			}
			checkPage(t, r, "admin")
			if !strings.Contains(r.Body, `id="f-`+tt.field+`-error">`+escaped(tt.message)) || !strings.Contains(r.Body, `value="`+escaped(tt.shortcut)+`"`) {
				t.Fatalf("no %q on %s, or the typed shortcut lost:\n%s", tt.message, tt.field, r.Body)
			}
		})
	}
}

// Deleting asks first, then removes the reply; a second try is 404.
func TestSavedReplyDelete(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedReplies()
	path := repliesPath + "/" + replyA + "/delete"
	page := h.do(t, req{Path: path, As: "owner"})
	if page.Status != http.StatusOK || !strings.Contains(page.Body, "<h1>Delete /refund?</h1>") || !strings.Contains(page.Body, "This cannot be undone.") ||
		!strings.Contains(page.Body, `<form method="post" action="`+path+`"`) {
		t.Fatalf("confirmation: %d\n%s", page.Status, page.Body)
	}
	checkPage(t, page, "owner")
	if _, err := h.replies.GetSavedReply(t.Context(), "ws_a", replyA); err != nil {
		t.Fatal("the confirmation page deleted the reply")
	}
	r := h.do(t, req{Method: "POST", Path: path, As: "admin"})
	if r.Status != http.StatusSeeOther || r.location() != repliesPath+"?done=replydeleted" {
		t.Fatalf("status %d, Location %q", r.Status, r.location())
	}
	if f := h.follow(t, r, "admin"); !strings.Contains(f.Body, "The saved reply is deleted.") || strings.Contains(f.Body, "/refund<") {
		t.Fatalf("after the redirect:\n%s", f.Body)
	}
	if again := h.do(t, req{Method: "POST", Path: path, As: "admin"}); again.Status != http.StatusNotFound {
		t.Fatalf("deleting again: %d", again.Status)
	}
	if n := len(h.replies.all()); n != 2 {
		t.Fatalf("%d replies left, want 2 (the other of ws_a and ws_b's)", n)
	}
}

// Every saved reply POST needs the session's CSRF token and a same-origin
// request; refused, it changes nothing.
func TestSavedRepliesCSRF(t *testing.T) {
	posts := []struct {
		path string
		form url.Values
	}{
		{repliesPath, replyForm("new", "New", "Text")},
		{repliesPath + "/" + replyA, replyForm("refund", "Changed", "Text")},
		{repliesPath + "/" + replyA + "/delete", nil},
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
				h.seedReplies()
				before := h.replies.all()
				r := tt.r
				r.Method, r.Path, r.As, r.Form = "POST", p.path, "owner", p.form
				if res := h.do(t, r); res.Status != http.StatusForbidden {
					t.Fatalf("status %d, want 403:\n%s", res.Status, res.Body)
				}
				if !slices.Equal(h.replies.all(), before) {
					t.Fatalf("replies changed: %+v", h.replies.all())
				}
			})
		}
	}
}

// Shortcuts are plain; titles and texts are whatever was typed, and are
// rendered escaped on every page that shows them.
func TestSavedRepliesEscaping(t *testing.T) {
	h := newHarness(t, publicURL)
	h.replies.seed(domain.SavedReply{ID: replyA, WorkspaceID: "ws_a", Shortcut: "x", Title: xss, Body: xss, CreatedAt: fakeNow, UpdatedAt: fakeNow})
	for _, p := range []req{
		{Path: repliesPath, As: "agent"},
		{Path: repliesPath + "/" + replyA, As: "owner"},
		{Path: repliesPath + "/" + replyA + "/delete", As: "owner"},
		{Method: "POST", Path: repliesPath, As: "owner", Form: replyForm("y", xss, "")},
		{Method: "POST", Path: repliesPath + "/" + replyA, As: "owner", Form: replyForm("x", xss, "")},
	} {
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

// A thread's composer links the saved replies page while the workspace has
// none, in the words of what the member may do there; with replies, the
// "/" list has them and the link goes.
func TestComposerLinksSavedReplies(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedInbox(t)
	h.replies.mu.Lock()
	h.replies.replies = nil
	h.replies.mu.Unlock()
	thread := "/console/w/ws_a/inbox/" + inWait1
	link := `<a href="` + repliesPath + `">`
	for as, words := range map[string]string{"owner": "Manage saved replies", "admin": "Manage saved replies", "agent": "See the saved replies"} {
		r := h.do(t, req{Path: thread, As: as})
		if r.Status != http.StatusOK || !strings.Contains(r.Body, "This workspace has no saved replies yet. "+link+words+"</a>") {
			t.Fatalf("%s: %d\n%s", as, r.Status, r.Body)
		}
	}
	h.seedReplies()
	if r := h.do(t, req{Path: thread, As: "agent"}); strings.Contains(r.Body, `id="replies-empty"`) || !strings.Contains(r.Body, `data-shortcut="refund"`) {
		t.Fatalf("with replies:\n%s", r.Body)
	}
}
