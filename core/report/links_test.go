package report_test

import (
	"context"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/report"
	"github.com/conciergehq/concierge/ports"
)

// listRecorder is the conversation reader a list needs, keeping the filter
// the list asked for.
type listRecorder struct {
	ports.ConversationReader
	got *domain.ConversationFilter
}

func (r listRecorder) ListConversations(_ context.Context, _ string, f domain.ConversationFilter, _ domain.PageRequest) (domain.Page[domain.Conversation], error) {
	*r.got = f
	return domain.Page[domain.Conversation]{}, nil
}

type oneAgent struct {
	ports.AgentStore
	agent domain.Agent
}

func (a oneAgent) GetAgentBySlug(_ context.Context, ws, slug string) (domain.Agent, error) {
	if ws != a.agent.WorkspaceID || slug != a.agent.Slug {
		return domain.Agent{}, domain.NotFound("agent")
	}
	return a.agent, nil
}

// Every figure links to a list the conversation service accepts, and the
// store is asked for the report's range (its last day included, nothing
// after) with the figure's own filter and nothing else.
func TestListFilterOfEveryFigure(t *testing.T) {
	agent := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: domain.NewID(domain.PrefixWorkspace), Slug: "support"}
	var got domain.ConversationFilter
	lists := conversation.NewService(oneAgent{agent: agent}, listRecorder{got: &got}, nil)
	rng, err := domain.NewReportRange(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	base := domain.ConversationFilter{AgentID: agent.ID, StartedFrom: rng.From, StartedBefore: rng.To}
	with := func(change func(*domain.ConversationFilter)) domain.ConversationFilter {
		f := base
		change(&f)
		return f
	}
	tests := []struct {
		fig  report.Figure
		want domain.ConversationFilter
	}{
		{report.Figure{Kind: report.FigureConversations}, base},
		{report.Figure{Kind: report.FigureMessages}, base},
		{report.Figure{Kind: report.FigureOutcome, Outcome: domain.OutcomeRecontact}, with(func(f *domain.ConversationFilter) { f.Outcome = domain.OutcomeRecontact })},
		{report.Figure{Kind: report.FigureOutcome, Outcome: domain.OutcomeUndecided}, with(func(f *domain.ConversationFilter) { f.Outcome = domain.OutcomeUndecided })},
		{report.Figure{Kind: report.FigureFallback}, with(func(f *domain.ConversationFilter) { f.Fallback = domain.FallbackFilterSome })},
		{report.Figure{Kind: report.FigureFallbackReason, Reason: domain.FallbackNoKnowledge}, with(func(f *domain.ConversationFilter) { f.FallbackReason = domain.FallbackNoKnowledge })},
		{report.Figure{Kind: report.FigureHandedOff}, with(func(f *domain.ConversationFilter) { f.HandedOff = true })},
		{report.Figure{Kind: report.FigureRatedUp}, with(func(f *domain.ConversationFilter) { f.Rating = domain.RatingUp })},
		{report.Figure{Kind: report.FigureRatedDown}, with(func(f *domain.ConversationFilter) { f.Rating = domain.RatingDown })},
		{report.Figure{Kind: report.FigureFirstReply}, with(func(f *domain.ConversationFilter) { f.Timed = domain.DurationFirstReply })},
		{report.Figure{Kind: report.FigureResolution}, with(func(f *domain.ConversationFilter) { f.Timed = domain.DurationResolution })},
	}
	for _, tt := range tests {
		t.Run(string(tt.fig.Kind)+string(tt.fig.Outcome)+string(tt.fig.Reason), func(t *testing.T) {
			got = domain.ConversationFilter{}
			if _, err := lists.List(context.Background(), agent.WorkspaceID, report.ListFilter("support", rng, tt.fig), domain.PageRequest{Limit: 1}); err != nil {
				t.Fatal(err)
			}
			if !got.StartedFrom.Equal(tt.want.StartedFrom) || !got.StartedBefore.Equal(tt.want.StartedBefore) {
				t.Fatalf("started [%v, %v), want [%v, %v)", got.StartedFrom, got.StartedBefore, tt.want.StartedFrom, tt.want.StartedBefore)
			}
			got.StartedFrom, got.StartedBefore, tt.want.StartedFrom, tt.want.StartedBefore = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			if got != tt.want {
				t.Errorf("filter %+v, want %+v", got, tt.want)
			}
		})
	}
	// A day of the series is that day alone; every agent is no agent filter.
	day := domain.ReportDay{Day: rng.From.AddDate(0, 0, 4)}
	got = domain.ConversationFilter{}
	if _, err := lists.List(context.Background(), agent.WorkspaceID, report.ListFilter("", report.DayRange(day), report.Figure{Kind: report.FigureConversations}), domain.PageRequest{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	if got.AgentID != "" || !got.StartedFrom.Equal(day.Day) || !got.StartedBefore.Equal(day.Day.AddDate(0, 0, 1)) {
		t.Errorf("a day's filter = %+v", got)
	}
}
