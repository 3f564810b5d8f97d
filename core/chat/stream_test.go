package chat

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

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
	p := startPublisher(context.Background(), bus, slog.New(slog.NewTextHandler(io.Discard, nil)),
		func(ev domain.SessionEvent) { emitted = append(emitted, ev.Seq) }, time.Minute)
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

// Past its retry budget a closed publisher gives up on what it queued and
// stops, and close does not wait for a bus that is down.
func TestPublisherGivesUpAfterItsBudget(t *testing.T) {
	bus := &flakyBus{down: true}
	p := startPublisher(context.Background(), bus, slog.New(slog.NewTextHandler(io.Discard, nil)), nil, 300*time.Millisecond)
	p.send(tokenEvent(1))
	start := time.Now()
	p.close()
	if d := time.Since(start); d > publishTimeout+200*time.Millisecond {
		t.Errorf("close waited %s for a bus that is down", d)
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the publisher still retries long after its budget")
	}
	_, attempts := bus.published()
	bus.setDown(false)
	p.send(tokenEvent(2)) // after it stopped: nothing publishes it
	time.Sleep(50 * time.Millisecond)
	if evs, n := bus.published(); len(evs) != 0 || n != attempts {
		t.Errorf("after giving up: %d events published, %d attempts (was %d)", len(evs), n, attempts)
	}
	if attempts < 2 {
		t.Errorf("gave up after %d attempt(s), want retries first", attempts)
	}
}

// syncBuffer is a log sink tests read while the publisher writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Past its retry budget the publisher skips what it queued but not what
// comes next: once the bus is back the rest of the answer, its done above
// all, reaches the followers, who fill the hole from the stored reply.
func TestPublisherGoesOnAfterSkippingWhatKeptFailing(t *testing.T) {
	bus := &flakyBus{down: true}
	logs := &syncBuffer{}
	p := startPublisher(context.Background(), bus, slog.New(slog.NewTextHandler(logs, nil)), nil, 300*time.Millisecond)
	for seq := 1; seq <= 5; seq++ {
		p.send(tokenEvent(seq))
	}
	waitUntil(t, "the publisher skips what kept failing", func() bool { return strings.Contains(logs.String(), "publishing session events kept failing") })
	bus.setDown(false)
	for seq := 6; seq <= 8; seq++ {
		p.send(tokenEvent(seq))
	}
	p.close()
	waitUntil(t, "the rest of the answer is published", func() bool { evs, _ := bus.published(); return len(evs) >= 3 })
	evs, _ := bus.published()
	var seqs []int
	for _, ev := range evs {
		seqs = append(seqs, ev.Seq)
	}
	if fmt.Sprint(seqs) != "[6 7 8]" {
		t.Fatalf("published seqs %v, want [6 7 8]", seqs)
	}
}
