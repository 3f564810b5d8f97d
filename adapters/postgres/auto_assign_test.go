package postgres_test

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/assignment"
	"github.com/conciergehq/concierge/core/domain"
)

// inStatus makes a conversation of the fixture's workspace in status,
// assigned to assignee ("" nobody).
func inStatus(t *testing.T, f conversationFixture, status domain.ConversationStatus, assignee string) domain.Conversation {
	t.Helper()
	ctx := ctxT(t)
	conv := newConversation(t, f.store, f.ws.ID, f.agent, t0)
	if status != conv.Status {
		if status == domain.StatusResolved {
			if _, _, err := f.store.ChangeStatus(ctx, statusChange(conv, domain.StatusHuman, t0)); err != nil {
				t.Fatal(err)
			}
			conv.Status = domain.StatusHuman
		}
		if _, _, err := f.store.ChangeStatus(ctx, statusChange(conv, status, t0.Add(time.Second))); err != nil {
			t.Fatal(err)
		}
	}
	if assignee != "" {
		if _, _, err := f.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: f.ws.ID, ConversationID: conv.ID, AssigneeID: assignee}); err != nil {
			t.Fatal(err)
		}
	}
	conv.Status, conv.AssigneeID = status, assignee
	return conv
}

// autoChange is the auto-assignment of conv at at, choosing as
// core/assignment does and recording the candidates it was given.
func autoChange(f conversationFixture, conv domain.Conversation, at time.Time, seen *[]domain.AssignCandidate) domain.AssigneeChange {
	return domain.AssigneeChange{
		WorkspaceID: f.ws.ID, ConversationID: conv.ID, At: at,
		Choose: func(c []domain.AssignCandidate) string {
			if seen != nil {
				*seen = c
			}
			return assignment.ChooseAssignee(c)
		},
		Report: func(after domain.Conversation) []domain.Delivery {
			return []domain.Delivery{domain.NewDelivery(domain.TargetEvents, domain.EventConversationAssigned, after, at)}
		},
	}
}

func TestAutoAssignSelection(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	suffix := strings.ToLower(f.ws.ID)
	ada := addMember(t, f.store, f.ws.ID, newUser(t, f.store, "ada-"+suffix+"@example.com"), domain.MemberAgent)
	bob := addMember(t, f.store, f.ws.ID, newUser(t, f.store, "bob-"+suffix+"@example.com"), domain.MemberAdmin)
	addMember(t, f.store, f.ws.ID, newUser(t, f.store, "cy-"+suffix+"@example.com"), domain.MemberOwner) // Cy, away
	for _, m := range []domain.Member{ada, bob} {
		if _, err := f.store.SetAvailable(ctx, f.ws.ID, m.UserID, true); err != nil {
			t.Fatal(err)
		}
	}
	// Ada holds two open conversations, Bob one open and one resolved
	// (not counted); Cy, away, holds none.
	inStatus(t, f, domain.StatusHuman, ada.UserID)
	inStatus(t, f, domain.StatusHandoffRequested, ada.UserID)
	inStatus(t, f, domain.StatusHuman, bob.UserID)
	inStatus(t, f, domain.StatusResolved, bob.UserID)

	h1 := inStatus(t, f, domain.StatusHandoffRequested, "")
	var seen []domain.AssignCandidate
	got, deliveries, err := f.store.ChangeAssignee(ctx, autoChange(f, h1, t0.Add(time.Minute), &seen))
	if err != nil {
		t.Fatal(err)
	}
	open := map[string]int{}
	for _, c := range seen {
		if !c.Available || !c.LastAutoAssignedAt.IsZero() {
			t.Fatalf("candidate %+v: want available and never auto-assigned", c)
		}
		open[c.UserID] = c.Open
	}
	if len(seen) != 2 || open[ada.UserID] != 2 || open[bob.UserID] != 1 {
		t.Fatalf("candidates %+v: want Ada with 2 open and Bob with 1, Cy (away) not read", seen)
	}
	if got.AssigneeID != bob.UserID || got.Status != domain.StatusHandoffRequested || len(deliveries) != 1 {
		t.Fatalf("h1: %s to %q with %d deliveries; want HANDOFF_REQUESTED to Bob (fewest open) with conversation.assigned",
			got.Status, got.AssigneeID, len(deliveries))
	}

	// 2 and 2: Ada was never auto-assigned, Bob just was.
	h2 := inStatus(t, f, domain.StatusHandoffRequested, "")
	if got, _, err = f.store.ChangeAssignee(ctx, autoChange(f, h2, t0.Add(2*time.Minute), &seen)); err != nil || got.AssigneeID != ada.UserID {
		t.Fatalf("h2: to %q (%v); want Ada, the one not auto-assigned yet", got.AssigneeID, err)
	}
	// 3 and 3: Bob's turn (t0+1m) is older than Ada's (t0+2m).
	h3 := inStatus(t, f, domain.StatusHandoffRequested, "")
	if got, _, err = f.store.ChangeAssignee(ctx, autoChange(f, h3, t0.Add(3*time.Minute), &seen)); err != nil || got.AssigneeID != bob.UserID {
		t.Fatalf("h3: to %q (%v); want Bob, auto-assigned least recently", got.AssigneeID, err)
	}
	for _, c := range seen {
		want := map[string]time.Time{ada.UserID: micro(t0.Add(2 * time.Minute)), bob.UserID: micro(t0.Add(time.Minute))}[c.UserID]
		if !c.LastAutoAssignedAt.Equal(want) {
			t.Fatalf("%s last auto-assigned %v, want %v", c.UserID, c.LastAutoAssignedAt, want)
		}
	}

	// Nothing to do: assigned already (a task run twice), not waiting for a
	// person, an unknown conversation.
	if got, deliveries, err = f.store.ChangeAssignee(ctx, autoChange(f, h1, t0.Add(4*time.Minute), nil)); err != nil || got.AssigneeID != bob.UserID || deliveries != nil {
		t.Fatalf("again on h1: to %q, %d deliveries, %v; want left to Bob, nothing written", got.AssigneeID, len(deliveries), err)
	}
	ai := inStatus(t, f, domain.StatusAI, "")
	if got, deliveries, err = f.store.ChangeAssignee(ctx, autoChange(f, ai, t0.Add(4*time.Minute), nil)); err != nil || got.AssigneeID != "" || deliveries != nil {
		t.Fatalf("an AI conversation: to %q, %d deliveries, %v; want left alone", got.AssigneeID, len(deliveries), err)
	}
	missing := domain.Conversation{ID: domain.NewID(domain.PrefixSession)}
	if _, _, err = f.store.ChangeAssignee(ctx, autoChange(f, missing, t0, nil)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("an unknown conversation: %v, want ErrNotFound", err)
	}

	// Nobody available: it stays in "Needs a person".
	for _, m := range []domain.Member{ada, bob} {
		if _, err := f.store.SetAvailable(ctx, f.ws.ID, m.UserID, false); err != nil {
			t.Fatal(err)
		}
	}
	h4 := inStatus(t, f, domain.StatusHandoffRequested, "")
	if got, deliveries, err = f.store.ChangeAssignee(ctx, autoChange(f, h4, t0.Add(5*time.Minute), &seen)); err != nil || got.AssigneeID != "" || deliveries != nil || len(seen) != 0 {
		t.Fatalf("nobody available: to %q, %d deliveries, %d candidates, %v; want unassigned, nothing written", got.AssigneeID, len(deliveries), len(seen), err)
	}
}

