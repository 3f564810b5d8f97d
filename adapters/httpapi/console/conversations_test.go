package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// The services the wiring will pass fit the conversation interfaces; the
// engine's turn fits Turn (ChatEngine adapts the engine's Start).
var (
	_ console.Conversations = (*conversation.Service)(nil)
	_ console.Turn          = (*chat.Pending)(nil)
)

// Fixed ids, so routes can name what the fakes hold.
const (
	convA = "ses_0123456789abcdefghjkmnpqrs" // ws_a's
	convB = "ses_0123456789abcdefghjkmnpqrt" // ws_b's
)

// seedConversations gives ws_a a conversation with every kind of message
// (convA) and ws_b one (convB).
func (h *harness) seedConversations(t testing.TB) {
	t.Helper()
	h.convs.add(domain.Conversation{ID: convB, WorkspaceID: "ws_b", AgentSlug: "other"},
		domain.Message{Role: domain.RoleUser, Content: "Beta's secret question"})
	h.convs.add(domain.Conversation{ID: convA, WorkspaceID: "ws_a", AgentSlug: "support", Status: domain.StatusHuman,
		ContactName: "Vera Visitor", ContactEmail: "vera@example.com"},
		domain.Message{Role: domain.RoleUser, Content: "How do refunds work?"},
		domain.Message{Role: domain.RoleAssistant, Content: "Refunds take 5 days.",
			Citations: []domain.Citation{{DocumentName: "Refund policy", SourceType: domain.SourceURL, URL: "https://shop.example/refunds", Snippet: "within 5 days", Score: 0.91}},
			Feedback:  &domain.Feedback{Rating: domain.RatingUp, Comment: "Clear, thanks"},
			Trace: &domain.RetrievalTrace{Question: "How do refunds work?", Query: "How do refunds work? shipping", QueryNote: "widened with 1 earlier question",
				Method: "hybrid", Verdict: domain.VerdictAnswer, Answerability: 0.87, Threshold: 0.35,
				Focus: []domain.FocusTerm{{Word: "refunds", Weight: 0.8, InKnowledge: true}, {Word: "quokka", Weight: 1}}, Missing: []string{"quokka"},
				FeatureNames:       []string{"coverage", "proximity"},
				AnswerFeatureNames: []string{"page", "title", "missingKnowledge", "missingName", "noNumber", "later"},
				AnswerFeatures:     []float64{0.8, 0.25, 0.2, 1, 0, 0.125},
				Candidates: []domain.TraceCandidate{
					{DocumentName: "Refund policy", KeywordRank: 1, KeywordScore: 0.5, VectorRank: 2, VectorScore: 0.7, Score: 2.5, Relevance: 0.91,
						Features: []float64{0.75, 0.5}, MatchedQuestion: "How long until my money is back?", Kept: true, Reason: domain.TraceKept},
					{DocumentName: "Shipping times", VectorRank: 1, VectorScore: 0.6, Relevance: 0.12, Missing: []string{"refunds"}, Reason: domain.TraceFarBelowBest},
				}}},
		domain.Message{Role: domain.RoleUser, Content: "What about a quokka?"},
		domain.Message{Role: domain.RoleAssistant, Content: "I do not know that.", FallbackReason: domain.FallbackNoKnowledge, OfferHandoff: true},
		domain.Message{Role: domain.RoleSystem, Content: "", Status: domain.StatusHuman},
		domain.Message{Role: domain.RoleHuman, Content: "Hi, Hugo here, I will help.", AuthorName: "Hugo Helper"},
		domain.Message{Role: domain.RoleNote, Content: "Refund approved by finance.", AuthorName: "Hugo Helper", AuthorID: "usr_hugo"},
	)
}

