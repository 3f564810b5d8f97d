package chat

import (
	"testing"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// TestObserverHearsEachAnswer: every finished answer is reported once,
// with whether it streamed, its time to first text and in all, and its
// fallback reason; a question a person owns is not an answer.
func TestObserverHearsEachAnswer(t *testing.T) {
	tests := []struct {
		name     string
		whole    bool
		message  string
		status   domain.ConversationStatus // "" for a new conversation
		rounds   []llmRound
		want     []observation // firstToken and total only checked for > 0
		firstSet bool
	}{
		{name: "streamed answer", message: "Can I get a refund?", rounds: []llmRound{{deltas: []string{"Yes, ", "within 30 days [1]."}, cited: []string{chunkRefund.ID}}},
			want: []observation{{stream: true}}, firstSet: true},
		{name: "whole answer", whole: true, message: "Can I get a refund?", rounds: []llmRound{{deltas: []string{"Yes."}}},
			want: []observation{{stream: false}}, firstSet: true},
		{name: "guardrail fallback", message: "Any tips on sports betting?",
			want: []observation{{stream: true, fallback: domain.FallbackBlockedTopic}}, firstSet: true},
		{name: "model declined", whole: true, message: "Can I get a refund?", rounds: []llmRound{{declined: true}},
			want: []observation{{stream: false, fallback: domain.FallbackModelDeclined}}, firstSet: true},
		{name: "a person owns the conversation", message: "Hello?", status: domain.StatusHuman},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			r.local.script(tt.rounds...)
			req := Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: tt.message}
			if tt.status != "" {
				req.Session = conversation.SessionRef{ID: r.session(domain.PlanStandard, tt.status)}
			}
			var err error
			if tt.whole {
				_, _, err = r.askWhole(t, req)
			} else {
				_, _, err = r.ask(t, req)
			}
			if err != nil {
				t.Fatal(err)
			}
			got := r.observed.all()
			if len(got) != len(tt.want) {
				t.Fatalf("observed %+v, want %d", got, len(tt.want))
			}
			for i, o := range got {
				w := tt.want[i]
				if o.stream != w.stream || o.fallback != w.fallback || o.total <= 0 {
					t.Errorf("observed %+v, want %+v", o, w)
				}
				if tt.firstSet && (o.firstToken <= 0 || o.firstToken > o.total) {
					t.Errorf("first token %s of %s", o.firstToken, o.total)
				}
			}
		})
	}
}
