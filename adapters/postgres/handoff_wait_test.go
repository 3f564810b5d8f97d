package postgres_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// w0 is t0 as stored: microseconds.
var w0 = micro(t0)

// requestHandoff moves conv to HANDOFF_REQUESTED at at, as
// conversation.Lifecycle.Move does, and returns the conversation as moved.
func requestHandoff(t *testing.T, store *postgres.Store, conv domain.Conversation, at time.Time) domain.Conversation {
	t.Helper()
	got, changed, err := store.ChangeStatus(ctxT(t), statusChange(conv, domain.StatusHandoffRequested, at))
	if err != nil || !changed {
		t.Fatalf("ChangeStatus to HANDOFF_REQUESTED = %v, %v", changed, err)
	}
	return got
}

// needsIDs reads the whole needs view, one page of limit at a time.
func needsIDs(t *testing.T, store *postgres.Store, workspaceID string, limit int) []string {
	t.Helper()
	var ids []string
	page := domain.PageRequest{Limit: limit}
	for range 50 {
		got, err := store.ListInbox(ctxT(t), workspaceID, domain.InboxQuery{View: domain.InboxNeeds}, page)
		if err != nil {
			t.Fatalf("ListInbox: %v", err)
		}
		for _, c := range got.Items {
			ids = append(ids, c.ID)
		}
		if !got.HasMore {
			return ids
		}
		if got.Next.Time != got.Items[len(got.Items)-1].HandoffRequestedAt {
			t.Fatalf("the cursor is at %v, not the last item's request time %v", got.Next.Time, got.Items[len(got.Items)-1].HandoffRequestedAt)
		}
		page.After = got.Next
	}
	t.Fatal("too many pages")
	return nil
}

// The move to HANDOFF_REQUESTED stamps the request time in its own write,
// and every read of the conversation returns it; a conversation handed
// off again after being resolved waits from the new request; the time
// stays when a person takes over. A conversation that never asked has
// none.
func TestHandoffRequestedAtIsStampedByTheMove(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	if f.conv.HandoffRequestedAt != (time.Time{}) {
		t.Fatalf("a new conversation has a request time %v", f.conv.HandoffRequestedAt)
	}
	first := w0.Add(time.Minute)
	moved := requestHandoff(t, f.store, f.conv, first)
	if !moved.HandoffRequestedAt.Equal(first) {
		t.Fatalf("ChangeStatus returned request time %v, want %v", moved.HandoffRequestedAt, first)
	}
	got, err := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
	if err != nil || !got.HandoffRequestedAt.Equal(first) {
		t.Fatalf("GetConversation: %v, %v; want %v", got.HandoffRequestedAt, err, first)
	}
	// Taken over, resolved: the time of the request stays.
	for i, to := range []domain.ConversationStatus{domain.StatusHuman, domain.StatusResolved} {
		got, changed, err := f.store.ChangeStatus(ctx, statusChange(got, to, w0.Add(time.Duration(2+i)*time.Minute)))
		if err != nil || !changed || !got.HandoffRequestedAt.Equal(first) {
			t.Fatalf("to %s: request time %v (%v, %v), want %v", to, got.HandoffRequestedAt, changed, err, first)
		}
	}
	// Back to the agent by a visitor's message, then a new request.
	if err := f.db.WithContext(ctx).Exec(`UPDATE conversations SET status = 'AI' WHERE id = ?`, f.conv.ID).Error; err != nil {
		t.Fatal(err)
	}
	got, _ = f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
	again := w0.Add(time.Hour)
	moved = requestHandoff(t, f.store, got, again)
	if !moved.HandoffRequestedAt.Equal(again) {
		t.Fatalf("handed off again: request time %v, want %v", moved.HandoffRequestedAt, again)
	}
	page, err := f.store.ListInbox(ctx, f.ws.ID, domain.InboxQuery{View: domain.InboxNeeds}, domain.PageRequest{Limit: 5})
	if err != nil || len(page.Items) != 1 || !page.Items[0].HandoffRequestedAt.Equal(again) {
		t.Fatalf("needs lists %+v (%v), want the conversation waiting since %v", page.Items, err, again)
	}
}

