package chat

import (
	"errors"
	"strings"
	"testing"

	llmlocal "github.com/conciergehq/concierge/adapters/llm/local"
	"github.com/conciergehq/concierge/core/domain"
)

// suggestConversation stores a conversation of plan's support agent with
// msgs (role, content pairs) and returns its id.
func (r *rig) suggestConversation(plan domain.Plan, status domain.ConversationStatus, msgs ...string) string {
	a := r.agent[plan]
	c := domain.NewConversation(a.WorkspaceID, &a, "", r.clock.Now())
	c.Status = status
	var stored []domain.Message
	for i := 0; i+1 < len(msgs); i += 2 {
		stored = append(stored, domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: a.WorkspaceID, ConversationID: c.ID,
			Role: domain.Role(msgs[i]), Content: msgs[i+1], CreatedAt: r.clock.Now()})
	}
	r.convs.Put(c, stored...)
	return c.ID
}

// untouched checks that a suggestion stored, published and delivered
// nothing since the marks were taken.
func (r *rig) untouched(t *testing.T, convID string, messages, writes, events, deliveries int) {
	t.Helper()
	if got := len(r.messagesOf(convID)); got != messages {
		t.Errorf("messages: %d, want %d", got, messages)
	}
	if got, _ := r.convs.Conversation(convID); got.MessageCount != messages {
		t.Errorf("message count: %d, want %d", got.MessageCount, messages)
	}
	if got := r.convs.Writes(); got != writes {
		t.Errorf("store writes: %d, want %d", got, writes)
	}
	if got := len(r.bus.all()); got != events {
		t.Errorf("published events: %d, want %d", got, events)
	}
	if got := len(r.queue.all()) + len(r.convs.written()); got != deliveries {
		t.Errorf("deliveries: %d, want %d", got, deliveries)
	}
}

// The draft comes from the agent's knowledge, through the embedded model
// the deployment uses by default, and nothing of it is kept or sent.
func TestSuggestDraftsFromKnowledge(t *testing.T) {
	r := newRig(t, Limits{})
	r.svc.models["local"] = llmlocal.New(llmlocal.Options{})
	ws := r.ws[domain.PlanStandard]
	id := r.suggestConversation(domain.PlanStandard, domain.StatusHandoffRequested,
		"USER", "Hello",
		"ASSISTANT", "Hi! How can I help?",
		"USER", "How many days do I have to ask for a refund?",
		"SYSTEM", "You asked for a person.")
	writes, events, deliveries := r.convs.Writes(), len(r.bus.all()), len(r.queue.all())+len(r.convs.written())

	got, err := r.svc.Suggest(t.Context(), ws, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Fallback || got.FallbackReason != domain.FallbackNone {
		t.Fatalf("fallback %v (%s): %q", got.Fallback, got.FallbackReason, got.Draft)
	}
	if !strings.Contains(got.Draft, "30 days") {
		t.Errorf("draft %q does not use the refund policy", got.Draft)
	}
	if len(got.Citations) == 0 || got.Citations[0].SourceID != chunkRefund.SourceID || got.Citations[0].DocumentName != "Refund policy" {
		t.Errorf("citations %+v, want the refund policy", got.Citations)
	}
	for _, c := range got.Citations {
		if c.SourceID != chunkRefund.SourceID && c.SourceID != chunkShipping.SourceID {
			t.Errorf("cites %s, which was not retrieved", c.SourceID)
		}
	}
	if q := r.retriever.calls(); len(q) != 1 || q[0].Text != "How many days do I have to ask for a refund?" || q[0].AgentID != r.agent[domain.PlanStandard].ID {
		t.Errorf("retrieval queries %+v", q)
	}
	r.untouched(t, id, 4, writes, events, deliveries)
}

// The model sees the visitor's messages and the replies to them, never an
// internal note (or any role outside the allow-list), and gets no tools.
func TestSuggestContextLeavesNotesOut(t *testing.T) {
	r := newRig(t, Limits{})
	ws := r.ws[domain.PlanEnterprise] // tool calling: tools would be offered to an answer
	const secret = "the customer is on our watch list"
	id := r.suggestConversation(domain.PlanEnterprise, domain.StatusHuman,
		"USER", "My lamp arrived broken.",
		"NOTE", secret,
		"HUMAN", "Sorry to hear that! Could you send a photo?",
		"USER", "Sent it. Do I pay the return shipping?",
		"NOTE", "second note: "+secret,
		"SYSTEM", "Ada joined the conversation.")
	r.local.script(llmRound{deltas: words("You don't pay return shipping when the lamp arrived broken [2]."), cited: []string{chunkRefund2.ID}})

	got, err := r.svc.Suggest(t.Context(), ws, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.Fallback || got.Draft != "You don't pay return shipping when the lamp arrived broken [2]." {
		t.Errorf("suggestion %+v", got)
	}
	if len(got.Citations) != 1 || got.Citations[0].SourceID != chunkRefund2.SourceID {
		t.Errorf("citations %+v", got.Citations)
	}
	calls := r.local.calls()
	if len(calls) != 1 {
		t.Fatalf("%d model calls", len(calls))
	}
	req := calls[0]
	var roles []string
	for _, m := range req.Messages {
		roles = append(roles, m.Role+": "+m.Content)
		if strings.Contains(m.Content, secret) || strings.Contains(m.Content, "joined") {
			t.Errorf("the model saw %q", m.Content)
		}
	}
	want := []string{"user: My lamp arrived broken.", "assistant: Sorry to hear that! Could you send a photo?", "user: Sent it. Do I pay the return shipping?"}
	if strings.Join(roles, "|") != strings.Join(want, "|") {
		t.Errorf("model messages\n%q\nwant\n%q", roles, want)
	}
	if len(req.Tools) != 0 {
		t.Errorf("a draft was offered %d tools", len(req.Tools))
	}
	if !strings.Contains(req.System, testPrompt) || !strings.Contains(req.System, "drafting a reply") {
		t.Errorf("system prompt %q", req.System)
	}
	for _, q := range r.retriever.calls() {
		if strings.Contains(q.Text+q.Context, secret) {
			t.Errorf("retrieval searched a note: %+v", q)
		}
	}
}

func TestSuggestFallbacks(t *testing.T) {
	cases := []struct {
		name     string
		question string
		setup    func(r *rig)
		reason   domain.FallbackReason
	}{
		{"blocked topic", "Can I bet on sports here?", nil, domain.FallbackBlockedTopic},
		{"nothing retrieved", "Do you sell umbrellas?", func(r *rig) {
			r.retriever.byQuery[r.agent[domain.PlanStandard].ID+"|Do you sell umbrellas?"] = []domain.Chunk{}
		}, domain.FallbackNoKnowledge},
		{"model declines", "Do you ship to Mars?", func(r *rig) { r.local.script(llmRound{declined: true}) }, domain.FallbackModelDeclined},
		{"model fails", "Do you ship to Mars?", func(r *rig) {
			r.local.script(llmRound{err: domain.ErrUnavailable})
		}, domain.FallbackModelError},
		{"retrieval fails", "Where are you?", func(r *rig) { r.retriever.failOn["Where are you?"] = errors.New("index gone") }, domain.FallbackModelError},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			if tc.setup != nil {
				tc.setup(r)
			}
			id := r.suggestConversation(domain.PlanStandard, domain.StatusHandoffRequested, "USER", tc.question)
			writes, events := r.convs.Writes(), len(r.bus.all())
			got, err := r.svc.Suggest(t.Context(), r.ws[domain.PlanStandard], id)
			if err != nil {
				t.Fatal(err)
			}
			if !got.Fallback || got.FallbackReason != tc.reason || got.Draft != testFallback || len(got.Citations) != 0 || got.Citations == nil {
				t.Errorf("suggestion %+v, want the fallback for %s", got, tc.reason)
			}
			r.untouched(t, id, 1, writes, events, 0)
		})
	}
}

