package postgres_test

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// assignees makes two members of the fixture's workspace and one user of
// another workspace.
func assignees(t *testing.T, f conversationFixture) (ada, bob, stranger domain.Member) {
	t.Helper()
	suffix := strings.ToLower(f.ws.ID)
	ada = addMember(t, f.store, f.ws.ID, newUser(t, f.store, "ada-"+suffix+"@example.com"), domain.MemberAgent)
	bob = addMember(t, f.store, f.ws.ID, newUser(t, f.store, "bob-"+suffix+"@example.com"), domain.MemberAdmin)
	other, _, _ := newWorkspace(t, f.store, domain.PlanStandard)
	stranger = addMember(t, f.store, other.ID, newUser(t, f.store, "eve-"+suffix+"@example.com"), domain.MemberOwner)
	return ada, bob, stranger
}

func TestChangeAssignee(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, bob, stranger := assignees(t, f)
	ctx := ctxT(t)
	change := func(assignee string, takeOver bool) domain.AssigneeChange {
		return domain.AssigneeChange{WorkspaceID: f.ws.ID, ConversationID: f.conv.ID, AssigneeID: assignee, TakeOver: takeOver}
	}
	// Steps run in order on one conversation: each starts where the last left it.
	steps := []struct {
		name         string
		change       domain.AssigneeChange
		wantErr      error
		wantField    string
		wantAssignee string
		wantStatus   domain.ConversationStatus
	}{
		{"take over from AI", change(ada.UserID, true), nil, "", ada.UserID, domain.StatusHuman},
		{"take over what you hold is a no-op", change(ada.UserID, true), nil, "", ada.UserID, domain.StatusHuman},
		{"take over what another holds", change(bob.UserID, true), domain.ErrConflict, "", ada.UserID, domain.StatusHuman},
		{"assign to another member", change(bob.UserID, false), nil, "", bob.UserID, domain.StatusHuman},
		{"assign to another workspace's user", change(stranger.UserID, false), domain.ErrInvalidInput, "assigneeId", bob.UserID, domain.StatusHuman},
		{"assign to an unknown user", change(domain.NewID(domain.PrefixUser), false), domain.ErrInvalidInput, "assigneeId", bob.UserID, domain.StatusHuman},
		{"unassign", change("", false), nil, "", "", domain.StatusHuman},
		{"take over an unassigned HUMAN conversation", change(ada.UserID, true), nil, "", ada.UserID, domain.StatusHuman},
	}
	for _, s := range steps {
		got, err := f.store.ChangeAssignee(ctx, s.change)
		if !errors.Is(err, s.wantErr) || (s.wantErr == nil) != (err == nil) {
			t.Fatalf("%s: err %v, want %v", s.name, err, s.wantErr)
		}
		var v *domain.ValidationError
		if s.wantField != "" && (!errors.As(err, &v) || v.Fields[s.wantField] == "") {
			t.Fatalf("%s: err %v, want a validation error on %s", s.name, err, s.wantField)
		}
		var c *domain.ConflictError
		if errors.As(err, &c) && c.Details["assigneeId"] != got.AssigneeID {
			t.Fatalf("%s: conflict details %v, want the holder %s", s.name, c.Details, got.AssigneeID)
		}
		stored, gerr := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
		if gerr != nil {
			t.Fatal(gerr)
		}
		if stored.AssigneeID != s.wantAssignee || stored.Status != s.wantStatus || got.AssigneeID != s.wantAssignee {
			t.Fatalf("%s: stored %q %s, returned %q; want %q %s", s.name, stored.AssigneeID, stored.Status, got.AssigneeID, s.wantAssignee, s.wantStatus)
		}
	}

	// Another workspace's conversation is not found, whoever asks.
	other := domain.AssigneeChange{WorkspaceID: stranger.WorkspaceID, ConversationID: f.conv.ID, AssigneeID: stranger.UserID, TakeOver: true}
	if _, err := f.store.ChangeAssignee(ctx, other); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("other workspace: %v, want not found", err)
	}
	// A resolved conversation is reopened before it is taken over.
	if _, err := f.store.ChangeAssignee(ctx, change("", false)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.ChangeStatus(ctx, statusChange(f.conv, domain.StatusResolved, t0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.ChangeAssignee(ctx, change(ada.UserID, true)); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("take over a resolved conversation: %v, want a conflict", err)
	}
}

// Members taking over at once: exactly one wins, the others are told who.
func TestTakeOverRace(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, bob, _ := assignees(t, f)
	ctx := ctxT(t)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		who := []domain.Member{ada, bob}[i%2]
		wg.Go(func() {
			_, errs[i] = f.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: f.ws.ID, ConversationID: f.conv.ID, AssigneeID: who.UserID, TakeOver: true})
		})
	}
	wg.Wait()
	stored, err := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	// The winner's own repeats are no-op successes; every loser is told the winner.
	for i, err := range errs {
		who := []domain.Member{ada, bob}[i%2]
		var c *domain.ConflictError
		switch {
		case who.UserID == stored.AssigneeID && err != nil:
			t.Errorf("winner %s got %v", who.UserID, err)
		case who.UserID != stored.AssigneeID && (!errors.As(err, &c) || c.Details["assigneeId"] != stored.AssigneeID):
			t.Errorf("loser %s got %v, want a conflict naming %s", who.UserID, err, stored.AssigneeID)
		}
	}
	if stored.Status != domain.StatusHuman {
		t.Errorf("status %s, want HUMAN", stored.Status)
	}
}

