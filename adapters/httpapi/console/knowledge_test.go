package console_test

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// matrixSource is the source the role matrix acts on.
const matrixSource = "src_0123456789abcdefghjkmnpqrs"

// matrixFiles gives the upload route of the role matrix a file to send.
func matrixFiles(path string) []upload {
	if strings.HasSuffix(path, "/knowledge/files") {
		return []upload{{Name: "faq.md", Content: "# FAQ\nWe ship worldwide."}}
	}
	return nil
}

const knowledgePath = "/console/w/ws_a/agents/support/knowledge"

func knowledgeHarness(t *testing.T) *harness {
	t.Helper()
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	return h
}

// The navigation leads to a list of agents, each to its knowledge; the
// agent page links there too.
func TestKnowledgeLanding(t *testing.T) {
	h := newHarness(t, publicURL)
	empty := h.do(t, req{Path: "/console/w/ws_a/knowledge", As: "admin"})
	if empty.Status != http.StatusOK || !strings.Contains(empty.Body, "No agents yet. Create an agent first") ||
		!strings.Contains(empty.Body, `href="/console/w/ws_a/knowledge" aria-current="page">Knowledge</a>`) {
		t.Fatalf("%d:\n%s", empty.Status, empty.Body)
	}
	h.seedAgent(t, "support", "Support", true)
	h.seedAgent(t, "sales", "Sales", false)
	list := h.do(t, req{Path: "/console/w/ws_a/knowledge", As: "admin"})
	for _, s := range []string{`href="/console/w/ws_a/agents/support/knowledge">Support</a>`, `href="/console/w/ws_a/agents/sales/knowledge">Sales</a>`} {
		if !strings.Contains(list.Body, s) {
			t.Errorf("the landing lacks %s", s)
		}
	}
	if strings.Contains(list.Body, "Knowledge (coming soon)") {
		t.Error("Knowledge still shows as coming soon")
	}
	agent := h.do(t, req{Path: "/console/w/ws_a/agents/support", As: "admin"})
	if !strings.Contains(agent.Body, `href="/console/w/ws_a/agents/support/knowledge">Knowledge</a>`) {
		t.Fatalf("the agent page does not link its knowledge:\n%s", agent.Body)
	}
	// Helpers do not see the entry (and are refused the page: role matrix).
	if helper := h.do(t, req{Path: "/console/w/ws_a", As: "agent"}); strings.Contains(helper.Body, "/knowledge") {
		t.Fatal("a helper is offered the knowledge pages")
	}
}

func TestKnowledgeAddEachType(t *testing.T) {
	tests := []struct {
		name string
		form url.Values
		want domain.Source
	}{
		{"text", url.Values{"type": {"text"}, "name": {" Returns "}, "content": {"Within 30 days."}},
			domain.Source{Type: domain.SourceText, Name: "Returns", Content: "Within 30 days."}},
		{"qa", url.Values{"type": {"qa"}, "question": {"Do you ship abroad?"}, "answer": {"Yes, worldwide."}},
			domain.Source{Type: domain.SourceQA, Name: "Do you ship abroad?", Question: "Do you ship abroad?", Answer: "Yes, worldwide."}},
		{"url", url.Values{"type": {"url"}, "url": {"https://shop.example/help#top"}},
			domain.Source{Type: domain.SourceURL, Name: "shop.example/help", URL: "https://shop.example/help"}},
		{"website with defaults", url.Values{"type": {"website"}, "siteUrl": {"https://shop.example/"}},
			domain.Source{Type: domain.SourceWebsite, Name: "shop.example/", URL: "https://shop.example/", MaxPages: domain.DefaultMaxPages, MaxDepth: domain.DefaultMaxDepth}},
		{"website with options", url.Values{"type": {"website"}, "siteUrl": {"https://shop.example/sitemap.xml"}, "maxPages": {" 200 "}, "maxDepth": {"5"}},
			domain.Source{Type: domain.SourceWebsite, Name: "shop.example/sitemap.xml", URL: "https://shop.example/sitemap.xml", MaxPages: 200, MaxDepth: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := knowledgeHarness(t)
			r := h.do(t, req{Method: "POST", Path: knowledgePath + "/sources", As: "admin", Form: tt.form})
			if r.Status != http.StatusSeeOther || r.location() != knowledgePath+"?done=source" {
				t.Fatalf("%d %q:\n%s", r.Status, r.location(), r.Body)
			}
			added := h.agents.sources.added
			if len(added) != 1 {
				t.Fatalf("%d sources added", len(added))
			}
			got := added[0]
			if got.Type != tt.want.Type || got.Name != tt.want.Name || got.Content != tt.want.Content || got.Question != tt.want.Question ||
				got.Answer != tt.want.Answer || got.URL != tt.want.URL || got.MaxPages != tt.want.MaxPages || got.MaxDepth != tt.want.MaxDepth {
				t.Fatalf("added %+v\nwant %+v", got, tt.want)
			}
			page := h.do(t, req{Path: r.location(), As: "admin"})
			if !strings.Contains(page.Body, "The source is added.") || !strings.Contains(page.Body, `<span class="status status-PENDING">Waiting</span>`) {
				t.Fatalf("the page does not show the new source:\n%s", page.Body)
			}
		})
	}
}