// Helpers (the agent role) have conversations and the playground, like
// owners and admins; another workspace's user gets 404, as does a
// conversation of another workspace in any workspace's URL.
func TestConversationsRoleMatrix(t *testing.T) {
	const ok, see, nf = http.StatusOK, http.StatusSeeOther, http.StatusNotFound
	type want = roleStatuses
	ask := url.Values{"agent": {"support"}, "question": {"How do refunds work?"}}
	routes := []struct {
		method, path string
		form         url.Values
		want         want
	}{
		{"GET", "/console/w/ws_a/conversations", nil, want{ok, ok, ok, nf, see}},
		{"GET", "/console/w/ws_a/conversations?agent=support&status=HUMAN", nil, want{ok, ok, ok, nf, see}},
		{"GET", "/console/w/ws_a/conversations?fallback=yes&rating=down&q=refund", nil, want{ok, ok, ok, nf, see}},
		{"GET", "/console/w/ws_a/conversations?q=" + convB, nil, want{nf, nf, nf, nf, see}},
		{"GET", "/console/w/ws_a/conversations/" + convA, nil, want{ok, ok, ok, nf, see}},
		{"GET", "/console/w/ws_a/playground", nil, want{ok, ok, ok, nf, see}},
		{"GET", "/console/w/ws_a/playground?session=" + convA, nil, want{ok, ok, ok, nf, see}},
		{"POST", "/console/w/ws_a/playground", ask, want{see, see, see, nf, see}},
		{"POST", "/console/w/ws_a/playground", url.Values{"session": {convA}, "question": {"And express?"}}, want{see, see, see, nf, see}},
		// Tenant isolation: ws_b's conversation through ws_a (where
		// "other" is no member) and ws_a's through ws_b.
		{"GET", "/console/w/ws_a/conversations/" + convB, nil, want{nf, nf, nf, nf, see}},
		{"GET", "/console/w/ws_b/conversations/" + convA, nil, want{nf, nf, nf, nf, see}},
		{"GET", "/console/w/ws_b/conversations/" + convB, nil, want{nf, nf, nf, ok, see}},
		{"GET", "/console/w/ws_b/playground?session=" + convA, nil, want{nf, nf, nf, nf, see}},
		{"POST", "/console/w/ws_b/playground", url.Values{"session": {convA}, "question": {"Hello?"}}, want{nf, nf, nf, nf, see}},
		{"GET", "/console/w/ws_a/conversations?id=" + convB, nil, want{nf, nf, nf, nf, see}},
	}
	for _, rt := range routes {
		for _, who := range rt.want.roles() {
			t.Run(rt.method+" "+rt.path+" as "+who.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedAgent(t, "support", "Support", true)
				h.seedConversations(t)
				r := h.do(t, req{Method: rt.method, Path: rt.path, As: who.as, Form: rt.form, Header: map[string]string{"Sec-Fetch-Site": "same-origin"}})
				if r.Status != who.want {
					t.Fatalf("status %d, want %d; Location %q; body:\n%s", r.Status, who.want, r.location(), r.Body)
				}
				if who.as == "" && !strings.HasPrefix(r.location(), "/console/sign-in") {
					t.Fatalf("signed out: Location %q, want the sign-in page", r.location())
				}
				if who.want == nf {
					if !strings.Contains(r.Body, "There is nothing here, or you do not have access to it.") && !strings.Contains(r.Body, "No conversation of this workspace has this id.") {
						t.Fatalf("404 without the not-found page:\n%s", r.Body)
					}
					if strings.Contains(r.Body, "Beta&#39;s secret question") && !strings.Contains(rt.path, "ws_b/conversations/"+convB) {
						t.Fatal("a refused page shows another workspace's message")
					}
				}
				// The engine is asked in the URL's workspace only, where
				// the member is one: it then refuses a foreign session.
				for _, asked := range h.chat.requests {
					if asked.Session.Workspace == nil || !strings.Contains(rt.path, "/w/"+asked.Session.Workspace.ID+"/") {
						t.Fatalf("the engine was asked in another workspace: %+v", asked)
					}
				}
				if who.want == nf && len(h.convs.convs) != 2 {
					t.Fatal("a refused question was stored")
				}
			})
		}
	}
}

// Every playground POST, the form's and the stream's, needs the session's
// CSRF token; refused, nothing is asked.
func TestConversationsCSRF(t *testing.T) {
	for _, path := range []string{"/console/w/ws_a/playground", streamPath} {
		for _, tc := range []struct {
			name string
			r    req
		}{
			{"no token", req{NoCSRF: true}},
			{"another session's token", req{CSRF: "csrf_admin"}},
			{"cross-site", req{Header: map[string]string{"Sec-Fetch-Site": "cross-site"}}},
		} {
			t.Run(path+" "+tc.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedAgent(t, "support", "Support", true)
				r := tc.r
				r.Method, r.Path, r.As = "POST", path, "owner"
				r.Form = url.Values{"agent": {"support"}, "question": {"Hello?"}}
				res := h.do(t, r)
				if res.Status != http.StatusForbidden {
					t.Fatalf("status %d, want 403:\n%s", res.Status, res.Body)
				}
				if len(h.chat.requests) != 0 || len(h.convs.convs) != 0 {
					t.Fatalf("a refused POST asked the engine: %+v", h.chat.requests)
				}
			})
		}
	}
}

