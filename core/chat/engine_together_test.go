package chat

import (
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// wholeTurns are the turns an agent answers whole: the first of a new
// conversation, and one in a conversation the agent owns.
var wholeTurns = []struct {
	name string
	// request returns the request to ask with, in a fresh rig.
	request func(r *rig) Request
}{
	{"new conversation", func(r *rig) Request {
		return Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "Refund window?"}
	}},
	{"the agent's conversation", func(r *rig) Request {
		return Request{Session: conversation.SessionRef{ID: r.session(domain.PlanStandard, domain.StatusAI)}, Message: "Refund window?"}
	}},
}

// A caller that waits for the whole answer gets its question and the reply
// stored in one write, new conversation or not, and the session's followers
// get the events a streaming caller gets, in the same order, with the
// answer as one token: nobody watched it being written.
func TestWholeAnswerIsStoredInOneWrite(t *testing.T) {
	for _, tt := range wholeTurns {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			r.local.script(llmRound{deltas: []string{"Within ", "30 days [1]."}, cited: []string{chunkRefund.ID}})
			req := tt.request(r)
			ans, bus, err := r.askWhole(t, req)
			if err != nil {
				t.Fatal(err)
			}
			if r.convs.Writes() != 1 {
				t.Errorf("%d writes, want the question and the reply in one", r.convs.Writes())
			}
			stored := r.messagesOf(ans.SessionID)
			if len(stored) != 2 || stored[0].ID != ans.UserMessage.ID || stored[1].ID != ans.Reply.ID ||
				stored[1].Content != "Within 30 days [1]." || len(stored[1].Citations) != 1 || !equalInts(stored[1].TokenEnds, []int{19}) {
				t.Errorf("stored %+v, want the question then the reply", stored)
			}
			if c := r.convs.conv(ans.SessionID); c.MessageCount != 2 || c.LastMessage != ans.Reply.Content {
				t.Errorf("conversation %+v, want two messages ending with the reply", c)
			}
			// The followers' events, checked as a streaming caller's are.
			checkStream(t, r, bus, ans)
			if len(bus) != 3 || bus[1].Content != ans.Reply.Content {
				t.Errorf("bus %s, want the question, the answer as one token, done", describe(bus))
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Until the turn is stored, nothing of it is: neither message, nor any
// event on the bus, where a follower would otherwise see a question that a
// crash could still lose.
func TestWholeAnswerPublishesNothingBeforeItIsStored(t *testing.T) {
	r := newRig(t, Limits{})
	sess := r.session(domain.PlanStandard, domain.StatusAI)
	var seenEvents, seenStored int
	r.local.script(llmRound{deltas: []string{"Within ", "30 days."}, afterDelta: func(i int) {
		if i != 1 {
			return
		}
		// The publisher runs on its own goroutine: give it time to publish
		// what it would.
		deadline := time.Now().Add(100 * time.Millisecond)
		for time.Now().Before(deadline) && len(r.bus.all()) == 0 {
			time.Sleep(5 * time.Millisecond)
		}
		seenEvents, seenStored = len(r.bus.all()), len(r.messagesOf(sess))
	}})
	ans, bus, err := r.askWhole(t, Request{Session: conversation.SessionRef{ID: sess}, Message: "Refund window?"})
	if err != nil {
		t.Fatal(err)
	}
	if seenEvents != 0 || seenStored != 0 {
		t.Errorf("while the model answered: %d events published, %d messages stored; want none", seenEvents, seenStored)
	}
	checkStream(t, r, bus, ans)
}

// A turn that cannot be stored leaves no trace: no message, no conversation,
// no event, no delivery; the caller gets the store's error.
func TestWholeAnswerNotStoredLeavesNothing(t *testing.T) {
	for _, tt := range wholeTurns {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, Limits{})
			ws := r.ws[domain.PlanStandard]
			ws.EventsURL = "https://hooks.example/concierge"
			r.workspace.byID[ws.ID] = *ws
			down := domain.Unavailable("postgres", errors.New("connection refused"))
			r.convs.FailMessages(func(m domain.Message) error {
				if m.Role == domain.RoleAssistant {
					return down
				}
				return nil
			})
			r.local.script(llmRound{deltas: []string{"Within 30 days."}})
			req := tt.request(r)
			before := r.convs.Len()
			_, bus, err := r.askWhole(t, req)
			if !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("err = %v, want the store's", err)
			}
			if n := len(r.convs.all()); n != 0 {
				t.Errorf("%d messages stored", n)
			}
			if n := r.convs.Len(); n != before {
				t.Errorf("%d conversations, want %d", n, before)
			}
			if len(bus) != 0 {
				t.Errorf("bus got %s, want nothing", describe(bus))
			}
			if w := r.convs.written(); len(w) != 0 {
				t.Errorf("deliveries %+v, want none", w)
			}
		})
	}
}

// The handoff tool hands the helpdesk a transcript, which must hold the
// question: the tool only records the request, and the move is made once
// the turn (question and reply, in one write) is stored, so the transcript
// holds both and the notice follows the reply.
func TestWholeAnswerHandsOffOnceTheTurnIsStored(t *testing.T) {
	r := newRig(t, Limits{})
	r.local.script(
		llmRound{deltas: []string{"Let me check. "}, toolCalls: []domain.ToolCall{{ID: "h1", Name: toolRequestHandoff, Arguments: `{}`}}},
		llmRound{deltas: []string{"A colleague will join."}},
	)
	ans, bus, err := r.askWhole(t, Request{Session: conversation.SessionRef{Workspace: r.ws[domain.PlanStandard]}, Message: "My parcel is lost, can someone look into it?"})
	if err != nil {
		t.Fatal(err)
	}
	if r.convs.Writes() != 1 {
		t.Errorf("%d writes of messages, want the question and the reply in one (the notice is the move's)", r.convs.Writes())
	}
	stored := r.messagesOf(ans.SessionID)
	if len(stored) != 3 || stored[0].ID != ans.UserMessage.ID || stored[1].ID != ans.Reply.ID || stored[2].Role != domain.RoleSystem {
		t.Errorf("stored %+v, want the question, the reply, the notice", stored)
	}
	written := r.convs.written()
	if len(written) != 1 || written[0].Type != domain.EventHandoffRequested || len(written[0].Transcript) != 2 ||
		written[0].Transcript[0].ID != ans.UserMessage.ID || written[0].Transcript[1].ID != ans.Reply.ID {
		t.Errorf("deliveries %+v, want handoff.requested with the question and the reply as transcript", written)
	}
	if !ans.OfferHandoff || ans.Reply.Content != "Let me check. A colleague will join." {
		t.Errorf("answer %+v", ans)
	}
	checkStream(t, r, bus, ans)
	want := []domain.SessionEvent{
		{Type: domain.EventMessage}, {Type: domain.EventToken, Content: "Let me check. A colleague will join."},
		{Type: domain.EventStatus}, {Type: domain.EventDone},
	}
	if len(bus) != len(want) {
		t.Fatalf("bus %s, want the question, the answer as one token, the handoff's notice, done", describe(bus))
	}
	for i, w := range want {
		if bus[i].Type != w.Type || bus[i].Content != w.Content {
			t.Errorf("bus event %d = [%s %q], want [%s %q]", i, bus[i].Type, bus[i].Content, w.Type, w.Content)
		}
	}
	if !equalInts(ans.Reply.TokenEnds, []int{36}) {
		t.Errorf("token ends %v, want the one token published", ans.Reply.TokenEnds)
	}
}
