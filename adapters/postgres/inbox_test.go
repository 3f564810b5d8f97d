package postgres_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// inboxFixture: a workspace with two agents, two members and conversations
// in every state, plus one of another workspace that no view may show.
type inboxFixture struct {
	conversationFixture
	ada, bob domain.Member
	// ids by name: waiting1 (oldest), waiting2, adaHuman, bobHuman,
	// freeHuman, resolved, ai, otherAgent (HANDOFF_REQUESTED, agent "sales").
	ids map[string]string
	// sales is the second agent.
	sales domain.Agent
}

func newInboxFixture(t *testing.T) inboxFixture {
	t.Helper()
	f := inboxFixture{conversationFixture: newConversationFixture(t), ids: map[string]string{}}
	f.ada, f.bob, _ = assignees(t, f.conversationFixture)
	f.sales = newAgent(t, f.store, f.ws.ID, "sales", t0)
	ctx := ctxT(t)
	mk := func(name string, agent domain.Agent, minutes int, status domain.ConversationStatus, assignee, contact, verified string) {
		c := domain.NewConversation(f.ws.ID, &agent, verified, t0.Add(time.Duration(minutes)*time.Minute))
		if err := f.store.CreateConversation(ctx, &c); err != nil {
			t.Fatalf("CreateConversation: %v", err)
		}
		var a any
		if assignee != "" {
			a = assignee
		}
		if err := f.db.WithContext(ctx).Exec(`UPDATE conversations SET status = ?, assignee_id = ?, contact_name = ?, last_activity_at = ? WHERE id = ?`,
			string(status), a, contact, c.LastActivityAt, c.ID).Error; err != nil {
			t.Fatalf("update %s: %v", name, err)
		}
		f.ids[name] = c.ID
	}
	mk("waiting2", f.agent, 20, domain.StatusHandoffRequested, "", "Grace Hopper", "")
	mk("waiting1", f.agent, 10, domain.StatusHandoffRequested, "", "Ada Lovelace", "cust-1")
	mk("adaHuman", f.agent, 30, domain.StatusHuman, f.ada.UserID, "", "cust-1")
	mk("bobHuman", f.agent, 40, domain.StatusHuman, f.bob.UserID, "", "")
	mk("freeHuman", f.agent, 50, domain.StatusHuman, "", "", "cust-1")
	mk("resolved", f.agent, 60, domain.StatusResolved, f.ada.UserID, "Grace Resolved", "cust-2")
	mk("ai", f.agent, 70, domain.StatusAI, "", "", "")
	mk("otherAgent", f.sales, 5, domain.StatusHandoffRequested, "", "", "")
	// Another workspace's conversation waiting for a person.
	other, _, _ := newWorkspace(t, f.store, domain.PlanStandard)
	otherAgent := newAgent(t, f.store, other.ID, "support", t0)
	c := domain.NewConversation(other.ID, &otherAgent, "cust-1", t0)
	if err := f.store.CreateConversation(ctx, &c); err != nil {
		t.Fatal(err)
	}
	if err := f.db.WithContext(ctx).Exec(`UPDATE conversations SET status = 'HANDOFF_REQUESTED', contact_name = 'Grace Other' WHERE id = ?`, c.ID).Error; err != nil {
		t.Fatal(err)
	}
	return f
}

func (f inboxFixture) names(t *testing.T, got []domain.Conversation) []string {
	t.Helper()
	byID := map[string]string{}
	for name, id := range f.ids {
		byID[id] = name
	}
	out := []string{}
	for _, c := range got {
		name, ok := byID[c.ID]
		if !ok {
			t.Fatalf("a conversation not of the fixture's workspace: %s", c.ID)
		}
		out = append(out, name)
	}
	return out
}

