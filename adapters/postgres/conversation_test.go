package postgres_test

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestConversationAndMessages(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)

	conv := domain.NewConversation(ws.ID, &agent, "user-42", t0)
	if err := store.CreateConversation(ctx, &conv); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	for name, get := range map[string]func() (domain.Conversation, error){
		"GetConversation":          func() (domain.Conversation, error) { return store.GetConversation(ctx, ws.ID, conv.ID) },
		"GetConversationBySession": func() (domain.Conversation, error) { return store.GetConversationBySession(ctx, conv.ID) },
	} {
		got, err := get()
		if err != nil || !reflect.DeepEqual(got, conv) {
			t.Fatalf("%s = %+v, %v; want %+v", name, got, err, conv)
		}
	}

	user := newMessage(ws.ID, conv.ID, domain.RoleUser, "  Where is my order?  ", t0.Add(time.Second))
	stored, created, err := store.AppendMessage(ctx, user, "")
	if err != nil || !created {
		t.Fatalf("AppendMessage = %v, %v", created, err)
	}
	wantUser := user
	wantUser.CreatedAt = micro(user.CreatedAt)
	if !reflect.DeepEqual(stored, wantUser) {
		t.Fatalf("stored = %+v, want %+v", stored, wantUser)
	}
	long := strings.Repeat("é", 300)
	assistant := newMessage(ws.ID, conv.ID, domain.RoleAssistant, long, t0.Add(2*time.Second))
	assistant.Citations = []domain.Citation{
		{DocumentName: "Orders", SourceID: "src_1", SourceType: domain.SourceText, Snippet: "Orders ship…", Score: 0.75},
		{DocumentName: "FAQ", SourceID: "src_2", SourceType: domain.SourceQA, URL: "https://example.com/faq", Snippet: "Q", Score: 0.5},
	}
	assistant.TokensIn, assistant.TokensOut = 120, 48
	if _, created, err := store.AppendMessage(ctx, assistant, ""); err != nil || !created {
		t.Fatalf("AppendMessage(assistant) = %v, %v", created, err)
	}

	got, err := store.GetConversation(ctx, ws.ID, conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.MessageCount != 2 || got.LastMessage != domain.Preview(long, 200) || len([]rune(got.LastMessage)) != 200 ||
		!got.LastActivityAt.Equal(micro(assistant.CreatedAt)) {
		t.Fatalf("conversation after two messages = %+v", got)
	}

	// A late message (an older timestamp) counts but moves neither the
	// preview nor the last activity back.
	late := newMessage(ws.ID, conv.ID, domain.RoleSystem, "late notice", t0)
	if _, _, err := store.AppendMessage(ctx, late, ""); err != nil {
		t.Fatal(err)
	}
	got, _ = store.GetConversation(ctx, ws.ID, conv.ID)
	if got.MessageCount != 3 || got.LastMessage != domain.Preview(long, 200) || !got.LastActivityAt.Equal(micro(assistant.CreatedAt)) {
		t.Fatalf("conversation after a late message = %+v", got)
	}

	page, err := store.ListMessages(ctx, ws.ID, conv.ID, domain.PageRequest{})
	if err != nil {
		t.Fatalf("ListMessages: %v", err)
	}
	// Append order, whatever the timestamps.
	if len(page.Items) != 3 || page.HasMore || page.Items[0].ID != user.ID || page.Items[1].ID != assistant.ID || page.Items[2].ID != late.ID {
		t.Fatalf("ListMessages = %+v", page)
	}
	wantAssistant := assistant
	wantAssistant.CreatedAt = micro(assistant.CreatedAt)
	if !reflect.DeepEqual(page.Items[1], wantAssistant) {
		t.Fatalf("assistant message = %+v, want %+v", page.Items[1], wantAssistant)
	}
	// Messages without citations store [] (never null).
	var citations string
	if err := db.Raw(`SELECT citations::text FROM messages WHERE id = ?`, user.ID).Scan(&citations).Error; err != nil || citations != "[]" {
		t.Fatalf("stored citations = %q, %v; want []", citations, err)
	}
}

