package chat

import (
	"fmt"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// Internal notes never reach the model, and do not take the history's
// places: with room for two messages, the history is the last question and
// answer however many notes were written since.
func TestAnswerHistoryLeavesNotesOut(t *testing.T) {
	r := newRig(t, Limits{HistoryMessages: 2})
	r.local.script(llmRound{deltas: []string{"Thirty days."}}, llmRound{deltas: []string{"Two years."}})
	ws := r.ws[domain.PlanStandard]
	first, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: ws}, Message: "Refund window?"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		note := domain.Message{
			ID: domain.NewID(domain.PrefixMessage), WorkspaceID: ws.ID, ConversationID: first.SessionID, Role: domain.RoleNote,
			Content: fmt.Sprintf("internal %d: VIP, refund without asking", i), AuthorName: "Ann", CreatedAt: time.Now(),
		}
		if _, _, err := r.convs.AppendMessage(t.Context(), note, ""); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := r.ask(t, Request{Session: conversation.SessionRef{Workspace: ws, ID: first.SessionID}, Message: "Warranty?"}); err != nil {
		t.Fatal(err)
	}
	calls := r.local.calls()
	if len(calls) != 2 {
		t.Fatalf("model called %d times", len(calls))
	}
	var got []string
	for _, m := range calls[1].Messages {
		got = append(got, m.Role+":"+m.Content)
	}
	want := []string{"user:Refund window?", "assistant:Thirty days.", "user:Warranty?"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("messages %q, want %q", got, want)
	}
}