// The transcript shows every message kind with what belongs to it:
// questions, answers with citations, rating and a readable trace, the
// fallback reason, the status notice, the person's name.
func TestTranscript(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	h.seedConversations(t)
	r := h.do(t, req{Path: "/console/w/ws_a/conversations/" + convA, As: "agent"})
	if r.Status != http.StatusOK {
		t.Fatalf("status %d:\n%s", r.Status, r.Body)
	}
	for _, want := range []string{
		"Conversation with support", convA, "With a person", "Vera Visitor", "vera@example.com",
		`<li class="msg msg-user"`, "How do refunds work?",
		`<li class="msg msg-assistant"`, "Refunds take 5 days.",
		`<a href="https://shop.example/refunds" rel="noopener noreferrer" target="_blank">Refund policy</a>`, "within 5 days", "score 0.910",
		"Visitor&#39;s rating: <strong>Thumbs up</strong>", "Clear, thanks",
		"Fallback answer: nothing in the knowledge answers the question", "A person was offered.",
		"The conversation is now: With a person.",
		"Person: Hugo Helper", "Hi, Hugo here, I will help.",
		// Members see internal notes, marked as such.
		`<li class="msg msg-note"`, "Internal note by Hugo Helper", "Refund approved by finance.",
		// The trace, collapsed, in words and percentages.
		`<details class="trace">`, "Why this answer (retrieval trace): " + domain.VerdictAnswer,
		"How do refunds work? shipping", "widened with 1 earlier question", "87%", "least chance the agent answers with: 35%",
		"<td>quokka</td><td>1.000</td><td>in no passage</td>", "Missing from the best passage</dt><dd>quokka</dd>",
		// What the chance was read from, in words: a flag only when set, a
		// feature this console does not know by name.
		"What the chance was read from</dt><dd>80% of the question on the best page; 25% in its headings, names or stored questions; " +
			"20% in no passage; a name the question uses is missing; later 0.125</dd>",
		"Passages considered (2, 1 kept)", "<td>91%</td>",
		`<td class="wrap">Refund policy<br><span class="hint">found by its written question “How long until my money is back?”</span></td>`,
		`<td class="wrap">Shipping times</td>`, domain.TraceKept, domain.TraceFarBelowBest, "<td>12%</td>",
		"score 2.500; keyword search: rank 1 (0.500); meaning search: rank 2 (0.700); coverage 0.750; proximity 0.500",
		"score 0.000; keyword search: not found; meaning search: rank 1 (0.600)</td>",
		// The fallback answer searched nothing: said so, not hidden.
		"No retrieval trace: this answer did not search the knowledge.",
	} {
		if !strings.Contains(r.Body, want) {
			t.Errorf("no %q in the transcript", want)
		}
	}
	if strings.Contains(r.Body, "Beta&#39;s secret question") {
		t.Fatal("another workspace's message on the page")
	}
}

// A long transcript is paged with the API's cursors; a cursor of another
// list or garbage is refused.
func TestTranscriptPages(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	var msgs []domain.Message
	for i := range 60 {
		msgs = append(msgs, domain.Message{Role: domain.RoleUser, Content: "question number " + string(rune('A'+i%26)) + strings.Repeat("!", i/26),
			CreatedAt: fakeNow.Add(time.Duration(i) * time.Second)})
	}
	h.convs.add(domain.Conversation{ID: convA, WorkspaceID: "ws_a", AgentSlug: "support"}, msgs...)
	first := h.do(t, req{Path: "/console/w/ws_a/conversations/" + convA, As: "owner"})
	if n := strings.Count(first.Body, `<li class="msg msg-user"`); n != 50 {
		t.Fatalf("first page: %d messages, want 50", n)
	}
	next := between(first.Body, `<p><a href="`, `">Later messages</a>`)
	if next == "" {
		t.Fatalf("no link to later messages:\n%s", first.Body)
	}
	second := h.do(t, req{Path: strings.ReplaceAll(next, "&amp;", "&"), As: "owner"})
	if n := strings.Count(second.Body, `<li class="msg msg-user"`); second.Status != http.StatusOK || n != 10 || strings.Contains(second.Body, "Later messages") {
		t.Fatalf("second page: %d, %d messages:\n%s", second.Status, n, second.Body)
	}
	if !strings.Contains(second.Body, "First messages") {
		t.Error("a later page does not lead back to the first")
	}
	for _, cursor := range []string{"garbage", "eyJ4IjoxfQ"} {
		r := h.do(t, req{Path: "/console/w/ws_a/conversations/" + convA + "?cursor=" + cursor, As: "owner"})
		if r.Status != http.StatusBadRequest {
			t.Errorf("cursor %q: status %d, want 400", cursor, r.Status)
		}
	}
}

func between(s, from, to string) string {
	end := strings.Index(s, to)
	if end < 0 {
		return ""
	}
	start := strings.LastIndex(s[:end], from)
	if start < 0 {
		return ""
	}
	return s[start+len(from) : end]
}

