package chat

import (
	"context"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
)

// stream numbers an answer's events and remembers what was sent, which is by
// construction what done.message reports.
type stream struct {
	// send takes the answer's events: to the caller and the bus as they
	// come (runStreamed), or into a buffer published once the turn is
	// stored (runWhole).
	send      func(...domain.SessionEvent)
	sessionID string
	messageID string
	seq       int
	sent      strings.Builder
	// ends are where each token ended in sent (Message.TokenEnds), so a
	// resumed stream can be replayed token by token from the stored reply.
	ends []int
	// whole gathers the text into one token, sent by flush: an answer that
	// nobody watches being written (runWhole) is published as one token
	// rather than one per word, a publication per answer rather than per
	// word.
	whole bool
	// firstText is set to the time the first text was composed.
	firstText *time.Time
}

// newStream starts the stream of t's reply, whose events go to send.
func (t *turn) newStream(send func(...domain.SessionEvent), whole bool) *stream {
	return &stream{send: send, sessionID: t.conv.ID, messageID: t.question.ReplyID, whole: whole, firstText: &t.firstText}
}

func (s *stream) next() int {
	s.seq++
	return s.seq
}

func (s *stream) token(text string) {
	if text == "" {
		return
	}
	if s.firstText != nil && s.firstText.IsZero() {
		*s.firstText = time.Now()
	}
	s.sent.WriteString(text)
	if s.whole {
		return
	}
	s.ends = append(s.ends, s.sent.Len())
	s.send(domain.SessionEvent{Type: domain.EventToken, SessionID: s.sessionID, MessageID: s.messageID, Seq: s.next(), Content: text})
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
	s.send(domain.SessionEvent{Type: domain.EventToken, SessionID: s.sessionID, MessageID: s.messageID, Seq: s.next(), Content: s.sent.String()[from:]})
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

// storeFailed is the error event that ends the stream of a reply that
// could not be stored.
func (s *stream) storeFailed(err error) domain.SessionEvent {
	return domain.SessionEvent{Type: domain.EventError, SessionID: s.sessionID, MessageID: s.messageID, Seq: s.next(),
		ErrorCode: domain.ErrorCode(err), ErrorMessage: "the answer could not be stored; retry later"}
}

// publisher hands events to the caller at once and to the conversation's
// Publication, which publishes them in order under the one publish policy
// (conversation.PublishBudget), so the bus can never delay an answer.
type publisher struct {
	emit Emit
	pub  *conversation.Publication
}

func newPublisher(ctx context.Context, lc *conversation.Lifecycle, conv domain.Conversation, emit Emit) *publisher {
	return &publisher{emit: emit, pub: lc.NewConversationPublication(ctx, conv)}
}

func (p *publisher) send(events ...domain.SessionEvent) {
	if p.emit != nil {
		for _, ev := range events {
			p.emit(ev)
		}
	}
	p.pub.Send(events...)
}

// close ends the publication (conversation.Publication.Close).
func (p *publisher) close() {
	p.pub.Close()
}
