package relay

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// waitUntil polls cond for up to five seconds.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// The feed is back (a Gap) but Redis does not serve the log yet: the
// stream stays open, keeps sending keep-alives, retries, and then sends
// what it missed, including what was published while it waited, once.
func TestCatchUpWaitsForRedis(t *testing.T) {
	w := newWorld(t)
	w.keepAlive = 5 * time.Millisecond
	s := newSink()
	run(t, open(t, w, ""), s)
	q := w.message(domain.RoleUser, msgID("q1"), "hi")
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three")
	w.publish(q, a.events[0])
	s.waitFor(t, 2)

	w.publishLogOnly(a.events[1]) // while the feed was away
	w.failLogReads(3)
	w.gap()
	w.publish(a.events[2]) // while the catch-up waits
	waitUntil(t, "the catch-up succeeds after three failures", func() bool { return w.logReadCount() >= 4 })
	w.store(a.msg)
	w.publish(a.events[3])
	check(t, s.waitFor(t, 5), lines(append([]domain.SessionEvent{q}, a.events...)))
	s.mu.Lock()
	pings := s.keepAlives
	s.mu.Unlock()
	if pings == 0 {
		t.Error("no keep-alive while the catch-up waited")
	}
	time.Sleep(20 * time.Millisecond)
	check(t, s.got(), lines(append([]domain.SessionEvent{q}, a.events...)))
}

// A catch-up that still fails once OutageLimit has passed since its first
// failure ends the stream with the error event that tells the client to
// resume; until then it is retried.
func TestCatchUpGivesUpPastTheOutageLimit(t *testing.T) {
	w := newWorld(t)
	s := newSink()
	st := open(t, w, "")
	done := make(chan error, 1)
	go func() { done <- st.Run(context.Background(), s) }()
	w.failLogReads(1 << 30)
	w.gap()
	waitUntil(t, "the catch-up is retried", func() bool { return w.logReadCount() >= 2 })
	if got := s.got(); len(got) != 0 {
		t.Fatalf("wrote %v while Redis was away", got)
	}
	w.clock.advance(31 * time.Second)
	select {
	case err := <-done:
		if err == nil {
			t.Error("Run = nil, want the outage")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stream is still open past the outage limit")
	}
	got := s.got()
	if len(got) != 1 || got[0] != " error UNAVAILABLE" || !strings.Contains(s.events[0].ErrorMessage, "Last-Event-ID") {
		t.Fatalf("wrote %v, want one error event telling the client to resume", got)
	}
	if n := w.open(); n != 0 {
		t.Errorf("%d subscriptions left open", n)
	}
}

// A message stored while Redis was away, whose publication failed, is
// only in PostgreSQL: the catch-up sends it, whether Redis kept its log (a
// hang, a dropped connection) or lost it (a restart), and whether or not
// the stream had sent a stored message before; what the conversation had
// before the stream opened is not sent.
func TestGapSendsWhatOnlyPostgreSQLHas(t *testing.T) {
	for _, logLost := range []bool{false, true} {
		for _, sentStored := range []bool{false, true} {
			t.Run(fmt.Sprintf("log lost %v, a stored message sent %v", logLost, sentStored), func(t *testing.T) {
				w := newWorld(t)
				w.publish(w.message(domain.RoleUser, msgID("q0"), "before"))
				s := newSink()
				var want []domain.SessionEvent
				q := w.message(domain.RoleUser, msgID("q1"), "hi")
				if sentStored {
					run(t, open(t, w, ""), s)
					w.publish(q)
					want = append(want, q)
				} else {
					w.publish(q)
					run(t, open(t, w, ""), s)
				}
				a := newAnswer(w, msgID("a1"), "one ", "two ")
				w.publish(a.events[0])
				s.waitFor(t, len(want)+1)
				if logLost {
					w.loseLog()
				}
				n := w.notice(msgID("n1"), domain.StatusHandoffRequested) // its publication failed
				w.gap()
				w.publish(a.events[1])
				w.store(a.msg)
				w.publish(a.events[2])
				want = append(want, a.events[0], n, a.events[1], a.events[2])
				check(t, s.waitFor(t, len(want)), lines(want))
				time.Sleep(20 * time.Millisecond)
				check(t, s.got(), lines(want))
			})
		}
	}
}

// A stream that has sent no stored message reads the stored messages from
// the conversation's start on its first catch-up, skipping what it had
// when the stream opened; later catch-ups start where that one ended, in
// one read.
func TestCatchUpReadsTheStoredMessagesOnce(t *testing.T) {
	w := newWorld(t)
	for i := range 7 {
		w.publish(w.message(domain.RoleUser, msgID(fmt.Sprint("q", i)), "before"))
	}
	s := newSink()
	run(t, open(t, w, ""), s)
	a := newAnswer(w, msgID("a1"), "one ", "two ", "three")
	// Each token follows a Gap: once it is written, that catch-up is over.
	w.gap()
	w.publish(a.events[0])
	s.waitFor(t, 1)
	first := w.reads()
	w.gap()
	w.publish(a.events[1])
	s.waitFor(t, 2)
	if n := w.reads() - first; first == 0 || n != 1 {
		t.Errorf("the catch-ups read %d and %d pages, want some and then 1", first, n)
	}
	later := w.message(domain.RoleUser, msgID("q9"), "after") // its publication failed
	w.gap()
	w.publish(a.events[2])
	check(t, s.waitFor(t, 4), lines([]domain.SessionEvent{a.events[0], a.events[1], later, a.events[2]}))
}