func TestListInbox(t *testing.T) {
	t.Parallel()
	f := newInboxFixture(t)
	tests := []struct {
		name string
		q    domain.InboxQuery
		want []string
	}{
		{"needs, oldest first", domain.InboxQuery{View: domain.InboxNeeds}, []string{"otherAgent", "waiting1", "waiting2"}},
		{"needs of one agent", domain.InboxQuery{View: domain.InboxNeeds, AgentID: f.agent.ID}, []string{"waiting1", "waiting2"}},
		{"mine", domain.InboxQuery{View: domain.InboxMine, UserID: f.ada.UserID}, []string{"adaHuman"}},
		{"mine without a user", domain.InboxQuery{View: domain.InboxMine}, []string{}},
		{"unassigned, newest first", domain.InboxQuery{View: domain.InboxUnassigned}, []string{"freeHuman", "waiting2", "waiting1", "otherAgent"}},
		{"open", domain.InboxQuery{View: domain.InboxOpen}, []string{"freeHuman", "bobHuman", "adaHuman", "waiting2", "waiting1", "otherAgent"}},
		{"resolved", domain.InboxQuery{View: domain.InboxResolved}, []string{"resolved"}},
		{"search the contact in needs", domain.InboxQuery{View: domain.InboxNeeds, Query: "grace"}, []string{"waiting2"}},
		{"search resolved", domain.InboxQuery{View: domain.InboxResolved, Query: "grace"}, []string{"resolved"}},
		{"search with % is literal", domain.InboxQuery{View: domain.InboxOpen, Query: "%%%"}, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			page, err := f.store.ListInbox(ctxT(t), f.ws.ID, tt.q, domain.PageRequest{Limit: 20})
			if err != nil {
				t.Fatalf("ListInbox: %v", err)
			}
			if got := f.names(t, page.Items); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestListInboxSearchesMessages(t *testing.T) {
	t.Parallel()
	f := newInboxFixture(t)
	ctx := ctxT(t)
	m := newMessage(f.ws.ID, f.ids["bobHuman"], domain.RoleUser, "My parcel never arrived", t0.Add(41*time.Minute))
	if _, _, err := f.store.AppendMessage(ctx, m, ""); err != nil {
		t.Fatalf("AppendMessage: %v", err)
	}
	page, err := f.store.ListInbox(ctx, f.ws.ID, domain.InboxQuery{View: domain.InboxOpen, Query: "PARCEL"}, domain.PageRequest{Limit: 20})
	if err != nil {
		t.Fatal(err)
	}
	if got := f.names(t, page.Items); !slices.Equal(got, []string{"bobHuman"}) {
		t.Fatalf("got %v", got)
	}
}

func TestListInboxPages(t *testing.T) {
	t.Parallel()
	f := newInboxFixture(t)
	for _, view := range []domain.InboxView{domain.InboxNeeds, domain.InboxOpen} {
		t.Run(string(view), func(t *testing.T) {
			all, err := f.store.ListInbox(ctxT(t), f.ws.ID, domain.InboxQuery{View: view}, domain.PageRequest{Limit: 20})
			if err != nil {
				t.Fatal(err)
			}
			var paged []domain.Conversation
			page := domain.PageRequest{Limit: 2}
			for i := 0; ; i++ {
				got, err := f.store.ListInbox(ctxT(t), f.ws.ID, domain.InboxQuery{View: view}, page)
				if err != nil {
					t.Fatal(err)
				}
				paged = append(paged, got.Items...)
				if !got.HasMore {
					break
				}
				if i > 5 {
					t.Fatal("too many pages")
				}
				page.After = got.Next
			}
			if a, b := f.names(t, all.Items), f.names(t, paged); !slices.Equal(a, b) {
				t.Fatalf("pages give %v, one page %v", b, a)
			}
		})
	}
}

func TestCountInbox(t *testing.T) {
	t.Parallel()
	f := newInboxFixture(t)
	got, err := f.store.CountInbox(ctxT(t), f.ws.ID, f.ada.UserID, "")
	if err != nil {
		t.Fatal(err)
	}
	want := domain.InboxCounts{domain.InboxNeeds: 3, domain.InboxMine: 1, domain.InboxUnassigned: 4, domain.InboxOpen: 6, domain.InboxResolved: 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	got, err = f.store.CountInbox(ctxT(t), f.ws.ID, f.bob.UserID, f.sales.ID)
	if err != nil {
		t.Fatal(err)
	}
	want = domain.InboxCounts{domain.InboxNeeds: 1, domain.InboxMine: 0, domain.InboxUnassigned: 1, domain.InboxOpen: 1, domain.InboxResolved: 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("sales counts %v, want %v", got, want)
	}
}

func TestCountInboxIsCapped(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	// InboxCountCap+5 waiting conversations in one statement.
	if err := f.db.WithContext(ctx).Exec(`INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, last_activity_at, created_at)
		SELECT 'ses_' || lpad(g::text, 26, '0'), ?, ?, ?, 'CHAT', 'HANDOFF_REQUESTED', now(), now() FROM generate_series(1, ?) AS g`,
		f.ws.ID, f.agent.ID, f.agent.Slug, domain.InboxCountCap+5).Error; err != nil {
		t.Fatal(err)
	}
	got, err := f.store.CountInbox(ctx, f.ws.ID, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if got[domain.InboxNeeds] != domain.InboxCountCap || got[domain.InboxOpen] != domain.InboxCountCap || got[domain.InboxMine] != 0 {
		t.Fatalf("counts %v, want needs and open capped at %d", got, domain.InboxCountCap)
	}
}

func TestVerifiedUserConversations(t *testing.T) {
	t.Parallel()
	f := newInboxFixture(t)
	got, err := f.store.VerifiedUserConversations(ctxT(t), f.ws.ID, "cust-1", f.ids["adaHuman"], 5)
	if err != nil {
		t.Fatal(err)
	}
	// Newest first, not the conversation itself, not another workspace's.
	if names := f.names(t, got); !slices.Equal(names, []string{"freeHuman", "waiting1"}) {
		t.Fatalf("got %v", names)
	}
	got, err = f.store.VerifiedUserConversations(ctxT(t), f.ws.ID, "cust-1", "", 1)
	if err != nil || len(got) != 1 {
		t.Fatalf("limit 1: %v, %v", got, err)
	}
	if got, err = f.store.VerifiedUserConversations(ctxT(t), f.ws.ID, "", "", 5); err != nil || len(got) != 0 {
		t.Fatalf("no verified user: %v, %v", got, err)
	}
}

// Migration 00021 only adds indexes: down drops them, up builds them
// again, valid.
func TestInboxIndexesMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	provider, db := migrationProvider(t, dsn)
	indexes := func() (names []string) {
		rows, err := db.QueryContext(ctx, `SELECT c.relname FROM pg_index AS i JOIN pg_class AS c ON c.oid = i.indexrelid
			WHERE c.relname IN ('conversations_open_activity_idx', 'conversations_open_assignee_activity_idx', 'conversations_verified_user_activity_idx')
				AND i.indisvalid ORDER BY c.relname`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var n string
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		return names
	}
	if got := indexes(); len(got) != 3 {
		t.Fatalf("after up: %v", got)
	}
	if rs, err := provider.DownTo(ctx, 20); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 21 {
		t.Fatalf("down to 20: %+v, %v", rs, err)
	}
	if got := indexes(); len(got) != 0 {
		t.Fatalf("down left %v", got)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if got := indexes(); len(got) != 3 {
		t.Fatalf("up again: %v", got)
	}
}
