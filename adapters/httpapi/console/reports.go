package console

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/report"
)

// The Reports page (issue 18) needs domain.PermConversations, as the
// conversation pages it links to: owners, admins and helpers. It calls
// report.Service with the member's workspace, and every number on it links
// to the conversation list with the filters that reproduce it
// (report.ListFilter), which the conversations page shows as "Filtered by
// report".

// presetCustom is the preset choice of the form that uses its two days.
const presetCustom = "custom"

// reportService is the report use case, or 503 when the console was built
// without it.
func (h *Handlers) reportService() (Reports, error) {
	if h.reports == nil {
		return nil, domain.Unavailable("report service", errors.New("console built without Options.Reports"))
	}
	return h.reports, nil
}

type presetOption struct{ Value, Label string }

// reportFigureRow is one line of the figures table: a label, a count with
// its link, and a rate ("" when the figure has none).
type reportFigureRow struct {
	Label, Count, Link, Rate string
	// Sub marks a breakdown of the row above (a fallback reason).
	Sub bool
}

// reportDayRow is one day of the days table: its cells, each a count and
// the link to its conversations.
type reportDayRow struct {
	Day   string
	Cells []reportCell
}

type reportCell struct{ Count, Link string }

type reportUsageRow struct {
	Agent, Model, Prompt, Completion, Cost, Link string
}

type reportsPage struct {
	Agents  []domain.Agent
	Presets []presetOption
	// Agent, Preset, From and To are the form as asked.
	Agent, Preset, From, To string
	// Shown is set when a report is shown.
	Shown bool
	// Range is the report's days in words; AsOf when its rollups were
	// last brought up to date ("" before the first sweep).
	Range, AsOf string
	Figures     []reportFigureRow
	// DayColumns head the days table, whose rows are Days.
	DayColumns []string
	Days       []reportDayRow
	// Medians are the first reply's and the resolution's, in words
	// (Rate), with the conversations they are drawn from.
	Medians []reportFigureRow
	Usage   []reportUsageRow
	// Chart is the charts' data (JSON, read by reports.js); CSV the
	// link to the same report as a file.
	Chart, CSV string
}

// reportRequest reads the form: agent, preset and two days. "custom" (or
// no preset with days) asks for the days.
func reportRequest(pg *reportsPage) (report.Request, error) {
	r := report.Request{AgentSlug: pg.Agent}
	if pg.Preset != "" && pg.Preset != presetCustom {
		if pg.From != "" || pg.To != "" {
			return r, domain.InvalidField("preset", mustText("reports.preset.both"))
		}
		r.Preset = domain.ReportPreset(pg.Preset)
		return r, nil
	}
	if pg.Preset == presetCustom && (pg.From == "" || pg.To == "") {
		field := "from"
		if pg.From != "" {
			field = "to"
		}
		return r, domain.InvalidField(field, mustText("reports.days.missing"))
	}
	var err error
	if r.From, err = formDate(pg.From, "from"); err != nil {
		return r, err
	}
	if r.To, err = formDate(pg.To, "to"); err != nil {
		return r, err
	}
	if (pg.From == "") != (pg.To == "") {
		field := "from"
		if pg.From != "" {
			field = "to"
		}
		return r, domain.InvalidField(field, mustText("reports.days.missing"))
	}
	return r, nil
}

// reportError puts the report's refusals in the page's words, next to the
// form's fields.
func reportError(err error, agent string) error {
	var verr *domain.ValidationError
	switch {
	case agent != "" && errors.Is(err, domain.ErrNotFound):
		return domain.InvalidField("agent", mustText("convs.agent.unknown"))
	case !errors.As(err, &verr):
		return err
	case verr.Fields["preset"] != "" && !strings.HasPrefix(verr.Fields["preset"], "must be one of"):
		return err // the page's own words (reportRequest), or "not both"
	case verr.Fields["preset"] != "":
		return domain.InvalidField("preset", mustText("reports.preset.bad"))
	case verr.Fields["to"] == "a report spans at most 366 days":
		return domain.InvalidField("to", mustText("reports.days.long", domain.ReportMaxDays))
	case verr.Fields["to"] == "must not be before from":
		return domain.InvalidField("to", mustText("convs.dates.order"))
	}
	return err
}

func (h *Handlers) reportForm(c *fiber.Ctx) *reportsPage {
	query := func(name string) string { return strings.TrimSpace(strings.Clone(c.Query(name))) }
	pg := &reportsPage{Agent: query("agent"), Preset: query("preset"), From: query("from"), To: query("to")}
	for _, p := range domain.ReportPresets {
		pg.Presets = append(pg.Presets, presetOption{Value: string(p), Label: mustText("reports.preset." + string(p))})
	}
	pg.Presets = append(pg.Presets, presetOption{Value: presetCustom, Label: mustText("reports.preset.custom")})
	return pg
}