// Bad input is refused with the domain's words next to the field of the
// form that was sent, what was typed is kept, and nothing is added.
func TestKnowledgeBadInput(t *testing.T) {
	tests := []struct {
		name   string
		form   url.Values
		files  []upload
		field  string // the field the error is next to; "" for an error page
		status int
		msg    string
	}{
		{"empty text", url.Values{"type": {"text"}, "name": {"Returns"}, "content": {"  \n "}}, nil, "content", 400, "is required"},
		{"text without title", url.Values{"type": {"text"}, "content": {"Within 30 days."}}, nil, "name", 400, "is required"},
		{"oversize text", url.Values{"type": {"text"}, "name": {"Big"}, "content": {strings.Repeat("a", domain.MaxSourceContentLength+1)}}, nil, "content", 400, "must be at most 500000 bytes"},
		{"title too long", url.Values{"type": {"text"}, "name": {strings.Repeat("t", 301)}, "content": {"x"}}, nil, "name", 400, "must be at most 300 characters"},
		{"empty question", url.Values{"type": {"qa"}, "question": {" "}, "answer": {"Yes."}}, nil, "question", 400, "is required"},
		{"empty answer", url.Values{"type": {"qa"}, "question": {"Why?"}}, nil, "answer", 400, "is required"},
		{"question too long for a name", url.Values{"type": {"qa"}, "question": {strings.Repeat("q", 301)}, "answer": {"A."}}, nil, "question", 400, "must be at most 300 characters"},
		{"bad page URL", url.Values{"type": {"url"}, "url": {"ftp://files.example/a"}}, nil, "url", 400, "must be an absolute http or https URL"},
		{"page URL not a URL", url.Values{"type": {"url"}, "url": {"not a url"}}, nil, "url", 400, "must be an absolute http or https URL"},
		{"page URL with a password", url.Values{"type": {"url"}, "url": {"https://user:pw@shop.example/"}}, nil, "url", 400, "must not contain a user name or password"},
		{"empty site URL", url.Values{"type": {"website"}}, nil, "siteUrl", 400, "is required"},
		{"crawl pages not a number", url.Values{"type": {"website"}, "siteUrl": {"https://shop.example/"}, "maxPages": {"lots"}}, nil, "maxPages", 400, "must be a number"},
		{"crawl too large", url.Values{"type": {"website"}, "siteUrl": {"https://shop.example/"}, "maxPages": {"5000"}}, nil, "maxPages", 400, "must be between 1 and 1000"},
		{"crawl of 0 pages", url.Values{"type": {"website"}, "siteUrl": {"https://shop.example/"}, "maxPages": {"0"}}, nil, "maxPages", 400, "must be between 1 and 1000"},
		{"crawl 0 links deep", url.Values{"type": {"website"}, "siteUrl": {"https://shop.example/"}, "maxDepth": {"0"}}, nil, "maxDepth", 400, "must be between 1 and 10"},
		{"crawl too deep", url.Values{"type": {"website"}, "siteUrl": {"https://shop.example/"}, "maxDepth": {"11"}}, nil, "maxDepth", 400, "must be between 1 and 10"},
		{"unknown type", url.Values{"type": {"video"}}, nil, "", 400, "must be text, qa, url or website"},
		{"file type as a form", url.Values{"type": {"file"}}, nil, "", 400, "must be text, qa, url or website"},
		{"unsupported file type", nil, []upload{{"virus.exe", "MZ"}}, "file", 400, `virus.exe: &#34;.exe&#34; files are not supported; use .md, .txt, .html, .pdf, .docx or .csv`},
		{"file without extension", nil, []upload{{"README", "hello"}}, "file", 400, `files are not supported`},
		{"empty file", nil, []upload{{"empty.md", ""}}, "file", 400, "empty.md: is empty"},
		{"no file", nil, []upload{}, "file", 400, "choose at least one file"},
		{"too many files", nil, manyFiles(21), "file", 400, "at most 20 files at once"},
		{"one bad file among good ones", nil, []upload{{"a.md", "# A"}, {"b.pdf", ""}, {"c.txt", "C"}}, "file", 400, "b.pdf: is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := knowledgeHarness(t)
			path := knowledgePath + "/sources"
			if tt.files != nil {
				path = knowledgePath + "/files"
			}
			r := h.do(t, req{Method: "POST", Path: path, As: "owner", Form: tt.form, Files: tt.files})
			if r.Status != tt.status {
				t.Fatalf("status %d, want %d:\n%s", r.Status, tt.status, r.Body)
			}
			if tt.field != "" {
				re := regexp.MustCompile(`(?s)id="f-` + tt.field + `"[^>]*aria-invalid="true".*?<p class="field-error" id="f-` + tt.field + `-error">[^<]*` + regexp.QuoteMeta(tt.msg))
				if !re.MatchString(r.Body) {
					t.Fatalf("no error %q next to %s:\n%s", tt.msg, tt.field, r.Body)
				}
				if !strings.Contains(r.Body, "Please correct the fields marked below.") {
					t.Fatal("no summary above the forms")
				}
			} else if !strings.Contains(r.Body, tt.msg) {
				t.Fatalf("no %q:\n%s", tt.msg, r.Body)
			}
			if v := tt.form.Get("siteUrl") + tt.form.Get("url") + tt.form.Get("question"); strings.TrimSpace(v) != "" && len(v) < 400 &&
				!strings.Contains(r.Body, `value="`+strings.ReplaceAll(v, "&", "&amp;")+`"`) {
				t.Fatalf("the typed value %q is lost", v)
			}
			if h.agents.sources != nil && len(h.agents.sources.added) != 0 {
				t.Fatalf("a refused form added %d sources", len(h.agents.sources.added))
			}
		})
	}
}

