package chat

import (
	"context"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
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

// publisher hands events to the caller at once and to the conversation's
// Publication, which publishes them in order under the one publish policy
// (conversation.PublishBudget), so the bus can never delay an answer. It
// can hold what is sent off the bus until the answer is stored.
type publisher struct {
	emit Emit
	pub  *conversation.Publication

	mu sync.Mutex
	// held, while holding, are the events kept off the bus until release.
	held    []domain.SessionEvent
	holding bool
}

func newPublisher(ctx context.Context, lc *conversation.Lifecycle, emit Emit) *publisher {
	return &publisher{emit: emit, pub: lc.NewPublication(ctx)}
}

func (p *publisher) send(ev domain.SessionEvent) {
	if p.emit != nil {
		p.emit(ev)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holding {
		p.held = append(p.held, ev)
		return
	}
	p.pub.Send(ev)
}

// hold keeps the events sent from now on off the bus (the caller still
// gets them) until release or discard: an answer stored only at its end
// publishes nothing a follower could see before it is stored.
func (p *publisher) hold() {
	p.mu.Lock()
	p.holding = true
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
	defer p.mu.Unlock()
	p.pub.Send(append(append(make([]domain.SessionEvent, 0, len(first)+len(p.held)), first...), p.held...)...)
	p.held, p.holding = nil, false
}

// discard takes the events held so far off the queue and returns them
// (an answer not stored as it was generated); the publisher goes on
// holding. It returns nothing when nothing is held.
func (p *publisher) discard() []domain.SessionEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.holding {
		return nil
	}
	held := p.held
	p.held = nil
	return held
}

// close ends the publication (conversation.Publication.Close); what is
// still held is not published.
func (p *publisher) close() {
	p.pub.Close()
}
