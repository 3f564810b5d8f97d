package chat

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"

	"github.com/conciergehq/concierge/core/domain"
)

// fakeLog is a session log holding fixed events.
type fakeLog struct {
	events []*domain.LiveEvent
	err    error
}

func (l fakeLog) Tail(context.Context, string) (string, error) { return "", l.err }
func (l fakeLog) Newer(string, string) bool                    { return true } // the engine never asks
func (l fakeLog) Since(context.Context, string, string) ([]*domain.LiveEvent, bool, error) {
	return l.events, false, l.err
}
func (l fakeLog) After(context.Context, string, string) ([]*domain.LiveEvent, string, error) {
	return l.events, "", l.err
}

// TestSaidSoFar: what an interrupted answer said is its tokens in the log,
// in order, once each, up to the first one missing: the reply then holds
// exactly a prefix of what its visitor saw, and its token ends replay it.
func TestSaidSoFar(t *testing.T) {
	const reply = "msg_reply"
	tok := func(msg string, seq int, content string) *domain.LiveEvent {
		return &domain.LiveEvent{SessionEvent: domain.SessionEvent{Type: domain.EventToken, MessageID: msg, Seq: seq, Content: content}}
	}
	tests := []struct {
		name     string
		log      fakeLog
		want     string
		wantEnds []int
	}{
		{"in order", fakeLog{events: []*domain.LiveEvent{tok(reply, 1, "Ship"), tok(reply, 2, "ping "), tok(reply, 3, "takes")}}, "Shipping takes", []int{4, 9, 14}},
		{"another answer's tokens are not this one's", fakeLog{events: []*domain.LiveEvent{tok("msg_other", 1, "No"), tok(reply, 1, "Yes")}}, "Yes", []int{3}},
		{"published twice by a retry", fakeLog{events: []*domain.LiveEvent{tok(reply, 1, "a "), tok(reply, 1, "a "), tok(reply, 2, "b")}}, "a b", []int{2, 3}},
		{"out of order in the log", fakeLog{events: []*domain.LiveEvent{tok(reply, 2, "b"), tok(reply, 1, "a ")}}, "a b", []int{2, 3}},
		{"a hole ends it", fakeLog{events: []*domain.LiveEvent{tok(reply, 1, "a "), tok(reply, 3, "c")}}, "a ", []int{2}},
		{"the start was lost", fakeLog{events: []*domain.LiveEvent{tok(reply, 2, "b")}}, "", nil},
		{"the log cannot be read", fakeLog{err: errors.New("redis down")}, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Service{recent: tt.log, log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			got, ends := s.saidSoFar(t.Context(), domain.AnswerInProgress{ReplyID: reply, ConversationID: "ses_x"})
			if got != tt.want || !slices.Equal(ends, tt.wantEnds) {
				t.Errorf("saidSoFar = %q %v, want %q %v", got, ends, tt.want, tt.wantEnds)
			}
			// The stored reply replays what was said, then its end.
			m := domain.Message{ID: reply, ConversationID: "ses_x", Role: domain.RoleAssistant, Content: got, TokenEnds: ends, FallbackReason: domain.FallbackInterrupted}
			events := domain.StoredEvents(m)
			last := events[len(events)-1]
			if len(events) != len(ends)+1 || last.Type != domain.EventError || last.Seq != domain.InterruptedSeq || last.ErrorCode != domain.CodeInternal {
				t.Errorf("stored events %+v, want the tokens and the interrupted end", events)
			}
		})
	}
}
