package postgres_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/assignment"
	"github.com/conciergehq/concierge/core/conversation"
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
	f.ws.EventsURL = "https://events.example.com/hook"
	change := func(assignee string, takeOver bool) domain.AssigneeChange {
		return domain.AssigneeChange{WorkspaceID: f.ws.ID, ConversationID: f.conv.ID, AssigneeID: assignee, TakeOver: takeOver,
			Report: func(after domain.Conversation) []domain.Delivery { return domain.AssignedDeliveries(&f.ws, after, t0) }}
	}
	// A take-over of a conversation no person answers yet is a move of the
	// lifecycle (ChangeStatus with AssigneeID), not a claim.
	if _, _, err := f.store.ChangeAssignee(ctx, change(ada.UserID, true)); !errors.Is(err, domain.ErrStatusChanged) {
		t.Fatalf("claim an AI conversation: %v, want ErrStatusChanged", err)
	}
	if _, _, err := f.store.ChangeStatus(ctx, statusChange(f.conv, domain.StatusHuman, t0.Add(time.Second))); err != nil {
		t.Fatal(err)
	}
	// Steps run in order on one conversation: each starts where the last left it.
	steps := []struct {
		name         string
		change       domain.AssigneeChange
		wantErr      error
		wantField    string
		wantAssignee string
		wantReported bool
	}{
		{"claim an unassigned HUMAN conversation", change(ada.UserID, true), nil, "", ada.UserID, true},
		{"claim what you hold is a no-op", change(ada.UserID, true), nil, "", ada.UserID, false},
		{"claim what another holds", change(bob.UserID, true), domain.ErrConflict, "", ada.UserID, false},
		{"assign to another member", change(bob.UserID, false), nil, "", bob.UserID, true},
		{"assign to the assignee is a no-op", change(bob.UserID, false), nil, "", bob.UserID, false},
		{"assign to another workspace's user", change(stranger.UserID, false), domain.ErrInvalidInput, "assigneeId", bob.UserID, false},
		{"assign to an unknown user", change(domain.NewID(domain.PrefixUser), false), domain.ErrInvalidInput, "assigneeId", bob.UserID, false},
		{"unassign", change("", false), nil, "", "", true},
		{"unassign the unassigned is a no-op", change("", false), nil, "", "", false},
	}
	reported := 0
	for _, s := range steps {
		got, deliveries, err := f.store.ChangeAssignee(ctx, s.change)
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
		if stored.AssigneeID != s.wantAssignee || stored.Status != domain.StatusHuman || got.AssigneeID != s.wantAssignee {
			t.Fatalf("%s: stored %q %s, returned %q; want %q HUMAN", s.name, stored.AssigneeID, stored.Status, got.AssigneeID, s.wantAssignee)
		}
		if s.wantReported != (len(deliveries) == 1) {
			t.Fatalf("%s: deliveries %+v, want reported %v", s.name, deliveries, s.wantReported)
		}
		if s.wantReported {
			reported++
			if d := deliveries[0]; d.Type != domain.EventConversationAssigned || d.Conversation.AssigneeID != s.wantAssignee || d.Conversation.Status != domain.StatusHuman {
				t.Fatalf("%s: delivery %+v", s.name, d)
			}
		}
	}
	// What was reported is in the outbox, with the assignee of the moment.
	outbox, err := f.store.ListDeliveries(ctx, f.ws.ID, domain.DeliveryFilter{Type: domain.EventConversationAssigned}, domain.PageRequest{Limit: 100})
	if err != nil || len(outbox.Items) != reported {
		t.Fatalf("outbox %d conversation.assigned (%v), want %d", len(outbox.Items), err, reported)
	}

	// Another workspace's conversation is not found, whoever asks.
	other := domain.AssigneeChange{WorkspaceID: stranger.WorkspaceID, ConversationID: f.conv.ID, AssigneeID: stranger.UserID, TakeOver: true}
	if _, _, err := f.store.ChangeAssignee(ctx, other); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("other workspace: %v, want not found", err)
	}
	// A resolved conversation is not claimed: it is taken over by a move.
	if _, _, err := f.store.ChangeStatus(ctx, statusChange(f.conv, domain.StatusResolved, t0.Add(time.Minute))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.store.ChangeAssignee(ctx, change(ada.UserID, true)); !errors.Is(err, domain.ErrStatusChanged) {
		t.Fatalf("claim a resolved conversation: %v, want ErrStatusChanged", err)
	}
}

