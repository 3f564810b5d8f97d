package conversation

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// The one publish policy of every session event, whoever publishes it (an
// answer's tokens, a visitor's message, a person's reply, a state change).
// Publishing is the live relay only: PostgreSQL holds what resuming clients
// replay, so a publication never fails its caller. A Redis restart or
// failover takes seconds, and events published late are still in order and
// complete, which a follower needs; so a failed publication is retried,
// with backoff, for up to PublishBudget of failures in a row, on a
// goroutine of its own, and the caller waits for its events to reach the
// bus for at most PublishWait: a bus that is down must never hold up a
// request, an answer or a worker. Past the budget what is queued is skipped
// and what comes next is published again: a follower sees the hole and
// fills it from PostgreSQL.
const (
	PublishBudget = 30 * time.Second
	PublishWait   = time.Second
)

const (
	// publishBackoffMin and publishBackoffMax bound the wait between two
	// attempts.
	publishBackoffMin = 50 * time.Millisecond
	publishBackoffMax = 2 * time.Second
	// publishBatch bounds one publication; an answer is a few thousand
	// events at most.
	publishBatch = 512
	// publishQueueMax bounds what waits for a bus that is down, far above
	// any answer (its tokens, plus its messages).
	publishQueueMax = 20_000
)

// publishPolicy is PublishBudget and PublishWait; tests shorten them.
type publishPolicy struct {
	budget, wait time.Duration
}

var defaultPublishPolicy = publishPolicy{budget: PublishBudget, wait: PublishWait}

// Publish publishes events, in order, under the publish policy, and
// returns once they reached the bus or PublishWait passed.
func (l *Lifecycle) Publish(ctx context.Context, events ...domain.SessionEvent) {
	if len(events) == 0 {
		return
	}
	p := l.NewPublication(ctx)
	p.Send(events...)
	p.Close()
}

// PublishMessages publishes the live events of stored messages
// (domain.MessageEvent), in order, as Publish does. Internal notes
// (domain.Role.Internal) are never published to the session: its
// followers are the visitor and integrations acting for them.
func (l *Lifecycle) PublishMessages(ctx context.Context, msgs ...domain.Message) {
	events := make([]domain.SessionEvent, 0, len(msgs))
	for _, m := range msgs {
		if m.Role.Internal() {
			continue
		}
		events = append(events, domain.MessageEvent(m))
	}
	l.Publish(ctx, events...)
}

// Publication is an ordered stream of session events on their way to the
// bus under the publish policy: an answer's events, sent as they are
// generated. Send never waits for the bus. Close it when done.
type Publication struct {
	bus    ports.EventBus
	log    *slog.Logger
	policy publishPolicy

	mu      sync.Mutex
	pending []domain.SessionEvent
	closed  bool
	// dropped is set when the queue overflowed: the rest is not published.
	dropped bool

	wake chan struct{}
	done chan struct{}
}

// NewPublication starts a publication. Publishing outlives ctx's
// cancellation: followers on other pods must get the whole answer even if
// the asking client left.
func (l *Lifecycle) NewPublication(ctx context.Context) *Publication {
	return startPublication(ctx, l.d.Bus, l.d.Log, l.publish)
}

func startPublication(ctx context.Context, bus ports.EventBus, log *slog.Logger, policy publishPolicy) *Publication {
	p := &Publication{bus: bus, log: log, policy: policy, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go p.run(context.WithoutCancel(ctx))
	return p
}

// Send queues events for the bus, after everything sent before.
func (p *Publication) Send(events ...domain.SessionEvent) {
	if len(events) == 0 {
		return
	}
	p.mu.Lock()
	switch {
	case p.dropped:
	case len(p.pending)+len(events) > publishQueueMax:
		p.dropped = true
		p.pending = nil
		p.log.Warn("session event queue full; skipping the rest of these events on the bus", "sessionId", events[0].SessionID)
	default:
		p.pending = append(p.pending, events...)
	}
	p.mu.Unlock()
	p.wakeUp()
}

func (p *Publication) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take returns up to max queued events, and whether the publication is
// done (closed with nothing left, or dropped).
func (p *Publication) take(batch []domain.SessionEvent, max int) ([]domain.SessionEvent, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped {
		return nil, true
	}
	n := min(max, len(p.pending))
	batch = append(batch, p.pending[:n]...)
	p.pending = p.pending[n:]
	return batch, len(batch) == 0 && p.closed
}

func (p *Publication) run(ctx context.Context) {
	defer close(p.done)
	var (
		batch        []domain.SessionEvent
		failingSince time.Time
		backoff      time.Duration
		stop         bool
	)
	for {
		// Whatever is queued goes in one publication, after what failed
		// last time: one round trip for the lot, in order.
		batch, stop = p.take(batch, publishBatch-len(batch))
		if stop {
			return
		}
		if len(batch) == 0 {
			<-p.wake
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, p.policy.wait)
		err := p.bus.Publish(pctx, batch...)
		cancel()
		if err == nil {
			batch, failingSince, backoff = batch[:0], time.Time{}, 0
			continue
		}
		now := time.Now()
		if failingSince.IsZero() {
			failingSince = now
			p.log.WarnContext(ctx, "publishing session events failed; retrying", "sessionId", batch[0].SessionID, "error", err)
		}
		if now.Sub(failingSince) >= p.policy.budget {
			p.log.WarnContext(ctx, "publishing session events kept failing; skipping what is queued on the bus",
				"sessionId", batch[0].SessionID, "events", len(batch), "for", now.Sub(failingSince).Round(time.Millisecond), "error", err)
			// Followers still live when the bus is back see a hole and
			// fill it from the stored messages: what comes next must
			// still reach them.
			p.mu.Lock()
			p.pending = nil
			p.mu.Unlock()
			batch, failingSince, backoff = batch[:0], time.Time{}, 0
			continue
		}
		backoff = min(max(2*backoff, publishBackoffMin), publishBackoffMax)
		time.Sleep(backoff)
	}
}

// Close waits until the queued events were handed to the bus, so what is
// published next does not overtake them, but at most PublishWait: a bus
// that is down must not hold up the caller. The events are still
// published, in order, as long as the retries last.
func (p *Publication) Close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wakeUp()
	select {
	case <-p.done:
	case <-time.After(p.policy.wait):
	}
}