// ReportsPage shows a report of the workspace's conversations (or one
// agent's) over a preset or custom range: the figures, a table per day
// and the charts drawn from it, every number a link to its conversations.
func (h *Handlers) ReportsPage(c *fiber.Ctx) error {
	reports, err := h.reportService()
	if err != nil {
		return err
	}
	v, err := h.newView(c, mustText("reports.title"), "reports")
	if err != nil {
		return err
	}
	pg := h.reportForm(c)
	v.Data = pg
	if pg.Agents, err = h.workspaceAgents(c); err != nil {
		return err
	}
	ws := member(c).WorkspaceID
	r, err := reportRequest(pg)
	var rep domain.Report
	if err == nil {
		rep, err = reports.Report(c.UserContext(), ws, r)
	}
	if err != nil {
		if ferr := formError(v, reportError(err, pg.Agent)); ferr != nil {
			return ferr
		}
		return h.render(c, fiber.StatusBadRequest, "reports", v)
	}
	if r.Preset == "" && r.From.IsZero() {
		r.Preset = domain.DefaultReportPreset
		pg.Preset = string(r.Preset)
	}
	slugs := map[string]string{}
	for _, a := range pg.Agents {
		slugs[a.ID] = a.Slug
	}
	base := Prefix + "/w/" + ws + "/conversations?"
	dto := wire.Report(rep, pg.Agent, r.Preset, slugs, func(f conversation.ListFilter) string {
		return base + wire.ConversationQuery(f).Encode()
	})
	if err := fillReport(pg, dto); err != nil {
		return err
	}
	csv := url.Values{}
	if pg.Agent != "" {
		csv.Set("agent", pg.Agent)
	}
	if r.Preset != "" {
		csv.Set("preset", string(r.Preset))
	} else {
		csv.Set("from", pg.From)
		csv.Set("to", pg.To)
	}
	pg.CSV = Prefix + "/w/" + ws + "/reports.csv?" + csv.Encode()
	return h.render(c, fiber.StatusOK, "reports", v)
}

// ReportCSV serves the report of the page's form as a CSV file
// (wire.WriteReportCSV, safe against formula injection).
func (h *Handlers) ReportCSV(c *fiber.Ctx) error {
	reports, err := h.reportService()
	if err != nil {
		return err
	}
	pg := h.reportForm(c)
	r, err := reportRequest(pg)
	if err != nil {
		return reportError(err, pg.Agent)
	}
	rep, err := reports.Report(c.UserContext(), member(c).WorkspaceID, r)
	if err != nil {
		return reportError(err, pg.Agent)
	}
	var buf bytes.Buffer
	if err := wire.WriteReportCSV(&buf, rep, pg.Agent); err != nil {
		return err
	}
	name := "report"
	if pg.Agent != "" {
		name += "-" + pg.Agent // a slug the service found: [a-z0-9-]
	}
	name += "-" + wire.FormatDay(rep.Query.Range.From) + "-" + wire.FormatDay(rep.Query.Range.To.AddDate(0, 0, -1)) + ".csv"
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+name+`"`)
	c.Set(fiber.HeaderCacheControl, "no-store")
	return c.Send(buf.Bytes())
}