// TestAutoAssignConcurrentHandoffs runs many auto-assignments of one
// workspace at once, as pods do for a burst of handoffs. Serialised by the
// workspace's lock, each reads the counts the one before it left, so the
// conversations are dealt out evenly; choosing by a stale count would give
// several to the same member.
func TestAutoAssignConcurrentHandoffs(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	suffix := strings.ToLower(f.ws.ID)
	members := make([]domain.Member, 3)
	for i, name := range []string{"ada", "bob", "cy"} {
		members[i] = addMember(t, f.store, f.ws.ID, newUser(t, f.store, name+"-"+suffix+"@example.com"), domain.MemberAgent)
		if _, err := f.store.SetAvailable(ctx, f.ws.ID, members[i].UserID, true); err != nil {
			t.Fatal(err)
		}
	}
	const handoffs = 12
	convs := make([]domain.Conversation, handoffs)
	for i := range convs {
		convs[i] = inStatus(t, f, domain.StatusHandoffRequested, "")
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		got  = map[string]int{}
	)
	start := make(chan struct{})
	for i, conv := range convs {
		wg.Go(func() {
			<-start
			after, _, err := f.store.ChangeAssignee(ctx, autoChange(f, conv, t0.Add(time.Duration(i)*time.Second), nil))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
				return
			}
			got[after.AssigneeID]++
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("errors: %v", errs)
	}
	for _, m := range members {
		if got[m.UserID] != handoffs/len(members) {
			t.Fatalf("assigned %v; want %d each to %d members", got, handoffs/len(members), len(members))
		}
	}
}

// Migration 00024 goes down and up again: down drops both columns, up
// brings them back with auto-assignment off and nobody's turn taken.
func TestAutoAssignMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	provider, db := migrationProvider(t, dsn)
	if rs, err := provider.DownTo(ctx, 23); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 24 {
		t.Fatalf("down to 23: %+v, %v", rs, err)
	}
	const columns = `SELECT count(*) FROM information_schema.columns
		WHERE (table_name = 'workspaces' AND column_name = 'auto_assign')
			OR (table_name = 'memberships' AND column_name = 'last_auto_assigned_at')`
	var n int
	if err := db.QueryRowContext(ctx, columns).Scan(&n); err != nil || n != 0 {
		t.Fatalf("down left %d columns (%v)", n, err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if err := db.QueryRowContext(ctx, columns).Scan(&n); err != nil || n != 2 {
		t.Fatalf("up made %d columns (%v), want 2", n, err)
	}
}
