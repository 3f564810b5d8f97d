package postgres_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// roles returns the roles of the conversation's stored messages, in order.
func storedRoles(t *testing.T, f conversationFixture) []domain.Role {
	t.Helper()
	msgs, err := f.store.RecentMessages(ctxT(t), f.ws.ID, f.conv.ID, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []domain.Role
	for _, m := range msgs {
		out = append(out, m.Role)
	}
	return out
}

// TestChangeStatusWithMessage: a state change and the message that
// motivated it are stored together, in the documented order, or not at all.
func TestChangeStatusWithMessage(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)

	t.Run("a reply after the takeover notice", func(t *testing.T) {
		f := newConversationFixture(t)
		reply := newMessage(f.ws.ID, f.conv.ID, domain.RoleHuman, "Hi, Marta here.", t0.Add(time.Minute))
		change := statusChange(f.conv, domain.StatusHuman, t0.Add(time.Minute)).WithMessage(&f.ws, f.conv, reply, false)
		got, changed, err := f.store.ChangeStatus(ctx, change)
		if err != nil || !changed {
			t.Fatalf("ChangeStatus = %v, %v", changed, err)
		}
		if got.Status != domain.StatusHuman || got.MessageCount != 2 || got.LastMessage != "Hi, Marta here." {
			t.Errorf("returned %+v", got)
		}
		if read, _ := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID); read != got {
			t.Errorf("stored %+v, returned %+v", read, got)
		}
		if roles := storedRoles(t, f); !slices.Equal(roles, []domain.Role{domain.RoleSystem, domain.RoleHuman}) {
			t.Errorf("stored %v, want the notice then the reply", roles)
		}
	})

	t.Run("a question before the reopening notice", func(t *testing.T) {
		f := newConversationFixture(t)
		resolve := statusChange(f.conv, domain.StatusResolved, t0.Add(time.Second))
		resolved, _, err := f.store.ChangeStatus(ctx, resolve)
		if err != nil {
			t.Fatal(err)
		}
		question := newMessage(f.ws.ID, f.conv.ID, domain.RoleUser, "One more thing", t0.Add(time.Minute))
		change := statusChange(resolved, domain.StatusAI, t0.Add(time.Minute))
		change.From = []domain.ConversationStatus{domain.StatusResolved}
		got, changed, err := f.store.ChangeStatus(ctx, change.WithMessage(&f.ws, resolved, question, true))
		if err != nil || !changed || got.Status != domain.StatusAI || got.MessageCount != 3 || got.LastMessage != "One more thing" {
			t.Fatalf("ChangeStatus = %+v, %v, %v", got, changed, err)
		}
		if roles := storedRoles(t, f); !slices.Equal(roles, []domain.Role{domain.RoleSystem, domain.RoleUser, domain.RoleSystem}) {
			t.Errorf("stored %v, want resolve notice, question, reopen notice", roles)
		}
	})

	t.Run("a message that cannot be stored undoes the change", func(t *testing.T) {
		f := newConversationFixture(t)
		existing := newMessage(f.ws.ID, f.conv.ID, domain.RoleUser, "hello", t0.Add(time.Second))
		if _, _, err := f.store.AppendMessage(ctx, existing, ""); err != nil {
			t.Fatal(err)
		}
		for _, first := range []bool{false, true} {
			reply := newMessage(f.ws.ID, f.conv.ID, domain.RoleHuman, "Hi", t0.Add(time.Minute))
			reply.ID = existing.ID // the insert fails on the primary key
			conv, _ := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
			change := statusChange(conv, domain.StatusHuman, t0.Add(time.Minute), domain.NewDelivery(domain.TargetEvents, domain.EventMessageCreated, conv, t0))
			if _, _, err := f.store.ChangeStatus(ctx, change.WithMessage(&f.ws, conv, reply, first)); err == nil {
				t.Fatalf("first=%v: ChangeStatus with a failing message succeeded", first)
			}
			got, err := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
			if err != nil || got.Status != domain.StatusAI || got.MessageCount != 1 {
				t.Fatalf("first=%v: conversation %+v, %v; want it untouched", first, got, err)
			}
			if roles := storedRoles(t, f); !slices.Equal(roles, []domain.Role{domain.RoleUser}) {
				t.Errorf("first=%v: stored %v, want only the earlier message", first, roles)
			}
			if rows := outboxOf(t, f.db, f.ws.ID); len(rows) != 0 {
				t.Errorf("first=%v: outbox %+v, want nothing", first, rows)
			}
		}
	})

	t.Run("a question first under a state that moved stores nothing", func(t *testing.T) {
		f := newConversationFixture(t)
		question := newMessage(f.ws.ID, f.conv.ID, domain.RoleUser, "One more thing", t0.Add(time.Minute))
		stale := f.conv
		stale.Status = domain.StatusResolved // as read, before someone reopened it
		change := statusChange(stale, domain.StatusAI, t0.Add(time.Minute))
		change.From = []domain.ConversationStatus{domain.StatusResolved}
		got, changed, err := f.store.ChangeStatus(ctx, change.WithMessage(&f.ws, stale, question, true))
		if err != nil || changed || got.Status != domain.StatusAI {
			t.Fatalf("ChangeStatus = %+v, %v, %v; want the conversation as it is, unchanged", got, changed, err)
		}
		if roles := storedRoles(t, f); len(roles) != 0 {
			t.Errorf("stored %v, want nothing", roles)
		}
	})

	t.Run("an inbound event's message stored before", func(t *testing.T) {
		f := newConversationFixture(t)
		first := newMessage(f.ws.ID, f.conv.ID, domain.RoleUser, "from the CRM", t0.Add(time.Second))
		first.InboundEventID = domain.NewID(domain.PrefixInboundEvent)
		if _, _, err := f.store.AppendMessage(ctx, first, ""); err != nil {
			t.Fatal(err)
		}
		resolved, _, err := f.store.ChangeStatus(ctx, statusChange(f.conv, domain.StatusResolved, t0.Add(2*time.Second)))
		if err != nil {
			t.Fatal(err)
		}
		again := first
		again.ID = domain.NewID(domain.PrefixMessage) // the task's second run builds a new id
		change := statusChange(resolved, domain.StatusAI, t0.Add(time.Minute))
		change.From = []domain.ConversationStatus{domain.StatusResolved}
		got, changed, err := f.store.ChangeStatus(ctx, change.WithMessage(&f.ws, resolved, again, true))
		if !errors.Is(err, domain.ErrMessageExists) || changed || got.Status != domain.StatusResolved {
			t.Fatalf("ChangeStatus = %+v, %v, %v; want ErrMessageExists and the conversation still RESOLVED", got, changed, err)
		}
		if roles := storedRoles(t, f); !slices.Equal(roles, []domain.Role{domain.RoleUser, domain.RoleSystem}) {
			t.Errorf("stored %v", roles)
		}
	})
}

