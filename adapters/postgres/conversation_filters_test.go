package postgres_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// counters reads a conversation's fallback and rating counters as the list
// filters see them.
type counters struct{ Fallbacks, Up, Down int }

func readCounters(t *testing.T, f conversationFixture, convID string) counters {
	t.Helper()
	var c counters
	err := f.db.Raw(`SELECT fallback_count, thumbs_up, thumbs_down FROM conversations WHERE id = ?`,
		convID).Row().Scan(&c.Fallbacks, &c.Up, &c.Down)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func fallbackAnswer(workspaceID, convID, content string, at time.Time) domain.Message {
	m := newMessage(workspaceID, convID, domain.RoleAssistant, content, at)
	m.FallbackReason = domain.FallbackNoKnowledge
	return m
}

// listIDs lists the workspace's conversations under filter, every page of
// two, and returns their ids in list order.
func listIDs(t *testing.T, store *postgres.Store, workspaceID string, filter domain.ConversationFilter) []string {
	t.Helper()
	var ids []string
	req := domain.PageRequest{Limit: 2}
	for {
		page, err := store.ListConversations(ctxT(t), workspaceID, filter, req)
		if err != nil {
			t.Fatalf("ListConversations(%+v): %v", filter, err)
		}
		for _, c := range page.Items {
			ids = append(ids, c.ID)
		}
		if !page.HasMore {
			return ids
		}
		req.After = page.Next
	}
}

// The counters move in the statements that store answers and feedback:
// each way of appending counts its fallback answers (and nothing else),
// and a rating changed or removed moves the thumbs from one side to the
// other or away.
func TestConversationCounters(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)

	// StartConversation: a question and a fallback answer.
	started := domain.NewConversation(f.ws.ID, &f.agent, "", t0)
	first := []domain.Message{
		newMessage(f.ws.ID, started.ID, domain.RoleUser, "Where is my parcel?", t0),
		fallbackAnswer(f.ws.ID, started.ID, "Sorry, I do not know.", t0),
	}
	if _, err := f.store.StartConversation(ctx, &started, first); err != nil {
		t.Fatal(err)
	}
	if got := readCounters(t, f, started.ID); got != (counters{Fallbacks: 1}) {
		t.Fatalf("after StartConversation: %+v, want one fallback", got)
	}

	// AppendMessages: a question, a real answer; then a fallback again.
	answered, err := f.store.AppendMessages(ctx, []domain.Message{
		newMessage(f.ws.ID, started.ID, domain.RoleUser, "And my refund?", t0.Add(time.Second)),
		newMessage(f.ws.ID, started.ID, domain.RoleAssistant, "Refunds take 5 days.", t0.Add(time.Second)),
	}, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.AppendMessages(ctx, []domain.Message{
		newMessage(f.ws.ID, started.ID, domain.RoleUser, "Can I pay in bitcoin?", t0.Add(2*time.Second)),
		fallbackAnswer(f.ws.ID, started.ID, "Sorry, I do not know.", t0.Add(2*time.Second)),
	}, ""); err != nil {
		t.Fatal(err)
	}
	// AppendMessage: a fallback answer, then the same inbound event again
	// (a retry, not stored twice, not counted twice).
	retried := fallbackAnswer(f.ws.ID, f.conv.ID, "Sorry.", t0)
	retried.InboundEventID = "evt-1"
	for range 2 {
		if _, _, err := f.store.AppendMessage(ctx, retried, ""); err != nil {
			t.Fatal(err)
		}
	}
	// A fallback answer refused because the conversation moved on is not
	// counted either.
	if _, _, err := f.store.AppendMessage(ctx, fallbackAnswer(f.ws.ID, f.conv.ID, "Sorry.", t0), domain.StatusHuman); err == nil {
		t.Fatal("an append under a state the conversation is not in was stored")
	}
	if got := readCounters(t, f, started.ID); got != (counters{Fallbacks: 2}) {
		t.Errorf("started conversation: %+v, want two fallbacks", got)
	}
	if got := readCounters(t, f, f.conv.ID); got != (counters{Fallbacks: 1}) {
		t.Errorf("conversation with a retried event: %+v, want one fallback", got)
	}

	// Feedback on the real answer, then on the first fallback answer.
	answer, fallback := answered[1].ID, first[1].ID
	up := &domain.Feedback{Rating: domain.RatingUp, UpdatedAt: t0}
	down := &domain.Feedback{Rating: domain.RatingDown, Comment: "useless", UpdatedAt: t0}
	steps := []struct {
		name string
		msg  string
		fb   *domain.Feedback
		want counters
	}{
		{"rated up", answer, up, counters{Fallbacks: 2, Up: 1}},
		{"rated up again", answer, up, counters{Fallbacks: 2, Up: 1}},
		{"changed to down", answer, down, counters{Fallbacks: 2, Down: 1}},
		{"another answer rated down", fallback, down, counters{Fallbacks: 2, Down: 2}},
		{"the first one back to up", answer, up, counters{Fallbacks: 2, Up: 1, Down: 1}},
		{"removed", answer, nil, counters{Fallbacks: 2, Down: 1}},
		{"removed again", answer, nil, counters{Fallbacks: 2, Down: 1}},
		{"the other removed", fallback, nil, counters{Fallbacks: 2}},
	}
	for _, s := range steps {
		if err := f.store.SetFeedback(ctx, f.ws.ID, started.ID, s.msg, s.fb); err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		if got := readCounters(t, f, started.ID); got != s.want {
			t.Fatalf("%s: counters %+v, want %+v", s.name, got, s.want)
		}
	}
	// Refused feedback (a question) moves nothing.
	if err := f.store.SetFeedback(ctx, f.ws.ID, started.ID, first[0].ID, up); err == nil {
		t.Fatal("feedback on a question was stored")
	}
	if got := readCounters(t, f, started.ID); got != (counters{Fallbacks: 2}) {
		t.Fatalf("after refused feedback: %+v", got)
	}
}

// Concurrent ratings of the answers of one conversation add up: each
// statement locks its answer and adds to the counters as they are then.
func TestConversationCountersConcurrentFeedback(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	var answers []string
	for i := range 8 {
		m, _, err := f.store.AppendMessage(ctx, newMessage(f.ws.ID, f.conv.ID, domain.RoleAssistant, "answer", t0.Add(time.Duration(i)*time.Second)), "")
		if err != nil {
			t.Fatal(err)
		}
		answers = append(answers, m.ID)
	}
	errs := make(chan error, 3*len(answers))
	for _, id := range answers {
		for _, r := range []domain.Rating{domain.RatingUp, domain.RatingDown, domain.RatingDown} {
			go func() {
				errs <- f.store.SetFeedback(ctx, f.ws.ID, f.conv.ID, id, &domain.Feedback{Rating: r, UpdatedAt: t0})
			}()
		}
	}
	for range 3 * len(answers) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var want counters
	err := f.db.Raw(`SELECT count(*) FILTER (WHERE feedback_rating = 'up'), count(*) FILTER (WHERE feedback_rating = 'down')
		FROM messages WHERE conversation_id = ?`, f.conv.ID).Row().Scan(&want.Up, &want.Down)
	if err != nil {
		t.Fatal(err)
	}
	if got := readCounters(t, f, f.conv.ID); got != want || want.Up+want.Down != len(answers) {
		t.Fatalf("counters %+v, messages say %+v", got, want)
	}
}

// backfillSQL is the counters' backfill of migration 00015, as goose runs
// it: one statement outside a transaction, committing batch by batch.
func backfillSQL(t *testing.T) string {
	t.Helper()
	b, err := postgres.Migrations.ReadFile("migrations/00015_conversation_filters.sql")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	start, end := strings.Index(s, "-- +goose StatementBegin"), strings.Index(s, "-- +goose StatementEnd")
	if start < 0 || end < start {
		t.Fatal("migration 00015 has no backfill block")
	}
	return s[start+len("-- +goose StatementBegin") : end]
}

// The migration's backfill counts what was stored before the counters
// existed (here: rows written around them), corrects wrong counts, leaves
// other workspaces' right ones alone, and can run again.
func TestConversationCountersBackfill(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	// 2,500 conversations: more than two of the backfill's batches.
	err := f.db.Exec(`INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, last_message, message_count, last_activity_at, created_at, thumbs_up)
		SELECT 'ses_bf' || lpad(g::text, 6, '0'), ?, ?, 'support', 'CHAT', 'AI', '', 0, ?, ?, 7
		FROM generate_series(1, 2500) AS g`, f.ws.ID, f.agent.ID, micro(t0), micro(t0)).Error
	if err != nil {
		t.Fatal(err)
	}
	// Every conversation: a question; every 3rd a fallback answer, every
	// 5th an answer rated down, every 7th two answers rated up, and every
	// 11th a SYSTEM notice (never counted).
	err = f.db.Exec(`INSERT INTO messages (id, workspace_id, conversation_id, role, content, citations, created_at, fallback_reason, feedback_rating, feedback_at)
		SELECT 'msg_bf' || lpad(g::text, 6, '0') || k::text, ?, 'ses_bf' || lpad(g::text, 6, '0'), r.role, 'text', '[]', ?, r.fallback, r.rating,
			CASE WHEN r.rating IS NULL THEN NULL ELSE ?::timestamptz END
		FROM generate_series(1, 2500) AS g
		CROSS JOIN LATERAL (VALUES
			(1, 'USER', '', NULL),
			(2, CASE WHEN g % 3 = 0 THEN 'ASSISTANT' END, 'NO_RELEVANT_KNOWLEDGE', NULL),
			(3, CASE WHEN g % 5 = 0 THEN 'ASSISTANT' END, '', 'down'),
			(4, CASE WHEN g % 7 = 0 THEN 'ASSISTANT' END, '', 'up'),
			(5, CASE WHEN g % 7 = 0 THEN 'ASSISTANT' END, '', 'up'),
			(6, CASE WHEN g % 11 = 0 THEN 'SYSTEM' END, 'NO_RELEVANT_KNOWLEDGE', NULL)
		) AS r (k, role, fallback, rating)
		WHERE r.role IS NOT NULL`, f.ws.ID, micro(t0), micro(t0)).Error
	if err != nil {
		t.Fatal(err)
	}
	// Another workspace's conversation, counted right by the store.
	wsB, _, _ := newWorkspace(t, f.store, domain.PlanStandard)
	agentB := newAgent(t, f.store, wsB.ID, "support", t0)
	other := domain.NewConversation(wsB.ID, &agentB, "", t0)
	if _, err := f.store.StartConversation(ctx, &other, []domain.Message{fallbackAnswer(wsB.ID, other.ID, "Sorry.", t0)}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		// No arguments: the simple protocol, outside a transaction, as
		// goose runs a NO TRANSACTION migration (the block commits).
		if err := f.db.Exec(backfillSQL(t)).Error; err != nil {
			t.Fatalf("backfill: %v", err)
		}
		var wrong int
		err = f.db.Raw(`SELECT count(*) FROM conversations
			WHERE id LIKE 'ses_bf%' AND (fallback_count, thumbs_up, thumbs_down) IS DISTINCT FROM (
				(substr(id, 7)::int % 3 = 0)::int, 2 * (substr(id, 7)::int % 7 = 0)::int, (substr(id, 7)::int % 5 = 0)::int)`).Row().Scan(&wrong)
		if err != nil || wrong != 0 {
			t.Fatalf("%d conversations counted wrong after the backfill (%v)", wrong, err)
		}
		if got := readCounters(t, f, other.ID); got != (counters{Fallbacks: 1}) {
			t.Fatalf("the other workspace's conversation: %+v", got)
		}
	}
	if got := len(listIDs(t, f.store, f.ws.ID, domain.ConversationFilter{Rating: domain.RatingDown})); got != 500 {
		t.Errorf("rated down after the backfill: %d conversations, want 500", got)
	}
}

// The list's fallback, rating and text filters, alone and together, page
// in the list's order, and never show another workspace's conversations,
// however well they match.
func TestListConversationsFiltersAndSearch(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	wsB, _, _ := newWorkspace(t, f.store, domain.PlanStandard)
	agentB := newAgent(t, f.store, wsB.ID, "support", t0)

	// start stores a conversation active at minute n with its messages,
	// and a contact when name or email is set.
	start := func(ws string, agent domain.Agent, n int, name, email string, msgs ...domain.Message) domain.Conversation {
		t.Helper()
		at := t0.Add(time.Duration(n) * time.Minute)
		c := domain.NewConversation(ws, &agent, "", at)
		for i := range msgs {
			msgs[i].WorkspaceID, msgs[i].ConversationID, msgs[i].CreatedAt = ws, c.ID, at
		}
		if _, err := f.store.StartConversation(ctx, &c, msgs); err != nil {
			t.Fatal(err)
		}
		if name != "" || email != "" {
			if err := f.db.Exec(`UPDATE conversations SET contact_name = ?, contact_email = ? WHERE id = ?`, name, email, c.ID).Error; err != nil {
				t.Fatal(err)
			}
		}
		return c
	}
	msg := func(role domain.Role, content string) domain.Message { return newMessage("", "", role, content, t0) }
	fallback := func(content string) domain.Message { return fallbackAnswer("", "", content, t0) }
	notice := func(content string) domain.Message {
		m := msg(domain.RoleSystem, content)
		m.Status = domain.StatusHuman
		return m
	}

	ada := start(f.ws.ID, f.agent, 1, "Ada Lovelace", "ada@analytical.example", msg(domain.RoleUser, "Hello"), msg(domain.RoleAssistant, "Hi Ada"))
	refund := start(f.ws.ID, f.agent, 2, "", "", msg(domain.RoleUser, "How do I get a REFUND for order 42?"), fallback("Sorry, I cannot help."))
	percent := start(f.ws.ID, f.agent, 3, "", "", msg(domain.RoleUser, "Is it 100% cotton_blend?"), msg(domain.RoleAssistant, "Yes."))
	human := start(f.ws.ID, f.agent, 4, "Grace Hopper", "grace@navy.example", msg(domain.RoleUser, "refunds please"), fallback("Sorry."),
		msg(domain.RoleHuman, "I will handle your refund."))
	noticeOnly := start(f.ws.ID, f.agent, 5, "", "", msg(domain.RoleUser, "Hi"), notice("Handed over to a person: invoice"))
	answerOnly := start(f.ws.ID, f.agent, 6, "", "", msg(domain.RoleUser, "Bye"), msg(domain.RoleAssistant, "See the invoice page."))
	// The fixture's empty conversation (at t0) is the oldest. Another
	// workspace's conversation matches every search and filter.
	start(wsB.ID, agentB, 7, "Ada Lovelace", "ada@analytical.example", msg(domain.RoleUser, "refund 100% cotton_blend invoice"), fallback("Sorry."))

	// Ratings: refund's answer down, ada's answer up.
	rate := func(c domain.Conversation, r domain.Rating) {
		t.Helper()
		page, err := f.store.ListMessages(ctx, f.ws.ID, c.ID, domain.PageRequest{})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range page.Items {
			if m.Role == domain.RoleAssistant {
				if err := f.store.SetFeedback(ctx, f.ws.ID, c.ID, m.ID, &domain.Feedback{Rating: r, UpdatedAt: t0}); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
		t.Fatalf("%s has no answer", c.ID)
	}
	rate(refund, domain.RatingDown)
	rate(ada, domain.RatingUp)
	rate(human, domain.RatingUp)

	ids := func(cs ...domain.Conversation) []string {
		out := []string{}
		for _, c := range cs {
			out = append(out, c.ID)
		}
		return out
	}
	tests := []struct {
		name   string
		filter domain.ConversationFilter
		want   []string
	}{
		{"all", domain.ConversationFilter{}, ids(answerOnly, noticeOnly, human, percent, refund, ada, f.conv)},
		{"with a fallback", domain.ConversationFilter{Fallback: domain.FallbackFilterSome}, ids(human, refund)},
		{"without a fallback", domain.ConversationFilter{Fallback: domain.FallbackFilterNone}, ids(answerOnly, noticeOnly, percent, ada, f.conv)},
		{"rated down", domain.ConversationFilter{Rating: domain.RatingDown}, ids(refund)},
		{"rated up", domain.ConversationFilter{Rating: domain.RatingUp}, ids(human, ada)},
		{"rated up with a fallback", domain.ConversationFilter{Rating: domain.RatingUp, Fallback: domain.FallbackFilterSome}, ids(human)},
		{"contact name, any case", domain.ConversationFilter{Query: "lovelace"}, ids(ada)},
		{"part of an email", domain.ConversationFilter{Query: "navy.exa"}, ids(human)},
		{"message text, any case, any role but SYSTEM", domain.ConversationFilter{Query: "refund"}, ids(human, refund)},
		{"an answer's text", domain.ConversationFilter{Query: "invoice"}, ids(answerOnly)},
		{"% and _ are themselves", domain.ConversationFilter{Query: "100% cotton_b"}, ids(percent)},
		{"% alone is no wildcard", domain.ConversationFilter{Query: "0%c"}, nil},
		{"_ alone is no wildcard", domain.ConversationFilter{Query: "n_b"}, ids(percent)},
		{"a backslash is itself", domain.ConversationFilter{Query: `a\b`}, nil},
		{"matching contact and messages counts once", domain.ConversationFilter{Query: "Ada"}, ids(ada)},
		{"search with a filter", domain.ConversationFilter{Query: "refund", Rating: domain.RatingDown}, ids(refund)},
		{"search with a range", domain.ConversationFilter{Query: "refund", ActiveBefore: t0.Add(3 * time.Minute)}, ids(refund)},
		{"no match", domain.ConversationFilter{Query: "zebra"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := listIDs(t, f.store, f.ws.ID, tt.filter)
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// Migration 00015 goes down and up again through goose, as the migrate
// command runs it (its backfill is one statement of a NO TRANSACTION
// migration): up again, it counts what was stored while it was down.
func TestConversationFiltersMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	provider, db := migrationProvider(t, dsn)
	// Down to 14, through the later migrations that stand on 00015.
	if rs, err := provider.DownTo(ctx, 14); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 15 {
		t.Fatalf("down to 14: %+v, %v", rs, err)
	}
	var columns int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.columns
		WHERE table_name = 'conversations' AND column_name IN ('fallback_count', 'thumbs_up', 'thumbs_down')`).Scan(&columns); err != nil || columns != 0 {
		t.Fatalf("down left %d counter columns (%v)", columns, err)
	}
	// Stored while down (as older code stores): a conversation with a
	// fallback answer rated down.
	pg, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	for _, stmt := range []string{
		`INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, last_message, message_count, last_activity_at, created_at)
			VALUES ('ses_down', $1, $2, 'support', 'CHAT', 'AI', '', 1, now(), now())`,
		`INSERT INTO messages (id, workspace_id, conversation_id, role, content, citations, created_at, fallback_reason, feedback_rating, feedback_at)
			VALUES ('msg_down', $1, 'ses_down', 'ASSISTANT', 'Sorry.', '[]', now(), 'NO_RELEVANT_KNOWLEDGE', 'down', now())`,
	} {
		args := []any{ws.ID, agent.ID}
		if !strings.Contains(stmt, "$2") {
			args = args[:1]
		}
		if _, err := db.ExecContext(ctx, stmt, args...); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	var fallbacks, up, down int
	if err := db.QueryRowContext(ctx, `SELECT fallback_count, thumbs_up, thumbs_down FROM conversations WHERE id = 'ses_down'`).Scan(&fallbacks, &up, &down); err != nil {
		t.Fatal(err)
	}
	if fallbacks != 1 || up != 0 || down != 1 {
		t.Fatalf("backfilled counters %d, %d, %d; want 1, 0, 1", fallbacks, up, down)
	}
}

// A text search walks the newest 2,000 conversations of the list, then
// reads older matches from the trigram indexes (searchWindow). Across
// 2,500 conversations, matches only among the oldest (as after a customer
// left), on both sides of the window's edge, and with a filter, the pages
// are exactly those one ordered query gives: newest first, none twice,
// none missed.
func TestSearchAcrossTheWindowEdge(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	// Conversation g is active at t0 + g minutes: g = 2500 is the newest,
	// so the window holds g = 501..2500. Every 100th conversation has a
	// contact at old-corp.example; the oldest 30 mention "legacy widget";
	// every 10th has a fallback.
	err := f.db.Exec(`INSERT INTO conversations (id, workspace_id, agent_id, agent_slug, channel, status, last_message, message_count,
			last_activity_at, created_at, contact_name, contact_email, fallback_count)
		SELECT 'ses_w' || lpad(g::text, 6, '0'), ?, ?, 'support', 'CHAT', 'AI', '', 1, ?::timestamptz + g * interval '1 minute', ?,
			'', CASE WHEN g % 100 = 0 THEN 'buyer' || g || '@old-corp.example' ELSE '' END, CASE WHEN g % 10 = 0 THEN 1 ELSE 0 END
		FROM generate_series(1, 2500) AS g`, f.ws.ID, f.agent.ID, micro(t0), micro(t0)).Error
	if err != nil {
		t.Fatal(err)
	}
	err = f.db.Exec(`INSERT INTO messages (id, workspace_id, conversation_id, role, content, citations, created_at)
		SELECT 'msg_w' || lpad(g::text, 6, '0'), ?, 'ses_w' || lpad(g::text, 6, '0'), 'USER',
			CASE WHEN g <= 30 THEN 'Where are the docs for the legacy widget' ELSE 'Where is my order' END, '[]', ?
		FROM generate_series(1, 2500) AS g`, f.ws.ID, micro(t0)).Error
	if err != nil {
		t.Fatal(err)
	}
	// Old-corp is also named in a message of 200 (a contact match too: it
	// is listed once) and of 41 (a message match only, without a fallback).
	err = f.db.Exec(`UPDATE messages SET content = 'I wrote from my old-corp address' WHERE id IN ('msg_w000200', 'msg_w000041')`).Error
	if err != nil {
		t.Fatal(err)
	}
	newestFirst := func(keep func(g int) bool) []string {
		var ids []string
		for g := 2500; g >= 1; g-- {
			if keep(g) {
				ids = append(ids, fmt.Sprintf("ses_w%06d", g))
			}
		}
		return ids
	}
	for _, tc := range []struct {
		name   string
		filter domain.ConversationFilter
		want   []string
	}{
		{"only old matches", domain.ConversationFilter{Query: "legacy widget"}, newestFirst(func(g int) bool { return g <= 30 })},
		{"matches both sides of the edge", domain.ConversationFilter{Query: "old-corp"}, newestFirst(func(g int) bool { return g%100 == 0 || g == 41 })},
		{"with a filter", domain.ConversationFilter{Query: "old-corp", Fallback: domain.FallbackFilterSome}, newestFirst(func(g int) bool { return g%100 == 0 })},
		{"with a filter no contact match passes", domain.ConversationFilter{Query: "old-corp", Fallback: domain.FallbackFilterNone}, []string{"ses_w000041"}},
		{"nowhere", domain.ConversationFilter{Query: "zebra"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, size := range []int{2, 25} {
				var got []string
				req := domain.PageRequest{Limit: size}
				for {
					page, err := f.store.ListConversations(ctxT(t), f.ws.ID, tc.filter, req)
					if err != nil {
						t.Fatal(err)
					}
					for _, c := range page.Items {
						got = append(got, c.ID)
					}
					if !page.HasMore {
						break
					}
					req.After = page.Next
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("pages of %d: got %d conversations %v\nwant %d %v", size, len(got), got, len(tc.want), tc.want)
				}
			}
		})
	}
}