// fillReport lays the report out for the page: the figures table, the
// days table, the medians, the usage and the charts' data.
func fillReport(pg *reportsPage, r wire.ReportDTO) error {
	pg.Shown = true
	pg.Range = mustText("reports.range", r.From, r.To, r.Days)
	if r.AsOf != nil {
		if t, err := time.Parse(time.RFC3339Nano, *r.AsOf); err == nil {
			pg.AsOf = t.UTC().Format("2006-01-02 15:04 UTC")
		}
	}
	pct := func(v float64) string { return strconv.FormatFloat(100*v, 'f', 1, 64) + " %" }
	count := func(label string, c wire.ReportCountDTO) reportFigureRow {
		return reportFigureRow{Label: label, Count: strconv.Itoa(c.Count), Link: c.Conversations}
	}
	rate := func(label string, c wire.ReportRateDTO) reportFigureRow {
		return reportFigureRow{Label: label, Count: strconv.Itoa(c.Count), Link: c.Conversations, Rate: pct(c.Rate)}
	}
	t := r.Totals
	pg.Figures = append(pg.Figures, count(mustText("reports.fig.conversations"), t.Conversations), count(mustText("reports.fig.messages"), t.Messages))
	for _, o := range wire.ReportOutcomes() {
		pg.Figures = append(pg.Figures, rate(mustText("reports.outcome."+string(o)), t.Outcomes[string(o)]))
	}
	pg.Figures = append(pg.Figures, rate(mustText("reports.fig.fallback"), t.Fallback))
	reasons := make([]string, 0, len(t.FallbackReasons))
	for reason := range t.FallbackReasons {
		reasons = append(reasons, reason)
	}
	sort.Strings(reasons)
	for _, reason := range reasons {
		row := rate(mustText("reports.reason", reasonText(reason)), t.FallbackReasons[reason])
		row.Sub = true
		pg.Figures = append(pg.Figures, row)
	}
	csat := mustText("reports.csat.none")
	if t.Ratings.CSAT != nil {
		csat = pct(*t.Ratings.CSAT)
	}
	pg.Figures = append(pg.Figures, rate(mustText("reports.fig.handedoff"), t.HandedOff),
		rate(mustText("reports.fig.ratedup"), t.Ratings.RatedUp), rate(mustText("reports.fig.rateddown"), t.Ratings.RatedDown),
		count(mustText("reports.fig.thumbsup"), t.Ratings.ThumbsUp), count(mustText("reports.fig.thumbsdown"), t.Ratings.ThumbsDown))
	pg.Figures[len(pg.Figures)-2].Rate = mustText("reports.csat", csat)

	median := func(label string, d wire.ReportDurationDTO) reportFigureRow {
		value := mustText("reports.median.none")
		if d.MedianSeconds != nil {
			value = (time.Duration(*d.MedianSeconds * float64(time.Second))).Round(time.Second).String()
		}
		return reportFigureRow{Label: label, Count: strconv.Itoa(d.Count), Link: d.Conversations, Rate: value}
	}
	pg.Medians = []reportFigureRow{median(mustText("reports.median.firstreply"), r.FirstReply),
		median(mustText("reports.median.resolution"), r.Resolution)}

	pg.DayColumns = []string{mustText("reports.fig.conversations")}
	for _, o := range wire.ReportOutcomes() {
		pg.DayColumns = append(pg.DayColumns, mustText("reports.outcome."+string(o)))
	}
	pg.DayColumns = append(pg.DayColumns, mustText("reports.fig.fallback"), mustText("reports.fig.handedoff"))
	chart := reportChart{Outcomes: make([]chartSeries, 0, len(domain.Outcomes)+1), FallbackRate: make([]float64, 0, len(r.Series)),
		FallbackLabel: mustText("reports.chart.fallback"), Percent: mustText("reports.chart.percent")}
	for _, o := range wire.ReportOutcomes() {
		chart.Outcomes = append(chart.Outcomes, chartSeries{Label: mustText("reports.outcome." + string(o))})
	}
	for _, d := range r.Series {
		cell := func(c wire.ReportCountDTO) reportCell {
			return reportCell{Count: strconv.Itoa(c.Count), Link: c.Conversations}
		}
		rateCell := func(c wire.ReportRateDTO) reportCell {
			return reportCell{Count: strconv.Itoa(c.Count), Link: c.Conversations}
		}
		row := reportDayRow{Day: d.Day, Cells: []reportCell{cell(d.Conversations)}}
		day, err := time.Parse(wire.DayLayout, d.Day)
		if err != nil {
			return err
		}
		chart.Days = append(chart.Days, day.Unix())
		for i, o := range wire.ReportOutcomes() {
			row.Cells = append(row.Cells, rateCell(d.Outcomes[string(o)]))
			chart.Outcomes[i].Values = append(chart.Outcomes[i].Values, d.Outcomes[string(o)].Count)
		}
		row.Cells = append(row.Cells, rateCell(d.Fallback), rateCell(d.HandedOff))
		chart.FallbackRate = append(chart.FallbackRate, 100*d.Fallback.Rate)
		pg.Days = append(pg.Days, row)
	}
	for _, u := range r.Usage {
		cost := mustText("reports.usage.noprice")
		if u.CostMicros != nil && u.Currency != nil {
			cost = strconv.FormatFloat(float64(*u.CostMicros)/1e6, 'f', 4, 64) + " " + *u.Currency
		}
		pg.Usage = append(pg.Usage, reportUsageRow{Agent: u.Agent, Model: u.Model, Prompt: strconv.FormatInt(u.PromptTokens, 10),
			Completion: strconv.FormatInt(u.CompletionTokens, 10), Cost: cost, Link: u.Conversations})
	}
	b, err := json.Marshal(chart)
	if err != nil {
		return err
	}
	pg.Chart = string(b)
	return nil
}

// reportChart is what reports.js draws: conversations per day stacked by
// outcome, and the fallback rate per day (percent).
type reportChart struct {
	Days          []int64       `json:"days"`
	Outcomes      []chartSeries `json:"outcomes"`
	FallbackRate  []float64     `json:"fallbackRate"`
	FallbackLabel string        `json:"fallbackLabel"`
	Percent       string        `json:"percent"`
}

type chartSeries struct {
	Label  string `json:"label"`
	Values []int  `json:"values"`
}

// reasonText names a fallback reason in words; a reason the table does not
// know (a newer release's) is shown as the API names it.
func reasonText(reason string) string {
	if s, err := tr("reports.reason." + reason); err == nil {
		return s
	}
	return reason
}
