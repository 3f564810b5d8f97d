package conversation

import (
	"slices"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// note is an internal note on c.
func note(c domain.Conversation, text string) domain.Message {
	return domain.Message{
		ID: domain.NewID(domain.PrefixMessage), WorkspaceID: c.WorkspaceID, ConversationID: c.ID,
		Role: domain.RoleNote, Content: text, AuthorName: "Ann", AuthorID: domain.NewID(domain.PrefixUser), CreatedAt: testNow,
	}
}

// Poll (v1 poll, the widget's restore and catch-up) never returns a note,
// and a run of notes never yields an empty page that says there is more.
func TestPollLeavesNotesOut(t *testing.T) {
	w := newWorld()
	conv := w.session(w.agent, domain.StatusHuman, "")
	var public []string
	put := func(m domain.Message) {
		if _, _, err := w.store.AppendMessage(t.Context(), m, ""); err != nil {
			t.Fatal(err)
		}
		if !m.Role.Internal() {
			public = append(public, m.ID)
		}
	}
	put(w.question(conv, "q1"))
	for i := range 5 {
		put(note(conv, "n"+string(rune('0'+i))))
	}
	put(w.question(conv, "q2"))
	put(note(conv, "last"))

	// Page by page, as the widget does, with the smallest page.
	var got []string
	after := ""
	for range 10 {
		res, err := w.lifecycle.Poll(t.Context(), PollRequest{Session: SessionRef{ID: conv.ID}, After: after, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range res.Messages {
			if m.Role.Internal() {
				t.Fatalf("polled a note: %+v", m)
			}
			got = append(got, m.ID)
			after = m.ID
		}
		if !res.HasMore {
			break
		}
		if len(res.Messages) == 0 {
			t.Fatal("an empty page that has more")
		}
	}
	if !slices.Equal(got, public) {
		t.Fatalf("polled %v, want %v", got, public)
	}
	// In one page.
	res, err := w.lifecycle.Poll(t.Context(), PollRequest{Session: SessionRef{ID: conv.ID}})
	if err != nil || len(res.Messages) != 2 || res.HasMore {
		t.Fatalf("one page: %d messages, more %v, %v", len(res.Messages), res.HasMore, err)
	}
}

// A note is never published to the session's followers; what is published
// with it still is, in order.
func TestPublishMessagesLeavesNotesOut(t *testing.T) {
	w := newWorld()
	conv := w.session(w.agent, domain.StatusHuman, "")
	q, n := w.question(conv, "q"), note(conv, "VIP")
	w.lifecycle.PublishMessages(t.Context(), q, n)
	w.lifecycle.PublishMessages(t.Context(), n)
	events, _ := w.bus.published()
	if len(events) != 1 || events[0].MessageID != q.ID {
		t.Fatalf("published %+v, want only the question", events)
	}
}
