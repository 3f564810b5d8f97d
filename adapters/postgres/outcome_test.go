package postgres_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/core/domain"
)

// startAnswered starts a conversation of user (or anonymous, "") with a
// question and its answer at `at`.
func startAnswered(t *testing.T, f conversationFixture, user, question string, answer domain.Message, at time.Time) domain.Conversation {
	t.Helper()
	conv := domain.NewConversation(f.ws.ID, &f.agent, user, at)
	q := newMessage(f.ws.ID, conv.ID, domain.RoleUser, question, at)
	answer.WorkspaceID, answer.ConversationID, answer.CreatedAt = f.ws.ID, conv.ID, at
	if _, err := f.store.StartConversation(ctxT(t), &conv, []domain.Message{q, answer}); err != nil {
		t.Fatalf("StartConversation: %v", err)
	}
	return conv
}

func answer(content string) domain.Message {
	return domain.Message{ID: domain.NewID(domain.PrefixMessage), Role: domain.RoleAssistant, Content: content}
}

// decideAll decides every due conversation at now and returns how many.
func decideAll(t *testing.T, store *postgres.Store, now time.Time) int {
	t.Helper()
	n, err := store.DecideDueOutcomes(ctxT(t), now, 100, domain.DecideOutcome)
	if err != nil {
		t.Fatalf("DecideDueOutcomes: %v", err)
	}
	return n
}

func getOutcome(t *testing.T, f conversationFixture, convID string) domain.ConversationOutcome {
	t.Helper()
	o, err := f.store.GetOutcome(ctxT(t), f.ws.ID, convID)
	if err != nil {
		t.Fatalf("GetOutcome: %v", err)
	}
	return o
}

