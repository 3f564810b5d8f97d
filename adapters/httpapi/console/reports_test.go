package console_test

import (
	"context"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/report"
	"github.com/conciergehq/concierge/ports"
)

var _ console.Reports = (*report.Service)(nil)

var reportPrices = domain.PriceTable{"gpt-4o-mini": {PromptMicrosPerMillion: 150_000, CompletionMicrosPerMillion: 600_000, Currency: "USD"}}

// fakeReportStore plays the rollups: each workspace's figures differ (ws_b
// has 900 conversations a day, ws_a 4), so a page shows whose it read.
type fakeReportStore struct {
	mu      sync.Mutex
	queries []domain.ReportQuery
	// model names the usage row's model (for the escaping test).
	model string
}

var _ ports.ReportStore = (*fakeReportStore)(nil)

func (f *fakeReportStore) Report(_ context.Context, q domain.ReportQuery) (domain.Report, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queries = append(f.queries, q)
	day := domain.ReportFigures{Conversations: 4, Messages: 17,
		Outcomes:              map[domain.Outcome]int{domain.OutcomeResolvedConfirmed: 1, domain.OutcomeHandedOff: 1, domain.OutcomeAbandonedAfterFallback: 1},
		Undecided:             1,
		FallbackConversations: 2, FallbacksByReason: map[domain.FallbackReason]int{domain.FallbackNoKnowledge: 2, domain.FallbackModelDeclined: 1},
		HandedOff: 1, RatedUp: 1, RatedDown: 1, ThumbsUp: 3, ThumbsDown: 1}
	if q.WorkspaceID == "ws_b" {
		day = domain.ReportFigures{Conversations: 900, Messages: 9001}
	}
	rep := domain.Report{Query: q, AsOf: time.Date(2026, 11, 27, 11, 55, 0, 0, time.UTC),
		FirstReply: domain.DurationFigure{Count: 1, Median: 90 * time.Second}}
	for d := q.Range.From; d.Before(q.Range.To); d = d.AddDate(0, 0, 1) {
		rep.Days = append(rep.Days, domain.ReportDay{Day: d, ReportFigures: day})
		rep.Totals.Conversations += day.Conversations
	}
	rep.Totals = day // the totals' own figures; only their links matter here
	model := f.model
	if model == "" {
		model = "gpt-4o-mini"
	}
	rep.Usage = []domain.UsageFigure{{AgentID: "agt_support", Model: model, PromptTokens: 1_000_000, CompletionTokens: 100_000}}
	return rep, nil
}

func (f *fakeReportStore) asked() []domain.ReportQuery {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]domain.ReportQuery(nil), f.queries...)
}

// reportAgents is the agent lookup of report.Service over the fake agents.
type reportAgents struct{ agents *fakeAgents }

func (a reportAgents) GetAgentBySlug(ctx context.Context, ws, slug string) (domain.Agent, error) {
	return a.agents.Get(ctx, ws, slug)
}

