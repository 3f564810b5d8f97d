package memory

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// KeyedQuestion returns the workspace's question stored under key and its
// reply when stored. Returns domain.ErrNotFound when no question has the
// key.
func (s *Conversations) KeyedQuestion(ctx context.Context, workspaceID, key string) (domain.Message, *domain.Message, error) {
	if err := ctx.Err(); err != nil {
		return domain.Message{}, nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ref, ok := s.messages[s.keys[scopedKey{workspaceID, key}]]
	if !ok {
		return domain.Message{}, nil, domain.NotFound("question")
	}
	q := cloneMessage(ref.conv.messages[ref.index])
	var reply *domain.Message
	if r, ok := s.messages[q.ReplyID]; ok && q.ReplyID != "" && r.conv.conv.WorkspaceID == workspaceID {
		m := cloneMessage(r.conv.messages[r.index])
		reply = &m
	}
	return q, reply, nil
}

// AnswersStartedBefore returns answers in progress that started before t,
// oldest first, at most limit.
func (s *Conversations) AnswersStartedBefore(ctx context.Context, t time.Time, limit int) ([]domain.AnswerInProgress, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	var out []domain.AnswerInProgress
	for _, a := range s.answers {
		if a.StartedAt.Before(dbTime(t)) {
			out = append(out, a)
		}
	}
	s.mu.Unlock()
	slices.SortFunc(out, func(a, b domain.AnswerInProgress) int {
		return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ReplyID, b.ReplyID))
	})
	if len(out) > max(limit, 0) {
		out = out[:max(limit, 0)]
	}
	return out, nil
}

// CloseAnswer stores an interrupted answer's outcome as
// ports.InterruptedAnswers says.
func (s *Conversations) CloseAnswer(ctx context.Context, a domain.AnswerInProgress, reply domain.Message, deliveries ...domain.Delivery) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if reply.ID != a.ReplyID || reply.WorkspaceID != a.WorkspaceID || reply.ConversationID != a.ConversationID {
		return false, errors.New("memory: close answer: the reply is not the answer's")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	tx := &txn{s: s}
	if !tx.endAnswer(a.ReplyID) {
		return false, nil
	}
	if _, ok := s.messages[a.ReplyID]; ok {
		return false, nil // the reply came after all: the claim alone stays
	}
	err := func() error {
		c := s.conversationIn(a.WorkspaceID, a.ConversationID)
		if c == nil {
			return domain.NotFound("conversation")
		}
		created, err := tx.insert(c, []domain.Message{reply}, "")
		if err != nil {
			return err
		}
		if !created {
			return domain.ErrMessageExists
		}
		if ref, ok := s.messages[a.QuestionID]; ok && ref.conv.conv.WorkspaceID == a.WorkspaceID {
			q := &ref.conv.messages[ref.index]
			if q.IdempotencyKey != "" {
				prev := *q
				key := scopedKey{a.WorkspaceID, q.IdempotencyKey}
				delete(s.keys, key)
				q.IdempotencyKey, q.RequestHash = "", ""
				tx.undo = append(tx.undo, func() { *q = prev; s.keys[key] = prev.ID })
			}
		}
		return tx.deliver(deliveries)
	}()
	if err != nil {
		tx.rollback()
		return false, err
	}
	s.writes++
	return true, nil
}