func TestListMessagesPaginates(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	store, ws, agent, conv := f.store, f.ws, f.agent, f.conv
	ctx := ctxT(t)
	other := newConversation(t, store, ws.ID, agent, t0)

	var want []string
	for i := range 7 {
		// Every message has the same time: order must still be append order.
		m := newMessage(ws.ID, conv.ID, domain.RoleUser, fmt.Sprintf("m%d", i), t0)
		if _, _, err := store.AppendMessage(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
		want = append(want, m.ID)
	}
	var got []string
	req := domain.PageRequest{Limit: 3}
	for range 5 {
		page, err := store.ListMessages(ctx, ws.ID, conv.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Items {
			got = append(got, m.ID)
		}
		if !page.HasMore {
			break
		}
		req.After = page.Next
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("messages in pages = %v, want %v", got, want)
	}

	// An exhausted conversation gives an empty last page, not an error.
	last := domain.Position{Time: t0, ID: want[len(want)-1]}
	if page, err := store.ListMessages(ctx, ws.ID, conv.ID, domain.PageRequest{After: &last}); err != nil || len(page.Items) != 0 || page.HasMore {
		t.Fatalf("page after the last message = %+v, %v", page, err)
	}
	if page, err := store.ListMessages(ctx, ws.ID, other.ID, domain.PageRequest{}); err != nil || len(page.Items) != 0 {
		t.Fatalf("empty conversation = %+v, %v", page, err)
	}
	// A cursor from another conversation is rejected rather than silently empty.
	if _, err := store.ListMessages(ctx, ws.ID, other.ID, domain.PageRequest{After: &last}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("foreign cursor: err = %v, want ErrInvalidInput", err)
	}
}

func TestConversationErrorsAndScoping(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agentA := newAgent(t, store, wsA.ID, "support", t0)
	agentB := newAgent(t, store, wsB.ID, "support", t0)
	convA := newConversation(t, store, wsA.ID, agentA, t0)
	newConversation(t, store, wsB.ID, agentB, t0)
	msgA := newMessage(wsA.ID, convA.ID, domain.RoleUser, "hello", t0.Add(time.Second))
	if _, _, err := store.AppendMessage(ctx, msgA, ""); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		run  func() error
	}{
		{"create on another workspace's agent", func() error {
			c := domain.NewConversation(wsB.ID, &agentA, "", t0)
			return store.CreateConversation(ctx, &c)
		}},
		{"create on unknown agent", func() error {
			ghost := agentA
			ghost.ID = domain.NewID(domain.PrefixAgent)
			c := domain.NewConversation(wsA.ID, &ghost, "", t0)
			return store.CreateConversation(ctx, &c)
		}},
		{"get A's conversation from B", func() error { _, err := store.GetConversation(ctx, wsB.ID, convA.ID); return err }},
		{"get unknown session", func() error {
			_, err := store.GetConversationBySession(ctx, domain.NewID(domain.PrefixSession))
			return err
		}},
		{"append to A's conversation as B", func() error {
			_, _, err := store.AppendMessage(ctx, newMessage(wsB.ID, convA.ID, domain.RoleUser, "sneaky", t0.Add(time.Hour)), "")
			return err
		}},
		{"append to unknown conversation", func() error {
			_, _, err := store.AppendMessage(ctx, newMessage(wsA.ID, domain.NewID(domain.PrefixSession), domain.RoleUser, "x", t0), "")
			return err
		}},
		{"list A's messages from B", func() error { _, err := store.ListMessages(ctx, wsB.ID, convA.ID, domain.PageRequest{}); return err }},
		{"list unknown conversation's messages", func() error {
			_, err := store.ListMessages(ctx, wsA.ID, domain.NewID(domain.PrefixSession), domain.PageRequest{})
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
		})
	}

	got, err := store.GetConversation(ctx, wsA.ID, convA.ID)
	if err != nil || got.MessageCount != 1 || got.LastMessage != "hello" {
		t.Fatalf("A's conversation after B's attempts = %+v, %v", got, err)
	}
	page, err := store.ListConversations(ctx, wsB.ID, domain.ConversationFilter{}, domain.PageRequest{})
	if err != nil || len(page.Items) != 1 || page.Items[0].WorkspaceID != wsB.ID {
		t.Fatalf("ListConversations(B) = %+v, %v", page, err)
	}
	page, err = store.ListConversations(ctx, wsB.ID, domain.ConversationFilter{AgentID: agentA.ID}, domain.PageRequest{})
	if err != nil || len(page.Items) != 0 {
		t.Fatalf("ListConversations(B, A's agent) = %+v, %v", page, err)
	}
}

func TestAppendMessageIsIdempotentPerInboundEvent(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	db, store, ws, conv := f.db, f.store, f.ws, f.conv
	ctx := ctxT(t)

	first := newMessage(ws.ID, conv.ID, domain.RoleUser, "from the webhook", t0.Add(time.Second))
	first.InboundEventID = domain.NewID(domain.PrefixInboundEvent)
	stored, created, err := store.AppendMessage(ctx, first, "")
	if err != nil || !created {
		t.Fatalf("first append = %v, %v", created, err)
	}
	// The retry carries a new message id (the worker made a new one) and time.
	retry := newMessage(ws.ID, conv.ID, domain.RoleUser, "from the webhook", t0.Add(time.Minute))
	retry.InboundEventID = first.InboundEventID
	again, created, err := store.AppendMessage(ctx, retry, "")
	if err != nil || created {
		t.Fatalf("second append = %v, %v; want created false", created, err)
	}
	if !reflect.DeepEqual(again, stored) {
		t.Fatalf("second append returned %+v, want the stored %+v", again, stored)
	}
	// The same event appended as another workspace does not reveal the message.
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)
	foreign := retry
	foreign.WorkspaceID = wsB.ID
	if _, _, err := store.AppendMessage(ctx, foreign, ""); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("append of A's event as B: err = %v, want ErrNotFound", err)
	}

	// Several workers racing on one event append it once.
	event := domain.NewID(domain.PrefixInboundEvent)
	const workers = 8
	var wg sync.WaitGroup
	results := make([]struct {
		msg     domain.Message
		created bool
		err     error
	}, workers)
	for i := range workers {
		wg.Go(func() {
			m := newMessage(ws.ID, conv.ID, domain.RoleUser, "racing", t0.Add(2*time.Minute))
			m.InboundEventID = event
			results[i].msg, results[i].created, results[i].err = store.AppendMessage(ctx, m, "")
		})
	}
	wg.Wait()
	createdCount := 0
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("worker %d: %v", i, r.err)
		}
		if r.created {
			createdCount++
		}
		if r.msg.ID != results[0].msg.ID {
			t.Fatalf("worker %d got message %s, worker 0 got %s", i, r.msg.ID, results[0].msg.ID)
		}
	}
	if createdCount != 1 {
		t.Fatalf("%d workers created the message, want exactly 1", createdCount)
	}
	var rows int64
	db.Raw(`SELECT count(*) FROM messages WHERE inbound_event_id = ?`, event).Scan(&rows)
	got, err := store.GetConversation(ctx, ws.ID, conv.ID)
	if err != nil || rows != 1 || got.MessageCount != 2 {
		t.Fatalf("after the race: %d rows, conversation %+v, %v; want 1 row and 2 messages", rows, got, err)
	}
}