// A take-over move (ChangeStatus with AssigneeID) assigns in the same
// statement, and applies only while no other member holds the conversation
// and the member belongs to the workspace.
func TestChangeStatusTakeOver(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, bob, stranger := assignees(t, f)
	ctx := ctxT(t)
	takeOver := func(conv domain.Conversation, who domain.Member, at time.Time) domain.StatusChange {
		return domain.NewStatusChange(&f.ws, conv, domain.StatusHuman, who.Name, nil, nil, at).WithTakeOver(&f.ws, conv, who.UserID, at)
	}
	// A stranger is refused without a retry.
	if _, changed, err := f.store.ChangeStatus(ctx, takeOver(f.conv, stranger, t0)); changed || !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("stranger: changed %v, %v; want forbidden", changed, err)
	}
	got, changed, err := f.store.ChangeStatus(ctx, takeOver(f.conv, ada, t0.Add(time.Second)))
	if err != nil || !changed || got.Status != domain.StatusHuman || got.AssigneeID != ada.UserID {
		t.Fatalf("ada: %+v, %v, %v", got, changed, err)
	}
	msgs := listMessages(t, f.store, f.ws.ID, f.conv.ID)
	if len(msgs) != 1 || msgs[0].Role != domain.RoleSystem || msgs[0].Content != ada.Name+" joined the conversation." {
		t.Fatalf("notice %+v", msgs)
	}
	// Bob's move, from the state he read, finds Ada holding it.
	resolved, _, err := f.store.ChangeStatus(ctx, statusChange(got, domain.StatusResolved, t0.Add(2*time.Second)))
	if err != nil || resolved.AssigneeID != ada.UserID {
		t.Fatalf("resolve: %+v, %v", resolved, err)
	}
	// A resolved case's assignee holds it no more: Bob reopens it.
	got, changed, err = f.store.ChangeStatus(ctx, takeOver(resolved, bob, t0.Add(3*time.Second)))
	if err != nil || !changed || got.Status != domain.StatusHuman || got.AssigneeID != bob.UserID {
		t.Fatalf("bob reopens: %+v, %v, %v", got, changed, err)
	}
	// Ada, from a stale read of the AI state, changes nothing.
	if got, changed, err := f.store.ChangeStatus(ctx, takeOver(f.conv, ada, t0.Add(4*time.Second))); err != nil || changed || got.AssigneeID != bob.UserID {
		t.Fatalf("ada again: %+v, %v, %v", got, changed, err)
	}
}