// Every member who reads conversations reads reports, in their own
// workspace only.
func TestReportsRoleMatrix(t *testing.T) {
	const ok, see, nf, bad = http.StatusOK, http.StatusSeeOther, http.StatusNotFound, http.StatusBadRequest
	type want = roleStatuses
	routes := []struct {
		path string
		want want
	}{
		{"/console/w/ws_a/reports", want{ok, ok, ok, nf, see}},
		{"/console/w/ws_a/reports?agent=support&preset=last_7_days", want{ok, ok, ok, nf, see}},
		{"/console/w/ws_a/reports?preset=custom&from=2026-11-01&to=2026-11-30", want{ok, ok, ok, nf, see}},
		{"/console/w/ws_a/reports.csv?agent=support&preset=today", want{ok, ok, ok, nf, see}},
		// ws_b's agent is no agent of ws_a.
		{"/console/w/ws_a/reports?agent=other", want{bad, bad, bad, nf, see}},
		{"/console/w/ws_b/reports?agent=other", want{nf, nf, nf, ok, see}},
		{"/console/w/ws_b/reports.csv", want{nf, nf, nf, ok, see}},
	}
	for _, rt := range routes {
		for _, who := range rt.want.roles() {
			t.Run(rt.path+" as "+who.name, func(t *testing.T) {
				h := newHarness(t, publicURL)
				h.seedAgent(t, "support", "Support", true)
				if _, err := h.agents.Create(context.Background(), "ws_b", domain.Agent{Slug: "other", Name: "Other"}); err != nil {
					t.Fatal(err)
				}
				r := h.do(t, req{Path: rt.path, As: who.as})
				if r.Status != who.want {
					t.Fatalf("status %d, want %d; Location %q; body:\n%s", r.Status, who.want, r.location(), r.Body)
				}
				if who.as == "" && !strings.HasPrefix(r.location(), "/console/sign-in") {
					t.Fatalf("signed out: Location %q", r.location())
				}
				for _, q := range h.reports.asked() {
					if !strings.Contains(rt.path, "/w/"+q.WorkspaceID+"/") {
						t.Fatalf("the store was asked for %s through %s", q.WorkspaceID, rt.path)
					}
				}
				if who.want != ok && len(h.reports.asked()) != 0 {
					t.Fatalf("a refused request read the report: %+v", h.reports.asked())
				}
				if who.want == ok && strings.Contains(rt.path, "ws_a") && strings.Contains(r.Body, "9001") {
					t.Fatal("ws_a's page shows ws_b's figures")
				}
			})
		}
	}
}

// Bad input is the page again, status 400, the field marked in words.
func TestReportsBadInput(t *testing.T) {
	tests := []struct {
		name, query, field, words string
	}{
		{"unknown preset", "preset=forever", "preset", "Choose one of the ranges."},
		{"a preset with days", "preset=today&from=2026-11-01&to=2026-11-02", "preset", "Choose &#34;Custom range&#34; to use the days below, or clear them."},
		{"not a day", "preset=custom&from=2026-13-01&to=2026-11-02", "from", "Enter a date as YYYY-MM-DD."},
		{"custom without days", "preset=custom", "from", "Enter both the first and the last day."},
		{"one day only", "from=2026-11-01", "to", "Enter both the first and the last day."},
		{"days backwards", "preset=custom&from=2026-11-02&to=2026-11-01", "to", "The end must not be before the start."},
		{"more than a year", "preset=custom&from=2024-01-01&to=2026-11-01", "to", "A report spans at most 366 days."},
		{"unknown agent", "agent=nobody", "agent", "Choose one of the workspace&#39;s agents."},
		{"an agent slug that is no slug", "agent=" + url.QueryEscape("<b>x</b>"), "agent", "Choose one of the workspace&#39;s agents."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, publicURL)
			h.seedAgent(t, "support", "Support", true)
			r := h.do(t, req{Path: "/console/w/ws_a/reports?" + tt.query, As: "owner"})
			if r.Status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400:\n%s", r.Status, r.Body)
			}
			if !strings.Contains(r.Body, `id="f-`+tt.field+`-error">`+tt.words+`</p>`) {
				t.Fatalf("no error %q on %s:\n%s", tt.words, tt.field, r.Body)
			}
			if !strings.Contains(r.Body, "Please correct the fields marked below.") || strings.Contains(r.Body, `class="report"`) {
				t.Fatal("a refused report shows figures, or no summary")
			}
			// The CSV refuses the same, as an error page.
			c := h.do(t, req{Path: "/console/w/ws_a/reports.csv?" + tt.query, As: "owner"})
			if c.Status != http.StatusBadRequest || strings.HasPrefix(c.Header.Get("Content-Type"), "text/csv") {
				t.Fatalf("CSV: status %d, %s", c.Status, c.Header.Get("Content-Type"))
			}
		})
	}
}

var hrefRE = regexp.MustCompile(`href="(/console/w/ws_a/conversations\?[^"]*)"`)