func TestConcurrentAppendsKeepAnExactCount(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	store, ws, conv := f.store, f.ws, f.conv
	ctx := ctxT(t)
	const n = 20
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			m := newMessage(ws.ID, conv.ID, domain.RoleUser, fmt.Sprintf("m%02d", i), t0.Add(time.Duration(i)*time.Second))
			if _, _, err := store.AppendMessage(ctx, m, ""); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	got, err := store.GetConversation(ctx, ws.ID, conv.ID)
	if err != nil || got.MessageCount != n || got.LastMessage != fmt.Sprintf("m%02d", n-1) ||
		!got.LastActivityAt.Equal(micro(t0.Add((n-1)*time.Second))) {
		t.Fatalf("conversation after %d concurrent appends = %+v, %v", n, got, err)
	}
}

func TestListConversationsKeyset(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	other, _, _ := newWorkspace(t, store, domain.PlanStandard)
	support := newAgent(t, store, ws.ID, "support", t0)
	sales := newAgent(t, store, ws.ID, "sales", t0)
	otherAgent := newAgent(t, store, other.ID, "support", t0)

	var all []domain.Conversation
	for i := range 25 {
		agent := support
		if i%3 == 0 {
			agent = sales
		}
		// Groups of four share their last activity, so ties are decided by id.
		c := domain.NewConversation(ws.ID, &agent, "", t0.Add(time.Duration(i/4)*time.Minute))
		if i%5 == 0 {
			c.Status = domain.StatusHuman
		}
		if err := store.CreateConversation(ctx, &c); err != nil {
			t.Fatal(err)
		}
		all = append(all, c)
		newConversation(t, store, other.ID, otherAgent, t0.Add(time.Duration(i)*time.Minute))
	}
	newestFirst := func(a, b domain.Conversation) bool {
		if !a.LastActivityAt.Equal(b.LastActivityAt) {
			return a.LastActivityAt.After(b.LastActivityAt)
		}
		return a.ID > b.ID
	}
	convID := func(c domain.Conversation) string { return c.ID }
	keep := func(f func(domain.Conversation) bool) []domain.Conversation {
		var out []domain.Conversation
		for _, c := range all {
			if f(c) {
				out = append(out, c)
			}
		}
		return out
	}

	tests := []struct {
		name   string
		filter domain.ConversationFilter
		want   []domain.Conversation
	}{
		{"all", domain.ConversationFilter{}, all},
		{"by agent", domain.ConversationFilter{AgentID: sales.ID}, keep(func(c domain.Conversation) bool { return c.AgentID == sales.ID })},
		{"by status", domain.ConversationFilter{Status: domain.StatusHuman}, keep(func(c domain.Conversation) bool { return c.Status == domain.StatusHuman })},
		{"by agent and status", domain.ConversationFilter{AgentID: support.ID, Status: domain.StatusAI},
			keep(func(c domain.Conversation) bool { return c.AgentID == support.ID && c.Status == domain.StatusAI })},
		{"no match", domain.ConversationFilter{Status: domain.StatusResolved}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := sortedIDs(tt.want, convID, newestFirst)
			var got []string
			req := domain.PageRequest{Limit: 4}
			for pages := 0; ; pages++ {
				if pages > 10 {
					t.Fatal("pagination does not end")
				}
				page, err := store.ListConversations(ctx, ws.ID, tt.filter, req)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range page.Items {
					if c.AgentSlug == "" || (c.AgentID == sales.ID) != (c.AgentSlug == "sales") {
						t.Fatalf("conversation %s has agent slug %q", c.ID, c.AgentSlug)
					}
					got = append(got, c.ID)
				}
				if !page.HasMore {
					break
				}
				last := page.Items[len(page.Items)-1]
				if *page.Next != (domain.Position{Time: last.LastActivityAt, ID: last.ID}) {
					t.Fatalf("Next = %+v, want the last item's position", page.Next)
				}
				req.After = page.Next
			}
			if len(want) == 0 {
				want = nil
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("conversations in pages =\n%v\nwant\n%v", got, want)
			}
		})
	}

	// A conversation that becomes active while a client pages moves to the
	// front and neither skips nor repeats anything on later pages.
	req := domain.PageRequest{Limit: 10}
	page, err := store.ListConversations(ctx, ws.ID, domain.ConversationFilter{}, req)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, c := range page.Items {
		seen[c.ID] = true
	}
	bumped := sortedIDs(all, convID, newestFirst)[20] // on a later page
	if _, _, err := store.AppendMessage(ctx, newMessage(ws.ID, bumped, domain.RoleUser, "hi", t0.Add(time.Hour)), ""); err != nil {
		t.Fatal(err)
	}
	for req.After = page.Next; page.HasMore; req.After = page.Next {
		if page, err = store.ListConversations(ctx, ws.ID, domain.ConversationFilter{}, req); err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Items {
			if seen[c.ID] {
				t.Fatalf("conversation %s repeated", c.ID)
			}
			seen[c.ID] = true
		}
	}
	if len(seen) != len(all)-1 || seen[bumped] {
		t.Fatalf("saw %d conversations (bumped seen: %v), want all %d but the bumped one", len(seen), seen[bumped], len(all))
	}
}

