package conversation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// filterRecorder is the conversation reader as List uses it, keeping the
// last filter it was given (the report filters are the store's to apply:
// adapters/postgres tests them).
type filterRecorder struct {
	ports.ConversationReader
	got *domain.ConversationFilter
}

func (r filterRecorder) ListConversations(ctx context.Context, workspaceID string, filter domain.ConversationFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	*r.got = filter
	return r.ConversationReader.ListConversations(ctx, workspaceID, filter, page)
}

// The report filters reach the store as a range of whole days (the last
// day included) and the names the domain gives; anything else is refused
// naming its field.
func TestListReportFilters(t *testing.T) {
	w := newWorld()
	var got domain.ConversationFilter
	svc := NewService(slugLookups{by: w.agentsByID}, filterRecorder{ConversationReader: w.store, got: &got}, w.lifecycle)
	nov1 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	nov30 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	dec1 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	paris := time.FixedZone("Paris", 3600)
	tests := []struct {
		name      string
		filter    ListFilter
		want      domain.ConversationFilter
		wantField string
	}{
		{"a range of days", ListFilter{StartedFrom: nov1, StartedTo: nov30},
			domain.ConversationFilter{StartedFrom: nov1, StartedBefore: dec1}, ""},
		{"one day", ListFilter{StartedFrom: nov30, StartedTo: nov30},
			domain.ConversationFilter{StartedFrom: nov30, StartedBefore: dec1}, ""},
		{"from only", ListFilter{StartedFrom: nov1}, domain.ConversationFilter{StartedFrom: nov1}, ""},
		{"to only", ListFilter{StartedTo: nov30}, domain.ConversationFilter{StartedBefore: dec1}, ""},
		{"a UTC midnight in another zone", ListFilter{StartedFrom: nov1.In(paris)}, domain.ConversationFilter{StartedFrom: nov1}, ""},
		{"an outcome", ListFilter{Outcome: domain.OutcomeAbandonedAfterFallback},
			domain.ConversationFilter{Outcome: domain.OutcomeAbandonedAfterFallback}, ""},
		{"undecided", ListFilter{Outcome: domain.OutcomeUndecided}, domain.ConversationFilter{Outcome: domain.OutcomeUndecided}, ""},
		{"a fallback reason", ListFilter{FallbackReason: domain.FallbackModelDeclined},
			domain.ConversationFilter{FallbackReason: domain.FallbackModelDeclined}, ""},
		{"handed off", ListFilter{HandedOff: true}, domain.ConversationFilter{HandedOff: true}, ""},
		{"a first reply's median", ListFilter{Timed: domain.DurationFirstReply}, domain.ConversationFilter{Timed: domain.DurationFirstReply}, ""},
		{"the resolution's median", ListFilter{Timed: domain.DurationResolution}, domain.ConversationFilter{Timed: domain.DurationResolution}, ""},
		{"an unknown duration", ListFilter{Timed: "firstreply"}, domain.ConversationFilter{}, "timed"},
		{"all of them with an agent", ListFilter{AgentSlug: "support", StartedFrom: nov1, StartedTo: nov30, Outcome: domain.OutcomeHandedOff, FallbackReason: domain.FallbackNoKnowledge, HandedOff: true},
			domain.ConversationFilter{AgentID: w.agent.ID, StartedFrom: nov1, StartedBefore: dec1, Outcome: domain.OutcomeHandedOff, FallbackReason: domain.FallbackNoKnowledge, HandedOff: true}, ""},
		{"from not a midnight", ListFilter{StartedFrom: nov1.Add(time.Hour)}, domain.ConversationFilter{}, "startedFrom"},
		{"from a local midnight", ListFilter{StartedFrom: time.Date(2026, 11, 1, 0, 0, 0, 0, paris)}, domain.ConversationFilter{}, "startedFrom"},
		{"to not a midnight", ListFilter{StartedTo: nov30.Add(time.Nanosecond)}, domain.ConversationFilter{}, "startedTo"},
		{"to before from", ListFilter{StartedFrom: nov30, StartedTo: nov1}, domain.ConversationFilter{}, "startedTo"},
		{"an unknown outcome", ListFilter{Outcome: "RESOLVED"}, domain.ConversationFilter{}, "outcome"},
		{"an outcome in lower case", ListFilter{Outcome: "handed_off"}, domain.ConversationFilter{}, "outcome"},
		{"an unknown reason", ListFilter{FallbackReason: "BORED"}, domain.ConversationFilter{}, "fallbackReason"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got = domain.ConversationFilter{}
			_, err := svc.List(context.Background(), w.ws.ID, tt.filter, domain.PageRequest{Limit: 10})
			if tt.wantField != "" {
				var verr *domain.ValidationError
				if !errors.Is(err, domain.ErrInvalidInput) || !errors.As(err, &verr) || verr.Fields[tt.wantField] == "" {
					t.Fatalf("err = %v, want an invalid %q", err, tt.wantField)
				}
				if got != (domain.ConversationFilter{}) {
					t.Errorf("the store was asked %+v after a refusal", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ReportFiltered() != (tt.filter != ListFilter{AgentSlug: tt.filter.AgentSlug}) {
				t.Errorf("ReportFiltered = %v", got.ReportFiltered())
			}
			if !got.StartedFrom.Equal(tt.want.StartedFrom) || !got.StartedBefore.Equal(tt.want.StartedBefore) {
				t.Errorf("started = [%v, %v), want [%v, %v)", got.StartedFrom, got.StartedBefore, tt.want.StartedFrom, tt.want.StartedBefore)
			}
			got.StartedFrom, got.StartedBefore, tt.want.StartedFrom, tt.want.StartedBefore = time.Time{}, time.Time{}, time.Time{}, time.Time{}
			if got != tt.want {
				t.Errorf("filter = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// Every outcome and every reason the domain gives is a filter; nothing
// else is.
func TestReportFilterNames(t *testing.T) {
	for _, o := range append([]domain.Outcome{domain.OutcomeUndecided}, domain.Outcomes...) {
		if !ValidOutcomeFilter(o) {
			t.Errorf("%s is not a filter", o)
		}
	}
	for _, o := range []domain.Outcome{"", "resolved_confirmed", "RESOLVED"} {
		if ValidOutcomeFilter(o) {
			t.Errorf("%q is a filter", o)
		}
	}
	seen := map[domain.FallbackReason]bool{}
	for _, r := range FallbackReasons {
		if r == domain.FallbackNone || seen[r] {
			t.Errorf("FallbackReasons holds %q twice or empty", r)
		}
		seen[r] = true
	}
	if len(seen) != 10 {
		t.Errorf("FallbackReasons has %d reasons, want the 10 of domain/chat.go", len(seen))
	}
}