// TestAnswersInProgress: a question stored alone starts an answer in
// progress, its reply ends it, and a question stored with its reply never
// starts one; the sweeper's close stores the outcome once.
func TestAnswersInProgress(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	f := newConversationFixture(t)
	inProgress := func() []domain.AnswerInProgress {
		t.Helper()
		got, err := f.store.AnswersStartedBefore(ctx, t0.Add(time.Hour), 100)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	question := newMessage(f.ws.ID, f.conv.ID, domain.RoleUser, "Refunds?", t0.Add(time.Second))
	reply := newMessage(f.ws.ID, f.conv.ID, domain.RoleAssistant, "30 days.", t0.Add(2*time.Second))
	question.ReplyID = reply.ID
	if _, _, err := f.store.AppendMessage(ctx, question, domain.StatusAI); err != nil {
		t.Fatal(err)
	}
	got := inProgress()
	if len(got) != 1 || got[0].ReplyID != reply.ID || got[0].QuestionID != question.ID || !got[0].StartedAt.Equal(micro(question.CreatedAt)) {
		t.Fatalf("in progress %+v, want the question's answer", got)
	}
	if before, _ := f.store.AnswersStartedBefore(ctx, t0, 100); len(before) != 0 {
		t.Errorf("answers started before the question: %+v", before)
	}
	if _, _, err := f.store.AppendMessage(ctx, reply, ""); err != nil {
		t.Fatal(err)
	}
	if got := inProgress(); len(got) != 0 {
		t.Fatalf("in progress after the reply: %+v", got)
	}

	// Stored together: never in progress.
	q2 := newMessage(f.ws.ID, f.conv.ID, domain.RoleUser, "Shipping?", t0.Add(3*time.Second))
	r2 := newMessage(f.ws.ID, f.conv.ID, domain.RoleAssistant, "2 days.", t0.Add(4*time.Second))
	q2.ReplyID = r2.ID
	if _, err := f.store.AppendMessages(ctx, []domain.Message{q2, r2}, domain.StatusAI); err != nil {
		t.Fatal(err)
	}
	if got := inProgress(); len(got) != 0 {
		t.Fatalf("in progress after a question stored with its reply: %+v", got)
	}

	// A new conversation's first question, alone, starts one too; closing
	// it stores the outcome once and releases the question's key.
	conv := domain.NewConversation(f.ws.ID, &f.agent, "", t0)
	q3 := newMessage(f.ws.ID, conv.ID, domain.RoleUser, "Hello?", t0.Add(5*time.Second))
	q3.ReplyID, q3.IdempotencyKey, q3.RequestHash = domain.NewID(domain.PrefixMessage), "api:k1", "h1"
	if _, err := f.store.StartConversation(ctx, &conv, []domain.Message{q3}); err != nil {
		t.Fatal(err)
	}
	got = inProgress()
	if len(got) != 1 || got[0].ReplyID != q3.ReplyID || got[0].ConversationID != conv.ID {
		t.Fatalf("in progress %+v, want the new conversation's answer", got)
	}
	if q, r, err := f.store.KeyedQuestion(ctx, f.ws.ID, "api:k1"); err != nil || q.ID != q3.ID || q.RequestHash != "h1" || r != nil {
		t.Fatalf("KeyedQuestion = %+v, %v, %v; want the question without a reply", q, r, err)
	}
	outcome := domain.Message{ID: q3.ReplyID, WorkspaceID: f.ws.ID, ConversationID: conv.ID, Role: domain.RoleAssistant,
		Content: "Hel", TokenEnds: []int{3}, FallbackReason: domain.FallbackInterrupted, CreatedAt: t0.Add(time.Hour)}
	closed, err := f.store.CloseAnswer(ctx, got[0], outcome)
	if err != nil || !closed {
		t.Fatalf("CloseAnswer = %v, %v", closed, err)
	}
	if closed, err := f.store.CloseAnswer(ctx, got[0], outcome); err != nil || closed {
		t.Fatalf("a second CloseAnswer = %v, %v; want nothing done", closed, err)
	}
	if got := inProgress(); len(got) != 0 {
		t.Fatalf("in progress after closing: %+v", got)
	}
	if _, _, err := f.store.KeyedQuestion(ctx, f.ws.ID, "api:k1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the key of an interrupted answer still finds it: %v", err)
	}
	msgs, err := f.store.RecentMessages(ctx, f.ws.ID, conv.ID, 10)
	if err != nil || len(msgs) != 2 || msgs[1].FallbackReason != domain.FallbackInterrupted || msgs[1].Content != "Hel" {
		t.Fatalf("stored %+v, %v; want the question and its interrupted reply", msgs, err)
	}
}

