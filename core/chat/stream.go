package chat

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// stream numbers an answer's events and remembers what was sent, which is by
// construction what done.message reports.
type stream struct {
	pub       *publisher
	sessionID string
	messageID string
	seq       int
	sent      strings.Builder
	// ends are where each token ended in sent (Message.TokenEnds), so a
	// resumed stream can be replayed token by token from the stored reply.
	ends []int
	// whole gathers the text into one token, sent by flush: an answer that
	// nobody watches being written (Run stores it whole) is published as
	// one token rather than one per word, a publication per answer rather
	// than per word.
	whole bool
}

func (s *stream) next() int {
	s.seq++
	return s.seq
}

func (s *stream) token(text string) {
	if text == "" {
		return
	}
	s.sent.WriteString(text)
	if s.whole {
		return
	}
	s.ends = append(s.ends, s.sent.Len())
	s.pub.send(domain.SessionEvent{Type: domain.EventToken, SessionID: s.sessionID, MessageID: s.messageID, Seq: s.next(), Content: text})
}

// flush sends what a whole stream gathered since its last flush as one
// token; it does nothing for a stream that sends tokens as they come.
func (s *stream) flush() {
	from := 0
	if n := len(s.ends); n > 0 {
		from = s.ends[n-1]
	}
	if !s.whole || s.sent.Len() == from {
		return
	}
	s.ends = append(s.ends, s.sent.Len())
	s.pub.send(domain.SessionEvent{Type: domain.EventToken, SessionID: s.sessionID, MessageID: s.messageID, Seq: s.next(), Content: s.sent.String()[from:]})
}

// words sends text as word-sized tokens (a word and the space after it), as
// a model would stream it.
func (s *stream) words(text string) {
	start := 0
	for i, r := range text {
		next := i + utf8.RuneLen(r)
		if unicode.IsSpace(r) && next < len(text) {
			if n, _ := utf8.DecodeRuneInString(text[next:]); !unicode.IsSpace(n) {
				s.token(text[start:next])
				start = next
			}
		}
	}
	s.token(text[start:])
}

// publishTimeout bounds one bus publication, and how long an answer waits
// at its end for its events to reach the bus.
const publishTimeout = time.Second

// Publication retries: a Redis restart or failover takes seconds, and an
// answer's events published late are still in order and complete, which a
// follower needs. Past the budget what is queued is dropped from the bus,
// and what comes next is published again: a follower sees the hole and
// fills it from PostgreSQL once the answer is stored.
const (
	publishRetryBudget = 30 * time.Second
	publishBackoffMin  = 50 * time.Millisecond
	publishBackoffMax  = 2 * time.Second
	// publishBatch bounds one publication; an answer is a few thousand
	// events at most.
	publishBatch = 512
	// publishQueueMax bounds what waits for a bus that is down, far above
	// any answer (MaxAnswerChars tokens, plus its messages).
	publishQueueMax = 20_000
)

// publisher hands events to the caller at once and to the event bus in
// order on a goroutine of its own, so the bus can never delay an answer.
// A failed publication is retried, with the events queued since, in order,
// with backoff, for up to budget of failures in a row; then what is queued
// is skipped, and publishing goes on with what is sent next.
type publisher struct {
	emit   Emit
	bus    ports.EventBus
	log    *slog.Logger
	budget time.Duration

	mu      sync.Mutex
	pending []domain.SessionEvent
	closed  bool
	// dropped is set when the queue overflowed: the rest of the answer is
	// not published.
	dropped bool
	// held keeps pending events off the bus until release.
	held bool

	wake chan struct{}
	done chan struct{}
}

func newPublisher(ctx context.Context, bus ports.EventBus, log *slog.Logger, emit Emit) *publisher {
	return startPublisher(ctx, bus, log, emit, publishRetryBudget)
}

func startPublisher(ctx context.Context, bus ports.EventBus, log *slog.Logger, emit Emit, budget time.Duration) *publisher {
	p := &publisher{emit: emit, bus: bus, log: log, budget: budget, wake: make(chan struct{}, 1), done: make(chan struct{})}
	// Publishing outlives the request: followers on other pods must get the
	// whole answer even if the asking client left.
	go p.run(context.WithoutCancel(ctx))
	return p
}

func (p *publisher) send(ev domain.SessionEvent) {
	if p.emit != nil {
		p.emit(ev)
	}
	p.mu.Lock()
	switch {
	case p.dropped:
	case len(p.pending) >= publishQueueMax:
		p.dropped = true
		p.pending = nil
		p.log.Warn("session event queue full; skipping the rest of this answer on the bus", "sessionId", ev.SessionID)
	default:
		p.pending = append(p.pending, ev)
	}
	p.mu.Unlock()
	p.wakeUp()
}

// hold keeps the events sent from now on off the bus (the caller still
// gets them) until release or discard: an answer stored only at its end
// publishes nothing a follower could see before it is stored.
func (p *publisher) hold() {
	p.mu.Lock()
	p.held = true
	p.mu.Unlock()
}

// release publishes first, then what was held, and everything sent from
// now on. On a publisher that holds nothing it is send.
func (p *publisher) release(first ...domain.SessionEvent) {
	for _, ev := range first {
		if p.emit != nil {
			p.emit(ev)
		}
	}
	p.mu.Lock()
	if !p.dropped {
		p.pending = append(append(make([]domain.SessionEvent, 0, len(first)+len(p.pending)), first...), p.pending...)
	}
	p.held = false
	p.mu.Unlock()
	p.wakeUp()
}

// discard takes the events held so far off the queue and returns them
// (an answer not stored as it was generated); the publisher goes on
// holding. It returns nothing when nothing is held.
func (p *publisher) discard() []domain.SessionEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held {
		return nil
	}
	held := p.pending
	p.pending = nil
	return held
}

func (p *publisher) wakeUp() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// take returns up to max queued events, and whether the publisher is done
// (closed with nothing left, or dropped).
func (p *publisher) take(batch []domain.SessionEvent, max int) ([]domain.SessionEvent, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropped {
		return nil, true
	}
	if p.held {
		// Closed while holding: what was held is not published.
		return batch, len(batch) == 0 && p.closed
	}
	n := min(max, len(p.pending))
	batch = append(batch, p.pending[:n]...)
	p.pending = p.pending[n:]
	return batch, len(batch) == 0 && p.closed
}

func (p *publisher) run(ctx context.Context) {
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
		pctx, cancel := context.WithTimeout(ctx, publishTimeout)
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
		if now.Sub(failingSince) >= p.budget {
			p.log.WarnContext(ctx, "publishing session events kept failing; skipping what is queued on the bus",
				"sessionId", batch[0].SessionID, "events", len(batch), "for", now.Sub(failingSince).Round(time.Millisecond), "error", err)
			// Followers still live when the bus is back see a hole and
			// fill it from the stored reply, at its done: that done, and
			// the rest of the answer, must still reach them.
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

// close waits until the queued events were handed to the bus, so the next
// answer's events do not overtake this one's, but at most one publication
// timeout: a bus that is down must not hold up the caller. The events are
// still published, in order, as long as the retries last.
func (p *publisher) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wakeUp()
	select {
	case <-p.done:
	case <-time.After(publishTimeout):
	}
}