func manyFiles(n int) []upload {
	out := make([]upload, n)
	for i := range out {
		out[i] = upload{Name: "f" + strings.Repeat("x", i) + ".txt", Content: "x"}
	}
	return out
}

// The plain form sends several files in one request: each becomes a source
// with its own name and content.
func TestKnowledgeSeveralFilesInOneRequest(t *testing.T) {
	h := knowledgeHarness(t)
	files := []upload{{"faq.md", "# FAQ"}, {"prices.csv", "item,price\nmug,5"}, {`C:\Users\me\notes.TXT`, "notes"}}
	r := h.do(t, req{Method: "POST", Path: knowledgePath + "/files", As: "admin", Files: files})
	if r.Status != http.StatusSeeOther || r.location() != knowledgePath+"?done=files" {
		t.Fatalf("%d %q:\n%s", r.Status, r.location(), r.Body)
	}
	added := h.agents.sources.added
	if len(added) != 3 {
		t.Fatalf("%d sources added, want 3", len(added))
	}
	for i, want := range []struct{ name, content string }{{"faq.md", "# FAQ"}, {"prices.csv", "item,price\nmug,5"}, {"notes.TXT", "notes"}} {
		if added[i].Type != domain.SourceFile || added[i].Filename != want.name || added[i].Name != want.name || string(added[i].File) != want.content {
			t.Errorf("file %d: %s %q %q %q", i, added[i].Type, added[i].Filename, added[i].Name, added[i].File)
		}
	}
	page := h.do(t, req{Path: r.location(), As: "admin"})
	if !strings.Contains(page.Body, "The files are uploaded.") || strings.Count(page.Body, `status-PENDING`) != 3 {
		t.Fatalf("the page does not show the three files:\n%s", page.Body)
	}
	// console.js sends each file alone with the header token and
	// HX-Request: answered 204 with where to go, not a page.
	one := h.do(t, req{Method: "POST", Path: knowledgePath + "/files", As: "admin", NoCSRF: true, Files: []upload{{"more.md", "more"}},
		Header: map[string]string{"X-CSRF-Token": "csrf_admin", "HX-Request": "true"}})
	if one.Status != http.StatusNoContent || one.Header.Get("HX-Redirect") != knowledgePath+"?done=files" || len(h.agents.sources.added) != 4 {
		t.Fatalf("an upload from console.js: %d %q", one.Status, one.Header.Get("HX-Redirect"))
	}
}