// Members taking over at once through the lifecycle, round after round:
// exactly one wins each round, with one notice and one conversation.assigned;
// the others are told who won.
func TestTakeOverRace(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, bob, _ := assignees(t, f)
	ctx := ctxT(t)
	f.ws.EventsURL = "https://events.example.com/hook"
	bus := &recordingBus{}
	queue := &recordingQueue{}
	lifecycle := conversation.New(conversation.Deps{
		Conversations: f.store, Workspaces: f.store, Agents: f.store, Deliveries: queue, Bus: bus,
		Clock: domain.SystemClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	svc := assignment.NewService(assignment.Deps{Assignments: f.store, Conversations: f.store, Lifecycle: lifecycle, Clock: domain.SystemClock{}})
	const rounds = 25
	// Each round's win changes the assignee, and so does Ada's first
	// take-over in a resolved round; a resolved round Ada wins again
	// changes nothing and reports nothing.
	assignedWant := 0
	for round := range rounds {
		conv := newConversation(t, f.store, f.ws.ID, f.agent, t0.Add(time.Duration(round)*time.Minute))
		if round%5 == 4 {
			// Some rounds race over a resolved conversation someone held.
			if _, err := svc.TakeOver(ctx, &f.ws, conv.ID, ada); err != nil {
				t.Fatal(err)
			}
			if _, _, err := f.store.ChangeStatus(ctx, statusChange(conv, domain.StatusResolved, time.Now())); err != nil {
				t.Fatal(err)
			}
		}
		before := len(bus.messages())
		var wg sync.WaitGroup
		got := make([]domain.Conversation, 2)
		errs := make([]error, 2)
		for i, who := range []domain.Member{ada, bob} {
			wg.Go(func() { got[i], errs[i] = svc.TakeOver(ctx, &f.ws, conv.ID, who) })
		}
		wg.Wait()
		stored, err := f.store.GetConversation(ctx, f.ws.ID, conv.ID)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Status != domain.StatusHuman || (stored.AssigneeID != ada.UserID && stored.AssigneeID != bob.UserID) {
			t.Fatalf("round %d: stored %s %q", round, stored.Status, stored.AssigneeID)
		}
		wins := 0
		for i, who := range []domain.Member{ada, bob} {
			var c *domain.ConflictError
			switch {
			case errs[i] == nil:
				wins++
				if who.UserID != stored.AssigneeID || got[i].AssigneeID != who.UserID {
					t.Fatalf("round %d: %s succeeded with %+v but %s holds it", round, who.Name, got[i], stored.AssigneeID)
				}
			case errors.As(errs[i], &c) && c.Details["assigneeId"] == stored.AssigneeID && who.UserID != stored.AssigneeID:
			default:
				t.Fatalf("round %d: %s got %v, want a conflict naming %s", round, who.Name, errs[i], stored.AssigneeID)
			}
		}
		if wins != 1 {
			t.Fatalf("round %d: %d winners", round, wins)
		}
		assignedWant++ // the round's first change: a take-over (Ada's, in a resolved round)
		if round%5 == 4 && stored.AssigneeID != ada.UserID {
			assignedWant++ // Bob took the resolved case from Ada
		}
		// One notice, in the transcript and published, naming the winner.
		winner := ada
		if stored.AssigneeID == bob.UserID {
			winner = bob
		}
		var notices []domain.Message
		for _, m := range listMessages(t, f.store, f.ws.ID, conv.ID) {
			if m.Role == domain.RoleSystem && m.Status == domain.StatusHuman {
				notices = append(notices, m)
			}
		}
		if len(notices) == 0 || notices[len(notices)-1].Content != winner.Name+" joined the conversation." {
			t.Fatalf("round %d: notices %+v", round, notices)
		}
		if published := bus.messages()[before:]; len(published) != 1 || published[0] != notices[len(notices)-1].ID {
			t.Fatalf("round %d: published %v, want the notice %s", round, published, notices[len(notices)-1].ID)
		}
	}
	// Every take-over that won delivered conversation.assigned, scheduled.
	outbox, err := f.store.ListDeliveries(ctx, f.ws.ID, domain.DeliveryFilter{Type: domain.EventConversationAssigned}, domain.PageRequest{Limit: 100})
	if err != nil || len(outbox.Items) != assignedWant {
		t.Fatalf("outbox %d conversation.assigned (%v), want %d", len(outbox.Items), err, assignedWant)
	}
	if queue.count() != len(outbox.Items) {
		t.Fatalf("scheduled %d of %d deliveries", queue.count(), len(outbox.Items))
	}
}

// recordingBus keeps the ids of the messages published to sessions.
type recordingBus struct {
	mu  sync.Mutex
	ids []string
}

func (b *recordingBus) Publish(_ context.Context, events ...domain.SessionEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ev := range events {
		b.ids = append(b.ids, ev.MessageID)
	}
	return nil
}

func (b *recordingBus) messages() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.ids)
}

// recordingQueue counts the deliveries scheduled.
type recordingQueue struct {
	mu sync.Mutex
	n  int
}

func (q *recordingQueue) EnqueueDelivery(context.Context, domain.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.n++
	return nil
}

