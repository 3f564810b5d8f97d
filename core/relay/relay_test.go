package relay

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

func TestParseEventID(t *testing.T) {
	valid := msgID("a1")
	tests := []struct {
		in      string
		want    *Position
		invalid bool
	}{
		{in: "", want: nil},
		{in: valid + ":1", want: &Position{MessageID: valid, Seq: 1}},
		{in: valid + ":42", want: &Position{MessageID: valid, Seq: 42}},
		{in: valid, invalid: true},
		{in: valid + ":", invalid: true},
		{in: valid + ":0", invalid: true},
		{in: valid + ":-3", invalid: true},
		{in: valid + ":07", invalid: true},
		{in: valid + ":1:2", invalid: true},
		{in: valid + ": 1", invalid: true},
		{in: "msg_short:1", invalid: true},
		{in: "ses_" + valid[4:] + ":1", invalid: true},
		{in: valid + ":99999999999999999999", invalid: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseEventID(tt.in)
			if tt.invalid {
				var verr *domain.ValidationError
				if !errors.As(err, &verr) || verr.Fields["lastEventId"] == "" {
					t.Fatalf("err = %v, want a validation error naming lastEventId", err)
				}
				return
			}
			if err != nil || fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// open opens a stream of the world's conversation as its workspace.
func open(t *testing.T, w *world, lastEventID string) *Stream {
	t.Helper()
	st, err := w.service().Open(context.Background(), Request{Session: conversation.SessionRef{Workspace: &w.ws, ID: w.conv.ID}, LastEventID: lastEventID})
	if err != nil {
		t.Fatalf("Open(%q): %v", lastEventID, err)
	}
	return st
}

// run runs the stream until stop is called; stop returns Run's error.
func run(t *testing.T, st *Stream, s *sink) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx, s) }()
	var once bool
	var result error
	stop = func() error {
		if !once {
			once = true
			cancel()
			select {
			case result = <-done:
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
		}
		return result
	}
	t.Cleanup(func() { stop() })
	return stop
}

// lines describes events as the sink does.
func lines(events []domain.SessionEvent) []string {
	out := make([]string, len(events))
	for i := range events {
		out[i] = describe(&domain.LiveEvent{SessionEvent: events[i]})
	}
	return out
}

func check(t *testing.T, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("stream\n got:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

// A conversation's full history: a question, a streamed answer, a status
// change and a human reply, each stored before it was published.
type history struct {
	question domain.SessionEvent
	answer   answer
	notice   domain.SessionEvent
	human    domain.SessionEvent
}

func (h history) all() []domain.SessionEvent {
	out := []domain.SessionEvent{h.question}
	out = append(out, h.answer.events...)
	return append(out, h.notice, h.human)
}

// play stores and publishes the history in the order the engine does.
func play(w *world) history {
	h := history{question: w.message(domain.RoleUser, msgID("q1"), "Refund window?")}
	w.publish(h.question)
	h.answer = newAnswer(w, msgID("a1"), "Thirty ", "days ", "from ", "delivery.")
	w.publish(h.answer.events[:4]...)
	w.store(h.answer.msg)
	w.publish(h.answer.events[4])
	h.notice = w.notice(msgID("n1"), domain.StatusHuman)
	w.publish(h.notice)
	h.human = w.message(domain.RoleHuman, msgID("h1"), "Ana here.")
	w.publish(h.human)
	return h
}

// Without Last-Event-ID a stream starts with the next event published.
func TestLiveFromNow(t *testing.T) {
	w := newWorld(t)
	w.publish(w.message(domain.RoleUser, msgID("q0"), "before"))
	s := newSink()
	st := open(t, w, "")
	run(t, st, s)
	h := play(w)
	check(t, s.waitFor(t, len(h.all())), lines(h.all()))
}

// Resuming from any event gives exactly the events after it, whether the
// log still has the position or only PostgreSQL does.
func TestResumeGivesExactlyWhatWasMissed(t *testing.T) {
	for _, lost := range []bool{false, true} {
		for cut := 1; cut < 9; cut++ {
			t.Run(fmt.Sprintf("log lost %v, after event %d", lost, cut), func(t *testing.T) {
				w := newWorld(t)
				h := play(w)
				all := h.all()
				if lost {
					w.loseLog()
				}
				last := all[cut-1]
				s := newSink()
				st := open(t, w, fmt.Sprintf("%s:%d", last.MessageID, last.Seq))
				run(t, st, s)
				want := lines(all[cut:])
				got := s.waitFor(t, len(want))
				// Live events follow the replay.
				later := w.message(domain.RoleUser, msgID("q2"), "Thanks")
				w.publish(later)
				got = s.waitFor(t, len(want)+1)
				check(t, got, append(want, lines([]domain.SessionEvent{later})...))
			})
		}
	}
}

// Events published between the subscription and the log read come both
// from the log and live; the client gets each once.
func TestReplayAndLiveOverlapOnce(t *testing.T) {
	w := newWorld(t)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	w.publish(q)
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three")
	w.beforeRead = func() { w.publish(a.events[:2]...) }
	st := open(t, w, fmt.Sprintf("%s:1", q.MessageID))
	s := newSink()
	run(t, st, s)
	w.publish(a.events[2:3]...)
	w.store(a.msg)
	w.publish(a.events[3])
	check(t, s.waitFor(t, 4), lines(a.events))
	s.nothingMore(t, 4)
}

// The feed reconnected (a Gap): what it missed comes from the log, then
// live events follow, nothing twice.
func TestGapCatchesUpFromTheLog(t *testing.T) {
	w := newWorld(t)
	s := newSink()
	run(t, open(t, w, ""), s)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three ", "four ", "five")
	w.publish(q)
	w.publish(a.events[:2]...)
	s.waitFor(t, 3)
	w.publishLogOnly(a.events[2:4]...) // while the feed was away
	w.gap()
	w.publish(a.events[4]) // the last token, after the resubscription
	w.store(a.msg)
	w.publish(a.events[5])
	check(t, s.waitFor(t, 7), lines(append([]domain.SessionEvent{q}, a.events...)))
}

// A client resumed at the log's end and then caught up after a Gap gets
// only what followed, not the log from its start.
func TestGapAfterResumingAtTheEnd(t *testing.T) {
	w := newWorld(t)
	h := play(w)
	s := newSink()
	run(t, open(t, w, h.human.MessageID+":1"), s)
	later := w.message(domain.RoleUser, msgID("q2"), "still there?")
	w.publishLogOnly(later)
	w.gap()
	last := w.message(domain.RoleUser, msgID("q3"), "hello?")
	w.publish(last)
	check(t, s.waitFor(t, 2), lines([]domain.SessionEvent{later, last}))
	time.Sleep(20 * time.Millisecond)
	check(t, s.got(), lines([]domain.SessionEvent{later, last}))
}

// Redis restarted without persistence mid-answer: the log lost the start
// of the answer and the events published while the feed was away. The
// stream holds the answer back until it is stored, then sends the missing
// tokens from PostgreSQL, and the rest: nothing lost, nothing twice.
func TestGapAfterTheLogWasLost(t *testing.T) {
	w := newWorld(t)
	s := newSink()
	run(t, open(t, w, ""), s)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three ", "four ", "five")
	w.publish(q)
	w.publish(a.events[:2]...)
	s.waitFor(t, 3)
	// Published to the old Redis, never delivered, lost with it.
	w.publishLogOnly(a.events[2])
	w.loseLog()
	// A status change stored while Redis was down; its publication failed.
	n := w.notice(msgID("n1"), domain.StatusHandoffRequested)
	// The publisher's retries reach the new Redis before the feed is back.
	w.publishLogOnly(a.events[3])
	w.gap()
	w.publish(a.events[4])
	w.store(a.msg)
	w.publish(a.events[5])
	want := lines([]domain.SessionEvent{q, a.events[0], a.events[1], n, a.events[2], a.events[3], a.events[4], a.events[5]})
	check(t, s.waitFor(t, len(want)), want)
}

// An answer that began while the feed was away and whose start Redis lost
// is not joined midway: it is held until stored and sent whole.
func TestAnswerBegunWhileTheFeedWasAway(t *testing.T) {
	w := newWorld(t)
	s := newSink()
	run(t, open(t, w, ""), s)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	w.publish(q)
	s.waitFor(t, 1)
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three")
	w.publishLogOnly(a.events[:2]...)
	w.loseLog()
	w.gap()
	// The catch-up read the stored messages before the answer was stored.
	deadline := time.Now().Add(5 * time.Second)
	for w.reads() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	w.publish(a.events[2])
	w.store(a.msg)
	w.publish(a.events[3])
	check(t, s.waitFor(t, 5), lines(append([]domain.SessionEvent{q}, a.events...)))
}

// A client resuming mid-answer after the log lost the answer's start: the
// rest of the answer, nothing twice.
func TestResumeAnAnswerWhoseLogStartWasLost(t *testing.T) {
	w := newWorld(t)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three ", "four ", "five")
	w.publish(q)
	w.publish(a.events[:3]...)
	w.loseLog()
	w.publish(a.events[3])
	// The client had token 2; token 3 was lost with the log.
	s := newSink()
	run(t, open(t, w, a.events[1].MessageID+":2"), s)
	w.publish(a.events[4])
	w.store(a.msg)
	w.publish(a.events[5])
	check(t, s.waitFor(t, 4), lines(a.events[2:]))
}

// A client resuming from an event the log does not have yet: it got the
// event on its POST stream, which the engine writes before the event is
// appended to the log, and reconnected (to another pod) at once. The log
// then holds the answer's earlier tokens and, before them, the question:
// the client gets the rest of the answer and nothing older than its
// position (the question again was what TestRelayAcrossPods once saw).
func TestResumeFromAnEventNotYetLogged(t *testing.T) {
	w := newWorld(t)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three ", "four ", "five")
	w.publish(q)
	w.publish(a.events[:3]...)
	s := newSink()
	run(t, open(t, w, a.events[3].MessageID+":4"), s)
	w.publish(a.events[3], a.events[4])
	w.store(a.msg)
	w.publish(a.events[5])
	check(t, s.waitFor(t, 2), lines(a.events[4:]))
	s.nothingMore(t, 2)
}

// A client resuming from an answer's first event before the log has any
// event of that answer is not refused: Open looks again while it is on its
// way. An id that never appears is still refused, after PositionWait.
func TestResumeWaitsForAnEventOnItsWay(t *testing.T) {
	w := newWorld(t)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	a := newAnswer(w, msgID("a1"), "one ", "two ")
	w.publish(q)
	go func() {
		time.Sleep(3 * positionRetry)
		w.publish(a.events[0])
	}()
	s := newSink()
	run(t, open(t, w, a.events[0].MessageID+":1"), s)
	w.publish(a.events[1])
	w.store(a.msg)
	w.publish(a.events[2])
	check(t, s.waitFor(t, 2), lines(a.events[1:]))

	start := time.Now()
	_, err := w.service().Open(context.Background(), Request{Session: conversation.SessionRef{Workspace: &w.ws, ID: w.conv.ID}, LastEventID: msgID("zz") + ":1"})
	if err == nil || !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("an unknown position: err = %v, want a validation error", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("an unknown position was refused after %s, want after PositionWait (1 s)", d)
	}
}

// The pod's feed may hand a new follower an event logged before its
// position (Redis sent it to the pod's connection just before the
// follower joined a channel the pod already followed): the question of
// the turn, never seen by this stream, is not sent after the answer's
// tokens (TestLiveStreamEndpoints once saw it under load).
func TestLateFeedEventsOlderThanThePositionAreDropped(t *testing.T) {
	w := newWorld(t)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three ", "four ")
	w.publish(q)
	w.publish(a.events[:3]...)
	s := newSink()
	run(t, open(t, w, a.events[1].MessageID+":2"), s)
	w.relayLate(w.logged()[:3]...) // the question and the first two tokens
	w.publish(a.events[3])
	w.store(a.msg)
	w.publish(a.events[4])
	check(t, s.waitFor(t, 3), lines(a.events[2:]))
	s.nothingMore(t, 3)
}

// An answer that failed after a hole ends with its error event.
func TestHeldAnswerThatFails(t *testing.T) {
	w := newWorld(t)
	s := newSink()
	run(t, open(t, w, ""), s)
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three")
	w.publish(a.events[0])
	s.waitFor(t, 1)
	w.publishLogOnly(a.events[1])
	w.loseLog()
	w.gap()
	w.publish(a.events[2])
	fail := domain.SessionEvent{Type: domain.EventError, SessionID: w.conv.ID, MessageID: a.msg.ID, Seq: 4, ErrorCode: "UNAVAILABLE"}
	w.publish(fail)
	check(t, s.waitFor(t, 2), lines([]domain.SessionEvent{a.events[0], fail}))
}

// A stream opened mid-answer joins it at the next token.
func TestLiveJoinsAnAnswerInProgress(t *testing.T) {
	w := newWorld(t)
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three")
	w.publish(a.events[:2]...)
	s := newSink()
	run(t, open(t, w, ""), s)
	w.publish(a.events[2])
	w.store(a.msg)
	w.publish(a.events[3])
	check(t, s.waitFor(t, 2), lines(a.events[2:]))
}

func TestOpenRefuses(t *testing.T) {
	w := newWorld(t)
	play(w)
	other := domain.Workspace{ID: "ws_other"}
	unpublished := newWorld(t)
	unpublished.agent.Config.Published = false
	verified := newWorld(t)
	verified.conv.VerifiedUserID = "user_1"
	tests := []struct {
		name  string
		w     *world
		req   Request
		want  error
		field string
	}{
		{"another workspace's conversation", w, Request{Session: conversation.SessionRef{Workspace: &other, ID: w.conv.ID}}, domain.ErrNotFound, ""},
		{"unknown session", w, Request{Session: conversation.SessionRef{Workspace: &w.ws, ID: domain.NewID(domain.PrefixSession)}}, domain.ErrNotFound, ""},
		{"not a session id", w, Request{Session: conversation.SessionRef{ID: "../etc"}}, domain.ErrNotFound, ""},
		{"keyless, unpublished agent", unpublished, Request{Session: conversation.SessionRef{ID: unpublished.conv.ID}}, domain.ErrNotFound, ""},
		{"keyless, half the identity headers", verified, Request{Session: conversation.SessionRef{ID: verified.conv.ID, IdentityHeader: "x"}}, domain.ErrInvalidInput, ""},
		{"malformed Last-Event-ID", w, Request{Session: conversation.SessionRef{Workspace: &w.ws, ID: w.conv.ID}, LastEventID: "42"}, domain.ErrInvalidInput, "lastEventId"},
		{"Last-Event-ID of no event here", w, Request{Session: conversation.SessionRef{Workspace: &w.ws, ID: w.conv.ID}, LastEventID: msgID("zz") + ":1"}, domain.ErrInvalidInput, "lastEventId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.w.service().Open(context.Background(), tt.req)
			if !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
			var verr *domain.ValidationError
			if tt.field != "" && (!errors.As(err, &verr) || verr.Fields[tt.field] == "") {
				t.Fatalf("err = %v, want a validation error naming %s", err, tt.field)
			}
			if n := tt.w.open(); n != 0 {
				t.Errorf("%d subscriptions left open after a refused Open", n)
			}
		})
	}
	t.Run("keyless, published agent", func(t *testing.T) {
		st, err := w.service().Open(context.Background(), Request{Session: conversation.SessionRef{ID: w.conv.ID}})
		if err != nil {
			t.Fatal(err)
		}
		st.Close()
		if n := w.open(); n != 0 {
			t.Errorf("%d subscriptions open after Close", n)
		}
	})
	t.Run("feed unavailable", func(t *testing.T) {
		w.subErr = domain.Unavailable("redis", errors.New("down"))
		defer func() { w.subErr = nil }()
		if _, err := w.service().Open(context.Background(), Request{Session: conversation.SessionRef{Workspace: &w.ws, ID: w.conv.ID}}); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("err = %v", err)
		}
	})
}

// How a stream ends: a feed that fails gives a terminal error event; the
// feed shutting down and the client leaving end it quietly. The
// subscription is closed every time.
func TestStreamEnds(t *testing.T) {
	tests := []struct {
		name      string
		end       func(w *world, s *sink)
		wantEvent string // the last line written, "" for none
		wantErr   bool
	}{
		{"feed failed", func(w *world, _ *sink) {
			w.subs[0].end(domain.Unavailable("redis live feed", errors.New("Redis unreachable")))
		}, " error UNAVAILABLE", true},
		{"feed closed", func(w *world, _ *sink) { w.subs[0].end(ports.ErrFeedClosed) }, "", false},
		{"client gone", func(w *world, s *sink) {
			s.mu.Lock()
			s.failAfter = 1
			s.mu.Unlock()
			w.publish(w.message(domain.RoleUser, msgID("q9"), "anyone?"))
		}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			s := newSink()
			st := open(t, w, "")
			done := make(chan error, 1)
			go func() { done <- st.Run(context.Background(), s) }()
			tt.end(w, s)
			select {
			case err := <-done:
				if (err != nil) != tt.wantErr {
					t.Errorf("Run = %v, want error %v", err, tt.wantErr)
				}
			case <-time.After(5 * time.Second):
				t.Fatal("Run did not return")
			}
			got := s.got()
			switch {
			case tt.wantEvent == "" && len(got) != 0:
				t.Errorf("wrote %v, want nothing", got)
			case tt.wantEvent != "" && (len(got) != 1 || got[0] != tt.wantEvent):
				t.Errorf("wrote %v, want %q", got, tt.wantEvent)
			}
			if tt.wantEvent != "" && len(s.events) == 1 && !strings.Contains(s.events[0].ErrorMessage, "Last-Event-ID") {
				t.Errorf("error message %q does not say how to resume", s.events[0].ErrorMessage)
			}
			if n := w.open(); n != 0 {
				t.Errorf("%d subscriptions left open", n)
			}
		})
	}
}

