package conversation

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

// Past its retry budget (PublishBudget) a closed publication gives up on what it queued and
// stops, and close does not wait for a bus that is down.
func TestPublicationGivesUpAfterItsBudget(t *testing.T) {
	bus := &flakyBus{down: true}
	p := startPublication(context.Background(), bus, slog.New(slog.NewTextHandler(io.Discard, nil)), publishPolicy{budget: 300 * time.Millisecond, wait: PublishWait})
	p.Send(tokenEvent(1))
	start := time.Now()
	p.Close()
	// The margin is for a loaded machine; the bus never comes back here.
	if d := time.Since(start); d > PublishWait+2*time.Second {
		t.Errorf("close waited %s for a bus that is down", d)
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		t.Fatal("the publisher still retries long after its budget")
	}
	_, attempts := bus.published()
	bus.setDown(false)
	p.Send(tokenEvent(2)) // after it stopped: nothing publishes it
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

// Past its retry budget the publication skips what it queued but not what
// comes next: once the bus is back the rest of the answer, its done above
// all, reaches the followers, who fill the hole from the stored reply.
func TestPublicationGoesOnAfterSkippingWhatKeptFailing(t *testing.T) {
	bus := &flakyBus{down: true}
	logs := &syncBuffer{}
	p := startPublication(context.Background(), bus, slog.New(slog.NewTextHandler(logs, nil)), publishPolicy{budget: 300 * time.Millisecond, wait: PublishWait})
	for seq := 1; seq <= 5; seq++ {
		p.Send(tokenEvent(seq))
	}
	waitUntil(t, "the publisher skips what kept failing", func() bool { return strings.Contains(logs.String(), "publishing session events kept failing") })
	bus.setDown(false)
	for seq := 6; seq <= 8; seq++ {
		p.Send(tokenEvent(seq))
	}
	p.Close()
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
