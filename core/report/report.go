// Package report answers the team's questions about an agent's work
// (issue 18): conversations, outcomes, fallbacks, handoffs, ratings, reply
// and resolution times and token cost, for a range of days, from the
// rollups the worker keeps.
package report

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Request is a report as callers ask for it: an agent's slug ("" for every
// agent) and either a preset or an explicit first and last day (both
// included). With neither, the preset is domain.DefaultReportPreset; with
// both, the request is refused.
type Request struct {
	AgentSlug string
	Preset    domain.ReportPreset
	// From and To are the first and the last day, UTC midnights.
	From, To time.Time
}

// Agents is the agent lookup a report needs.
type Agents interface {
	// GetAgentBySlug returns domain.ErrNotFound if the workspace has no such agent.
	GetAgentBySlug(ctx context.Context, workspaceID, slug string) (domain.Agent, error)
}

// Service answers report requests.
type Service struct {
	store  ports.ReportStore
	agents Agents
	clock  ports.Clock
	prices domain.PriceTable
}

// NewService returns the reports over store, pricing tokens with prices.
func NewService(store ports.ReportStore, agents Agents, clock ports.Clock, prices domain.PriceTable) *Service {
	return &Service{store: store, agents: agents, clock: clock, prices: prices}
}

// Range resolves r's days without reading anything: screens use it to show
// the range they are about to ask for. Errors are ValidationErrors naming
// preset, from or to.
func (s *Service) Range(r Request) (domain.ReportRange, error) {
	explicit := !r.From.IsZero() || !r.To.IsZero()
	switch {
	case explicit && r.Preset != "":
		return domain.ReportRange{}, domain.InvalidField("preset", "give either a preset or from and to, not both")
	case explicit:
		return domain.NewReportRange(r.From, r.To)
	case r.Preset == "":
		return domain.DefaultReportPreset.Range(s.clock.Now())
	}
	return r.Preset.Range(s.clock.Now())
}

// Report returns the workspace's report for r. Errors: a ValidationError
// for a bad range, domain.ErrNotFound for an agent the workspace does not
// have (or a malformed slug), and the store's errors.
func (s *Service) Report(ctx context.Context, workspaceID string, r Request) (domain.Report, error) {
	rng, err := s.Range(r)
	if err != nil {
		return domain.Report{}, err
	}
	q := domain.ReportQuery{WorkspaceID: workspaceID, Range: rng}
	if r.AgentSlug != "" {
		if domain.ValidateSlug(r.AgentSlug) != nil {
			return domain.Report{}, domain.NotFound("agent")
		}
		agent, err := s.agents.GetAgentBySlug(ctx, workspaceID, r.AgentSlug)
		if err != nil {
			return domain.Report{}, err
		}
		q.AgentID = agent.ID
	}
	rep, err := s.store.Report(ctx, q)
	if err != nil {
		return domain.Report{}, err
	}
	for i := range rep.Usage {
		rep.Usage[i].CostMicros, rep.Usage[i].CostCurrency = s.prices.Cost(rep.Usage[i].Model,
			rep.Usage[i].PromptTokens, rep.Usage[i].CompletionTokens)
	}
	return rep, nil
}