// The assignee filter pages through its index and stays in its workspace.
func TestAssigneeFilter(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, bob, stranger := assignees(t, f)
	ctx := ctxT(t)
	var adas, none []domain.Conversation
	none = append(none, f.conv)
	for i := range 5 {
		c := newConversation(t, f.store, f.ws.ID, f.agent, t0.Add(time.Duration(i+1)*time.Minute))
		who := ada.UserID
		if i == 4 {
			who = bob.UserID
		}
		if _, err := f.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: f.ws.ID, ConversationID: c.ID, AssigneeID: who}); err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			adas = append(adas, c)
		}
	}
	// Another workspace's conversation, assigned to its own member.
	otherAgent := newAgent(t, f.store, stranger.WorkspaceID, "support", t0)
	oc := newConversation(t, f.store, stranger.WorkspaceID, otherAgent, t0)
	if _, err := f.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: stranger.WorkspaceID, ConversationID: oc.ID, AssigneeID: stranger.UserID}); err != nil {
		t.Fatal(err)
	}
	newestFirst := func(cs []domain.Conversation) []string {
		ids := make([]string, len(cs))
		for i, c := range cs {
			ids[len(cs)-1-i] = c.ID
		}
		return ids
	}
	tests := []struct {
		name   string
		ws     string
		filter domain.ConversationFilter
		want   []string
	}{
		{"ada's, over two pages", f.ws.ID, domain.ConversationFilter{AssigneeID: ada.UserID}, newestFirst(adas)},
		{"unassigned", f.ws.ID, domain.ConversationFilter{Unassigned: true}, newestFirst(none)},
		{"another workspace's user", f.ws.ID, domain.ConversationFilter{AssigneeID: stranger.UserID}, nil},
		{"ada's, from the other workspace", stranger.WorkspaceID, domain.ConversationFilter{AssigneeID: ada.UserID}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listIDs(t, f.store, tt.ws, tt.filter); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	page, err := f.store.ListConversations(ctx, f.ws.ID, domain.ConversationFilter{AssigneeID: bob.UserID}, domain.PageRequest{Limit: 10})
	if err != nil || len(page.Items) != 1 || page.Items[0].AssigneeID != bob.UserID {
		t.Fatalf("bob's page %+v, %v; want one conversation read with its assignee", page.Items, err)
	}
}

// Removing a member unassigns their conversations, and only theirs.
func TestRemoveMemberUnassigns(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, bob, _ := assignees(t, f)
	ctx := ctxT(t)
	second := newConversation(t, f.store, f.ws.ID, f.agent, t0)
	for conv, who := range map[string]string{f.conv.ID: ada.UserID, second.ID: bob.UserID} {
		if _, err := f.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: f.ws.ID, ConversationID: conv, AssigneeID: who, TakeOver: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.store.RemoveMember(ctx, f.ws.ID, ada.UserID, nil); err != nil {
		t.Fatal(err)
	}
	for conv, want := range map[string]string{f.conv.ID: "", second.ID: bob.UserID} {
		got, err := f.store.GetConversation(ctx, f.ws.ID, conv)
		if err != nil || got.AssigneeID != want {
			t.Errorf("conversation %s assigned to %q (%v), want %q", conv, got.AssigneeID, err, want)
		}
	}
}

// Migration 00017 goes down and up again: down drops the column and what
// stands on it, up adds them back to a table holding rows.
func TestAssigneeMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	provider, db := migrationProvider(t, dsn)
	if rs, err := provider.DownTo(ctx, 16); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 17 {
		t.Fatalf("down to 16: %+v, %v", rs, err)
	}
	countColumn := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns
			WHERE table_name = 'conversations' AND column_name = 'assignee_id'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := countColumn(); n != 0 {
		t.Fatalf("down left the column (%d)", n)
	}
	pg, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	if _, err := db.ExecContext(ctx, `INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, last_message, message_count, last_activity_at, created_at)
		VALUES ('ses_down', $1, $2, 'support', 'CHAT', 'AI', '', 0, now(), now())`, ws.ID, agent.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if n := countColumn(); n != 1 {
		t.Fatalf("up again: %d columns", n)
	}
	var valid bool
	if err := db.QueryRowContext(ctx, `SELECT convalidated FROM pg_constraint WHERE conname = 'conversations_assignee_fkey'`).Scan(&valid); err != nil || !valid {
		t.Fatalf("foreign key validated %v (%v)", valid, err)
	}
	got, err := store.GetConversation(ctx, ws.ID, "ses_down")
	if err != nil || got.AssigneeID != "" {
		t.Fatalf("row stored while down: %+v, %v", got, err)
	}
}
