package v2

import (
	"bytes"
	"context"
	"strings"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/report"
)

// ReportHandlers serves GET /api/v2/analytics/report and its CSV (issue
// 18), behind the same API key as every v2 read.
type ReportHandlers struct {
	reports Reports
	agents  Agents
}

// NewReportHandlers returns the report handlers. A nil reports answers
// 503 until the server is built with them.
func NewReportHandlers(reports Reports, agents Agents) *ReportHandlers {
	return &ReportHandlers{reports: reports, agents: agents}
}

// ReportsUnavailable is the message of the 503 a server built without
// reports answers.
const ReportsUnavailable = "reports are not enabled on this server"

// conversationsLink is the v2 list of a figure's conversations.
func conversationsLink(f conversation.ListFilter) string {
	return "/api/v2/conversations?" + wire.ConversationQuery(f).Encode()
}

// read parses a report request (agent, preset, from, to) and asks for it.
func (h *ReportHandlers) read(c *fiber.Ctx) (domain.Report, report.Request, error) {
	r := report.Request{AgentSlug: strings.Clone(c.Query("agent")), Preset: domain.ReportPreset(strings.Clone(c.Query("preset")))}
	var err error
	if r.From, err = wire.Day("from", c.Query("from")); err != nil {
		return domain.Report{}, r, err
	}
	if r.To, err = wire.Day("to", c.Query("to")); err != nil {
		return domain.Report{}, r, err
	}
	// One of from and to alone is no range: say which is missing rather
	// than what NewReportRange says of a zero day.
	switch {
	case !r.From.IsZero() && r.To.IsZero():
		return domain.Report{}, r, domain.InvalidField("to", "is required with from")
	case r.From.IsZero() && !r.To.IsZero():
		return domain.Report{}, r, domain.InvalidField("from", "is required with to")
	}
	rep, err := h.reports.Report(c.UserContext(), workspaceID(c), r)
	if err == nil && r.Preset == "" && r.From.IsZero() {
		r.Preset = domain.DefaultReportPreset
	}
	return rep, r, err
}

// reportsOff answers 503 with the one error body, naming why: no
// dependency is down, so a generic "retry later" would mislead.
func reportsOff(c *fiber.Ctx) error {
	return c.Status(fiber.StatusServiceUnavailable).JSON(wire.ErrorBody{Error: wire.ErrorDetail{Code: domain.CodeUnavailable, Message: ReportsUnavailable}})
}

// Report serves GET /api/v2/analytics/report: the figures of the
// workspace's conversations (or one agent's) started in a range of days,
// each with the v2 list of the conversations behind it.
func (h *ReportHandlers) Report(c *fiber.Ctx) error {
	if h.reports == nil {
		return reportsOff(c)
	}
	rep, r, err := h.read(c)
	if err != nil {
		return err
	}
	slugs, err := h.agentSlugs(c.UserContext(), workspaceID(c), r.AgentSlug, rep.Usage)
	if err != nil {
		return err
	}
	return c.JSON(wire.Report(rep, r.AgentSlug, r.Preset, slugs, conversationsLink))
}

// CSV serves GET /api/v2/analytics/report.csv: the same report, one row
// per day and a total row (wire.WriteReportCSV).
func (h *ReportHandlers) CSV(c *fiber.Ctx) error {
	if h.reports == nil {
		return reportsOff(c)
	}
	rep, r, err := h.read(c)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := wire.WriteReportCSV(&buf, rep, r.AgentSlug); err != nil {
		return err
	}
	c.Set(fiber.HeaderContentType, "text/csv; charset=utf-8")
	c.Set(fiber.HeaderContentDisposition, `attachment; filename="`+ReportFilename(rep, r.AgentSlug)+`"`)
	return c.Send(buf.Bytes())
}

// ReportFilename names a report's CSV: report[-agent]-from-to.csv (slugs
// are [a-z0-9-], so the name needs no quoting).
func ReportFilename(rep domain.Report, agentSlug string) string {
	name := "report"
	if agentSlug != "" && domain.ValidateSlug(agentSlug) == nil {
		name += "-" + agentSlug
	}
	return name + "-" + wire.FormatDay(rep.Query.Range.From) + "-" + wire.FormatDay(rep.Query.Range.To.AddDate(0, 0, -1)) + ".csv"
}

// agentSlugs names the agents of usage rows, when the report is of every
// agent (a report of one agent names it already).
func (h *ReportHandlers) agentSlugs(ctx context.Context, workspaceID, agentSlug string, usage []domain.UsageFigure) (map[string]string, error) {
	if agentSlug != "" || len(usage) == 0 {
		return nil, nil
	}
	return AgentSlugs(ctx, h.agents, workspaceID)
}

// AgentLister is the agent listing AgentSlugs pages through.
type AgentLister interface {
	List(ctx context.Context, workspaceID string, page domain.PageRequest) (domain.Page[domain.Agent], error)
}

// AgentSlugs maps the workspace's agent ids to their slugs.
func AgentSlugs(ctx context.Context, agents AgentLister, workspaceID string) (map[string]string, error) {
	out := map[string]string{}
	page := domain.PageRequest{Limit: domain.MaxPageLimit}
	for {
		got, err := agents.List(ctx, workspaceID, page)
		if err != nil {
			return nil, err
		}
		for _, a := range got.Items {
			out[a.ID] = a.Slug
		}
		if !got.HasMore || got.Next == nil {
			return out, nil
		}
		page.After = got.Next
	}
}
