package conversationtest

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// inProgress is the answers in progress of the fixture's workspace that
// started before the given time (the list is not scoped by workspace, and
// a store may be shared).
func (f *fixture) inProgress(t *testing.T, before time.Time) []domain.AnswerInProgress {
	t.Helper()
	all, err := f.Store.AnswersStartedBefore(f.ctx, before, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.AnswerInProgress
	for _, a := range all {
		if a.WorkspaceID == f.ws {
			out = append(out, a)
		}
	}
	return out
}

var answerCases = []contractCase{
	// Undocumented in ports (the migration and domain.AnswerInProgress
	// say it): a question stored alone starts an answer in progress, its
	// reply ends it, and a question stored with its reply starts none.
	{"answers are in progress while a question's reply is not stored", func(t *testing.T, f *fixture) {
		question := f.msg(domain.RoleUser, "Refunds?", t0.Add(time.Second))
		reply := f.msg(domain.RoleAssistant, "30 days.", t0.Add(2*time.Second))
		question.ReplyID = reply.ID
		if _, _, err := f.Store.AppendMessage(f.ctx, question, domain.StatusAI); err != nil {
			t.Fatal(err)
		}
		got := f.inProgress(t, t0.Add(time.Hour))
		want := domain.AnswerInProgress{ReplyID: reply.ID, WorkspaceID: f.ws, ConversationID: f.conv.ID, QuestionID: question.ID, StartedAt: micro(question.CreatedAt)}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("in progress %+v, want %+v", got, want)
		}
		if before := f.inProgress(t, question.CreatedAt); len(before) != 0 {
			t.Errorf("answers started before the question: %+v", before)
		}
		f.append(t, reply)
		if got := f.inProgress(t, t0.Add(time.Hour)); len(got) != 0 {
			t.Fatalf("in progress after the reply: %+v", got)
		}
		if _, err := f.Store.AppendMessages(f.ctx, exchange(f.ws, f.conv.ID, t0.Add(3*time.Second)), domain.StatusAI); err != nil {
			t.Fatal(err)
		}
		if got := f.inProgress(t, t0.Add(time.Hour)); len(got) != 0 {
			t.Fatalf("in progress after a question stored with its reply: %+v", got)
		}
		// A new conversation's first question, alone, starts one too, and
		// so does a question that reopens a conversation.
		conv := domain.NewConversation(f.ws, &f.agent, "", t0)
		q := newMessage(f.ws, conv.ID, domain.RoleUser, "Hello?", t0.Add(5*time.Second))
		q.ReplyID = domain.NewID(domain.PrefixMessage)
		if _, err := f.Store.StartConversation(f.ctx, &conv, []domain.Message{q}); err != nil {
			t.Fatal(err)
		}
		resolved := f.move(t, statusChange(f.conv, domain.StatusResolved, t0.Add(6*time.Second)))
		reopen := f.msg(domain.RoleUser, "One more thing", t0.Add(7*time.Second))
		reopen.ReplyID = domain.NewID(domain.PrefixMessage)
		change := statusChange(resolved, domain.StatusAI, t0.Add(7*time.Second))
		change.From = []domain.ConversationStatus{domain.StatusResolved}
		f.move(t, change.WithMessage(&domain.Workspace{ID: f.ws}, resolved, reopen, true))
		got = f.inProgress(t, t0.Add(time.Hour))
		if len(got) != 2 || got[0].ReplyID != q.ReplyID || got[0].ConversationID != conv.ID || got[1].ReplyID != reopen.ReplyID {
			t.Fatalf("in progress %+v, want the new conversation's answer then the reopening one's, oldest first", got)
		}
		if limited, err := f.Store.AnswersStartedBefore(f.ctx, t0.Add(time.Hour), 1); err != nil || len(limited) != 1 {
			t.Errorf("a limit of 1: %+v, %v", limited, err)
		}
	}},

	{"CloseAnswer stores the outcome once and releases the question's key", func(t *testing.T, f *fixture) {
		q := f.msg(domain.RoleUser, "Hello?", t0.Add(time.Second))
		q.ReplyID, q.IdempotencyKey, q.RequestHash = domain.NewID(domain.PrefixMessage), "api:k1", "h1"
		f.append(t, q)
		if got, reply, err := f.Store.KeyedQuestion(f.ctx, f.ws, "api:k1"); err != nil || got.ID != q.ID || got.RequestHash != "h1" || reply != nil {
			t.Fatalf("KeyedQuestion = %+v, %v, %v; want the question without a reply", got, reply, err)
		}
		answers := f.inProgress(t, t0.Add(time.Hour))
		if len(answers) != 1 {
			t.Fatalf("in progress %+v", answers)
		}
		outcome := domain.Message{ID: q.ReplyID, WorkspaceID: f.ws, ConversationID: f.conv.ID, Role: domain.RoleAssistant,
			Content: "Hel", TokenEnds: []int{3}, FallbackReason: domain.FallbackInterrupted, CreatedAt: t0.Add(time.Hour)}
		wrong := outcome
		wrong.ID = domain.NewID(domain.PrefixMessage)
		if _, err := f.Store.CloseAnswer(f.ctx, answers[0], wrong); err == nil {
			t.Error("closed an answer with another reply")
		}
		closed, err := f.Store.CloseAnswer(f.ctx, answers[0], outcome, delivery(f.conv, domain.EventMessageCreated))
		if err != nil || !closed {
			t.Fatalf("CloseAnswer = %v, %v", closed, err)
		}
		if closed, err := f.Store.CloseAnswer(f.ctx, answers[0], outcome, delivery(f.conv, domain.EventMessageCreated)); err != nil || closed {
			t.Errorf("a second CloseAnswer = %v, %v; want nothing done", closed, err)
		}
		if got := f.inProgress(t, t0.Add(time.Hour)); len(got) != 0 {
			t.Errorf("in progress after closing: %+v", got)
		}
		if _, _, err := f.Store.KeyedQuestion(f.ctx, f.ws, "api:k1"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("the key of an interrupted answer still finds it: %v", err)
		}
		msgs := f.messages(t)
		if len(msgs) != 2 || msgs[0].IdempotencyKey != "" || msgs[0].RequestHash != "" || msgs[1].FallbackReason != domain.FallbackInterrupted ||
			msgs[1].Content != "Hel" || !slices.Equal(msgs[1].TokenEnds, []int{3}) {
			t.Errorf("stored %+v; want the question without its key and the interrupted reply", msgs)
		}
		if got := f.get(t); got.MessageCount != 2 || got.LastMessage != "Hel" || f.outbox(t) != 1 {
			t.Errorf("conversation %+v, %d deliveries", got, f.outbox(t))
		}
		// The key is free: a retry asks again.
		retry := f.msg(domain.RoleUser, "Hello?", t0.Add(2*time.Hour))
		retry.IdempotencyKey = "api:k1"
		f.append(t, retry)
	}},

	{"CloseAnswer of an answer that finished after all only ends it", func(t *testing.T, f *fixture) {
		q := f.msg(domain.RoleUser, "Hello?", t0.Add(time.Second))
		q.ReplyID, q.IdempotencyKey = domain.NewID(domain.PrefixMessage), "api:k2"
		f.append(t, q)
		answers := f.inProgress(t, t0.Add(time.Hour))
		if len(answers) != 1 {
			t.Fatalf("in progress %+v", answers)
		}
		// The reply lands while the answer is still listed (as a sweeper
		// read it): it ended the answer, so the close finds nothing.
		reply := f.msg(domain.RoleAssistant, "Hello!", t0.Add(2*time.Second))
		reply.ID = q.ReplyID
		f.append(t, reply)
		outcome := reply
		outcome.Content, outcome.FallbackReason = "", domain.FallbackInterrupted
		if closed, err := f.Store.CloseAnswer(f.ctx, answers[0], outcome, delivery(f.conv, domain.EventMessageCreated)); err != nil || closed {
			t.Errorf("CloseAnswer = %v, %v; want nothing done", closed, err)
		}
		if got, r, err := f.Store.KeyedQuestion(f.ctx, f.ws, "api:k2"); err != nil || got.ID != q.ID || r == nil || r.Content != "Hello!" {
			t.Errorf("KeyedQuestion = %+v, %+v, %v; want the question and its reply", got, r, err)
		}
		if len(f.messages(t)) != 2 || f.outbox(t) != 0 {
			t.Errorf("the close wrote: %d messages, %d deliveries", len(f.messages(t)), f.outbox(t))
		}
	}},

	{"Idempotency-Keys: one question per key in a workspace", func(t *testing.T, f *fixture) {
		other := newFixture(t, f.Harness)
		ask := func(f *fixture, key string, at time.Duration) (domain.Message, error) {
			turn := exchange(f.ws, f.conv.ID, t0.Add(at))
			turn[0].IdempotencyKey, turn[0].RequestHash = key, "hash"
			_, err := f.Store.AppendMessages(f.ctx, turn, domain.StatusAI)
			return turn[0], err
		}
		q, err := ask(f, "api:k", time.Second)
		if err != nil {
			t.Fatal(err)
		}
		before := f.get(t)
		if _, err := ask(f, "api:k", 2*time.Second); !errors.Is(err, domain.ErrAnswerInProgress) || !errors.Is(err, domain.ErrConflict) {
			t.Errorf("a second question with the key: %v, want ErrAnswerInProgress", err)
		}
		if after := f.get(t); after != before {
			t.Errorf("the refused question was stored: %+v", after)
		}
		conv := domain.NewConversation(f.ws, &f.agent, "", t0)
		start := newMessage(f.ws, conv.ID, domain.RoleUser, "again", t0)
		start.IdempotencyKey = "api:k"
		if _, err := f.Store.StartConversation(f.ctx, &conv, []domain.Message{start}); !errors.Is(err, domain.ErrAnswerInProgress) {
			t.Errorf("a new conversation's question with the key: %v, want ErrAnswerInProgress", err)
		}
		if _, err := f.Store.GetConversation(f.ctx, f.ws, conv.ID); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("a refused start stored its conversation: %v", err)
		}
		if _, err := ask(f, "session:"+f.conv.ID+":k", 3*time.Second); err != nil {
			t.Errorf("the same key in another scope: %v", err)
		}
		if _, err := ask(other, "api:k", time.Second); err != nil {
			t.Errorf("the same key in another workspace: %v", err)
		}
		got, reply, err := f.Store.KeyedQuestion(f.ctx, f.ws, "api:k")
		if err != nil || got.ID != q.ID || got.RequestHash != "hash" || reply == nil || reply.ID != q.ReplyID || reply.Content != "Open Settings, then Security." {
			t.Errorf("KeyedQuestion = %+v, %+v, %v", got, reply, err)
		}
		if _, _, err := f.Store.KeyedQuestion(f.ctx, other.ws, "session:"+f.conv.ID+":k"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("another workspace reads the key: %v", err)
		}
		if _, _, err := f.Store.KeyedQuestion(f.ctx, f.ws, "api:unknown"); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("an unknown key: %v", err)
		}
	}},
}