func TestSuggestRefusals(t *testing.T) {
	r := newRig(t, Limits{})
	standard, free := r.ws[domain.PlanStandard], r.ws[domain.PlanFree]
	other := r.suggestConversation(domain.PlanEnterprise, domain.StatusHuman, "USER", "How long is shipping?")
	freeConv := r.suggestConversation(domain.PlanFree, domain.StatusAI, "USER", "How long is shipping?")
	silent := r.suggestConversation(domain.PlanStandard, domain.StatusHuman, "SYSTEM", "Ada joined the conversation.", "NOTE", "nobody said anything")
	cases := []struct {
		name string
		ws   *domain.Workspace
		id   string
		want error
	}{
		{"another workspace's conversation", standard, other, domain.ErrNotFound},
		{"unknown id", standard, domain.NewID(domain.PrefixSession), domain.ErrNotFound},
		{"not an id", standard, "msg_123", domain.ErrNotFound},
		{"plan without handoff", free, freeConv, domain.ErrForbidden},
		{"nothing to reply to", standard, silent, domain.ErrConflict},
	}
	for _, tc := range cases {
		_, err := r.svc.Suggest(t.Context(), tc.ws, tc.id)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
		var plan *domain.PlanError
		if tc.want == domain.ErrForbidden && (!errors.As(err, &plan) || plan.Feature != domain.FeatureHandoff) {
			t.Errorf("%s: %v is not the handoff plan error", tc.name, err)
		}
	}
	if n := len(r.local.calls()); n != 0 {
		t.Errorf("refused suggestions called the model %d times", n)
	}
}

// A draft for small talk, a request for a person or a bare "ok" is written
// as a person of the team would answer it, without retrieval or a model,
// and is no fallback; a question after it is searched as usual.
func TestSuggestSmallTalk(t *testing.T) {
	tests := []struct {
		message, want string
	}{
		{"hi there", defaultGreetingReply},
		{"thanks!", thanksReply},
		{"bye", farewellReply},
		{"are you a bot?", personHereReply},
		{"I want to talk to a human", personHereReply},
		{"ok", ackReply},
		{"no thanks", ackReply},
	}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			r := newRig(t, Limits{}, func(a *domain.Agent) { a.Config.WelcomeMessage = "Hello! I'm Ada, the shop's assistant." })
			r.local.script(llmRound{deltas: []string{"must not be called"}})
			id := r.suggestConversation(domain.PlanStandard, domain.StatusHuman,
				"USER", "Where is my order?", "ASSISTANT", "It ships today.", "USER", tt.message)
			got, err := r.svc.Suggest(t.Context(), r.ws[domain.PlanStandard], id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Draft != tt.want || got.Fallback || got.Citations == nil || len(got.Citations) != 0 {
				t.Errorf("draft %q fallback %v citations %v, want %q alone", got.Draft, got.Fallback, got.Citations, tt.want)
			}
			if n := len(r.local.calls()) + len(r.retriever.calls()); n != 0 {
				t.Errorf("%d model calls and searches, want none", n)
			}
		})
	}
}