// Every number of the page is a link to the console's list of its
// conversations, and the list, opened, asks the use case for exactly the
// figure's filter (report.ListFilter) and says so.
func TestReportsLinkEveryNumber(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", "Support", true)
	r := h.do(t, req{Path: "/console/w/ws_a/reports?agent=support&preset=custom&from=2026-11-01&to=2026-11-02", As: "agent"})
	if r.Status != http.StatusOK {
		t.Fatalf("status %d:\n%s", r.Status, r.Body)
	}
	// Each count cell holds a link; rates, medians and costs are the
	// figures' words.
	cells := regexp.MustCompile(`<td class="num">(.*?)</td>`).FindAllStringSubmatch(r.Body, -1)
	linked := 0
	for _, c := range cells {
		if regexp.MustCompile(`^[0-9]+$`).MatchString(c[1]) {
			t.Errorf("a bare number %q", c[1])
		}
		if strings.HasPrefix(c[1], "<a href=") {
			linked++
		}
	}
	// Figures: 2 + 7 outcomes + fallback + 2 reasons + handed off + 4
	// ratings = 17; medians 2; days 2 × 10; usage 2.
	if linked != 17+2+20+2 {
		t.Errorf("%d linked numbers, want 41", linked)
	}
	rng, err := domain.NewReportRange(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	handedOff := "/console/w/ws_a/conversations?" + wire.ConversationQuery(report.ListFilter("support", rng, report.Figure{Kind: report.FigureHandedOff})).Encode()
	undecidedDay2 := "/console/w/ws_a/conversations?" + wire.ConversationQuery(report.ListFilter("support",
		report.DayRange(domain.ReportDay{Day: rng.From.AddDate(0, 0, 1)}), report.Figure{Kind: report.FigureOutcome, Outcome: domain.OutcomeUndecided})).Encode()
	links := hrefRE.FindAllStringSubmatch(r.Body, -1)
	seen := map[string]bool{}
	for _, l := range links {
		seen[html.UnescapeString(l[1])] = true
	}
	for _, want := range []string{handedOff, undecidedDay2} {
		if !seen[want] {
			t.Errorf("no link %s", want)
		}
	}
	for link := range seen {
		u, err := url.Parse(link)
		if err != nil {
			t.Fatal(err)
		}
		before := len(h.convs.lists)
		page := h.do(t, req{Path: link, As: "agent"})
		if page.Status != http.StatusOK {
			t.Fatalf("%s: status %d:\n%s", link, page.Status, page.Body)
		}
		if len(h.convs.lists) != before+1 {
			t.Fatalf("%s: the list was asked %d times", link, len(h.convs.lists)-before)
		}
		asked := h.convs.lists[before]
		if got := wire.ConversationQuery(asked); got.Encode() != u.Query().Encode() {
			t.Errorf("%s: the list was asked %v", link, got)
		}
		if !strings.Contains(page.Body, "Filtered by report: started 2026-11-0") || !strings.Contains(page.Body, "Clear the report filter") {
			t.Errorf("%s: no report line:\n%s", link, page.Body)
		}
	}
	if got := h.do(t, req{Path: handedOff, As: "agent"}); !strings.Contains(got.Body, "Filtered by report: started 2026-11-01 to 2026-11-02, handed to people.") ||
		!strings.Contains(got.Body, `<input type="hidden" name="handedOff" value="true">`) ||
		!strings.Contains(got.Body, `href="/console/w/ws_a/conversations?agent=support">Clear the report filter`) {
		t.Errorf("the handed-off list's report line:\n%s", got.Body)
	}
	firstReply := "/console/w/ws_a/conversations?" + wire.ConversationQuery(report.ListFilter("support", rng, report.Figure{Kind: report.FigureFirstReply})).Encode()
	if got := h.do(t, req{Path: firstReply, As: "agent"}); !strings.Contains(got.Body, "a person replied after the handoff (the first reply&#39;s median)") ||
		!strings.Contains(got.Body, `<input type="hidden" name="timed" value="firstReply">`) {
		t.Errorf("the first reply median's list:\n%s", got.Body)
	}
}

// The conversations list refuses a bad report filter on its report line,
// and a list without one shows none.
func TestConversationsReportFilterBadInput(t *testing.T) {
	for query, words := range map[string]string{
		"startedFrom=2026-11-31":      "startedFrom must be a day, as 2026-11-01",
		"handedOff=false":             "handedOff must be true",
		"outcome=GREAT":               "outcome is not an outcome",
		"fallbackReason=BORED":        "fallbackReason is not a fallback reason",
		"timed=forever":               "timed is not firstReply or resolution",
		"outcome=%3Cscript%3Ex%3C%2F": "outcome is not an outcome",
	} {
		t.Run(query, func(t *testing.T) {
			h := newHarness(t, publicURL)
			r := h.do(t, req{Path: "/console/w/ws_a/conversations?" + query, As: "admin"})
			if r.Status != http.StatusBadRequest || !strings.Contains(r.Body, "This report link is not valid: "+words) {
				t.Fatalf("status %d, want 400 with %q:\n%s", r.Status, words, r.Body)
			}
			if strings.Contains(r.Body, "<script>x") {
				t.Fatal("the filter's value is not escaped")
			}
			if len(h.convs.lists) != 0 {
				t.Fatal("a bad filter reached the list")
			}
		})
	}
	h := newHarness(t, publicURL)
	if r := h.do(t, req{Path: "/console/w/ws_a/conversations", As: "admin"}); strings.Contains(r.Body, "Filtered by report") {
		t.Fatal("a list without report filters shows the report line")
	}
}

// What the page shows of names and models is escaped, the charts' data
// included; the CSV neutralises formulas.
func TestReportsEscaping(t *testing.T) {
	h := newHarness(t, publicURL)
	h.seedAgent(t, "support", `<script>alert("agent")</script>`, true)
	h.reports.model = `<img src=x onerror=alert(1)>`
	r := h.do(t, req{Path: "/console/w/ws_a/reports", As: "owner"})
	if r.Status != http.StatusOK {
		t.Fatalf("status %d", r.Status)
	}
	for _, raw := range []string{`<script>alert("agent")`, `<img src=x`} {
		if strings.Contains(r.Body, raw) {
			t.Errorf("the page holds %q unescaped", raw)
		}
	}
	if !strings.Contains(r.Body, "&lt;img src=x onerror=alert(1)&gt;") || !strings.Contains(r.Body, `data-chart="{&#34;days&#34;:[`) {
		t.Errorf("model or chart data not shown escaped:\n%s", r.Body)
	}
	if !strings.Contains(r.Body, `<div class="chart-outcomes" data-label="Conversations per day, stacked by outcome.`) || !strings.Contains(r.Body, "vendor/uplot/uPlot.iife.min.js") {
		t.Error("the charts lack their label or their script")
	}
	c := h.do(t, req{Path: "/console/w/ws_a/reports.csv?preset=yesterday", As: "owner"})
	if c.Status != http.StatusOK || c.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		c.Header.Get("Content-Disposition") != `attachment; filename="report-2026-11-26-2026-11-26.csv"` {
		t.Fatalf("CSV: %d %v", c.Status, c.Header)
	}
	lines := strings.Split(strings.TrimSpace(c.Body), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "2026-11-26,,4,17,") || !strings.HasPrefix(lines[2], "total,,4,17,") {
		t.Errorf("CSV:\n%s", c.Body)
	}
}

// Without reports the pages answer 503, and the navigation links Reports
// for members who read conversations.
func TestReportsUnavailableAndNavigation(t *testing.T) {
	h := newHarnessWith(t, publicURL, harnessOptions{noReports: true})
	for _, path := range []string{"/console/w/ws_a/reports", "/console/w/ws_a/reports.csv"} {
		if r := h.do(t, req{Path: path, As: "owner"}); r.Status != http.StatusServiceUnavailable {
			t.Errorf("%s: status %d, want 503", path, r.Status)
		}
	}
	for _, as := range []string{"owner", "admin", "agent"} {
		r := h.do(t, req{Path: "/console/w/ws_a/conversations", As: as})
		if !strings.Contains(r.Body, `<a href="/console/w/ws_a/reports">Reports</a>`) {
			t.Errorf("%s: no Reports in the navigation", as)
		}
	}
}