// Needs a person is ordered by when the visitor asked, oldest first: a
// visitor who keeps typing keeps their place in the queue, and the page's
// cursor is on the request time.
func TestNeedsOrderedByRequestNotActivity(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	early := requestHandoff(t, f.store, f.conv, w0.Add(time.Minute))
	late := requestHandoff(t, f.store, newConversation(t, f.store, f.ws.ID, f.agent, w0), w0.Add(2*time.Minute))
	// The early one's visitor writes after the late one asked.
	if _, _, err := f.store.AppendMessage(ctx, newMessage(f.ws.ID, early.ID, domain.RoleUser, "still there?", w0.Add(10*time.Minute)), ""); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.GetConversation(ctx, f.ws.ID, early.ID)
	if err != nil || !got.LastActivityAt.After(late.LastActivityAt) || !got.HandoffRequestedAt.Equal(w0.Add(time.Minute)) {
		t.Fatalf("after the message: %+v, %v", got, err)
	}
	for _, limit := range []int{1, 2, 10} {
		if ids := needsIDs(t, f.store, f.ws.ID, limit); !slices.Equal(ids, []string{early.ID, late.ID}) {
			t.Errorf("pages of %d: needs %v, want the earlier request first %v", limit, ids, []string{early.ID, late.ID})
		}
	}
	counts, err := f.store.CountInbox(ctx, f.ws.ID, "", "")
	if err != nil || counts[domain.InboxNeeds] != 2 {
		t.Fatalf("needs counted %d (%v), want 2", counts[domain.InboxNeeds], err)
	}
}

// Requests at the same microsecond page by id: every page of any size
// gives each conversation once, in (request time, id) order.
func TestNeedsPagesAcrossEqualRequestTimes(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	var want []string
	for i := range 7 {
		c := f.conv
		if i > 0 {
			c = newConversation(t, f.store, f.ws.ID, f.agent, w0)
		}
		at := w0.Add(time.Minute) // five share this time
		if i >= 5 {
			at = w0.Add(time.Duration(i) * time.Minute)
		}
		requestHandoff(t, f.store, c, at)
		want = append(want, c.ID)
	}
	slices.Sort(want[:5])
	for _, limit := range []int{1, 2, 3, 7} {
		if got := needsIDs(t, f.store, f.ws.ID, limit); !slices.Equal(got, want) {
			t.Errorf("pages of %d: %v, want %v", limit, got, want)
		}
	}
}

// oldPodHandoffSQL is how a pod of the release before migration 00023
// moves a conversation to HANDOFF_REQUESTED: it knows nothing of
// handoff_requested_at.
const oldPodHandoffSQL = `UPDATE conversations SET status = 'HANDOFF_REQUESTED', message_count = message_count + 1,
	last_activity_at = GREATEST(last_activity_at, $2) WHERE id = $1`

