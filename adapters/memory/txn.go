package memory

import (
	"slices"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// txn undoes the writes of one operation when a later step fails, so an
// operation stores all of it or nothing, as a transaction does.
type txn struct {
	s    *Conversations
	undo []func()
}

func (t *txn) rollback() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
	t.undo = nil
}

// setConv replaces c's conversation, to be undone.
func (t *txn) setConv(c *conversation, conv domain.Conversation) {
	prev := c.conv
	c.conv = conv
	t.undo = append(t.undo, func() { c.conv = prev })
}

// deliver writes deliveries to the outbox. An id written before is a
// conflict, as the outbox's primary key makes it.
func (t *txn) deliver(ds []domain.Delivery) error {
	for _, d := range ds {
		if t.s.outboxID[d.ID] {
			return domain.Conflict("a message with this id already exists")
		}
		if d.Status == "" {
			d.Status = domain.DeliveryPending
		}
		d.NextAttemptAt, d.CreatedAt = dbTime(d.NextAttemptAt), dbTime(d.CreatedAt)
		t.s.outbox = append(t.s.outbox, d)
		t.s.outboxID[d.ID] = true
		id := d.ID
		t.undo = append(t.undo, func() {
			t.s.outbox = t.s.outbox[:len(t.s.outbox)-1]
			delete(t.s.outboxID, id)
		})
	}
	return nil
}

// insert appends msgs to c as the PostgreSQL store's append statement
// does: nothing when c is not in state while (any when ""), an inbound
// event's message already stored skipped, the conversation counted and
// its preview and activity moved to the newest message unless that is
// older than its activity. It reports whether anything was inserted.
func (t *txn) insert(c *conversation, msgs []domain.Message, while domain.ConversationStatus) (bool, error) {
	s := t.s
	if while != "" && c.conv.Status != while {
		return false, nil
	}
	var inserted []domain.Message
	for _, m := range msgs {
		if m.InboundEventID != "" {
			if _, ok := s.inbound[m.InboundEventID]; ok {
				continue
			}
		}
		if s.failMessage != nil {
			if err := s.failMessage(m); err != nil {
				return false, err
			}
		}
		if _, ok := s.messages[m.ID]; ok {
			return false, domain.Conflict("a message with this id already exists")
		}
		key := scopedKey{c.conv.WorkspaceID, m.IdempotencyKey}
		if m.IdempotencyKey != "" {
			if _, ok := s.keys[key]; ok {
				return false, domain.ErrAnswerInProgress
			}
		}
		stored := storedMessage(m)
		stored.WorkspaceID, stored.ConversationID = c.conv.WorkspaceID, c.conv.ID
		c.messages = append(c.messages, stored)
		s.messages[m.ID] = messageRef{conv: c, index: len(c.messages) - 1}
		if m.InboundEventID != "" {
			s.inbound[m.InboundEventID] = m.ID
		}
		if m.IdempotencyKey != "" {
			s.keys[key] = m.ID
		}
		if m.Trace != nil {
			s.traces[m.ID] = *m.Trace
		}
		t.undo = append(t.undo, func() {
			c.messages = c.messages[:len(c.messages)-1]
			delete(s.messages, m.ID)
			delete(s.traces, m.ID)
			if m.InboundEventID != "" {
				delete(s.inbound, m.InboundEventID)
			}
			if m.IdempotencyKey != "" {
				delete(s.keys, key)
			}
		})
		inserted = append(inserted, stored)
	}
	if len(inserted) == 0 {
		return false, nil
	}
	if tracksAnswers(msgs) {
		t.trackAnswers(c, inserted)
	}
	latest, preview := newest(msgs)
	conv := c.conv
	conv.MessageCount += len(inserted)
	if !latest.Before(conv.LastActivityAt) {
		conv.LastMessage, conv.LastActivityAt = preview, latest
	}
	t.setConv(c, conv)
	return true, nil
}

// trackAnswers keeps answers in progress in step with inserted messages:
// a question whose reply is not among them starts one (unless one with its
// reply id exists), and a reply ends its own.
func (t *txn) trackAnswers(c *conversation, inserted []domain.Message) {
	s := t.s
	for _, q := range inserted {
		if q.ReplyID == "" || slices.ContainsFunc(inserted, func(r domain.Message) bool { return r.ID == q.ReplyID }) {
			continue
		}
		if _, ok := s.answers[q.ReplyID]; ok {
			continue
		}
		s.answers[q.ReplyID] = domain.AnswerInProgress{ReplyID: q.ReplyID, WorkspaceID: c.conv.WorkspaceID,
			ConversationID: c.conv.ID, QuestionID: q.ID, StartedAt: q.CreatedAt}
		id := q.ReplyID
		t.undo = append(t.undo, func() { delete(s.answers, id) })
	}
	for _, r := range inserted {
		t.endAnswer(r.ID)
	}
}

// endAnswer removes the answer in progress whose reply is replyID,
// reporting whether there was one.
func (t *txn) endAnswer(replyID string) bool {
	a, ok := t.s.answers[replyID]
	if !ok {
		return false
	}
	delete(t.s.answers, replyID)
	t.undo = append(t.undo, func() { t.s.answers[replyID] = a })
	return true
}

// tracksAnswers reports whether storing msgs starts or ends an answer in
// progress: a question whose reply is not among them, or a reply whose
// question is not.
func tracksAnswers(msgs []domain.Message) bool {
	for _, m := range msgs {
		if m.ReplyID != "" && !slices.ContainsFunc(msgs, func(r domain.Message) bool { return r.ID == m.ReplyID }) {
			return true
		}
		if m.Role == domain.RoleAssistant && !slices.ContainsFunc(msgs, func(q domain.Message) bool { return q.ReplyID == m.ID }) {
			return true
		}
	}
	return false
}

// newest returns the time and preview of the newest of msgs; a tie goes
// to the later one.
func newest(msgs []domain.Message) (time.Time, string) {
	var latest time.Time
	var preview string
	for i, m := range msgs {
		at := dbTime(m.CreatedAt)
		if i == 0 || !at.Before(latest) {
			latest, preview = at, domain.Preview(m.Content, lastMessageRunes)
		}
	}
	return latest, preview
}

// dbTime is a time as PostgreSQL keeps it: UTC, to the microsecond.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// storedMessage is m as a read gives it back: its time as stored, no
// trace, no feedback (set by the feedback store alone), no empty citation
// list.
func storedMessage(m domain.Message) domain.Message {
	m = cloneMessage(m)
	m.CreatedAt, m.Trace, m.Feedback = dbTime(m.CreatedAt), nil, nil
	if len(m.Citations) == 0 {
		m.Citations = nil
	}
	return m
}

// returned is what a write returns of the messages it stored: the same,
// with their times as stored.
func returned(msgs []domain.Message) []domain.Message {
	out := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		m.CreatedAt = dbTime(m.CreatedAt)
		out[i] = m
	}
	return out
}

// cloneMessage copies m's slices, so a caller never shares them with the
// store.
func cloneMessage(m domain.Message) domain.Message {
	m.Citations, m.TokenEnds = slices.Clone(m.Citations), slices.Clone(m.TokenEnds)
	return m
}
