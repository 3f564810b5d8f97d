package postgres_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// TestInboxScales reads every inbox view and the tabs' counts over 100,000
// conversations of one workspace (next to another's 20,000), a quarter of
// them waiting for a person and a quarter with one, so the open views are
// far larger than any real inbox. Each view pages ten pages deep; the plan
// of the deepest page and of the counts must read an index in the view's
// order: no sequential scan and no sort of conversations.
func TestInboxScales(t *testing.T) {
	if testing.Short() {
		t.Skip("loads 120,000 conversations")
	}
	t.Parallel()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	// Loading 120,000 rows (and the triggers that keep the rollups) took
	// over the shared 60 s bound when the suite loaded the machine; this
	// bound is for a hung database, not a measure (the plans are what the
	// test checks).
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "a", t0)
	otherAgent := newAgent(t, store, other.ID, "a", t0)
	ada := addMember(t, store, ws.ID, newUser(t, store, "ada-scale@example.com"), domain.MemberAgent)
	load := func(workspaceID string, a domain.Agent, n int, assignee string) {
		t.Helper()
		// Statuses cycle every 7 conversations; a third of those with a
		// person are assigned, as are many resolved ones.
		err := db.WithContext(ctx).Exec(`INSERT INTO conversations
			(id, workspace_id, agent_id, agent_slug, channel, status, assignee_id, verified_user_id, last_message, message_count, last_activity_at, created_at)
			SELECT 'ses_' || md5(? || g::text), ?, ?, ?, 'CHAT', s.status,
				CASE WHEN s.status IN ('HUMAN', 'RESOLVED') AND g % 3 = 0 THEN NULLIF(?, '') END,
				CASE WHEN g % 5 = 0 THEN 'cust-' || (g % 2000)::text END,
				'hello', 2, ?::timestamptz + (g / 3) * interval '1 second', ?::timestamptz
			FROM generate_series(1, ?) AS g,
				LATERAL (SELECT (ARRAY['AI', 'HANDOFF_REQUESTED', 'HUMAN', 'RESOLVED'])[1 + (g / 7) % 4] AS status) AS s`,
			workspaceID, workspaceID, a.ID, a.Slug, assignee, micro(t0), micro(t0), n).Error
		if err != nil {
			t.Fatal(err)
		}
	}
	load(ws.ID, agent, 100_000, ada.UserID)
	load(other.ID, otherAgent, 20_000, "")
	if err := db.WithContext(ctx).Exec(`ANALYZE conversations`).Error; err != nil {
		t.Fatal(err)
	}
	noScanNoSort := func(t *testing.T, plan string) {
		t.Helper()
		t.Logf("plan:\n%s", plan)
		if strings.Contains(plan, "Seq Scan on conversations") || strings.Contains(plan, "Sort") {
			t.Fatalf("plan scans or sorts conversations:\n%s", plan)
		}
	}
	for _, q := range []domain.InboxQuery{
		{View: domain.InboxNeeds}, {View: domain.InboxMine, UserID: ada.UserID}, {View: domain.InboxUnassigned},
		{View: domain.InboxOpen}, {View: domain.InboxResolved}, {View: domain.InboxNeeds, AgentID: agent.ID},
	} {
		t.Run(string(q.View)+" "+q.AgentID, func(t *testing.T) {
			var durations []time.Duration
			req := domain.PageRequest{Limit: 25}
			for range 10 {
				start := time.Now()
				page, err := store.ListInbox(ctx, ws.ID, q, req)
				durations = append(durations, time.Since(start))
				if err != nil {
					t.Fatal(err)
				}
				if len(page.Items) != 25 || !page.HasMore {
					t.Fatalf("page of %d, hasMore %v", len(page.Items), page.HasMore)
				}
				req.After = page.Next
			}
			slices.Sort(durations)
			t.Logf("page latency over 10 pages: p50 %v, max %v", durations[len(durations)/2], durations[len(durations)-1])
			query, args := postgres.InboxListQuery(ws.ID, q, req.After, 26)
			noScanNoSort(t, explain(t, db, query, args))
		})
	}
	t.Run("counts", func(t *testing.T) {
		var durations []time.Duration
		for range 10 {
			start := time.Now()
			counts, err := store.CountInbox(ctx, ws.ID, ada.UserID, "")
			durations = append(durations, time.Since(start))
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range domain.InboxViews {
				if counts[v] != domain.InboxCountCap {
					t.Fatalf("%s counted %d, want the cap", v, counts[v])
				}
			}
		}
		slices.Sort(durations)
		t.Logf("counts latency over 10 runs: p50 %v, max %v", durations[len(durations)/2], durations[len(durations)-1])
		query, args := postgres.InboxCountQuery(ws.ID, ada.UserID, "")
		noScanNoSort(t, explain(t, db, query, args))
	})
	t.Run("earlier conversations", func(t *testing.T) {
		start := time.Now()
		got, err := store.VerifiedUserConversations(ctx, ws.ID, "cust-10", "", 5)
		if err != nil || len(got) != 5 {
			t.Fatalf("%d, %v", len(got), err)
		}
		t.Logf("latency %v", time.Since(start))
		plan := explain(t, db, `SELECT c.id FROM conversations AS c WHERE c.workspace_id = $1 AND c.verified_user_id = $2 AND c.id <> $3
	ORDER BY c.last_activity_at DESC, c.id DESC LIMIT $4`, []any{ws.ID, "cust-10", "", 5})
		noScanNoSort(t, plan)
	})
}