// The list filters by agent and status as the v2 list does, pages with
// its cursors (filters kept in the next page's link), and says when
// nothing matches.
func TestConversationsList(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	h.seedAgent(t, "sales", "Sales", true)
	for i := range 30 {
		slug := "support"
		if i%3 == 0 {
			slug = "sales"
		}
		h.convs.add(domain.Conversation{WorkspaceID: "ws_a", AgentSlug: slug, LastActivityAt: fakeNow.Add(time.Duration(i) * time.Minute)},
			domain.Message{Role: domain.RoleUser, Content: "hello " + slug})
	}
	h.convs.add(domain.Conversation{ID: convB, WorkspaceID: "ws_b", AgentSlug: "other"}, domain.Message{Role: domain.RoleUser, Content: "Beta's secret question"})

	all := h.do(t, req{Path: "/console/w/ws_a/conversations", As: "agent"})
	if n := strings.Count(all.Body, "<tr>") - 1; all.Status != http.StatusOK || n != 25 {
		t.Fatalf("first page: %d rows (status %d)", n, all.Status)
	}
	if strings.Contains(all.Body, "Beta") {
		t.Fatal("another workspace's conversation listed")
	}
	next := between(all.Body, `<p><a href="`, `">Older conversations</a>`)
	second := h.do(t, req{Path: strings.ReplaceAll(next, "&amp;", "&"), As: "agent"})
	if n := strings.Count(second.Body, "<tr>") - 1; second.Status != http.StatusOK || n != 5 || strings.Contains(second.Body, "Older conversations") {
		t.Fatalf("second page: status %d, %d rows", second.Status, n)
	}

	sales := h.do(t, req{Path: "/console/w/ws_a/conversations?agent=sales&status=AI", As: "agent"})
	if n := strings.Count(sales.Body, "hello sales"); n != 10 || strings.Contains(sales.Body, "hello support") {
		t.Fatalf("agent filter: %d sales rows:\n%s", n, sales.Body)
	}
	if got := h.convs.lists[len(h.convs.lists)-1]; got.AgentSlug != "sales" || got.Status != domain.StatusAI {
		t.Fatalf("filter passed as %+v", got)
	}
	if !strings.Contains(sales.Body, `<option value="sales" selected>Sales</option>`) || !strings.Contains(sales.Body, `<option value="AI" selected>`) {
		t.Error("the filter form does not show the filter")
	}
	// Dates: both days included, in UTC; kept in the next page's link.
	// fakeNow is 2027-03-01 09:30; the conversations span 30 minutes.
	dated := h.do(t, req{Path: "/console/w/ws_a/conversations?from=2027-03-01&to=2027-03-01", As: "agent"})
	got := h.convs.lists[len(h.convs.lists)-1]
	if !got.ActiveFrom.Equal(time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)) || !got.ActiveBefore.Equal(time.Date(2027, 3, 2, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("dates passed as %v to %v", got.ActiveFrom, got.ActiveBefore)
	}
	if next := between(dated.Body, `<p><a href="`, `">Older conversations</a>`); !strings.Contains(next, "?from=2027-03-01&amp;to=2027-03-01&amp;cursor=") {
		t.Fatalf("next page link %q drops the dates", next)
	}
	if !strings.Contains(dated.Body, `type="date" value="2027-03-01"`) {
		t.Error("the date filter is not shown")
	}
	later := h.do(t, req{Path: "/console/w/ws_a/conversations?from=2027-03-02", As: "agent"})
	if !strings.Contains(later.Body, "No conversation matches these filters.") {
		t.Errorf("a date after every conversation still lists some:\n%s", later.Body)
	}
	none := h.do(t, req{Path: "/console/w/ws_a/conversations?status=RESOLVED", As: "agent"})
	if !strings.Contains(none.Body, "No conversation matches these filters.") {
		t.Errorf("no empty state for a filter that matches nothing:\n%s", none.Body)
	}
	empty := newHarness(t, publicURL).do(t, req{Path: "/console/w/ws_a/conversations", As: "owner"})
	if !strings.Contains(empty.Body, "No conversations yet.") {
		t.Errorf("no empty state:\n%s", empty.Body)
	}
	nothing := h.do(t, req{Path: "/console/w/ws_a/conversations?q=zebra", As: "agent"})
	if nothing.Status != http.StatusOK || !strings.Contains(nothing.Body, "No conversation matches these filters.") {
		t.Errorf("no empty state for a search that finds nothing:\n%s", nothing.Body)
	}
}

