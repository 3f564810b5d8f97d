package chat

import (
	"testing"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// TestAnswerSmallTalk: a greeting, thanks, a goodbye or "are you a bot?"
// is answered without retrieval or a model and is no fallback, on every
// plan, streamed and not, in a new and in a continued conversation. A
// greeting (or a bare "can you help me?") is answered with the agent's
// welcome message when it has one; "are you a bot?" truthfully, offering
// a person where the plan has handoff.
func TestAnswerSmallTalk(t *testing.T) {
	tests := []struct {
		message, welcome, want string
		offersPerson           bool // where the plan has handoff
	}{
		{"Hi!", "", defaultGreetingReply, false},
		{"hello there", "Hello! I'm Ada. Ask me about our lamps.", "Hello! I'm Ada. Ask me about our lamps.", false},
		{"can you help me?", "Hello! I'm Ada. Ask me about our lamps.", "Hello! I'm Ada. Ask me about our lamps.", false},
		{"thank you so much", "Hello!", thanksReply, false},
		{"bye", "", farewellReply, false},
		{"are you a bot?", "Hello!", botReply, true},
	}
	for _, tt := range tests {
		for _, plan := range domain.Plans {
			for _, streaming := range []bool{true, false} {
				t.Run(tt.message+"/"+string(plan)+"/"+map[bool]string{true: "streamed", false: "whole"}[streaming], func(t *testing.T) {
					r := newRig(t, Limits{}, func(a *domain.Agent) { a.Config.WelcomeMessage = tt.welcome })
					r.local.script(llmRound{deltas: []string{"must not be called"}})
					ws := r.ws[plan]
					for _, ref := range []conversation.SessionRef{{Workspace: ws}, {ID: r.session(plan, domain.StatusAI)}} {
						ans, events, err := r.askAs(t, streaming, Request{Session: ref, Message: tt.message})
						if err != nil {
							t.Fatal(err)
						}
						offers := tt.offersPerson && r.ws[plan].Allows(domain.FeatureHandoff)
						if ans.IsFallback || ans.FallbackReason != domain.FallbackNone || ans.OfferHandoff != offers {
							t.Errorf("isFallback %v reason %q offerHandoff %v, want an answer offering a person: %v", ans.IsFallback, ans.FallbackReason, ans.OfferHandoff, offers)
						}
						if ans.Reply.Content != tt.want || len(ans.Reply.Citations) != 0 || ans.Reply.Trace != nil {
							t.Errorf("reply %q citations %v trace %v, want %q alone", ans.Reply.Content, ans.Reply.Citations, ans.Reply.Trace, tt.want)
						}
						if n := len(r.local.calls()) + len(r.openai.calls()); n != 0 {
							t.Errorf("the model was called %d times", n)
						}
						if q := r.retriever.calls(); len(q) != 0 {
							t.Errorf("retrieval ran %d times for small talk", len(q))
						}
						stored := r.messagesOf(ans.SessionID)
						if len(stored) != 2 || stored[0].Content != tt.message || stored[1].Content != tt.want || stored[1].FallbackReason != domain.FallbackNone {
							t.Errorf("stored %+v, want the message and the reply", stored)
						}
						if streaming {
							checkStream(t, r, events, ans)
						}
					}
				})
			}
		}
	}
}

// TestSmallTalkAroundAQuestionIsAQuestion: "hi, how long does shipping
// take?" is searched and answered as usual.
func TestSmallTalkAroundAQuestionIsAQuestion(t *testing.T) {
	r := newRig(t, Limits{})
	r.local.script(llmRound{deltas: []string{"Two days."}})
	ans, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "hi, how long does shipping take?"})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Reply.Content != "Two days." || len(r.retriever.calls()) != 1 || len(r.local.calls()) != 1 {
		t.Errorf("reply %q after %d searches and %d model calls, want the model's answer after one of each", ans.Reply.Content, len(r.retriever.calls()), len(r.local.calls()))
	}
}