// During a rollout an old pod's move does not name the column: the
// trigger of 00023 stamps it with the move's time (the last activity it
// wrote), on the first request and on a request after a resolution, so
// the needs view never holds a waiting conversation without a time. A
// writer that tries to clear it on a waiting conversation is refused.
func TestHandoffRequestedAtDuringRollout(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	byNewPod := requestHandoff(t, f.store, newConversation(t, f.store, f.ws.ID, f.agent, w0), w0.Add(3*time.Minute))
	exec := func(sql string, args ...any) error { return f.db.WithContext(ctx).Exec(sql, args...).Error }
	oldAt := w0.Add(2 * time.Minute)
	if err := exec(oldPodHandoffSQL, f.conv.ID, oldAt); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.GetConversation(ctx, f.ws.ID, f.conv.ID)
	if err != nil || !got.HandoffRequestedAt.Equal(oldAt) {
		t.Fatalf("old pod's move: request time %v (%v), want %v", got.HandoffRequestedAt, err, oldAt)
	}
	if ids := needsIDs(t, f.store, f.ws.ID, 1); !slices.Equal(ids, []string{f.conv.ID, byNewPod.ID}) {
		t.Fatalf("needs %v, want the old pod's earlier request first", ids)
	}
	// Resolved, then asked again through an old pod: the new request counts.
	if err := exec(`UPDATE conversations SET status = 'RESOLVED' WHERE id = ?`, f.conv.ID); err != nil {
		t.Fatal(err)
	}
	againAt := w0.Add(time.Hour)
	if err := exec(oldPodHandoffSQL, f.conv.ID, againAt); err != nil {
		t.Fatal(err)
	}
	if got, err = f.store.GetConversation(ctx, f.ws.ID, f.conv.ID); err != nil || !got.HandoffRequestedAt.Equal(againAt) {
		t.Fatalf("old pod's second request: %v (%v), want %v", got.HandoffRequestedAt, err, againAt)
	}
	// An old pod's insert of a waiting conversation is stamped too.
	if err := exec(`INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, last_message, message_count, last_activity_at, created_at)
		VALUES ('ses_oldinsert', ?, ?, 'support', 'CHAT', 'HANDOFF_REQUESTED', '', 0, ?, ?)`, f.ws.ID, f.agent.ID, w0, w0); err != nil {
		t.Fatal(err)
	}
	if got, err = f.store.GetConversation(ctx, f.ws.ID, "ses_oldinsert"); err != nil || !got.HandoffRequestedAt.Equal(w0) {
		t.Fatalf("old pod's insert: %v (%v), want %v", got.HandoffRequestedAt, err, w0)
	}
	// NULL on a waiting conversation is refused; on others it is the rule.
	if err := exec(`UPDATE conversations SET handoff_requested_at = NULL WHERE id = ?`, f.conv.ID); err == nil ||
		!strings.Contains(err.Error(), "conversations_handoff_requested_at_check") {
		t.Fatalf("clearing a waiting conversation's request time: %v, want the check's refusal", err)
	}
	if err := exec(`UPDATE conversations SET status = 'HUMAN', handoff_requested_at = NULL WHERE id = ?`, f.conv.ID); err != nil {
		t.Fatalf("a conversation with a person may have no request time: %v", err)
	}
	if got, err = f.store.GetConversation(ctx, f.ws.ID, f.conv.ID); err != nil || !got.HandoffRequestedAt.IsZero() {
		t.Fatalf("NULL reads as the zero time: %v (%v)", got.HandoffRequestedAt, err)
	}
}

// The needs view's page reads the partial index of 00023 in its order:
// no sequential scan, no sort, however large the rest of the table.
func TestNeedsPageUsesItsIndex(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", w0)
	if err := pg.Gorm.WithContext(ctx).Exec(`INSERT INTO conversations
		(id, workspace_id, agent_id, agent_slug, channel, status, last_message, message_count, last_activity_at, created_at)
		SELECT 'ses_' || md5(g::text), ?, ?, 'support', 'CHAT', CASE WHEN g % 50 = 0 THEN 'HANDOFF_REQUESTED' ELSE 'RESOLVED' END,
			'', 1, ?::timestamptz + g * interval '1 second', ?::timestamptz
		FROM generate_series(1, 20000) AS g`, ws.ID, agent.ID, micro(w0), micro(w0)).Error; err != nil {
		t.Fatal(err)
	}
	if err := pg.Gorm.WithContext(ctx).Exec(`ANALYZE conversations`).Error; err != nil {
		t.Fatal(err)
	}
	first, err := store.ListInbox(ctx, ws.ID, domain.InboxQuery{View: domain.InboxNeeds}, domain.PageRequest{Limit: 25})
	if err != nil || !first.HasMore {
		t.Fatalf("first page: %d items, %v", len(first.Items), err)
	}
	query, args := postgres.InboxListQuery(ws.ID, domain.InboxQuery{View: domain.InboxNeeds}, first.Next, 26)
	plan := explain(t, pg.Gorm, query, args)
	if strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Sort") || !strings.Contains(plan, "conversations_needs_handoff_idx") {
		t.Fatalf("the needs page does not read its index in order:\n%s", plan)
	}
}

