package chat

import (
	"fmt"
	"strings"
	"testing"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

func TestAnswerModelDeclined(t *testing.T) {
	held := testPrompt[:minLeakRun+5] // the output filter holds a possible leak back
	handoff := domain.ToolCall{ID: "h1", Name: toolRequestHandoff, Arguments: `{"reason":"unsure"}`}
	tests := []struct {
		name   string
		plan   domain.Plan
		rounds []llmRound
		// reply is the stored content; "" means the fallback message.
		reply string
		// fallback: the answer is MODEL_DECLINED.
		fallback bool
		cited    int
	}{
		{name: "before any text, handoff on the plan", plan: domain.PlanStandard,
			rounds: []llmRound{{declined: true}}, fallback: true},
		{name: "before any text, no handoff on the plan", plan: domain.PlanHobby,
			rounds: []llmRound{{declined: true}}, fallback: true},
		{name: "citations of a decline are dropped", plan: domain.PlanStandard,
			rounds: []llmRound{{declined: true, cited: []string{chunkRefund.ID}}}, fallback: true},
		{name: "after only white space", plan: domain.PlanStandard,
			rounds: []llmRound{{deltas: []string{"\n", " "}, declined: true}}, fallback: true},
		{name: "after text the filter held back, never sent", plan: domain.PlanStandard,
			rounds: []llmRound{{deltas: []string{held}, declined: true}}, fallback: true},
		{name: "after a tool round", plan: domain.PlanStandard,
			rounds: []llmRound{
				{toolCalls: []domain.ToolCall{searchCall("c1", `{"query":"refund to a gift card"}`)}},
				{declined: true},
			}, fallback: true},
		{name: "with a tool call, which is not run", plan: domain.PlanStandard,
			rounds: []llmRound{{toolCalls: []domain.ToolCall{handoff}, declined: true}}, fallback: true},
		{name: "after text was sent, the answer stands", plan: domain.PlanStandard,
			rounds: []llmRound{{deltas: []string{"Refunds are accepted ", "within 30 days [1]."}, cited: []string{chunkRefund.ID}, declined: true}},
			reply:  "Refunds are accepted within 30 days [1].", cited: 1},
	}
	for _, tt := range tests {
		for _, streaming := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/streaming=%v", tt.name, streaming), func(t *testing.T) {
				r := newRig(t, Limits{})
				r.local.script(tt.rounds...)
				ans, events, err := r.askAs(t, streaming, Request{Session: conversation.SessionRef{Workspace: r.ws[tt.plan]}, Message: "Can I get a refund to a gift card?"})
				if err != nil {
					t.Fatal(err)
				}
				if streaming {
					checkStream(t, r, events, ans)
				}
				if n := len(r.local.calls()); n != len(tt.rounds) {
					t.Errorf("model called %d times, want %d", n, len(tt.rounds))
				}
				stored := r.messagesOf(ans.SessionID)
				if len(stored) != 2 {
					t.Fatalf("stored %d messages, want the question and the reply (no handoff notice)", len(stored))
				}
				if conv := r.convs.conv(ans.SessionID); conv.Status != domain.StatusAI {
					t.Errorf("conversation %s, want it left with the agent", conv.Status)
				}
				if !tt.fallback {
					if ans.IsFallback || ans.FallbackReason != domain.FallbackNone || ans.Reply.Content != tt.reply || len(ans.Reply.Citations) != tt.cited {
						t.Errorf("answer %+v, want %q standing with %d citations", ans, tt.reply, tt.cited)
					}
					return
				}
				if !ans.IsFallback || ans.FallbackReason != domain.FallbackModelDeclined || strings.TrimSpace(ans.Reply.Content) != testFallback {
					t.Errorf("answer %+v, want the MODEL_DECLINED fallback", ans)
				}
				if ans.Reply.Citations == nil || len(ans.Reply.Citations) != 0 {
					t.Errorf("fallback citations %+v, want none", ans.Reply.Citations)
				}
				if want := r.ws[tt.plan].Allows(domain.FeatureHandoff); ans.OfferHandoff != want {
					t.Errorf("offerHandoff %v, want %v on %s", ans.OfferHandoff, want, tt.plan)
				}
				if strings.Contains(ans.Reply.Content, held) {
					t.Errorf("reply %q sends text that was held back", ans.Reply.Content)
				}
				if m := stored[1]; m.FallbackReason != domain.FallbackModelDeclined || m.OfferHandoff != ans.OfferHandoff || m.Content != ans.Reply.Content {
					t.Errorf("stored reply %+v", m)
				}
			})
		}
	}
}

func TestSystemPromptAsksForStructuredDecline(t *testing.T) {
	p := systemPrompt(&domain.Agent{Name: "Ada"})
	if !strings.Contains(p, "call the no_answer tool if you are offered it, without writing anything; otherwise reply with exactly NO_ANSWER and nothing else.") ||
		strings.Contains(p, "say that you do not know") {
		t.Errorf("system prompt rules:\n%s", p)
	}
}