// Fallback, rating and the search box reach the use case as asked (the
// query trimmed), show in the form, and stay in the next page's link.
func TestConversationsFallbackRatingSearch(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	for i := range 30 {
		answer := domain.Message{Role: domain.RoleAssistant, Content: "Here is how refunds work."}
		if i%2 == 0 {
			answer.FallbackReason = domain.FallbackNoKnowledge
			answer.Feedback = &domain.Feedback{Rating: domain.RatingDown}
		}
		h.convs.add(domain.Conversation{WorkspaceID: "ws_a", AgentSlug: "support", LastActivityAt: fakeNow.Add(time.Duration(i) * time.Minute)},
			domain.Message{Role: domain.RoleUser, Content: "refund please"}, answer)
	}
	h.convs.add(domain.Conversation{ID: convB, WorkspaceID: "ws_b", AgentSlug: "other"},
		domain.Message{Role: domain.RoleUser, Content: "Beta's refund"}, domain.Message{Role: domain.RoleAssistant, FallbackReason: domain.FallbackNoKnowledge})

	r := h.do(t, req{Path: "/console/w/ws_a/conversations?fallback=yes&rating=down&q=+Refund+", As: "agent"})
	if n := strings.Count(r.Body, "<tr>") - 1; r.Status != http.StatusOK || n != 15 {
		t.Fatalf("status %d, %d rows, want 15:\n%s", r.Status, n, r.Body)
	}
	got := h.convs.lists[len(h.convs.lists)-1]
	if got.Fallback != domain.FallbackFilterSome || got.Rating != domain.RatingDown || got.Query != "Refund" {
		t.Fatalf("filter passed as %+v", got)
	}
	for _, shown := range []string{`<option value="yes" selected>At least one fallback answer</option>`,
		`<option value="down" selected>At least one thumbs down</option>`, `type="search" value="Refund"`} {
		if !strings.Contains(r.Body, shown) {
			t.Errorf("the form does not show %s", shown)
		}
	}
	if strings.Contains(r.Body, "Beta") {
		t.Fatal("another workspace's conversation listed")
	}
	// Every page of 25: the filters stay in the next page's link, and the
	// link goes on with the same filters.
	r = h.do(t, req{Path: "/console/w/ws_a/conversations?fallback=no&q=refund", As: "agent"})
	if n := strings.Count(r.Body, "<tr>") - 1; n != 15 || strings.Contains(r.Body, "Older conversations") {
		t.Fatalf("fallback=no: %d rows", n)
	}
	r = h.do(t, req{Path: "/console/w/ws_a/conversations?q=refunds+work&rating=", As: "agent"})
	next := strings.NewReplacer("&amp;", "&", "&#43;", "+").Replace(between(r.Body, `<p><a href="`, `">Older conversations</a>`))
	if !strings.HasPrefix(next, "/console/w/ws_a/conversations?q=refunds+work&cursor=") {
		t.Fatalf("next page link %q does not keep the search", next)
	}
	second := h.do(t, req{Path: next, As: "agent"})
	if n := strings.Count(second.Body, "<tr>") - 1; second.Status != http.StatusOK || n != 5 || h.convs.lists[len(h.convs.lists)-1].Query != "refunds work" {
		t.Fatalf("second page: status %d, %d rows", second.Status, n)
	}
	// A cursor of one search does not continue another.
	other := strings.Replace(next, "q=refunds+work", "q=refund", 1)
	if r := h.do(t, req{Path: other, As: "agent"}); r.Status != http.StatusBadRequest {
		t.Fatalf("a cursor of another search: status %d, want 400", r.Status)
	}
	// A search typed into the box comes back escaped.
	const x = `<script>alert(1)</script>`
	r = h.do(t, req{Path: "/console/w/ws_a/conversations?q=" + url.QueryEscape(x), As: "agent"})
	if r.Status != http.StatusOK || strings.Contains(r.Body, x) || !strings.Contains(r.Body, `value="&lt;script&gt;alert(1)&lt;/script&gt;"`) {
		t.Fatalf("search echo not escaped: %d\n%s", r.Status, r.Body)
	}
	r = h.do(t, req{Path: "/console/w/ws_a/conversations?rating=" + url.QueryEscape(x), As: "agent"})
	if r.Status != http.StatusBadRequest || strings.Contains(r.Body, x) {
		t.Fatalf("a bad rating: %d\n%s", r.Status, r.Body)
	}
}

// Bad filters, cursors and ids are refused with a clear message next to
// their field.
func TestConversationsBadInput(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	h.seedConversations(t)
	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/console/w/ws_a/conversations?status=OPEN", 400, "must be one of AI, HANDOFF_REQUESTED, HUMAN, RESOLVED"},
		{"/console/w/ws_a/conversations?agent=nobody", 400, "Choose one of the workspace&#39;s agents."},
		{"/console/w/ws_a/conversations?agent=" + url.QueryEscape("<b>x</b>"), 400, "Choose one of the workspace&#39;s agents."},
		{"/console/w/ws_a/conversations?cursor=garbage", 400, "field-error"},
		{"/console/w/ws_a/conversations?limit=1000", 400, "must be between 1 and 100"},
		{"/console/w/ws_a/conversations?from=yesterday", 400, `<p class="field-error" id="f-from-error">Enter a date as YYYY-MM-DD.`},
		{"/console/w/ws_a/conversations?to=2027-02-30", 400, `<p class="field-error" id="f-to-error">Enter a date as YYYY-MM-DD.`},
		{"/console/w/ws_a/conversations?from=2027-03-02&to=2027-03-01", 400, `<p class="field-error" id="f-to-error">The end must not be before the start.`},
		{"/console/w/ws_a/conversations?id=ses_nothing", 404, `<p class="field-error" id="f-q-error">No conversation of this workspace has this id.`},
		{"/console/w/ws_a/conversations?q=ses_0123456789abcdefghjkmnpqrv", 404, `<p class="field-error" id="f-q-error">No conversation of this workspace has this id.`},
		{"/console/w/ws_a/conversations?fallback=maybe", 400, `<p class="field-error" id="f-fallback-error">Choose one of the fallback options.`},
		{"/console/w/ws_a/conversations?rating=meh", 400, `<p class="field-error" id="f-rating-error">Choose one of the rating options.`},
		{"/console/w/ws_a/conversations?q=+ab+", 400, `<p class="field-error" id="f-q-error">Type 3 to 200 characters: part of a name, an email or a message.`},
		{"/console/w/ws_a/conversations?q=" + strings.Repeat("x", 201), 400, `<p class="field-error" id="f-q-error">Type 3 to 200 characters`},
		{"/console/w/ws_a/conversations/ses_0123456789abcdefghjkmnpqrv", 404, "There is nothing here"},
		{"/console/w/ws_a/conversations/not-an-id", 404, "There is nothing here"},
		{"/console/w/ws_a/playground?session=ses_nothing", 404, "There is nothing here"},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := h.do(t, req{Path: tc.path, As: "owner"})
			if r.Status != tc.status || !strings.Contains(r.Body, tc.want) {
				t.Fatalf("status %d, want %d with %q:\n%s", r.Status, tc.status, tc.want, r.Body)
			}
		})
	}
	// An id of this workspace opens its conversation, typed in the search
	// box or in an older link's ?id=.
	for _, name := range []string{"id", "q"} {
		if r := h.do(t, req{Path: "/console/w/ws_a/conversations?" + name + "=+" + convA + "+", As: "agent"}); r.Status != http.StatusSeeOther ||
			r.location() != "/console/w/ws_a/conversations/"+convA {
			t.Fatalf("search by id in %s: %d %q", name, r.Status, r.location())
		}
	}
}

