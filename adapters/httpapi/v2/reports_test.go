package v2_test

import (
	"encoding/csv"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/httpapitest"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/report"
)

var (
	nov1  = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	nov2  = nov1.AddDate(0, 0, 1)
	nov3  = nov1.AddDate(0, 0, 2)
	other = "agt_00000000000000000000000002"
)

// aReport is two days of one agent's work, the second without
// conversations.
func aReport() domain.Report {
	day := domain.ReportFigures{Conversations: 4, Messages: 17,
		Outcomes:              map[domain.Outcome]int{domain.OutcomeResolvedConfirmed: 1, domain.OutcomeHandedOff: 1, domain.OutcomeAbandonedAfterFallback: 1},
		Undecided:             1,
		FallbackConversations: 2, FallbacksByReason: map[domain.FallbackReason]int{domain.FallbackNoKnowledge: 2, domain.FallbackModelDeclined: 1},
		HandedOff: 1, RatedUp: 1, RatedDown: 1, ThumbsUp: 3, ThumbsDown: 1}
	return domain.Report{
		Query:      domain.ReportQuery{WorkspaceID: "ws_test", Range: domain.ReportRange{From: nov1, To: nov3}},
		Totals:     day,
		Days:       []domain.ReportDay{{Day: nov1, ReportFigures: day}, {Day: nov2}},
		FirstReply: domain.DurationFigure{Count: 1, Median: 90 * time.Second},
		Usage: []domain.UsageFigure{
			{AgentID: agentID, Model: "gpt-4o-mini", PromptTokens: 1200, CompletionTokens: 300, CostMicros: 360, CostCurrency: "USD"},
			{AgentID: other, Model: "local", PromptTokens: 10, CompletionTokens: 5, CostMicros: -1},
		},
		AsOf: now,
	}
}

