package chat

import (
	"strings"
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

// TestAnswerRequestForPerson: "can I talk to a human?" is answered
// without retrieval or a model and is no fallback: with the offer of a
// person where the plan has handoff (taking it is the visitor's handoff
// request, so the conversation stays the agent's), and with an apology
// and an offer to help where it has not.
func TestAnswerRequestForPerson(t *testing.T) {
	for _, plan := range domain.Plans {
		for _, streaming := range []bool{true, false} {
			t.Run(string(plan)+"/"+map[bool]string{true: "streamed", false: "whole"}[streaming], func(t *testing.T) {
				r := newRig(t, Limits{})
				r.local.script(llmRound{deltas: []string{"must not be called"}})
				handoff := r.ws[plan].Allows(domain.FeatureHandoff)
				want := noPersonReply
				if handoff {
					want = personReply
				}
				ans, events, err := r.askAs(t, streaming, Request{Session: conversation.SessionRef{Workspace: r.ws[plan]}, Message: "Can I talk to a human please?"})
				if err != nil {
					t.Fatal(err)
				}
				if ans.IsFallback || ans.OfferHandoff != handoff || ans.Reply.Content != want {
					t.Errorf("reply %q isFallback %v offerHandoff %v, want %q offering a person: %v", ans.Reply.Content, ans.IsFallback, ans.OfferHandoff, want, handoff)
				}
				if n := len(r.local.calls()) + len(r.retriever.calls()); n != 0 {
					t.Errorf("%d model calls and searches, want none", n)
				}
				if c := r.convs.conv(ans.SessionID); c.Status != domain.StatusAI {
					t.Errorf("conversation %+v, want it still the agent's until the visitor takes the offer", c)
				}
				if streaming {
					checkStream(t, r, events, ans)
				}
			})
		}
	}
}

// TestAcknowledgements: after a fallback that offered a person, "yes
// please" or "ok" is that offer taken, not a question to search, and "no
// thanks" is answered with a plain "alright"; after an answer that offered
// none, "ok" and "no" get that "alright" too, while "yes" is searched (it
// may answer a model's question back). None is a fallback.
func TestAcknowledgements(t *testing.T) {
	tests := []struct {
		name      string
		knowledge bool // the first question finds knowledge (no fallback, no offer)
		plan      domain.Plan
		message   string
		wantReply string // "" when the message is searched
		wantOffer bool
	}{
		{"yes after the fallback's offer", false, domain.PlanStandard, "Yes please!", personReply, true},
		{"ok after the fallback's offer", false, domain.PlanStandard, "ok", personReply, true},
		{"no after the fallback's offer", false, domain.PlanStandard, "no thanks", ackReply, false},
		{"yes after an answer", true, domain.PlanStandard, "yes", "", false},
		{"ok after an answer", true, domain.PlanStandard, "got it", ackReply, false},
		{"no after an answer", true, domain.PlanStandard, "nope", ackReply, false},
		{"yes after a fallback with no handoff on the plan", false, domain.PlanFree, "yes", "", false},
		{"ok after a fallback with no handoff on the plan", false, domain.PlanFree, "okay", ackReply, false},
		// A model's reply that asks back: the acknowledgement answers it, a
		// follow-up searched with the question before.
		{"no to a model's question", true, domain.PlanStandard, "no", "", false},
		{"yes to a model's question", true, domain.PlanStandard, "yes please", "", false},
		{"ok to a model's question", true, domain.PlanStandard, "ok", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			if !tt.knowledge {
				r.retriever.byAgent[r.agent[tt.plan].ID] = nil
			}
			first := "Two days."
			asksBack := strings.Contains(tt.name, "model's question")
			if asksBack {
				first = "Is your order over 50 euros?"
			}
			r.local.script(llmRound{deltas: []string{first}}, llmRound{deltas: []string{"Searched."}})
			firstAns, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[tt.plan]}, Message: "How long does shipping take?"})
			if err != nil {
				t.Fatal(err)
			}
			if firstAns.IsFallback == tt.knowledge {
				t.Fatalf("first answer %+v, want a fallback: %v", firstAns, !tt.knowledge)
			}
			searches := len(r.retriever.calls())
			ans, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[tt.plan], ID: firstAns.SessionID}, Message: tt.message})
			if err != nil {
				t.Fatal(err)
			}
			calls := r.retriever.calls()
			searched := len(calls) > searches
			if tt.wantReply == "" {
				if !searched || (tt.knowledge && ans.Reply.Content != "Searched.") {
					t.Fatalf("reply %q after %d searches, want %q searched and answered by the model", ans.Reply.Content, len(calls)-searches, tt.message)
				}
				// Only an answer to a question the reply asked carries the
				// question before into the search.
				last := calls[len(calls)-1]
				if widened := strings.Contains(last.Context, "How long does shipping take?"); widened != asksBack || last.Text != tt.message {
					t.Errorf("searched %q with context %q, want the message with the previous question as context: %v", last.Text, last.Context, asksBack)
				}
				return
			}
			if searched || ans.IsFallback || ans.OfferHandoff != tt.wantOffer || ans.Reply.Content != tt.wantReply {
				t.Errorf("reply %q isFallback %v offerHandoff %v searched %v, want %q (offering a person: %v) without a search",
					ans.Reply.Content, ans.IsFallback, ans.OfferHandoff, searched, tt.wantReply, tt.wantOffer)
			}
		})
	}
}

// TestAcknowledgementStartingAConversation: "ok" as a first message is
// answered with "alright" at once; "yes" is searched, as there is no reply
// it could answer.
func TestAcknowledgementStartingAConversation(t *testing.T) {
	r := newRig(t, Limits{})
	r.local.script(llmRound{deltas: []string{"Searched."}})
	ans, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "ok"})
	if err != nil {
		t.Fatal(err)
	}
	if ans.Reply.Content != ackReply || ans.IsFallback || len(r.retriever.calls()) != 0 {
		t.Errorf("reply %q isFallback %v after %d searches, want %q without a search", ans.Reply.Content, ans.IsFallback, len(r.retriever.calls()), ackReply)
	}
	if _, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "yes"}); err != nil {
		t.Fatal(err)
	}
	if len(r.retriever.calls()) != 1 {
		t.Errorf("%d searches for a first \"yes\", want 1", len(r.retriever.calls()))
	}
}