// The playground asks the engine in the member's workspace, on any plan
// (the fakes' workspaces are Free), shows the answer with its citation and
// trace, keeps the conversation going and starts a new one on request.
func TestPlayground(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	h.seedAgent(t, "draft", "Draft agent", false)
	page := h.do(t, req{Path: "/console/w/ws_a/playground", As: "agent"})
	for _, want := range []string{`<option value="support">Support</option>`, `<option value="draft">Draft agent (not published)</option>`,
		`name="csrf" value="csrf_agent"`, `maxlength="8000"`} {
		if !strings.Contains(page.Body, want) {
			t.Errorf("no %q on the playground", want)
		}
	}
	r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/playground", As: "agent",
		Form: url.Values{"agent": {"support"}, "question": {"How do refunds work?"}}})
	if r.Status != http.StatusSeeOther || !strings.HasPrefix(r.location(), "/console/w/ws_a/playground?session=ses_") {
		t.Fatalf("ask: %d %q\n%s", r.Status, r.location(), r.Body)
	}
	first := h.chat.requests[0]
	if first.Session.Workspace == nil || first.Session.Workspace.ID != "ws_a" || first.Session.Workspace.Plan != domain.PlanFree ||
		first.Session.ID != "" || first.AgentSlug != "support" || first.Message != "How do refunds work?" || first.Channel != domain.ChannelPlayground {
		t.Fatalf("engine asked with %+v", first)
	}
	session := strings.TrimSuffix(strings.TrimPrefix(r.location(), "/console/w/ws_a/playground?session="), "#latest")
	shown := h.do(t, req{Path: "/console/w/ws_a/playground?session=" + session, As: "agent"})
	for _, want := range []string{"Talking to Support.", "How do refunds work?", "You asked: How do refunds work?", "Refund policy",
		"snippet of Refund policy", `<details class="trace" open>`, "Passages considered (1, 1 kept)", `id="latest"`,
		`<input type="hidden" name="session" value="` + session + `">`, "Your follow-up", `href="/console/w/ws_a/playground">New conversation</a>`,
		`href="/console/w/ws_a/conversations/` + session + `"`} {
		if !strings.Contains(shown.Body, want) {
			t.Errorf("no %q after the answer", want)
		}
	}
	// Marked as the playground's in the list and on its page.
	if list := h.do(t, req{Path: "/console/w/ws_a/conversations", As: "agent"}); !strings.Contains(list.Body, `support <span class="tag">playground</span>`) {
		t.Errorf("the list does not mark the playground conversation:\n%s", list.Body)
	}
	if one := h.do(t, req{Path: "/console/w/ws_a/conversations/" + session, As: "agent"}); !strings.Contains(one.Body, "Playground (started by a member in the console)") {
		t.Error("the transcript does not say where the conversation started")
	}
	if strings.Contains(shown.Body, `name="agent"`) {
		t.Error("a conversation going on offers to change its agent")
	}
	// A follow-up continues the session; its agent is the session's.
	r = h.do(t, req{Method: "POST", Path: "/console/w/ws_a/playground", As: "agent",
		Form: url.Values{"session": {session}, "agent": {"draft"}, "question": {"And an unknown thing?"}}})
	if r.Status != http.StatusSeeOther || !strings.Contains(r.location(), session) {
		t.Fatalf("follow-up: %d %q", r.Status, r.location())
	}
	if f := h.chat.requests[1]; f.Session.ID != session || f.AgentSlug != "" || f.Session.Workspace.ID != "ws_a" {
		t.Fatalf("follow-up asked with %+v", f)
	}
	shown = h.do(t, req{Path: "/console/w/ws_a/playground?session=" + session, As: "agent"})
	if strings.Count(shown.Body, `<details class="trace" open>`) != 1 || !strings.Contains(shown.Body, `<details class="trace">`) {
		t.Error("the latest answer's trace is not the one unfolded")
	}
	// Counted without the preview console.js writes the answer into.
	if n := len(regexp.MustCompile(`<li class="msg msg-[a-z]+"`).FindAllString(shown.Body, -1)); n != 4 || !strings.Contains(shown.Body, "Fallback answer: nothing in the knowledge answers the question") {
		t.Fatalf("after the follow-up: %d messages\n%s", n, shown.Body)
	}
	// An unpublished agent answers in the playground.
	if r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/playground", As: "owner",
		Form: url.Values{"agent": {"draft"}, "question": {"Hello?"}}}); r.Status != http.StatusSeeOther {
		t.Fatalf("draft agent: %d\n%s", r.Status, r.Body)
	}
	// With no agents, the page says so.
	empty := newHarness(t, publicURL).do(t, req{Path: "/console/w/ws_a/playground", As: "agent"})
	if !strings.Contains(empty.Body, "There are no agents to talk to yet.") {
		t.Errorf("no empty state:\n%s", empty.Body)
	}
}