// The list polls every 2 s while any source is PENDING or INDEXING, and
// the fragment it fetches stops polling once all are settled.
func TestKnowledgePollingStopsWhenSettled(t *testing.T) {
	poll := `hx-get="/console/w/ws_a/agents/support/knowledge/list" hx-trigger="every 2s" hx-swap="outerHTML"`
	tests := []struct {
		name     string
		statuses []domain.SourceStatus
		polls    bool
		summary  string
	}{
		{"no sources", nil, false, "No sources yet."},
		{"one pending", []domain.SourceStatus{domain.SourceReady, domain.SourcePending}, true, "1 being indexed; 1 ready, 0 failed."},
		{"one indexing", []domain.SourceStatus{domain.SourceIndexing, domain.SourceFailed}, true, "1 being indexed; 0 ready, 1 failed."},
		{"all ready or failed", []domain.SourceStatus{domain.SourceReady, domain.SourceFailed, domain.SourceReady}, false, "All indexed: 2 ready, 1 failed."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := knowledgeHarness(t)
			for _, st := range tt.statuses {
				h.seedSource(t, "support", domain.Source{Type: domain.SourceText, Name: "S " + string(st), Status: st, StatusReason: "boom"})
			}
			for _, path := range []string{knowledgePath, knowledgePath + "/list"} {
				r := h.do(t, req{Path: path, As: "admin", Header: map[string]string{"HX-Request": "true"}})
				if r.Status != http.StatusOK {
					t.Fatalf("%s: %d", path, r.Status)
				}
				if got := strings.Contains(r.Body, poll); got != tt.polls {
					t.Fatalf("%s polls = %v, want %v:\n%s", path, got, tt.polls, r.Body)
				}
				if strings.Contains(r.Body, "every 2s") != tt.polls {
					t.Fatalf("%s: a trigger left in a settled list", path)
				}
				if !strings.Contains(r.Body, `data-summary="`+tt.summary+`"`) {
					t.Fatalf("%s: no summary %q:\n%s", path, tt.summary, r.Body)
				}
				if strings.HasSuffix(path, "/list") {
					if strings.Contains(r.Body, "<html") || !strings.HasPrefix(strings.TrimSpace(r.Body), `<div id="sources"`) {
						t.Fatalf("the fragment is not the list alone:\n%s", r.Body)
					}
				} else if !strings.Contains(r.Body, `<p id="sources-live" class="muted" role="status" aria-live="polite">`+tt.summary+`</p>`) {
					t.Fatalf("no live summary on the page:\n%s", r.Body)
				}
			}
		})
	}
}

