package chat

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// flakyBus fails every publication while down is set, and records what it
// accepted.
type flakyBus struct {
	mu       sync.Mutex
	down     bool
	attempts int
	events   []domain.SessionEvent
}

func (b *flakyBus) Publish(_ context.Context, events ...domain.SessionEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.attempts++
	if b.down {
		return domain.Unavailable("redis", errors.New("connection refused"))
	}
	b.events = append(b.events, events...)
	return nil
}

func (b *flakyBus) setDown(down bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.down = down
}

func (b *flakyBus) published() ([]domain.SessionEvent, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]domain.SessionEvent(nil), b.events...), b.attempts
}

func tokenEvent(seq int) domain.SessionEvent {
	return domain.SessionEvent{Type: domain.EventToken, SessionID: "ses_p", MessageID: "msg_p", Seq: seq, Content: "x"}
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A bus that goes down mid-answer (a Redis restart) and comes back gets
// every event, once, in order; the caller got each at once all along.
func TestPublisherRetriesInOrderThroughAnOutage(t *testing.T) {
	bus := &flakyBus{}
	var emitted []int
	lifecycle := conversation.New(conversation.Deps{Bus: bus, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	p := newPublisher(context.Background(), lifecycle, domain.Conversation{}, func(ev domain.SessionEvent) { emitted = append(emitted, ev.Seq) })
	for seq := 1; seq <= 10; seq++ {
		p.send(tokenEvent(seq))
	}
	waitUntil(t, "the first events are published", func() bool { evs, _ := bus.published(); return len(evs) == 10 })
	bus.setDown(true)
	for seq := 11; seq <= 300; seq++ {
		p.send(tokenEvent(seq))
		if seq == 150 {
			// Several failed attempts, each with more queued behind it.
			waitUntil(t, "publications fail", func() bool { _, n := bus.published(); return n >= 4 })
		}
	}
	if len(emitted) != 300 {
		t.Fatalf("the caller got %d of 300 events while the bus was down", len(emitted))
	}
	bus.setDown(false)
	p.close()
	waitUntil(t, "everything is published", func() bool { evs, _ := bus.published(); return len(evs) >= 300 })
	evs, attempts := bus.published()
	if len(evs) != 300 {
		t.Fatalf("bus got %d events, want 300", len(evs))
	}
	for i, ev := range evs {
		if ev.Seq != i+1 {
			t.Fatalf("event %d has seq %d: order lost", i, ev.Seq)
		}
	}
	if attempts < 5 {
		t.Errorf("%d publications; the outage should have cost several", attempts)
	}
}