// Every user-supplied field on the conversation pages is escaped: message
// text, citations (a javascript: URL is neutralised), names, the trace's
// words, contact details, comments.
func TestConversationsEscapeUserInput(t *testing.T) {
	const x = `<script>alert(1)</script>`
	const esc = `&lt;script&gt;alert(1)&lt;/script&gt;`
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	h.chat.cited = x
	h.convs.add(domain.Conversation{ID: convA, WorkspaceID: "ws_a", AgentSlug: "support", ContactName: x, ContactEmail: x},
		domain.Message{Role: domain.RoleUser, Content: x},
		domain.Message{Role: domain.RoleAssistant, Content: x,
			Citations: []domain.Citation{{DocumentName: x, URL: "javascript:alert(1)", Snippet: x, SourceType: domain.SourceText}},
			Feedback:  &domain.Feedback{Rating: domain.RatingDown, Comment: x},
			Trace: &domain.RetrievalTrace{Question: x, Query: x + "!", QueryNote: x, Method: x, Note: x, Verdict: x,
				Focus: []domain.FocusTerm{{Word: x}}, Missing: []string{x}, FeatureNames: []string{x},
				Candidates: []domain.TraceCandidate{{DocumentName: x, Reason: x, Missing: []string{x}, MatchedQuestion: x, Features: []float64{1}}}}},
		domain.Message{Role: domain.RoleHuman, Content: x, AuthorName: x},
		domain.Message{Role: domain.RoleSystem, Content: x},
	)
	for _, p := range []string{"/console/w/ws_a/conversations", "/console/w/ws_a/conversations/" + convA, "/console/w/ws_a/playground?session=" + convA} {
		r := h.do(t, req{Path: p, As: "agent"})
		if r.Status != http.StatusOK {
			t.Fatalf("%s: status %d", p, r.Status)
		}
		if strings.Contains(r.Body, "<script>alert") || strings.Contains(r.Body, "javascript:") {
			t.Fatalf("%s: unescaped input:\n%s", p, r.Body)
		}
		if !strings.Contains(r.Body, esc) {
			t.Fatalf("%s: the input is not shown escaped", p)
		}
	}
	transcript := h.do(t, req{Path: "/console/w/ws_a/conversations/" + convA, As: "agent"})
	if n := strings.Count(transcript.Body, esc); n < 20 {
		t.Fatalf("only %d escaped fields on the transcript", n)
	}
	// Typed into the playground, shown back escaped.
	r := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/playground", As: "agent", Form: url.Values{"agent": {"support"}, "question": {x}}})
	shown := h.do(t, req{Path: strings.TrimSuffix(r.location(), "#latest"), As: "agent"})
	if strings.Contains(shown.Body, "<script>alert") || strings.Count(shown.Body, esc) < 4 {
		t.Fatalf("playground answer not escaped:\n%s", shown.Body)
	}
	refused := h.do(t, req{Method: "POST", Path: "/console/w/ws_a/playground", As: "agent", Form: url.Values{"question": {x}}})
	if refused.Status != http.StatusBadRequest || strings.Contains(refused.Body, "<script>alert") || !strings.Contains(refused.Body, esc) {
		t.Fatalf("a refused question is not kept escaped: %d\n%s", refused.Status, refused.Body)
	}
}