// Migration 00023 goes down and up again on a table holding waiting
// conversations: down drops everything up added; up backfills a waiting
// conversation from its handoff notice (not its later activity), one an
// old pod stored without a notice from its last activity, and leaves the
// others without a time.
func TestHandoffRequestedAtMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn, pg, store, ws, agent := migrationFixture(t, w0)
	ctx := ctxT(t)
	asked := requestHandoff(t, store, newConversation(t, store, ws.ID, agent, w0), w0.Add(5*time.Minute))
	if _, _, err := store.AppendMessage(ctx, newMessage(ws.ID, asked.ID, domain.RoleUser, "hello?", w0.Add(20*time.Minute)), ""); err != nil {
		t.Fatal(err)
	}
	ai := newConversation(t, store, ws.ID, agent, w0)
	if err := pg.Close(); err != nil {
		t.Fatal(err)
	}

	provider, db := migrationProvider(t, dsn)
	const schema = `SELECT
		(SELECT count(*) FROM information_schema.columns WHERE table_name = 'conversations' AND column_name = 'handoff_requested_at'),
		(SELECT count(*) FROM pg_trigger WHERE tgname LIKE 'conversations_handoff_requested_%'),
		(SELECT count(*) FROM pg_proc WHERE proname = 'conversations_stamp_handoff_requested'),
		(SELECT count(*) FROM pg_constraint WHERE conname = 'conversations_handoff_requested_at_check' AND convalidated),
		(SELECT count(*) FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
			WHERE c.relname = 'conversations_needs_handoff_idx' AND i.indisvalid)`
	check := func(when string, want [5]int) {
		t.Helper()
		var got [5]int
		if err := db.QueryRowContext(ctx, schema).Scan(&got[0], &got[1], &got[2], &got[3], &got[4]); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("%s: column, triggers, function, check, index = %v, want %v", when, got, want)
		}
	}
	check("migrated", [5]int{1, 2, 1, 1, 1})
	if rs, err := provider.DownTo(ctx, 22); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 23 { // later ones go first
		t.Fatalf("down to 22: %+v, %v", rs, err)
	}
	check("down", [5]int{})
	// While down, an old pod stores a waiting conversation without a notice.
	if _, err := db.ExecContext(ctx, `INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, last_message, message_count, last_activity_at, created_at)
		VALUES ('ses_waitingdown', $1, $2, 'support', 'CHAT', 'HANDOFF_REQUESTED', '', 0, $3, $3)`, ws.ID, agent.ID, w0.Add(7*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	check("up again", [5]int{1, 2, 1, 1, 1})
	for id, want := range map[string]time.Time{asked.ID: w0.Add(5 * time.Minute), "ses_waitingdown": w0.Add(7 * time.Minute), ai.ID: {}} {
		var at *time.Time
		if err := db.QueryRowContext(ctx, `SELECT handoff_requested_at FROM conversations WHERE id = $1`, id).Scan(&at); err != nil {
			t.Fatal(err)
		}
		if (at == nil) != want.IsZero() || (at != nil && !at.Equal(want)) {
			t.Errorf("%s backfilled with %v, want %v", id, at, want)
		}
	}
}

// Resolving keeps the assignee, as Chatwoot does: a conversation reopened
// goes back to who had it, into their Mine, and so does one whose visitor
// asks for a person again.
func TestResolveKeepsTheAssignee(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, _, _ := assignees(t, f)
	ctx := ctxT(t)
	mine := func() []string {
		t.Helper()
		page, err := f.store.ListInbox(ctx, f.ws.ID, domain.InboxQuery{View: domain.InboxMine, UserID: ada.UserID}, domain.PageRequest{Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range page.Items {
			ids = append(ids, c.ID)
		}
		return ids
	}
	conv := requestHandoff(t, f.store, f.conv, w0.Add(time.Minute))
	conv, _, err := f.store.ChangeStatus(ctx, statusChange(conv, domain.StatusHuman, w0.Add(2*time.Minute)).WithTakeOver(&f.ws, conv, ada.UserID, w0.Add(2*time.Minute)))
	if err != nil || conv.AssigneeID != ada.UserID {
		t.Fatalf("take-over: %+v, %v", conv, err)
	}
	steps := []struct {
		to       domain.ConversationStatus
		wantMine bool
	}{
		{domain.StatusResolved, false}, // resolved is not open: out of Mine, still Ada's
		{domain.StatusHuman, true},     // reopened: back in Ada's Mine
		{domain.StatusResolved, false},
		{domain.StatusHandoffRequested, true}, // the visitor asks again: Ada's, and waiting
	}
	for i, step := range steps {
		var changed bool
		conv, changed, err = f.store.ChangeStatus(ctx, statusChange(conv, step.to, w0.Add(time.Duration(3+i)*time.Minute)))
		if err != nil || !changed || conv.AssigneeID != ada.UserID {
			t.Fatalf("to %s: assignee %q (%v, %v), want Ada kept", step.to, conv.AssigneeID, changed, err)
		}
		if got := mine(); slices.Contains(got, conv.ID) != step.wantMine {
			t.Fatalf("after %s: Ada's Mine is %v, want it there: %v", step.to, got, step.wantMine)
		}
	}
}
