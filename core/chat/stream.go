package chat

import (
	"context"
	"log/slog"
	"strings"
	"unicode"

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
	s.pub.send(ports.SessionEvent{Type: ports.EventToken, SessionID: s.sessionID, MessageID: s.messageID, Seq: s.next(), Content: text})
}

// words sends text as word-sized tokens (a word and the space after it), as
// a model would stream it.
func (s *stream) words(text string) {
	start := 0
	for i, r := range text {
		if unicode.IsSpace(r) && i+1 < len(text) && !unicode.IsSpace(rune(text[i+1])) {
			s.token(text[start : i+1])
			start = i + 1
		}
	}
	s.token(text[start:])
}

// publisher hands events to the caller at once and to the event bus in
// order on a goroutine of its own, so a slow bus never delays tokens.
type publisher struct {
	emit  Emit
	queue chan ports.SessionEvent
	done  chan struct{}
}

func newPublisher(ctx context.Context, bus ports.EventBus, log *slog.Logger, emit Emit) *publisher {
	p := &publisher{emit: emit, queue: make(chan ports.SessionEvent, 256), done: make(chan struct{})}
	// Publishing outlives the request: followers on other pods must get the
	// whole answer even if the asking client left.
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer close(p.done)
		failed := false
		for ev := range p.queue {
			if failed {
				continue // drain: the caller must never wait on a broken bus
			}
			if err := bus.Publish(ctx, ev); err != nil {
				// Live followers miss the rest of this answer; they replay it
				// from PostgreSQL, which holds the durable copy.
				log.WarnContext(ctx, "publishing session events failed; skipping the rest of this answer", "sessionId", ev.SessionID, "type", ev.Type, "error", err)
				failed = true
			}
		}
	}()
	return p
}

func (p *publisher) send(ev ports.SessionEvent) {
	if p.emit != nil {
		p.emit(ev)
	}
	p.queue <- ev
}

// close waits until every event has been handed to the bus.
func (p *publisher) close() {
	close(p.queue)
	<-p.done
}
