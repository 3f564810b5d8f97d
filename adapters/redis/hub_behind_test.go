package redis_test

import (
	"testing"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// burst publishes n tokens of a session in one publication, as a publisher
// sends what it queued while Redis was away, and returns once the hub has
// handed every one of them to its followers: marker, a follower of another
// session, gets an event published after them on the same connection.
func burst(t *testing.T, bus *redisadapter.EventBus, session string, from, n int, marker ports.Subscription, markerSession string) {
	t.Helper()
	batch := make([]domain.SessionEvent, 0, n)
	for seq := from; seq < from+n; seq++ {
		batch = append(batch, token(session, seq))
	}
	if err := bus.Publish(t.Context(), batch...); err != nil {
		t.Fatal(err)
	}
	if err := bus.Publish(t.Context(), token(markerSession, from)); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, marker); ev.Seq != from {
		t.Fatalf("marker got %+v", ev.SessionEvent)
	}
}

// A follower that falls behind (a burst bigger than its buffer, as when a
// publisher sends what it queued during an outage) is not cut off: it gets
// what its buffer holds, then a Gap, and after taking it new events again.
// What it missed is in the session's log, which the relay reads on a Gap.
func TestHubFollowerThatFallsBehindGetsAGap(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	const buffer = 8
	hub := newHub(t, client, redisadapter.HubOptions{Buffer: buffer})
	bus := redisadapter.NewEventBus(client)
	slow := subscribeHub(t, hub, sess("behind"))
	marker := subscribeHub(t, hub, sess("behind_marker"))

	burst(t, bus, sess("behind"), 1, 4*buffer, marker, sess("behind_marker"))
	for seq := 1; seq <= buffer; seq++ {
		if ev := next(t, slow); ev.Seq != seq || ev.Gap {
			t.Fatalf("buffered event %d: %+v (gap %v)", seq, ev.SessionEvent, ev.Gap)
		}
	}
	if ev := next(t, slow); !ev.Gap {
		t.Fatalf("after its buffer the follower got %+v, want a Gap", ev.SessionEvent)
	}
	// Everything it missed is in the log, after the last event it got.
	events, found, err := redisadapter.NewEventLog(client).Since(t.Context(), sess("behind"), "")
	if err != nil || !found || len(events) != 4*buffer {
		t.Fatalf("log: %d events, found %v, %v", len(events), found, err)
	}
	// Taken the Gap, it follows again, and falls behind again the same way.
	burst(t, bus, sess("behind"), 4*buffer+1, 1, marker, sess("behind_marker"))
	if ev := next(t, slow); ev.Seq != 4*buffer+1 {
		t.Fatalf("after the Gap: %+v", ev.SessionEvent)
	}
	burst(t, bus, sess("behind"), 4*buffer+2, 2*buffer, marker, sess("behind_marker"))
	for range buffer {
		next(t, slow)
	}
	if ev := next(t, slow); !ev.Gap {
		t.Fatalf("falling behind again: %+v, want a Gap", ev.SessionEvent)
	}
	select {
	case <-slow.Done():
		t.Fatalf("the follower was cut off: %v", slow.Err())
	default:
	}
}