func (q *recordingQueue) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
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
		if _, _, err := f.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: f.ws.ID, ConversationID: c.ID, AssigneeID: who}); err != nil {
			t.Fatal(err)
		}
		if i < 4 {
			adas = append(adas, c)
		}
	}
	// Another workspace's conversation, assigned to its own member.
	otherAgent := newAgent(t, f.store, stranger.WorkspaceID, "support", t0)
	oc := newConversation(t, f.store, stranger.WorkspaceID, otherAgent, t0)
	if _, _, err := f.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: stranger.WorkspaceID, ConversationID: oc.ID, AssigneeID: stranger.UserID}); err != nil {
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
// Removing a member unassigns their conversations of that workspace (not
// another member's), returns them as they were left, and writes what the
// report gives for each in the same transaction; a removal that is refused
// writes nothing.
func TestRemoveMemberUnassigns(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, bob, _ := assignees(t, f)
	ctx := ctxT(t)
	second := newConversation(t, f.store, f.ws.ID, f.agent, t0)
	third := newConversation(t, f.store, f.ws.ID, f.agent, t0)
	for conv, who := range map[string]string{f.conv.ID: ada.UserID, second.ID: bob.UserID, third.ID: ada.UserID} {
		if _, _, err := f.store.ChangeAssignee(ctx, domain.AssigneeChange{WorkspaceID: f.ws.ID, ConversationID: conv, AssigneeID: who}); err != nil {
			t.Fatal(err)
		}
	}
	ws := f.ws
	ws.EventsURL = "https://events.example.com/in"
	report := func(after domain.Conversation) []domain.Delivery {
		return domain.AssignedDeliveries(&ws, after, t0)
	}
	// Refused inside the transaction: nothing is unassigned or written.
	refuse := errors.New("refused")
	if _, _, err := f.store.RemoveMember(ctx, f.ws.ID, ada.UserID, func(domain.Member) error { return refuse }, report); !errors.Is(err, refuse) {
		t.Fatalf("refused removal: %v", err)
	}
	if rows := outboxOf(t, f.db, f.ws.ID); len(rows) != 0 {
		t.Fatalf("a refused removal wrote %d deliveries", len(rows))
	}

	unassigned, deliveries, err := f.store.RemoveMember(ctx, f.ws.ID, ada.UserID, nil, report)
	if err != nil {
		t.Fatal(err)
	}
	got := sortedIDs(unassigned, func(c domain.Conversation) string { return c.ID }, func(a, b domain.Conversation) bool { return a.ID < b.ID })
	want := []string{f.conv.ID, third.ID}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("unassigned %v, want %v", got, want)
	}
	for _, c := range unassigned {
		if c.AssigneeID != "" || c.WorkspaceID != f.ws.ID || c.AgentID != f.agent.ID || c.Status != domain.StatusAI {
			t.Errorf("returned as %+v, want unassigned with its agent and status", c)
		}
	}
	rows := outboxOf(t, f.db, f.ws.ID)
	if len(deliveries) != 2 || len(rows) != 2 {
		t.Fatalf("%d deliveries returned, %d stored; want one per unassigned conversation", len(deliveries), len(rows))
	}
	for _, r := range rows {
		if r.EventType != domain.EventConversationAssigned || r.Target != "events" || !slices.Contains(want, r.ConversationID) ||
			strings.Contains(string(r.Payload), ada.UserID) {
			t.Errorf("delivery %+v %s", r, r.Payload)
		}
	}
	for conv, want := range map[string]string{f.conv.ID: "", second.ID: bob.UserID, third.ID: ""} {
		got, err := f.store.GetConversation(ctx, f.ws.ID, conv)
		if err != nil || got.AssigneeID != want {
			t.Errorf("conversation %s assigned to %q (%v), want %q", conv, got.AssigneeID, err, want)
		}
	}
	// Without a report, nothing is written but the unassignment.
	unassigned, deliveries, err = f.store.RemoveMember(ctx, f.ws.ID, bob.UserID, nil, nil)
	if err != nil || len(unassigned) != 1 || unassigned[0].ID != second.ID || len(deliveries) != 0 || len(outboxOf(t, f.db, f.ws.ID)) != 2 {
		t.Fatalf("removal without a report: %v, %v, %v", unassigned, deliveries, err)
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

// listMessages reads all of a conversation's messages, oldest first.
func listMessages(t *testing.T, store *postgres.Store, workspaceID, conversationID string) []domain.Message {
	t.Helper()
	page, err := store.ListMessages(ctxT(t), workspaceID, conversationID, domain.PageRequest{Limit: 100})
	if err != nil {
		t.Fatalf("ListMessages: %v", err)
	}
	return page.Items
}