// TestIdempotencyKeys: one question per scoped key in a workspace; the same
// key in another workspace or scope is another question.
func TestIdempotencyKeys(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	f := newConversationFixture(t)
	other := newConversationFixture(t)
	ask := func(f conversationFixture, key string, at time.Duration) (domain.Message, []domain.Message, error) {
		q := newMessage(f.ws.ID, f.conv.ID, domain.RoleUser, "Refunds?", t0.Add(at))
		r := newMessage(f.ws.ID, f.conv.ID, domain.RoleAssistant, "30 days.", t0.Add(at))
		q.ReplyID, q.IdempotencyKey, q.RequestHash = r.ID, key, "hash"
		stored, err := f.store.AppendMessages(ctx, []domain.Message{q, r}, domain.StatusAI)
		return q, stored, err
	}
	q, _, err := ask(f, "api:k", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := ask(f, "api:k", 2*time.Second); !errors.Is(err, domain.ErrAnswerInProgress) {
		t.Fatalf("a second question with the key: %v, want ErrAnswerInProgress", err)
	}
	if _, _, err := ask(f, "session:"+f.conv.ID+":k", 3*time.Second); err != nil {
		t.Errorf("the same key in another scope: %v", err)
	}
	if _, _, err := ask(other, "api:k", time.Second); err != nil {
		t.Errorf("the same key in another workspace: %v", err)
	}
	got, reply, err := f.store.KeyedQuestion(ctx, f.ws.ID, "api:k")
	if err != nil || got.ID != q.ID || reply == nil || reply.ID != q.ReplyID || reply.Content != "30 days." {
		t.Fatalf("KeyedQuestion = %+v, %+v, %v", got, reply, err)
	}
	if _, _, err := f.store.KeyedQuestion(ctx, other.ws.ID, "session:"+f.conv.ID+":k"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another workspace reads the key: %v", err)
	}
	var _ ports.KeyedQuestions = f.store
}