// Without the conversation services the pages answer 503, not a panic.
func TestConversationsWithoutServices(t *testing.T) {
	h := newHarness(t, publicURL)
	bare, err := console.New(h.accounts, fakeWorkspaces{names: map[string]string{"ws_a": "Acme"}}, h.agents, console.Options{PublicURL: publicURL})
	if err != nil {
		t.Fatal(err)
	}
	h.app = newApp(bare)
	for _, r := range []req{{Path: "/console/w/ws_a/conversations", As: "owner"}, {Path: "/console/w/ws_a/playground", As: "owner"},
		{Method: "POST", Path: "/console/w/ws_a/playground", As: "owner", Form: url.Values{"agent": {"support"}, "question": {"Hi?"}}}} {
		if res := h.do(t, r); res.Status != http.StatusServiceUnavailable {
			t.Errorf("%s %s: status %d, want 503", r.Method, r.Path, res.Status)
		}
	}
}

// seedFullTranscript stores a conversation of 25 questions and 25 answers,
// each answer with two citations and a trace of 10 passages with 5
// features: a full transcript page.
func (h *harness) seedFullTranscript(t testing.TB) {
	t.Helper()
	var msgs []domain.Message
	for range 25 {
		tr := &domain.RetrievalTrace{Question: "How long does express shipping take to Norway?", Query: "How long does express shipping take to Norway?",
			Method: "hybrid", Verdict: domain.VerdictAnswer, Answerability: 0.8, Threshold: 0.35, Missing: []string{"norway"},
			FeatureNames: []string{"coverage", "proximity", "title", "quantity", "relevance"},
			Focus:        []domain.FocusTerm{{Word: "express", Weight: 0.6, InKnowledge: true}, {Word: "shipping", Weight: 0.3, InKnowledge: true}, {Word: "norway", Weight: 1}}}
		for j := range 10 {
			tr.Candidates = append(tr.Candidates, domain.TraceCandidate{DocumentName: "Shipping guide, part " + string(rune('A'+j)), KeywordRank: j + 1, KeywordScore: 0.4,
				VectorRank: 10 - j, VectorScore: 0.6, Score: 1.5, Relevance: 0.5, Features: []float64{0.1, 0.2, 0.3, 0.4, 0.5}, Kept: j < 3,
				Reason: domain.TraceBeyondTopK, Missing: []string{"norway"}})
		}
		msgs = append(msgs, domain.Message{Role: domain.RoleUser, Content: "How long does express shipping take to Norway?"},
			domain.Message{Role: domain.RoleAssistant, Content: strings.Repeat("Express shipping takes two to three working days. ", 6),
				Citations: []domain.Citation{{DocumentName: "Shipping guide", SourceType: domain.SourceFile, Snippet: "Express: 2-3 days", Score: 0.8},
					{DocumentName: "FAQ", SourceType: domain.SourceQA, Snippet: "Ships from Oslo", Score: 0.6}}, Trace: tr})
	}
	h.convs.add(domain.Conversation{ID: convA, WorkspaceID: "ws_a", AgentSlug: "support"}, msgs...)
}

// A full transcript page with its scripts and styles stays within the
// page weight budget.
func TestTranscriptPageWeight(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	h.seedFullTranscript(t)
	page := h.do(t, req{Path: "/console/w/ws_a/conversations/" + convA, As: "agent"})
	if page.Status != http.StatusOK || strings.Count(page.Body, `<details class="trace">`) != 25 {
		t.Fatalf("status %d, %d traces", page.Status, strings.Count(page.Body, `<details class="trace">`))
	}
	total := len(page.Body)
	for _, m := range regexp.MustCompile(`(?:src|href)="(/console/assets/[^"]+)"`).FindAllStringSubmatch(page.Body, -1) {
		total += len(h.do(t, req{Path: m[1]}).Body)
	}
	t.Logf("transcript of 50 messages: %d bytes of HTML, %d bytes with its scripts and styles", len(page.Body), total)
	if total > 250_000 {
		t.Fatalf("page weight %d bytes, budget 250,000", total)
	}
}

func BenchmarkTranscriptPage(b *testing.B) {
	h := newHarness(b, publicURL)
	h.seedAgent(b, "support", "Support", true)
	h.seedFullTranscript(b)
	b.ReportAllocs()
	for b.Loop() {
		if r := h.do(b, req{Path: "/console/w/ws_a/conversations/" + convA, As: "agent"}); r.Status != http.StatusOK {
			b.Fatal(r.Status)
		}
	}
}

func BenchmarkConversationsPage(b *testing.B) {
	h := newHarness(b, publicURL)
	h.seedAgent(b, "support", "Support", true)
	for i := range 60 {
		h.convs.add(domain.Conversation{WorkspaceID: "ws_a", AgentSlug: "support", ContactName: "Vera", LastActivityAt: fakeNow.Add(time.Duration(i) * time.Second)},
			domain.Message{Role: domain.RoleUser, Content: "How long does express shipping take to Norway?"})
	}
	b.ReportAllocs()
	for b.Loop() {
		if r := h.do(b, req{Path: "/console/w/ws_a/conversations", As: "agent"}); r.Status != http.StatusOK {
			b.Fatal(r.Status)
		}
	}
}
