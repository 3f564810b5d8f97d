package chat

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
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
	s.ends = append(s.ends, s.sent.Len())
	s.pub.send(ports.SessionEvent{Type: ports.EventToken, SessionID: s.sessionID, MessageID: s.messageID, Seq: s.next(), Content: text})
}

// status announces a change of the conversation's state within the answer.
func (s *stream) status(st domain.ConversationStatus) {
	s.pub.send(ports.SessionEvent{Type: ports.EventStatus, SessionID: s.sessionID, MessageID: s.messageID, Seq: s.next(), Status: st})
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

// publishTimeout bounds one bus publication; a bus slower than that is
// treated as down for the rest of the answer.
const publishTimeout = time.Second

// publisher hands events to the caller at once and to the event bus in
// order on a goroutine of its own, so the bus can never delay an answer:
// when its queue is full or a publication fails or times out, the rest of the
// answer is not published (followers replay it from PostgreSQL).
type publisher struct {
	emit   Emit
	queue  chan ports.SessionEvent
	done   chan struct{}
	log    *slog.Logger
	broken atomic.Bool
}

func newPublisher(ctx context.Context, bus ports.EventBus, log *slog.Logger, emit Emit) *publisher {
	p := &publisher{emit: emit, queue: make(chan ports.SessionEvent, 256), done: make(chan struct{}), log: log}
	// Publishing outlives the request: followers on other pods must get the
	// whole answer even if the asking client left.
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(p.done)
		batch := make([]ports.SessionEvent, 0, 64)
		for ev := range p.queue {
			// Take whatever else is already queued: one round trip for the
			// lot, in order.
			batch = append(batch[:0], ev)
		more:
			for len(batch) < cap(batch) {
				select {
				case next, ok := <-p.queue:
					if !ok {
						break more
					}
					batch = append(batch, next)
				default:
					break more
				}
			}
			if p.broken.Load() {
				continue
			}
			pctx, cancel := context.WithTimeout(ctx, publishTimeout)
			err := bus.Publish(pctx, batch...)
			cancel()
			if err != nil {
				log.WarnContext(ctx, "publishing session events failed; skipping the rest of this answer", "sessionId", ev.SessionID, "type", ev.Type, "error", err)
				p.broken.Store(true)
			}
		}
	}()
	return p
}

func (p *publisher) send(ev ports.SessionEvent) {
	if p.emit != nil {
		p.emit(ev)
	}
	if p.broken.Load() {
		return
	}
	select {
	case p.queue <- ev:
	default:
		p.log.Warn("session event queue full; skipping the rest of this answer on the bus", "sessionId", ev.SessionID)
		p.broken.Store(true)
	}
}

// close waits until the queued events were handed to the bus, so the next
// answer's events cannot overtake this one's on the bus; at most one
// publication timeout, after which the bus counts as broken.
func (p *publisher) close() {
	close(p.queue)
	select {
	case <-p.done:
	case <-time.After(publishTimeout):
		// A hung bus: its goroutine drains the queue without publishing
		// once the publication in flight times out.
		p.broken.Store(true)
	}
}