// TestOutcomeLifecycle follows one conversation's outcome row through the
// store: created due with the conversation, undecided while not quiet,
// decided at 24 h, idempotent, marked due again by a late rating, a late
// message and a state change, each of which the next decision reflects.
func TestOutcomeLifecycle(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	f := newConversationFixture(t)
	ans := answer("Use the reset link on the sign-in page.")
	conv := startAnswered(t, f, "", "How do I reset my password?", ans, t0)
	last := micro(t0)

	if o := getOutcome(t, f, conv.ID); !o.DueNow || o.Outcome != "" || o.AgentID != f.agent.ID {
		t.Fatalf("new conversation's row = %+v, want due now, undecided", o)
	}
	if n := decideAll(t, f.store, t0.Add(time.Hour)); n != 2 { // the fixture's empty conversation too
		t.Fatalf("decided %d, want 2", n)
	}
	if o := getOutcome(t, f, conv.ID); o.Outcome != "" || o.Final || !o.NextCheckAt.Equal(last.Add(24*time.Hour)) || o.DueNow {
		t.Fatalf("before 24 h = %+v, want undecided until %v", o, last.Add(24*time.Hour))
	}
	if o := getOutcome(t, f, f.conv.ID); o.Outcome != "" || !o.Final || !o.NextCheckAt.IsZero() {
		t.Errorf("conversation without a question = %+v, want no outcome, final", o)
	}
	if n := decideAll(t, f.store, last.Add(24*time.Hour-time.Microsecond)); n != 0 {
		t.Fatalf("decided %d just under 24 h, want 0", n)
	}
	day1 := last.Add(24 * time.Hour)
	if n := decideAll(t, f.store, day1); n != 1 {
		t.Fatalf("decided %d at 24 h, want 1", n)
	}
	want := domain.ConversationOutcome{ConversationID: conv.ID, WorkspaceID: f.ws.ID, AgentID: f.agent.ID,
		Outcome: domain.OutcomeResolvedUnconfirmed, DecidedAt: day1, Final: true}
	if o := getOutcome(t, f, conv.ID); o != want {
		t.Fatalf("at 24 h = %+v, want %+v", o, want)
	}
	if n := decideAll(t, f.store, day1.Add(time.Hour)); n != 0 {
		t.Fatalf("a second sweep decided %d, want 0", n)
	}

	// A late thumbs up marks the row due; the decision confirms it.
	fb, _ := domain.NewFeedback("up", "", day1.Add(time.Hour))
	if err := f.store.SetFeedback(ctx, f.ws.ID, conv.ID, ans.ID, fb); err != nil {
		t.Fatal(err)
	}
	if o := getOutcome(t, f, conv.ID); !o.DueNow || o.Outcome != domain.OutcomeResolvedUnconfirmed {
		t.Fatalf("after a late rating = %+v, want due, still unconfirmed", o)
	}
	day2 := day1.Add(2 * time.Hour)
	if n := decideAll(t, f.store, day2); n != 1 {
		t.Fatalf("decided %d after the rating, want 1", n)
	}
	if o := getOutcome(t, f, conv.ID); o.Outcome != domain.OutcomeResolvedConfirmed || !o.DecidedAt.Equal(day2) || !o.Final {
		t.Fatalf("after the late thumbs up = %+v", o)
	}
	// The API's reads carry the stored outcome.
	if got, err := f.store.GetConversation(ctx, f.ws.ID, conv.ID); err != nil || got.Outcome != domain.OutcomeResolvedConfirmed {
		t.Errorf("GetConversation outcome = %q, %v", got.Outcome, err)
	}
	page, err := f.store.ListConversations(ctx, f.ws.ID, domain.ConversationFilter{}, domain.PageRequest{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range page.Items {
		if c.ID == conv.ID && c.Outcome != domain.OutcomeResolvedConfirmed {
			t.Errorf("ListConversations outcome = %q", c.Outcome)
		}
	}
	searched, err := f.store.ListConversations(ctx, f.ws.ID, domain.ConversationFilter{Query: "reset"}, domain.PageRequest{Limit: 10})
	if err != nil || len(searched.Items) != 1 || searched.Items[0].Outcome != domain.OutcomeResolvedConfirmed {
		t.Errorf("searched list = %+v, %v", searched.Items, err)
	}

	// The team hands it to a person: due again; decided once quiet.
	current, _ := f.store.GetConversation(ctx, f.ws.ID, conv.ID)
	later := day2.Add(time.Hour)
	if _, changed, err := f.store.ChangeStatus(ctx, statusChange(current, domain.StatusHandoffRequested, later)); err != nil || !changed {
		t.Fatalf("ChangeStatus = %v, %v", changed, err)
	}
	if n := decideAll(t, f.store, later.Add(time.Minute)); n != 1 {
		t.Fatalf("decided %d after the handoff, want 1", n)
	}
	if o := getOutcome(t, f, conv.ID); o.Outcome != "" || !o.NextCheckAt.Equal(micro(later).Add(24*time.Hour)) {
		t.Fatalf("right after the handoff = %+v, want undecided until 24 h of quiet", o)
	}
	if n := decideAll(t, f.store, later.Add(24*time.Hour)); n != 1 {
		t.Fatalf("decided %d a day after the handoff, want 1", n)
	}
	if o := getOutcome(t, f, conv.ID); o.Outcome != domain.OutcomeHandedOff {
		t.Fatalf("a day after the handoff = %+v", o)
	}
}

// TestOutcomeRecontact: a new conversation of the same verified user marks
// their unconfirmed resolution due, and on the same topic it becomes a
// re-contact; another user's or another topic's does not.
func TestOutcomeRecontact(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	first := startAnswered(t, f, "user-1", "How do I export my invoices?", answer("Billing, then Export."), t0)
	other := startAnswered(t, f, "user-1", "What are your opening hours?", answer("9 to 5."), t0)
	day1 := micro(t0).Add(24 * time.Hour)
	decideAll(t, f.store, day1)
	if o := getOutcome(t, f, first.ID); o.Outcome != domain.OutcomeResolvedUnconfirmed || o.Final || !o.NextCheckAt.Equal(micro(t0).Add(7*24*time.Hour)) {
		t.Fatalf("verified user's answer = %+v, want unconfirmed until day 7", o)
	}
	startAnswered(t, f, "user-2", "invoice export is empty", answer("Try again."), day1.Add(time.Hour))
	if o := getOutcome(t, f, first.ID); o.DueNow {
		t.Fatalf("another user's conversation marked %+v due", o)
	}
	startAnswered(t, f, "user-1", "The invoice export is empty", answer("Try again."), t0.Add(72*time.Hour))
	if o := getOutcome(t, f, first.ID); !o.DueNow {
		t.Fatalf("the same user's new conversation left %+v not due", o)
	}
	decideAll(t, f.store, t0.Add(73*time.Hour))
	if o := getOutcome(t, f, first.ID); o.Outcome != domain.OutcomeRecontact || !o.Final {
		t.Errorf("after the same-topic return = %+v, want RECONTACT", o)
	}
	if o := getOutcome(t, f, other.ID); o.Outcome != domain.OutcomeResolvedUnconfirmed {
		t.Errorf("the other topic = %+v, want still unconfirmed", o)
	}
}

// TestOutcomeSignals checks what the store gathers for a decision.
func TestOutcomeSignals(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	f := newConversationFixture(t)
	fallback := answer("Sorry, I don't know.")
	fallback.FallbackReason = domain.FallbackNoKnowledge
	conv := startAnswered(t, f, "user-1", "Where is my order?", answer("It ships today."), t0)
	q2 := newMessage(f.ws.ID, conv.ID, domain.RoleUser, "Can I change the address?", t0.Add(time.Minute))
	fallback.WorkspaceID, fallback.ConversationID, fallback.CreatedAt = f.ws.ID, conv.ID, t0.Add(time.Minute)
	if _, err := f.store.AppendMessages(ctx, []domain.Message{q2, fallback}, ""); err != nil {
		t.Fatal(err)
	}
	fb, _ := domain.NewFeedback("down", "", t0.Add(2*time.Minute))
	if err := f.store.SetFeedback(ctx, f.ws.ID, conv.ID, fallback.ID, fb); err != nil {
		t.Fatal(err)
	}
	later := startAnswered(t, f, "user-1", "order status please", answer("Shipped."), t0.Add(48*time.Hour))
	var got map[string]domain.OutcomeSignals = map[string]domain.OutcomeSignals{}
	if _, err := f.store.DecideDueOutcomes(ctx, t0.Add(49*time.Hour), 100, func(s domain.OutcomeSignals, now time.Time) domain.OutcomeDecision {
		got[s.FirstQuestion] = s
		return domain.DecideOutcome(s, now)
	}); err != nil {
		t.Fatal(err)
	}
	s := got["Where is my order?"]
	if s.LastQuestion != "Can I change the address?" || !s.LastTurnFailed || s.LatestRating != domain.RatingDown ||
		s.PersonRequested || s.PersonReplied || s.VerifiedUserID != "user-1" || !s.LastActivityAt.Equal(micro(t0.Add(time.Minute))) {
		t.Errorf("signals = %+v", s)
	}
	if len(s.LaterContacts) != 1 || s.LaterContacts[0].ConversationID != later.ID || s.LaterContacts[0].FirstQuestion != "order status please" {
		t.Errorf("later contacts = %+v", s.LaterContacts)
	}
	if o := getOutcome(t, f, conv.ID); o.Outcome != domain.OutcomeAbandonedAfterFallback {
		t.Errorf("outcome = %+v", o)
	}
	if _, err := f.store.GetOutcome(ctx, "ws_other", conv.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("another workspace's GetOutcome = %v, want ErrNotFound", err)
	}
}

// TestOutcomeSignalsSkipSmallTalk: the last question is the visitor's last
// message that asks something (not small talk, a request for a person or
// a bare yes, no or ok), paired with the answer it got before the next
// message; a conversation of small talk alone asks nothing.
func TestOutcomeSignalsSkipSmallTalk(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	f := newConversationFixture(t)
	failed := func(content string) domain.Message {
		m := answer(content)
		m.FallbackReason = domain.FallbackNoKnowledge
		return m
	}
	type turn struct {
		question string
		reply    *domain.Message // nil: no answer
	}
	ok, no := answer("It ships today."), failed("Sorry, I don't know.")
	welcome, thanks := answer("Hi! How can I help you today?"), answer("You're welcome!")
	alright, offer := answer("Alright. If there's anything else, just ask."), answer("Of course, a person from the team can take over this conversation.")
	tests := []struct {
		name         string
		turns        []turn
		wantQuestion string
		wantFailed   bool
		want         domain.Outcome
	}{
		{"thanks after an answer", []turn{{"Where is my order?", &ok}, {"thanks!", &thanks}},
			"Where is my order?", false, domain.OutcomeResolvedUnconfirmed},
		{"thanks after a fallback", []turn{{"Do you ship to Canada?", &no}, {"ok thanks", &thanks}},
			"Do you ship to Canada?", true, domain.OutcomeAbandonedAfterFallback},
		{"a fallback, then an answer, then bye", []turn{{"Do you ship to Canada?", &no}, {"Where is my order?", &ok}, {"bye", &thanks}},
			"Where is my order?", false, domain.OutcomeResolvedUnconfirmed},
		{"an answer, then a question left unanswered, then hi", []turn{{"Where is my order?", &ok}, {"Can I change the address?", nil}, {"hello", &welcome}},
			"Can I change the address?", true, domain.OutcomeAbandonedAfterFallback},
		{"small talk alone", []turn{{"hi", &welcome}, {"thank you so much", &thanks}}, "", false, ""},
		{"ok after an answer", []turn{{"Where is my order?", &ok}, {"ok", &alright}},
			"Where is my order?", false, domain.OutcomeResolvedUnconfirmed},
		{"yes to the fallback's offer of a person, never taken", []turn{{"Do you ship to Canada?", &no}, {"yes please", &offer}},
			"Do you ship to Canada?", true, domain.OutcomeAbandonedAfterFallback},
		{"a request for a person after a fallback", []turn{{"Do you ship to Canada?", &no}, {"can I talk to a human?", &offer}},
			"Do you ship to Canada?", true, domain.OutcomeAbandonedAfterFallback},
		{"perfect, that worked", []turn{{"Where is my order?", &ok}, {"perfect, that worked", &thanks}},
			"perfect, that worked", false, domain.OutcomeResolvedConfirmed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := *tt.turns[0].reply
			first.ID = domain.NewID(domain.PrefixMessage)
			conv := startAnswered(t, f, "", tt.turns[0].question, first, t0)
			for i, tu := range tt.turns[1:] {
				at := t0.Add(time.Duration(i+1) * time.Minute)
				msgs := []domain.Message{newMessage(f.ws.ID, conv.ID, domain.RoleUser, tu.question, at)}
				if tu.reply != nil {
					r := *tu.reply
					r.ID, r.WorkspaceID, r.ConversationID, r.CreatedAt = domain.NewID(domain.PrefixMessage), f.ws.ID, conv.ID, at
					msgs = append(msgs, r)
				}
				if _, err := f.store.AppendMessages(ctx, msgs, ""); err != nil {
					t.Fatal(err)
				}
			}
			var got *domain.OutcomeSignals
			if _, err := f.store.DecideDueOutcomes(ctx, t0.Add(49*time.Hour), 100, func(s domain.OutcomeSignals, now time.Time) domain.OutcomeDecision {
				if s.FirstQuestion == tt.turns[0].question && got == nil {
					got = &s
				}
				return domain.DecideOutcome(s, now)
			}); err != nil {
				t.Fatal(err)
			}
			if got == nil || got.LastQuestion != tt.wantQuestion || got.LastTurnFailed != tt.wantFailed {
				t.Fatalf("signals = %+v, want last question %q failed %v", got, tt.wantQuestion, tt.wantFailed)
			}
			if o := getOutcome(t, f, conv.ID); o.Outcome != tt.want {
				t.Errorf("outcome = %q, want %q", o.Outcome, tt.want)
			}
		})
	}
}

// TestOutcomeConcurrentSweeps: two workers sweeping at once decide every
// due conversation exactly once between them.
func TestOutcomeConcurrentSweeps(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	const n = 60
	for i := range n {
		startAnswered(t, f, "", "question about plans", answer("Plans are on the pricing page."), t0.Add(time.Duration(i)*time.Second))
	}
	var calls atomic.Int64
	decide := func(s domain.OutcomeSignals, now time.Time) domain.OutcomeDecision {
		calls.Add(1)
		time.Sleep(time.Millisecond) // hold the claim a moment, so the sweeps overlap
		return domain.DecideOutcome(s, now)
	}
	now := t0.Add(48 * time.Hour)
	var wg sync.WaitGroup
	var decided atomic.Int64
	for range 2 {
		wg.Go(func() {
			for {
				k, err := f.store.DecideDueOutcomes(context.Background(), now, 7, decide)
				if err != nil {
					t.Error(err)
					return
				}
				decided.Add(int64(k))
				if k == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	if calls.Load() != n+1 || decided.Load() != n+1 { // and the fixture's empty conversation
		t.Errorf("decided %d times (%d reported), want %d", calls.Load(), decided.Load(), n+1)
	}
	if k := decideAll(t, f.store, now); k != 0 {
		t.Errorf("a sweep after both decided %d", k)
	}
}

// Migration 00025 goes down and up again on a database holding
// conversations: up gives every existing conversation its row, due at once,
// and the triggers then track new ones.
func TestOutcomesMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn, pg, store, ws, agent := migrationFixture(t, t0)
	ctx := ctxT(t)
	f := conversationFixture{store: store, ws: ws, agent: agent}
	existing := startAnswered(t, f, "", "How do I reset my password?", answer("Use the link."), t0)
	decideAll(t, store, t0.Add(25*time.Hour))

	provider, db := migrationProvider(t, dsn)
	// Later migrations go down first; 00025 is the last one down.
	if rs, err := provider.DownTo(ctx, 24); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 25 {
		t.Fatalf("down to 24: %+v, %v", rs, err)
	}
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_tables WHERE tablename = 'conversation_outcomes'`).Scan(&tables); err != nil || tables != 0 {
		t.Fatalf("down left %d outcome tables (%v)", tables, err)
	}
	// Conversations started while the migration is down have no row
	// until up backfills them. (Messages wait for up: this release's
	// store writes columns of later migrations.)
	started := newConversation(t, store, ws.ID, agent, t0)
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if o := getOutcome(t, f, started.ID); !o.DueNow || o.Outcome != "" {
		t.Errorf("backfilled row = %+v, want due, undecided", o)
	}
	ans := answer("9 to 5.")
	ans.WorkspaceID, ans.ConversationID, ans.CreatedAt = ws.ID, started.ID, t0
	if _, err := store.AppendMessages(ctx, []domain.Message{
		newMessage(ws.ID, started.ID, domain.RoleUser, "What are your opening hours?", t0), ans}, domain.StatusAI); err != nil {
		t.Fatalf("AppendMessages: %v", err)
	}
	for _, id := range []string{existing.ID, started.ID} {
		if o := getOutcome(t, f, id); !o.DueNow || o.Outcome != "" {
			t.Errorf("backfilled row = %+v, want due, undecided", o)
		}
	}
	if n := decideAll(t, store, t0.Add(25*time.Hour)); n != 2 {
		t.Errorf("decided %d after the backfill, want 2", n)
	}
	if o := getOutcome(t, f, started.ID); o.Outcome != domain.OutcomeResolvedUnconfirmed {
		t.Errorf("backfilled conversation decided %+v", o)
	}
	if err := pg.Close(); err != nil {
		t.Fatal(err)
	}
}