// The list shows each source's type, status (a failure with its reason),
// passages, crawl progress and update time.
func TestKnowledgeList(t *testing.T) {
	h := knowledgeHarness(t)
	empty := h.do(t, req{Path: knowledgePath, As: "admin"})
	if !strings.Contains(empty.Body, "No knowledge yet.") {
		t.Fatalf("no empty state:\n%s", empty.Body)
	}
	h.seedSource(t, "support", domain.Source{Type: domain.SourceWebsite, Name: "shop.example/", URL: "https://shop.example/", MaxPages: 50,
		PageCount: 12, ChunkCount: 340, Status: domain.SourceReady})
	h.seedSource(t, "support", domain.Source{Type: domain.SourceFile, Name: "Manual", Filename: "manual.pdf", Status: domain.SourceFailed,
		StatusReason: "the PDF has no text layer"})
	page := h.do(t, req{Path: knowledgePath, As: "admin"})
	for _, s := range []string{
		"<td>Website</td>", `<span class="status status-READY">Ready</span>`, "<td>340</td>", "<td>12 of at most 50</td>",
		"<td>File</td>", `<span class="status status-FAILED">Failed</span><br><span class="field-error">Why: the PDF has no text layer</span>`,
		"manual.pdf", `<time datetime="2027-01-15T08:00:02Z">2027-01-15 08:00 UTC</time>`,
	} {
		if !strings.Contains(page.Body, s) {
			t.Errorf("the list lacks %s", s)
		}
	}
	if t.Failed() {
		t.Log(page.Body)
	}
	// Past one page, older sources are a link away, and the polled list
	// stays on the page it is on.
	for range 100 {
		h.seedSource(t, "support", domain.Source{Type: domain.SourceText, Name: "n", Status: domain.SourcePending})
	}
	first := h.do(t, req{Path: knowledgePath, As: "admin"})
	older := regexp.MustCompile(`<a href="([^"]+)" rel="next">Older sources</a>`).FindStringSubmatch(first.Body)
	if older == nil || strings.Contains(first.Body, "Newest sources") || strings.Contains(first.Body, "Manual") {
		t.Fatalf("the first page holds the oldest source or no link to older ones:\n%s", first.Body)
	}
	next := h.do(t, req{Path: html.UnescapeString(older[1]), As: "admin"})
	if next.Status != http.StatusOK || !strings.Contains(next.Body, "Manual") || !strings.Contains(next.Body, "shop.example/") ||
		!strings.Contains(next.Body, `<a href="`+knowledgePath+`">Newest sources</a>`) || strings.Contains(next.Body, "Older sources") {
		t.Fatalf("the second page: %d\n%s", next.Status, next.Body)
	}
	// The list's own URL (what htmx polls while a source indexes).
	if !strings.Contains(html.UnescapeString(next.Body), `data-list="`+knowledgePath+`/list`+html.UnescapeString(older[1])[len(knowledgePath):]+`"`) {
		t.Fatalf("the second page polls another page:\n%s", next.Body)
	}
	if bad := h.do(t, req{Path: knowledgePath + "?cursor=nonsense", As: "admin"}); bad.Status != http.StatusBadRequest {
		t.Fatalf("a bad cursor: %d", bad.Status)
	}
}

