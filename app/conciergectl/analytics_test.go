package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/httpapi/openapi/openapitest"
	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	coreconversation "github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// reportBody is a report as the server writes it (wire.Report), so the
// scripted API answers what the real one does.
func reportBody(t *testing.T) string {
	t.Helper()
	nov1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	figures := domain.ReportFigures{Conversations: 8, Messages: 40,
		Outcomes:              map[domain.Outcome]int{domain.OutcomeResolvedConfirmed: 2, domain.OutcomeHandedOff: 2},
		Undecided:             4,
		FallbackConversations: 2, FallbacksByReason: map[domain.FallbackReason]int{domain.FallbackNoKnowledge: 2},
		HandedOff: 2, RatedUp: 2, ThumbsUp: 3, ThumbsDown: 1}
	rep := domain.Report{Query: domain.ReportQuery{Range: domain.ReportRange{From: nov1, To: nov1.AddDate(0, 0, 1)}},
		Totals: figures, Days: []domain.ReportDay{{Day: nov1, ReportFigures: figures}},
		FirstReply: domain.DurationFigure{Count: 2, Median: 4 * time.Minute},
		Usage: []domain.UsageFigure{{AgentID: "agt_1", Model: "gpt-4o-mini", PromptTokens: 1200, CompletionTokens: 300, CostMicros: 360, CostCurrency: "USD"},
			{AgentID: "agt_2", Model: "local\x1b[31m", PromptTokens: 10, CompletionTokens: 5, CostMicros: -1}},
		AsOf: time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)}
	dto := wire.Report(rep, "", domain.PresetToday, map[string]string{"agt_1": "support", "agt_2": "sales"},
		func(f coreconversation.ListFilter) string {
			return "/api/v2/conversations?" + wire.ConversationQuery(f).Encode()
		})
	b, err := json.Marshal(dto)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAnalytics(t *testing.T) {
	report := reportBody(t)
	var csvBody bytes.Buffer
	csvBody.WriteString("day,agent,conversations\n2026-11-01,'=cmd,8\ntotal,'=cmd,8\n")
	ok := map[string]answer{
		"/api/v2/analytics/report": {status: 200, body: report},
		"/api/v2/analytics/report.csv": {status: 200, body: csvBody.String(), ctype: "text/csv; charset=utf-8",
			header: map[string]string{"Content-Disposition": `attachment; filename="report-2026-11-01-2026-11-01.csv"`}},
	}
	tests := []struct {
		name       string
		script     map[string]answer
		args       []string
		wantCode   int
		wantStdout []string
		wantExact  string
		wantStderr string
		wantPath   string
		wantQuery  url.Values
	}{
		{name: "table of every agent", script: ok, args: []string{"analytics", "--preset", "today"},
			wantStdout: []string{"Report of every agent, 2026-11-01 to 2026-11-01 (1 days, today), as of 2026-11-01 12:00 UTC\n",
				"FIGURE", "COUNT", "RATE", "Conversations", "8", "Messages", "40",
				"Outcome RESOLVED_CONFIRMED", "2", "25.0%", "Outcome UNDECIDED", "4", "50.0%",
				"With a fallback", "2", "25.0%", "Fallback NO_RELEVANT_KNOWLEDGE", "Handed off", "2", "25.0%",
				"Thumbs up / down (CSAT)", "3 / 1", "75.0%", "Median first reply", "2", "4m0s", "Median time to resolution", "0", "-",
				"AGENT", "MODEL", "support", "gpt-4o-mini", "1200", "300", "0.000360 USD", "sales", "local[31m", "no price"},
			wantPath: "/api/v2/analytics/report", wantQuery: url.Values{"preset": {"today"}}},
		{name: "json is the API's", script: ok, args: []string{"analytics", "--agent", "support", "--from", "2026-11-01", "--to", "2026-11-01", "--format", "json"},
			wantExact: report + "\n", wantPath: "/api/v2/analytics/report",
			wantQuery: url.Values{"agent": {"support"}, "from": {"2026-11-01"}, "to": {"2026-11-01"}}},
		{name: "csv as served", script: ok, args: []string{"analytics", "--format", "csv"},
			wantExact: csvBody.String(), wantPath: "/api/v2/analytics/report.csv", wantQuery: url.Values{}},
		{name: "unknown agent", script: map[string]answer{"/api/v2/analytics/report": {status: 404, body: `{"error":{"code":"NOT_FOUND","message":"agent not found"}}`}},
			args: []string{"analytics", "--agent", "nobody"}, wantCode: exitNotFound, wantStderr: "agent not found (NOT_FOUND)", wantPath: "/api/v2/analytics/report"},
		{name: "a range the server refuses", script: map[string]answer{"/api/v2/analytics/report": {status: 400, body: `{"error":{"code":"VALIDATION_ERROR","message":"to: a report spans at most 366 days","details":{"to":"a report spans at most 366 days"}}}`}},
			args: []string{"analytics", "--from", "2024-01-01", "--to", "2026-01-01"}, wantCode: exitOther, wantStderr: "a report spans at most 366 days", wantPath: "/api/v2/analytics/report"},
		{name: "server without reports", script: map[string]answer{"/api/v2/analytics/report": {status: 503, body: `{"error":{"code":"UNAVAILABLE","message":"reports are not enabled on this server"}}`}},
			args: []string{"analytics"}, wantCode: exitOther, wantStderr: "reports are not enabled on this server", wantPath: "/api/v2/analytics/report"},
		{name: "bad preset", args: []string{"analytics", "--preset", "forever"}, wantCode: exitUsage, wantStderr: "--preset must be one of today"},
		{name: "preset and days", args: []string{"analytics", "--preset", "today", "--from", "2026-11-01", "--to", "2026-11-02"}, wantCode: exitUsage, wantStderr: "not both"},
		{name: "from alone", args: []string{"analytics", "--from", "2026-11-01"}, wantCode: exitUsage, wantStderr: "--from and --to go together"},
		{name: "bad day", args: []string{"analytics", "--from", "2026-11-01", "--to", "30/11/2026"}, wantCode: exitUsage, wantStderr: "--to must be a day"},
		{name: "days backwards", args: []string{"analytics", "--from", "2026-11-02", "--to", "2026-11-01"}, wantCode: exitUsage, wantStderr: "--to must not be before --from"},
		{name: "bad format", args: []string{"analytics", "--format", "xml"}, wantCode: exitUsage, wantStderr: "--format must be one of table, json, csv"},
		{name: "empty agent", args: []string{"analytics", "--agent", ""}, wantCode: exitUsage, wantStderr: "--agent must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.script)
			code, stdout, stderr := runCLI(t, map[string]string{"CONCIERGE_API_URL": api.baseURL(), "CONCIERGE_API_KEY": testKey}, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit code = %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, stdout, stderr)
			}
			if tt.wantExact != "" && stdout != tt.wantExact {
				t.Errorf("stdout =\n%q\nwant\n%q", stdout, tt.wantExact)
			}
			rest := stdout
			for _, want := range tt.wantStdout {
				i := strings.Index(rest, want)
				if i < 0 {
					t.Fatalf("stdout lacks %q (in order)\nstdout:\n%s", want, stdout)
				}
				rest = rest[i+len(want):]
			}
			if strings.Contains(stdout, "\x1b") {
				t.Errorf("stdout holds a terminal escape: %q", stdout)
			}
			if !strings.Contains(stderr, tt.wantStderr) {
				t.Errorf("stderr = %q, want %q", stderr, tt.wantStderr)
			}
			calls := api.requests()
			if tt.wantPath == "" {
				if len(calls) != 0 {
					t.Fatalf("a usage error reached the server: %+v", calls)
				}
				return
			}
			if len(calls) != 1 || calls[0].Path != tt.wantPath {
				t.Fatalf("requests %+v, want one to %s", calls, tt.wantPath)
			}
			if tt.wantQuery != nil && !sameQuery(calls[0].Query, tt.wantQuery) {
				t.Errorf("query %v, want %v", calls[0].Query, tt.wantQuery)
			}
			validate(t, calls[0])
		})
	}
}

// validate checks a scripted answer against the OpenAPI document, so the
// fake plays the documented API.
func validate(t *testing.T, c seenRequest) {
	t.Helper()
	openapitest.New(t).ValidateResponse(t, c.req, &http.Response{StatusCode: c.status, Status: http.StatusText(c.status), Header: c.header}, c.body)
}