func TestReport(t *testing.T) {
	get := httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report?preset=last_7_days"}
	reportOK := map[string]httpapitest.Result{"Reports.Report": {Values: []any{aReport()}},
		"Agents.List": {Values: []any{page(anAgent(), domain.Agent{ID: other, Slug: "sales"})}}}
	request := func(t *testing.T, s *httpapitest.Script) report.Request {
		t.Helper()
		args := httpapitest.OnlyCall(t, s, "Reports.Report")
		if args[0] != "ws_test" {
			t.Fatalf("Report for workspace %v", args[0])
		}
		return args[1].(report.Request)
	}
	invalid := func(query, field, reason string) httpapitest.Case {
		return httpapitest.Case{Name: "bad " + query, Req: httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report?" + query},
			Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details." + field: reason}}}
	}
	httpapitest.Run(t, "GET /analytics/report", newApp, append([]httpapitest.Case{{
		Name:   "every agent, with rates, series, medians and usage",
		Req:    get,
		Script: reportOK,
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{
			"agent": nil, "preset": "last_7_days", "from": "2026-11-01", "to": "2026-11-02", "days": 2, "asOf": "2026-11-27T12:00:00.000Z",
			"totals.conversations.count": 4, "totals.messages.count": 17,
			"totals.outcomes.HANDED_OFF.count": 1, "totals.outcomes.HANDED_OFF.rate": 0.25, "totals.outcomes.RECONTACT.count": 0,
			"totals.outcomes.UNDECIDED.count": 1, "totals.fallback.rate": 0.5, "totals.fallbackReasons.NO_RELEVANT_KNOWLEDGE.count": 2,
			"totals.fallbackReasons.MODEL_ERROR": httpapitest.Absent, "totals.handedOff.rate": 0.25,
			"totals.ratings.csat": 0.75, "totals.ratings.thumbsUp.count": 3,
			"series.0.day": "2026-11-01", "series.1.day": "2026-11-02", "series.1.conversations.count": 0, "series.1.fallback.rate": 0,
			"series.1.ratings.csat":    nil,
			"firstReply.medianSeconds": 90, "firstReply.count": 1, "resolution.medianSeconds": nil,
			"usage.0.agent": "support", "usage.0.costMicros": 360, "usage.0.currency": "USD",
			"usage.1.agent": "sales", "usage.1.costMicros": nil, "usage.1.currency": nil,
			"usage.1.conversations":                     "/api/v2/conversations?agent=sales&startedFrom=2026-11-01&startedTo=2026-11-02",
			"totals.handedOff.conversations":            "/api/v2/conversations?handedOff=true&startedFrom=2026-11-01&startedTo=2026-11-02",
			"series.0.outcomes.UNDECIDED.conversations": "/api/v2/conversations?outcome=UNDECIDED&startedFrom=2026-11-01&startedTo=2026-11-01",
		}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if r := request(t, s); r != (report.Request{Preset: domain.PresetLast7Days}) {
				t.Fatalf("Report(%+v)", r)
			}
		},
	}, {
		Name:   "one agent's explicit days",
		Req:    httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report?agent=support&from=2026-11-01&to=2026-11-02"},
		Script: map[string]httpapitest.Result{"Reports.Report": {Values: []any{aReport()}}},
		Want: httpapitest.Want{Status: 200, Fields: map[string]any{"agent": "support", "preset": nil, "usage.1.agent": "support",
			"totals.conversations.conversations": "/api/v2/conversations?agent=support&startedFrom=2026-11-01&startedTo=2026-11-02"}},
		Calls: func(t *testing.T, s *httpapitest.Script) {
			if r := request(t, s); r.AgentSlug != "support" || !r.From.Equal(nov1) || !r.To.Equal(nov2) || r.Preset != "" {
				t.Fatalf("Report(%+v)", r)
			}
			if len(s.Calls("Agents.List")) != 0 {
				t.Error("a report of one agent listed the agents")
			}
		},
	}, {
		Name:   "the default preset",
		Req:    httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report"},
		Script: reportOK,
		Want:   httpapitest.Want{Status: 200, Fields: map[string]any{"preset": "last_30_days"}},
	},
		invalid("from=2026-11-31&to=2026-12-01", "from", "must be a day, as 2026-11-01"),
		invalid("from=2026-11-01&to=yesterday", "to", "must be a day, as 2026-11-01"),
		invalid("from=2026-11-01", "to", "is required with from"),
		invalid("to=2026-11-01", "from", "is required with to"),
		// The use case's own refusals, as it words them.
		{Name: "a preset the use case refuses", Req: httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report?preset=forever"},
			Script: map[string]httpapitest.Result{"Reports.Report": {Err: domain.InvalidField("preset", "must be one of today, ...")}},
			Want:   httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.preset": "must be one of today, ..."}},
			Calls: func(t *testing.T, s *httpapitest.Script) {
				if r := request(t, s); r.Preset != "forever" {
					t.Fatalf("Report(%+v)", r)
				}
			}},
		{Name: "listing the agents fails", Req: get,
			Script: map[string]httpapitest.Result{"Reports.Report": {Values: []any{aReport()}}, "Agents.List": {Err: httpapitest.ErrUnavailable}},
			Want:   httpapitest.Want{Status: 503, Code: domain.CodeUnavailable}},
	}, httpapitest.ErrorCases(get, "Reports.Report", 400, 404, 500, 503)...))

	csvGet := httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report.csv?agent=support&preset=last_7_days"}
	httpapitest.Run(t, "GET /analytics/report.csv", newApp, append([]httpapitest.Case{
		{Name: "bad day", Req: httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report.csv?from=1.11.2026&to=2026-11-02"},
			Want: httpapitest.Want{Status: 400, Code: domain.CodeValidation, Fields: map[string]any{"error.details.from": "must be a day, as 2026-11-01"}}},
	}, httpapitest.ErrorCases(csvGet, "Reports.Report", 400, 404, 500, 503)...))

	off := "reports are not enabled on this server"
	httpapitest.Run(t, "a server without reports", newAppWithoutReports, []httpapitest.Case{
		{Name: "JSON", Req: get, Want: httpapitest.Want{Status: 503, Code: domain.CodeUnavailable, Fields: map[string]any{"error.message": off}}},
		{Name: "CSV", Req: csvGet, Want: httpapitest.Want{Status: 503, Code: domain.CodeUnavailable, Fields: map[string]any{"error.message": off}}},
	})
}