func TestDeleteAgentCascades(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	doomed := newAgent(t, store, ws.ID, "doomed", t0)
	kept := newAgent(t, store, ws.ID, "kept", t0)
	for _, agent := range []domain.Agent{doomed, kept} {
		src := newSource(ws.ID, agent.ID, t0)
		if err := store.CreateSource(ctx, &src); err != nil {
			t.Fatal(err)
		}
		conv := newConversation(t, store, ws.ID, agent, t0)
		if _, _, err := store.AppendMessage(ctx, newMessage(ws.ID, conv.ID, domain.RoleUser, "hi", t0), ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := store.DeleteAgent(ctx, ws.ID, doomed.ID); err != nil {
		t.Fatal(err)
	}
	var counts struct{ Sources, Conversations, Messages int }
	err := db.Raw(`SELECT
		(SELECT count(*) FROM sources) AS sources,
		(SELECT count(*) FROM conversations) AS conversations,
		(SELECT count(*) FROM messages) AS messages`).Scan(&counts).Error
	if err != nil || counts.Sources != 1 || counts.Conversations != 1 || counts.Messages != 1 {
		t.Fatalf("rows left = %+v, %v; want only the kept agent's (1 each)", counts, err)
	}
}

func TestChangeStatusFromAndRecentMessages(t *testing.T) {
	ctx := t.Context()
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", domain.SystemClock{}.Now())
	conv := newConversation(t, store, ws.ID, agent, domain.SystemClock{}.Now())
	tests := []struct {
		name    string
		from    []domain.ConversationStatus
		to      domain.ConversationStatus
		changed bool
	}{
		{"AI to handoff", []domain.ConversationStatus{domain.StatusAI}, domain.StatusHandoffRequested, true},
		{"not from AI any more", []domain.ConversationStatus{domain.StatusAI}, domain.StatusHandoffRequested, false},
		{"handoff to human", []domain.ConversationStatus{domain.StatusHandoffRequested, domain.StatusAI}, domain.StatusHuman, true},
		{"not to the same state", nil, domain.StatusHuman, false},
	}
	for _, tt := range tests {
		change := statusChange(conv, tt.to, domain.SystemClock{}.Now())
		change.From = tt.from
		_, changed, err := store.ChangeStatus(ctx, change)
		if err != nil || changed != tt.changed {
			t.Fatalf("%s: changed %v err %v", tt.name, changed, err)
		}
	}
	got, _ := store.GetConversation(ctx, ws.ID, conv.ID)
	if got.Status != domain.StatusHuman {
		t.Fatalf("status = %s", got.Status)
	}
	for i := range 5 {
		m := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: ws.ID, ConversationID: conv.ID, Role: domain.RoleUser, Content: fmt.Sprint(i), CreatedAt: domain.SystemClock{}.Now()}
		if _, _, err := store.AppendMessage(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
	}
	recent, err := store.RecentMessages(ctx, ws.ID, conv.ID, 3)
	if err != nil || len(recent) != 3 || recent[0].Content != "2" || recent[2].Content != "4" {
		t.Fatalf("recent = %+v, %v", recent, err)
	}
}

func TestStartConversation(t *testing.T) {
	ctx := t.Context()
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", domain.SystemClock{}.Now())
	now := domain.SystemClock{}.Now()

	conv := domain.NewConversation(ws.ID, &agent, "user-1", now)
	first := newMessage(ws.ID, conv.ID, domain.RoleUser, "Where is my parcel?", now.Add(time.Millisecond))
	stored, err := store.StartConversation(ctx, &conv, []domain.Message{first})
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 1 || stored[0].ID != first.ID || stored[0].Content != first.Content {
		t.Fatalf("stored = %+v", stored)
	}
	got, err := store.GetConversation(ctx, ws.ID, conv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.MessageCount != 1 || got.LastMessage != "Where is my parcel?" || !got.LastActivityAt.Equal(first.CreatedAt) ||
		got.AgentSlug != "support" || got.VerifiedUserID != "user-1" || got.Status != domain.StatusAI {
		t.Fatalf("conversation = %+v", got)
	}
	msgs, err := store.RecentMessages(ctx, ws.ID, conv.ID, 10)
	if err != nil || len(msgs) != 1 || msgs[0].ID != first.ID {
		t.Fatalf("messages = %+v, %v", msgs, err)
	}

	refused := []struct {
		name  string
		agent domain.Agent
	}{
		{"agent of another workspace", newAgent(t, store, func() string { w, _, _ := newWorkspace(t, store, domain.PlanStandard); return w.ID }(), "support", now)},
		{"slug that is not the agent's", domain.Agent{ID: agent.ID, WorkspaceID: ws.ID, Slug: "sales"}},
	}
	for _, tc := range refused {
		t.Run(tc.name, func(t *testing.T) {
			c := domain.NewConversation(ws.ID, &tc.agent, "", now)
			m := newMessage(ws.ID, c.ID, domain.RoleUser, "hi", now)
			if _, err := store.StartConversation(ctx, &c, []domain.Message{m}); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("err = %v, want not found", err)
			}
			if _, err := store.GetConversation(ctx, ws.ID, c.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("a refused start stored its conversation: %v", err)
			}
		})
	}
}

// exchange is a question and its reply as the engine stores a turn: the
// reply with citations, token ends, an outcome and a retrieval trace.
func exchange(workspaceID, conversationID string, at time.Time) []domain.Message {
	q := newMessage(workspaceID, conversationID, domain.RoleUser, "How do I reset my password?", at)
	r := newMessage(workspaceID, conversationID, domain.RoleAssistant, "Open Settings, then Security.", at.Add(3*time.Millisecond))
	r.Citations = []domain.Citation{{DocumentName: "Passwords", SourceID: "src_1", SourceType: domain.SourceText, Snippet: "Open Settings", Score: 0.7}}
	r.TokenEnds = []int{5, 14, 20, 29}
	r.TokensIn, r.TokensOut = 120, 9
	r.OfferHandoff = true
	r.Trace = &domain.RetrievalTrace{Question: q.Content, Query: q.Content + "\nI cannot sign in",
		QueryNote: "follow-up: the query adds the conversation's previous question", Method: "hybrid", TopK: 5, Threshold: 0.2,
		Candidates: []domain.TraceCandidate{{ChunkID: "chk_1", SourceID: "src_1", Score: 0.7, Kept: true}}}
	return []domain.Message{q, r}
}

// A trace stored before questions were kept searched the question as
// asked: it reads with its query as its question.
func TestMessageTraceStoredWithoutQuestion(t *testing.T) {
	ctx := t.Context()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	conv := domain.NewConversation(ws.ID, &agent, "", t0)
	turn := exchange(ws.ID, conv.ID, t0)
	if _, err := store.StartConversation(ctx, &conv, turn); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(`UPDATE messages SET trace = '{"query":"reset password","method":"hybrid","knowledgeVersion":1,"topK":5,"threshold":0.2,"candidates":[]}' WHERE id = ?`,
		turn[1].ID).Error; err != nil {
		t.Fatal(err)
	}
	trace, err := store.MessageTrace(ctx, ws.ID, conv.ID, turn[1].ID)
	if err != nil || trace.Question != "reset password" || trace.Query != "reset password" || trace.QueryNote != "" {
		t.Errorf("trace = %+v, %v", trace, err)
	}
}

func TestStartConversationWithItsReply(t *testing.T) {
	ctx := t.Context()
	store := pgtest.NewStore(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	conv := domain.NewConversation(ws.ID, &agent, "", t0)
	turn := exchange(ws.ID, conv.ID, t0)

	stored, err := store.StartConversation(ctx, &conv, turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(stored) != 2 || stored[0].ID != turn[0].ID || stored[1].ID != turn[1].ID || stored[1].Trace != turn[1].Trace {
		t.Fatalf("stored = %+v", stored)
	}
	checkTurnStored(t, store, ws.ID, conv.ID, turn, 2)
	// What the call returns is what a read gives back (the trace aside,
	// which messages are read without).
	read, err := store.RecentMessages(ctx, ws.ID, conv.ID, 2)
	if err != nil {
		t.Fatal(err)
	}
	for i := range stored {
		s := stored[i]
		s.Trace = nil
		if !reflect.DeepEqual(s, read[i]) {
			t.Errorf("returned %+v\nread     %+v", s, read[i])
		}
	}
	if conv.MessageCount != 2 || conv.LastMessage != turn[1].Content {
		t.Errorf("the caller's conversation was not updated: %+v", conv)
	}
}

// checkTurnStored checks that the turn's messages are the conversation's
// last ones, in order, with every field, and that the conversation shows
// the reply.
func checkTurnStored(t *testing.T, store *postgres.Store, workspaceID, conversationID string, turn []domain.Message, count int) {
	t.Helper()
	ctx := t.Context()
	got, err := store.GetConversation(ctx, workspaceID, conversationID)
	if err != nil {
		t.Fatal(err)
	}
	reply := turn[len(turn)-1]
	if got.MessageCount != count || got.LastMessage != reply.Content || !got.LastActivityAt.Equal(reply.CreatedAt.Truncate(time.Microsecond)) {
		t.Errorf("conversation = %+v, want %d messages ending with the reply", got, count)
	}
	recent, err := store.RecentMessages(ctx, workspaceID, conversationID, len(turn))
	if err != nil || len(recent) != len(turn) {
		t.Fatalf("recent = %+v, %v", recent, err)
	}
	for i, m := range recent {
		want := turn[i]
		if m.ID != want.ID || m.Role != want.Role || m.Content != want.Content || !slices.Equal(m.TokenEnds, want.TokenEnds) ||
			m.TokensIn != want.TokensIn || m.TokensOut != want.TokensOut || m.OfferHandoff != want.OfferHandoff || len(m.Citations) != len(want.Citations) {
			t.Errorf("message %d = %+v, want %+v", i, m, want)
		}
	}
	trace, err := store.MessageTrace(ctx, workspaceID, conversationID, reply.ID)
	if err != nil || trace.Query != reply.Trace.Query || trace.Question != reply.Trace.Question || trace.QueryNote != reply.Trace.QueryNote || len(trace.Candidates) != 1 {
		t.Errorf("reply trace = %+v, %v", trace, err)
	}
	if _, err := store.MessageTrace(ctx, workspaceID, conversationID, turn[0].ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("the question has a trace: %v", err)
	}
}

func TestAppendMessagesStoresATurnAtomically(t *testing.T) {
	tests := []struct {
		name string
		// prepare puts the fixture's conversation in the state the test needs
		// and returns the turn to append.
		prepare func(t *testing.T, f conversationFixture) []domain.Message
		while   domain.ConversationStatus
		wantErr error
	}{
		{
			name: "AI conversation, decided under AI",
			prepare: func(t *testing.T, f conversationFixture) []domain.Message {
				return exchange(f.ws.ID, f.conv.ID, t0.Add(time.Second))
			},
			while: domain.StatusAI,
		},
		{
			name: "any state",
			prepare: func(t *testing.T, f conversationFixture) []domain.Message {
				return exchange(f.ws.ID, f.conv.ID, t0.Add(time.Second))
			},
		},
		{
			name: "a person took over meanwhile",
			prepare: func(t *testing.T, f conversationFixture) []domain.Message {
				if _, changed, err := f.store.ChangeStatus(t.Context(), statusChange(f.conv, domain.StatusHuman, t0)); err != nil || !changed {
					t.Fatalf("take over: %v %v", changed, err)
				}
				return exchange(f.ws.ID, f.conv.ID, t0.Add(time.Second))
			},
			while:   domain.StatusAI,
			wantErr: domain.ErrStatusChanged,
		},
		{
			name: "conversation of another workspace",
			prepare: func(t *testing.T, f conversationFixture) []domain.Message {
				other, _, _ := newWorkspace(t, f.store, domain.PlanStandard)
				return exchange(other.ID, f.conv.ID, t0.Add(time.Second))
			},
			wantErr: domain.ErrNotFound,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newConversationFixture(t)
			turn := tt.prepare(t, f)
			before, err := f.store.GetConversation(t.Context(), f.ws.ID, f.conv.ID)
			if err != nil {
				t.Fatal(err)
			}
			f.ws.EventsURL = "https://hooks.example/e"
			deliveries := domain.MessageDeliveries(&f.ws, before, turn[0], turn[0].CreatedAt)
			stored, err := f.store.AppendMessages(t.Context(), turn, tt.while, deliveries...)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				after, _ := f.store.GetConversation(t.Context(), f.ws.ID, f.conv.ID)
				if after.MessageCount != before.MessageCount || after.LastMessage != before.LastMessage {
					t.Errorf("a refused append changed the conversation: %+v", after)
				}
				if rows := outboxOf(t, f.db, f.ws.ID); len(rows) != 0 {
					t.Errorf("a refused append wrote deliveries: %+v", rows)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(stored) != 2 || stored[1].ID != turn[1].ID {
				t.Fatalf("stored = %+v", stored)
			}
			checkTurnStored(t, f.store, f.ws.ID, f.conv.ID, turn, before.MessageCount+2)
			if rows := outboxOf(t, f.db, f.ws.ID); len(rows) != len(deliveries) {
				t.Errorf("outbox has %d rows, want %d", len(rows), len(deliveries))
			}
		})
	}
}

func TestAppendMessagesRefusesWhatItCannotBatch(t *testing.T) {
	f := newConversationFixture(t)
	other := newConversation(t, f.store, f.ws.ID, f.agent, t0)
	tests := []struct {
		name string
		// spoil makes the turn, of conversation conv, unfit for one batch.
		spoil func(turn []domain.Message) []domain.Message
	}{
		{"none", func([]domain.Message) []domain.Message { return nil }},
		{"an inbound event's message", func(turn []domain.Message) []domain.Message {
			turn[0].InboundEventID = domain.NewID(domain.PrefixInboundEvent)
			return turn
		}},
		{"two conversations", func(turn []domain.Message) []domain.Message {
			turn[1].ConversationID = other.ID
			return turn
		}},
		{"another conversation's", func(turn []domain.Message) []domain.Message {
			for i := range turn {
				turn[i].ConversationID = other.ID
			}
			return turn
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.name != "another conversation's" {
				if _, err := f.store.AppendMessages(t.Context(), tt.spoil(exchange(f.ws.ID, f.conv.ID, t0)), ""); err == nil {
					t.Error("appended")
				}
			}
			conv := domain.NewConversation(f.ws.ID, &f.agent, "", t0)
			if _, err := f.store.StartConversation(t.Context(), &conv, tt.spoil(exchange(f.ws.ID, conv.ID, t0))); err == nil {
				t.Error("started")
			}
			if _, err := f.store.GetConversation(t.Context(), f.ws.ID, conv.ID); !errors.Is(err, domain.ErrNotFound) {
				t.Errorf("a refused start stored the conversation: %v", err)
			}
		})
	}
	for _, id := range []string{f.conv.ID, other.ID} {
		if got, _ := f.store.GetConversation(t.Context(), f.ws.ID, id); got.MessageCount != 0 {
			t.Errorf("a refused batch stored messages: %+v", got)
		}
	}
}

// An older turn appended late (a clock behind another pod's) counts, but
// leaves the conversation's last message and activity to the newer one.
func TestAppendMessagesNeverMovesActivityBack(t *testing.T) {
	f := newConversationFixture(t)
	newer := exchange(f.ws.ID, f.conv.ID, t0.Add(time.Hour))
	if _, err := f.store.AppendMessages(t.Context(), newer, domain.StatusAI); err != nil {
		t.Fatal(err)
	}
	older := exchange(f.ws.ID, f.conv.ID, t0.Add(time.Minute))
	older[1].Content = "an older reply"
	if _, err := f.store.AppendMessages(t.Context(), older, domain.StatusAI); err != nil {
		t.Fatal(err)
	}
	got, _ := f.store.GetConversation(t.Context(), f.ws.ID, f.conv.ID)
	if got.MessageCount != 4 || got.LastMessage != newer[1].Content || !got.LastActivityAt.Equal(newer[1].CreatedAt.Truncate(time.Microsecond)) {
		t.Errorf("conversation = %+v", got)
	}
}