func TestKeepAlive(t *testing.T) {
	w := newWorld(t)
	svc := w.service()
	svc.opts.KeepAlive = 10 * time.Millisecond
	st, err := svc.Open(context.Background(), Request{Session: conversation.SessionRef{Workspace: &w.ws, ID: w.conv.ID}})
	if err != nil {
		t.Fatal(err)
	}
	s := newSink()
	stop := run(t, st, s)
	// Three keep-alives must come, one per tick. Waited for rather than
	// counted after a fixed sleep: under the whole suite's load a 100 ms
	// window held only two ticks' worth of scheduling (seen once).
	keepAlives := func() int { s.mu.Lock(); defer s.mu.Unlock(); return s.keepAlives }
	for deadline := time.Now().Add(5 * time.Second); keepAlives() < 3 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if n := keepAlives(); n < 3 {
		t.Errorf("%d keep-alives in 5 s at 10 ms", n)
	}
}

func TestStoredEvents(t *testing.T) {
	reply := domain.Message{ID: "msg_r", ConversationID: "ses_1", Role: domain.RoleAssistant, Content: "Héllo there.", TokenEnds: []int{7, 13}}
	tests := []struct {
		name string
		m    domain.Message
		want []string
	}{
		{"reply with token ends", reply, []string{"msg_r:1 token Héllo ", "msg_r:2 token there.", "msg_r:3 done Héllo there."}},
		{"reply without token ends", func() domain.Message { m := reply; m.TokenEnds = nil; return m }(),
			[]string{"msg_r:1 token Héllo there.", "msg_r:2 done Héllo there."}},
		{"reply with ends that do not cover it", func() domain.Message { m := reply; m.TokenEnds = []int{7, 9}; return m }(),
			[]string{"msg_r:1 token Héllo there.", "msg_r:2 done Héllo there."}},
		{"reply with ends out of order", func() domain.Message { m := reply; m.TokenEnds = []int{9, 7, 13}; return m }(),
			[]string{"msg_r:1 token Héllo there.", "msg_r:2 done Héllo there."}},
		{"empty reply", domain.Message{ID: "msg_e", Role: domain.RoleAssistant}, []string{"msg_e:1 done "}},
		{"user message", domain.Message{ID: "msg_u", Role: domain.RoleUser, Content: "hi"}, []string{"msg_u:1 message USER hi"}},
		{"human reply", domain.Message{ID: "msg_h", Role: domain.RoleHuman, Content: "Ana"}, []string{"msg_h:1 message HUMAN Ana"}},
		{"status notice", domain.Message{ID: "msg_n", Role: domain.RoleSystem, Status: domain.StatusResolved}, []string{"msg_n:1 status RESOLVED"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, ev := range StoredEvents(tt.m) {
				got = append(got, describe(ev))
			}
			check(t, got, tt.want)
		})
	}
}

// A stored reply's done says how the answer came about, as the live one did.
func TestStoredDoneCarriesTheOutcome(t *testing.T) {
	for _, m := range []domain.Message{
		{ID: "msg_a", Role: domain.RoleAssistant, Content: "Thirty days."},
		{ID: "msg_f", Role: domain.RoleAssistant, Content: "Sorry.", FallbackReason: domain.FallbackNoKnowledge, OfferHandoff: true},
	} {
		events := StoredEvents(m)
		done := events[len(events)-1].Answer
		if done == nil || done.IsFallback != (m.FallbackReason != "") || done.FallbackReason != m.FallbackReason || done.OfferHandoff != m.OfferHandoff {
			t.Errorf("%s: done answer %+v, want the stored outcome", m.ID, done)
		}
	}
}