func TestKnowledgeReindexAndDelete(t *testing.T) {
	h := knowledgeHarness(t)
	h.seedAgent(t, "sales", "Sales", false)
	s := h.seedSource(t, "support", domain.Source{Type: domain.SourceText, Name: "Returns", Status: domain.SourceFailed, StatusReason: "x"})
	r := h.do(t, req{Method: "POST", Path: knowledgePath + "/" + s.ID + "/reindex", As: "admin"})
	if r.location() != knowledgePath+"?done=reindex" {
		t.Fatalf("%d %q:\n%s", r.Status, r.location(), r.Body)
	}
	if got, _ := h.agents.GetSource(t.Context(), "ws_a", "support", s.ID); got.Status != domain.SourcePending || got.Generation != 1 {
		t.Fatalf("after re-index: %s, generation %d", got.Status, got.Generation)
	}
	// Another agent's path, an unknown id and a malformed one are 404.
	for _, p := range []string{
		"/console/w/ws_a/agents/sales/knowledge/" + s.ID + "/reindex", knowledgePath + "/src_00000000000000000000000000/reindex",
		knowledgePath + "/nonsense/reindex", "/console/w/ws_a/agents/sales/knowledge/" + s.ID + "/delete",
	} {
		if got := h.do(t, req{Method: "POST", Path: p, As: "admin"}); got.Status != http.StatusNotFound {
			t.Errorf("%s: %d", p, got.Status)
		}
	}
	if got := h.do(t, req{Path: "/console/w/ws_a/agents/sales/knowledge/" + s.ID + "/delete", As: "admin"}); got.Status != http.StatusNotFound {
		t.Errorf("another agent's confirmation page: %d", got.Status)
	}
	// Deleting asks first; the GET changes nothing.
	confirm := h.do(t, req{Path: knowledgePath + "/" + s.ID + "/delete", As: "admin"})
	if !strings.Contains(confirm.Body, "<h1>Delete the source Returns?</h1>") || !strings.Contains(confirm.Body, "This cannot be undone.") {
		t.Fatalf("no confirmation:\n%s", confirm.Body)
	}
	if _, err := h.agents.GetSource(t.Context(), "ws_a", "support", s.ID); err != nil {
		t.Fatal("the confirmation page deleted the source")
	}
	del := h.do(t, req{Method: "POST", Path: knowledgePath + "/" + s.ID + "/delete", As: "admin"})
	if del.location() != knowledgePath+"?done=sourcedeleted" {
		t.Fatalf("delete: %d %q", del.Status, del.location())
	}
	if _, err := h.agents.GetSource(t.Context(), "ws_a", "support", s.ID); err == nil {
		t.Fatal("the source survived its deletion")
	}
	if page := h.do(t, req{Path: del.location(), As: "admin"}); !strings.Contains(page.Body, "The source is deleted.") {
		t.Fatal("no notice after deleting")
	}
}

func TestKnowledgeCSRF(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    req
	}{
		{"add without a token", req{Path: knowledgePath + "/sources", NoCSRF: true, Form: url.Values{"type": {"qa"}, "question": {"Q"}, "answer": {"A"}}}},
		{"add with another session's token", req{Path: knowledgePath + "/sources", CSRF: "csrf_other", Form: url.Values{"type": {"qa"}, "question": {"Q"}, "answer": {"A"}}}},
		{"upload without a token", req{Path: knowledgePath + "/files", NoCSRF: true, Files: []upload{{"a.md", "A"}}}},
		{"upload with a wrong token", req{Path: knowledgePath + "/files", CSRF: "csrf_admin", Files: []upload{{"a.md", "A"}}}},
		{"upload with a wrong header", req{Path: knowledgePath + "/files", NoCSRF: true, Files: []upload{{"a.md", "A"}}, Header: map[string]string{"X-CSRF-Token": "nope"}}},
		{"re-index without a token", req{Path: knowledgePath + "/" + matrixSource + "/reindex", NoCSRF: true}},
		{"delete without a token", req{Path: knowledgePath + "/" + matrixSource + "/delete", NoCSRF: true}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := knowledgeHarness(t)
			h.seedSource(t, "support", domain.Source{ID: matrixSource, Type: domain.SourceText, Name: "Refunds", Status: domain.SourceReady})
			r := tt.r
			r.Method, r.As = "POST", "owner"
			got := h.do(t, r)
			if got.Status != http.StatusForbidden || !strings.Contains(got.Body, "This form has expired") {
				t.Fatalf("%d:\n%s", got.Status, got.Body)
			}
			if h.agents.sources.added != nil {
				t.Fatal("a refused request added a source")
			}
			if s, err := h.agents.GetSource(t.Context(), "ws_a", "support", matrixSource); err != nil || s.Status != domain.SourceReady {
				t.Fatalf("a refused request changed the source: %v %s", err, s.Status)
			}
		})
	}
}

