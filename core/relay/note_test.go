package relay

import (
	"fmt"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// storeNote stores an internal note as the inbox does: stored, and never
// published to the session (conversation.Lifecycle.PublishMessages).
func (w *world) storeNote(tag string) {
	w.store(domain.Message{ID: msgID(tag), Role: domain.RoleNote, Content: "VIP: refund without asking.", AuthorName: "Ann"})
}

// A stream resumed from the stored messages, or caught up from them after
// the log was lost, never sends a note, over several pages of them.
func TestReplaySkipsNotes(t *testing.T) {
	for _, lost := range []bool{false, true} {
		t.Run(fmt.Sprintf("log lost %v", lost), func(t *testing.T) {
			w := newWorld(t)
			q := w.message(domain.RoleUser, msgID("q1"), "hi")
			w.publish(q)
			for i := range 4 { // more than a page (PageSize 3)
				w.storeNote(fmt.Sprintf("x%d", i))
			}
			h := w.message(domain.RoleHuman, msgID("h1"), "Ana here.")
			w.publish(h)
			w.storeNote("x9")
			if lost {
				w.loseLog()
			}
			s := newSink()
			run(t, open(t, w, q.MessageID+":1"), s)
			want := lines([]domain.SessionEvent{h})
			check(t, s.waitFor(t, 1), want)

			// After a gap the stream catches up from the stored
			// messages; the notes stored meanwhile stay out too.
			w.storeNote("y1")
			later := w.message(domain.RoleUser, msgID("q2"), "thanks")
			w.publishLogOnly(later)
			w.loseLog()
			w.gap()
			final := w.message(domain.RoleUser, msgID("q3"), "bye")
			w.publish(final)
			check(t, s.waitFor(t, 3), append(want, lines([]domain.SessionEvent{later, final})...))
			time.Sleep(20 * time.Millisecond)
			if got := s.got(); len(got) != 3 {
				t.Fatalf("extra events: %v", got)
			}
		})
	}
}