// Every number of a report links to the v2 list, and that list, asked
// for, reaches the use case as exactly the filter of the figure
// (report.ListFilter): the conversations it counted.
func TestReportLinksListTheirFigures(t *testing.T) {
	s := httpapitest.NewScript(map[string]httpapitest.Result{"Reports.Report": {Values: []any{aReport()}},
		"Agents.List":        {Values: []any{page(anAgent(), domain.Agent{ID: other, Slug: "sales"})}},
		"Conversations.List": {Values: []any{page(aConversation())}}})
	app := newApp(t, s)
	resp := app.Do(t, httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report?preset=last_7_days"})
	var got wire.ReportDTO
	if err := json.Unmarshal(resp.Body, &got); err != nil {
		t.Fatal(err)
	}
	rng := aReport().Query.Range
	type link struct {
		name, url string
		want      conversation.ListFilter
	}
	var links []link
	figures := func(prefix string, f wire.ReportFiguresDTO, rng domain.ReportRange) {
		fig := func(kind report.FigureKind) conversation.ListFilter {
			return report.ListFilter("", rng, report.Figure{Kind: kind})
		}
		links = append(links,
			link{prefix + "conversations", f.Conversations.Conversations, fig(report.FigureConversations)},
			link{prefix + "messages", f.Messages.Conversations, fig(report.FigureMessages)},
			link{prefix + "fallback", f.Fallback.Conversations, fig(report.FigureFallback)},
			link{prefix + "handedOff", f.HandedOff.Conversations, fig(report.FigureHandedOff)},
			link{prefix + "ratedUp", f.Ratings.RatedUp.Conversations, fig(report.FigureRatedUp)},
			link{prefix + "ratedDown", f.Ratings.RatedDown.Conversations, fig(report.FigureRatedDown)},
			link{prefix + "thumbsUp", f.Ratings.ThumbsUp.Conversations, fig(report.FigureRatedUp)},
			link{prefix + "thumbsDown", f.Ratings.ThumbsDown.Conversations, fig(report.FigureRatedDown)})
		for _, o := range wire.ReportOutcomes() {
			links = append(links, link{prefix + string(o), f.Outcomes[string(o)].Conversations, report.ListFilter("", rng, report.Figure{Kind: report.FigureOutcome, Outcome: o})})
		}
		for r, rate := range f.FallbackReasons {
			links = append(links, link{prefix + r, rate.Conversations, report.ListFilter("", rng, report.Figure{Kind: report.FigureFallbackReason, Reason: domain.FallbackReason(r)})})
		}
	}
	figures("totals.", got.Totals, rng)
	for i, d := range got.Series {
		figures(d.Day+".", d.ReportFiguresDTO, report.DayRange(aReport().Days[i]))
	}
	links = append(links,
		link{"firstReply", got.FirstReply.Conversations, report.ListFilter("", rng, report.Figure{Kind: report.FigureFirstReply})},
		link{"resolution", got.Resolution.Conversations, report.ListFilter("", rng, report.Figure{Kind: report.FigureResolution})},
		link{"usage.sales", got.Usage[1].Conversations, report.ListFilter("sales", rng, report.Figure{Kind: report.FigureConversations})})
	if len(links) != 3*(8+7)+2*2+3 { // totals and two days, two reasons twice, medians and usage
		t.Fatalf("%d links, want every figure's", len(links))
	}
	for _, l := range links {
		t.Run(l.name, func(t *testing.T) {
			u, err := url.Parse(l.url)
			if err != nil || u.Path != "/api/v2/conversations" {
				t.Fatalf("link %q", l.url)
			}
			before := len(s.Calls("Conversations.List"))
			app.Do(t, httpapitest.Request{Method: "GET", Path: l.url}).Check(t, httpapitest.Want{Status: 200})
			calls := s.Calls("Conversations.List")
			if len(calls) != before+1 {
				t.Fatalf("the list was asked %d times", len(calls)-before)
			}
			f := calls[before][1].(conversation.ListFilter)
			if !f.StartedFrom.Equal(l.want.StartedFrom) || !f.StartedTo.Equal(l.want.StartedTo) {
				t.Errorf("started %v..%v, want %v..%v", f.StartedFrom, f.StartedTo, l.want.StartedFrom, l.want.StartedTo)
			}
			f.StartedFrom, f.StartedTo, l.want.StartedFrom, l.want.StartedTo = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			if f != l.want {
				t.Errorf("List(%+v), want %+v", f, l.want)
			}
		})
	}
}

// The CSV has a row per day and a total row, the figures as the JSON has
// them, and no cell a spreadsheet would run.
func TestReportCSV(t *testing.T) {
	rep := aReport()
	s := httpapitest.NewScript(map[string]httpapitest.Result{"Reports.Report": {Values: []any{rep}}})
	resp := newApp(t, s).Do(t, httpapitest.Request{Method: "GET", Path: "/api/v2/analytics/report.csv?agent=support&from=2026-11-01&to=2026-11-02"})
	if resp.Status != 200 || resp.Header.Get("Content-Type") != "text/csv; charset=utf-8" ||
		resp.Header.Get("Content-Disposition") != `attachment; filename="report-support-2026-11-01-2026-11-02.csv"` {
		t.Fatalf("status %d, headers %v", resp.Status, resp.Header)
	}
	rows, err := csv.NewReader(strings.NewReader(string(resp.Body))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want a header, 2 days and the total: %q", len(rows), rows)
	}
	cell := func(row int, column string) string {
		for i, name := range rows[0] {
			if name == column {
				return rows[row][i]
			}
		}
		t.Fatalf("no column %q in %q", column, rows[0])
		return ""
	}
	for _, c := range []struct {
		row          int
		column, want string
	}{
		{1, "day", "2026-11-01"}, {2, "day", "2026-11-02"}, {3, "day", "total"}, {3, "agent", "support"},
		{3, "conversations", "4"}, {3, "messages", "17"}, {3, "outcome_handed_off", "1"}, {3, "outcome_handed_off_rate", "0.2500"},
		{3, "outcome_undecided", "1"}, {3, "fallback_rate", "0.5000"}, {3, "fallback_no_relevant_knowledge", "2"},
		{3, "fallback_interrupted", "0"}, {3, "handoff_rate", "0.2500"}, {3, "csat", "0.7500"}, {2, "csat", ""},
		{2, "conversations", "0"}, {2, "fallback_rate", "0.0000"}, {3, "first_reply_median_seconds", "90"},
		{3, "resolution_median_seconds", ""}, {1, "first_reply_median_seconds", ""},
		// Usage fills the total row; "local" has no price, so no total cost.
		{3, "prompt_tokens", "1210"}, {3, "completion_tokens", "305"}, {3, "estimated_cost", ""}, {1, "prompt_tokens", ""},
	} {
		if got := cell(c.row, c.column); got != c.want {
			t.Errorf("row %d %s = %q, want %q", c.row, c.column, got, c.want)
		}
	}
	for _, row := range rows {
		if len(row) != len(rows[0]) {
			t.Errorf("row %q has %d cells, the header %d", row, len(row), len(rows[0]))
		}
	}
}

func TestCSVCell(t *testing.T) {
	for in, want := range map[string]string{
		"=HYPERLINK(\"http://x\")": "'=HYPERLINK(\"http://x\")", "+1": "'+1", "-2+3": "'-2+3", "@SUM(A1)": "'@SUM(A1)",
		"\tx": "'\tx", "\rx": "'\rx", "support": "support", "": "", "2026-11-01": "2026-11-01", "a=b": "a=b",
	} {
		if got := wire.CSVCell(in); got != want {
			t.Errorf("CSVCell(%q) = %q, want %q", in, got, want)
		}
	}
}