// Names, texts, questions, answers, URLs, file names and failure reasons
// are rendered escaped, in the list, the confirmation and refused forms.
func TestKnowledgeEscapesUserInput(t *testing.T) {
	h := knowledgeHarness(t)
	h.seedAgent(t, "xss", xss, false)
	s := h.seedSource(t, "support", domain.Source{Type: domain.SourceFile, Name: xss, Filename: xss + ".pdf", Status: domain.SourceFailed, StatusReason: xss})
	h.seedSource(t, "support", domain.Source{Type: domain.SourceURL, Name: "page", URL: "https://x.example/" + xss, Status: domain.SourcePending})
	pages := []req{
		{Path: "/console/w/ws_a/knowledge", As: "owner"},
		{Path: knowledgePath, As: "owner"},
		{Path: knowledgePath + "/list", As: "owner"},
		{Path: "/console/w/ws_a/agents/xss/knowledge", As: "owner"},
		{Path: knowledgePath + "/" + s.ID + "/delete", As: "owner"},
		{Method: "POST", Path: knowledgePath + "/sources", As: "owner", Form: url.Values{"type": {"text"}, "name": {xss}, "content": {" "}}},
		{Method: "POST", Path: knowledgePath + "/sources", As: "owner", Form: url.Values{"type": {"text"}, "name": {" "}, "content": {xss}}},
		{Method: "POST", Path: knowledgePath + "/sources", As: "owner", Form: url.Values{"type": {"qa"}, "question": {xss}, "answer": {""}}},
		{Method: "POST", Path: knowledgePath + "/sources", As: "owner", Form: url.Values{"type": {"qa"}, "question": {""}, "answer": {xss}}},
		{Method: "POST", Path: knowledgePath + "/sources", As: "owner", Form: url.Values{"type": {"url"}, "url": {xss}}},
		{Method: "POST", Path: knowledgePath + "/sources", As: "owner", Form: url.Values{"type": {"website"}, "siteUrl": {xss}}},
		{Method: "POST", Path: knowledgePath + "/files", As: "owner", Files: []upload{{xss + ".exe", "x"}}},
	}
	for _, p := range pages {
		t.Run(p.Method+" "+p.Path+" "+p.Form.Encode(), func(t *testing.T) {
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

// The knowledge page, with a full list, keeps to the 250 KB page budget.
func TestKnowledgePageWeight(t *testing.T) {
	h := knowledgeHarness(t)
	for range 100 {
		h.seedSource(t, "support", domain.Source{Type: domain.SourceWebsite, Name: "shop.example/help/articles/shipping-and-returns",
			URL: "https://shop.example/help/articles/shipping-and-returns", MaxPages: 50, PageCount: 50, ChunkCount: 1200, Status: domain.SourceIndexing})
	}
	page := h.do(t, req{Path: knowledgePath, As: "owner"})
	total := len(page.Body)
	for _, m := range regexp.MustCompile(`(?:src|href)="(/console/assets/[^"]+)"`).FindAllStringSubmatch(page.Body, -1) {
		total += len(h.do(t, req{Path: m[1]}).Body)
	}
	t.Logf("knowledge page with 100 sources: %d bytes of HTML, %d bytes with its scripts and styles", len(page.Body), total)
	if total > 250_000 {
		t.Fatalf("page weight %d bytes, budget 250,000", total)
	}
}

func BenchmarkKnowledgePage(b *testing.B) {
	h := newHarness(b, publicURL)
	h.seedAgent(b, "support", "Support", true)
	for range 100 {
		h.seedSource(b, "support", domain.Source{Type: domain.SourceText, Name: "Returns", Status: domain.SourceReady, ChunkCount: 3})
	}
	for b.Loop() {
		if r := h.do(b, req{Path: knowledgePath, As: "owner"}); r.Status != http.StatusOK {
			b.Fatal(r.Status)
		}
	}
}
