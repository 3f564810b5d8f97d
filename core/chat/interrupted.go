package chat

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// interruptedAfter is at most how long past the engine's hard time limit an
// answer still in progress is taken for one whose process died (no longer
// than the limit itself, for short limits). Every answer ends, stored or
// failed, within the limit on a live process; the margin covers storing it
// and clocks that disagree.
const interruptedAfter = time.Minute

// closeBatch bounds the answers one sweep closes.
const closeBatch = 100

// CloseInterrupted closes the answers whose generation stopped without
// storing them, because their process died (a crash, an out-of-memory
// kill, a deploy past its grace period): an answer still in progress well
// past the engine's time limit (interruptedAfter). Each gets a stored reply
// holding what its visitor saw (the tokens the session's log kept) with
// fallback reason INTERRUPTED, so history and poll show what happened; its
// question's Idempotency-Key is released, so a retry asks again; and its
// live streams, which would otherwise wait forever, end with the error
// event domain.StoredEvents gives it. The worker's sweeper calls it; several
// may run at once (the store lets one close each answer). Returns how many
// it closed.
func (s *Service) CloseInterrupted(ctx context.Context) (int, error) {
	cutoff := s.clock.Now().Add(-(s.limits.Timeout + min(s.limits.Timeout, interruptedAfter)))
	answers, err := s.interrupted.AnswersStartedBefore(ctx, cutoff, closeBatch)
	if err != nil {
		return 0, err
	}
	closed := 0
	for _, a := range answers {
		ok, err := s.closeAnswer(ctx, a)
		if err != nil {
			return closed, err
		}
		if ok {
			closed++
		}
	}
	return closed, nil
}

func (s *Service) closeAnswer(ctx context.Context, a domain.AnswerInProgress) (bool, error) {
	ws, err := s.workspaces.GetWorkspace(ctx, a.WorkspaceID)
	if err != nil {
		return false, err
	}
	conv, err := s.conversations.GetConversation(ctx, a.WorkspaceID, a.ConversationID)
	if err != nil {
		return false, err
	}
	content, ends := s.saidSoFar(ctx, a)
	now := s.clock.Now()
	reply := domain.Message{
		ID: a.ReplyID, WorkspaceID: a.WorkspaceID, ConversationID: a.ConversationID, Role: domain.RoleAssistant,
		Content: content, TokenEnds: ends, FallbackReason: domain.FallbackInterrupted,
		OfferHandoff: ws.Allows(domain.FeatureHandoff), CreatedAt: now,
	}
	deliveries := domain.MessageDeliveries(&ws, conv, reply, now)
	closed, err := s.interrupted.CloseAnswer(ctx, a, reply, deliveries...)
	if err != nil || !closed {
		return false, err
	}
	s.log.WarnContext(ctx, "closed an answer whose process stopped before storing it",
		"sessionId", a.ConversationID, "messageId", a.ReplyID, "startedAt", a.StartedAt, "charsSent", len(content))
	events := domain.StoredEvents(reply)
	// Stored: a stream that resumes replays the end from PostgreSQL if
	// publishing it fails.
	s.lifecycle.Publish(ctx, events[len(events)-1])
	s.lifecycle.EnqueueDeliveries(ctx, deliveries)
	return true, nil
}

// saidSoFar is what the visitor was sent of an interrupted answer: its
// tokens in the session's log, in order, up to the first one missing. The
// log may have lost them (Redis restarted, the entry expired); the reply
// then records nothing said, which is all that can be shown for sure.
func (s *Service) saidSoFar(ctx context.Context, a domain.AnswerInProgress) (string, []int) {
	if s.recent == nil {
		return "", nil
	}
	events, _, err := s.recent.Since(ctx, a.ConversationID, "")
	if err != nil {
		s.log.WarnContext(ctx, "reading what an interrupted answer said", "sessionId", a.ConversationID, "error", err)
		return "", nil
	}
	var tokens []*domain.LiveEvent
	for _, ev := range events {
		if ev.MessageID == a.ReplyID && ev.Type == domain.EventToken {
			tokens = append(tokens, ev)
		}
	}
	slices.SortFunc(tokens, func(x, y *domain.LiveEvent) int { return x.Seq - y.Seq })
	var (
		b    strings.Builder
		ends []int
	)
	for _, ev := range tokens {
		switch next := len(ends) + 1; {
		case ev.Seq < next:
			continue // published twice (a retried publication)
		case ev.Seq > next || ev.Content == "":
			return b.String(), ends
		}
		b.WriteString(ev.Content)
		ends = append(ends, b.Len())
	}
	return b.String(), ends
}
