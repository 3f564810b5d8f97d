package main

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/outcome"
	"github.com/conciergehq/concierge/core/report"
)

// TestReportsEndToEnd drives conversations through the real chat engine
// over HTTP, runs the worker's sweep as wired (outcomes, then rollups) a
// day later, and reads the report through the wired report.Service: the
// replies' tokens are stored with their model ("local", priced at zero by
// default), the figures count what happened, and a figure's list is its
// conversations.
func TestReportsEndToEnd(t *testing.T) {
	s := newStack(t, stackOptions{})
	tn := s.newTenant(domain.PlanEnterprise)
	supportAgent(s, tn)
	s.stopWorkerAndWait()
	ctx := context.Background()
	ask := func(session, message string) answerBody {
		t.Helper()
		body := map[string]any{"agent": "support", "message": message}
		if session != "" {
			body["sessionId"] = session
		}
		r, a := s.chat(tn, body)
		s.mustStatus(r, 200)
		return a
	}
	answered := ask("", "How long does shipping take?")
	ask(answered.SessionID, "How do I reset my password?")
	fallback := ask("", "What is the airspeed velocity of an unladen swallow?")
	if answered.IsFallback || !fallback.IsFallback {
		t.Fatalf("answers %+v, %+v", answered, fallback)
	}

	sweep := decidedOutcomes{
		outcomes: outcome.NewService(s.sys.store, movedClock{25 * time.Hour}, 0),
		rollups:  report.NewRollup(s.sys.store, movedClock{25 * time.Hour}, 0),
	}
	if n, err := sweep.RequeueStale(ctx); err != nil || n != 4 { // two decided, two rolled up
		t.Fatalf("sweep = %d, %v; want 4", n, err)
	}
	rep, err := s.sys.reports.Report(ctx, tn.ID, report.Request{Preset: domain.PresetToday})
	if err != nil {
		t.Fatal(err)
	}
	f := rep.Totals
	if f.Conversations != 2 || f.Messages != 6 || f.FallbackConversations != 1 || f.FallbacksByReason[domain.FallbackNoKnowledge] != 1 ||
		f.Outcomes[domain.OutcomeResolvedUnconfirmed] != 1 || f.Outcomes[domain.OutcomeAbandonedAfterFallback] != 1 {
		t.Errorf("report = %+v", f)
	}
	if len(rep.Usage) != 1 || rep.Usage[0].Model != "local" || rep.Usage[0].PromptTokens == 0 || rep.Usage[0].CompletionTokens == 0 ||
		rep.Usage[0].CostMicros != 0 || rep.Usage[0].CostCurrency != "USD" {
		t.Errorf("usage = %+v, want the local model's tokens at no cost", rep.Usage)
	}
	if _, err := s.sys.reports.Report(ctx, tn.ID, report.Request{AgentSlug: "nobody"}); err == nil {
		t.Error("a report of an unknown agent did not fail")
	}
	page, err := s.sys.store.ListConversations(ctx, tn.ID, domain.ConversationFilter{StartedFrom: rep.Query.Range.From,
		StartedBefore: rep.Query.Range.To, FallbackReason: domain.FallbackNoKnowledge}, domain.PageRequest{Limit: 20})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != fallback.SessionID {
		t.Errorf("the no-knowledge list = %+v, %v; want the fallback's conversation", page.Items, err)
	}
	ids := []string{}
	page, _ = s.sys.store.ListConversations(ctx, tn.ID, domain.ConversationFilter{StartedFrom: rep.Query.Range.From}, domain.PageRequest{Limit: 20})
	for _, c := range page.Items {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, reportSortedIDs(answered.SessionID, fallback.SessionID)) {
		t.Errorf("today's list = %v", ids)
	}
}

func reportSortedIDs(ids ...string) []string {
	slices.Sort(ids)
	return ids
}
