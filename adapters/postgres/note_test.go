package postgres_test

import (
	"slices"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// A NOTE is stored with its author (migration 00019) and read back where
// the team reads a conversation, but never where the model's history or
// the helpdesk's transcript is read.
func TestNotes(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ctx := ctxT(t)
	member := newUser(t, f.store, "ann-notes@example.com")
	question := newMessage(f.ws.ID, f.conv.ID, domain.RoleUser, "Where is my order?", t0.Add(time.Second))
	note := newMessage(f.ws.ID, f.conv.ID, domain.RoleNote, "VIP: refund without asking.", t0.Add(2*time.Second))
	note.AuthorName, note.AuthorID = "Ann", member.ID
	reply := newMessage(f.ws.ID, f.conv.ID, domain.RoleHuman, "Refunded.", t0.Add(3*time.Second))
	reply.AuthorName, reply.AuthorID = "Ann", member.ID
	for _, m := range []domain.Message{question, note, reply} {
		if _, _, err := f.store.AppendMessage(ctx, m, ""); err != nil {
			t.Fatalf("AppendMessage %s: %v", m.Role, err)
		}
	}
	ids := func(msgs []domain.Message) []string {
		out := make([]string, len(msgs))
		for i, m := range msgs {
			out[i] = m.ID
		}
		return out
	}

	all := listMessages(t, f.store, f.ws.ID, f.conv.ID)
	if !slices.Equal(ids(all), []string{question.ID, note.ID, reply.ID}) {
		t.Fatalf("ListMessages %v", ids(all))
	}
	if got := all[1]; got.Role != domain.RoleNote || got.AuthorName != "Ann" || got.AuthorID != member.ID || got.Content != note.Content {
		t.Fatalf("note read back as %+v", got)
	}
	if got := all[2]; got.AuthorID != member.ID || all[0].AuthorID != "" {
		t.Fatalf("authors read back as %q, %q", all[0].AuthorID, got.AuthorID)
	}
	// The relay reads every message (and skips notes itself).
	from, err := f.store.MessagesFrom(ctx, f.ws.ID, f.conv.ID, "", 10)
	if err != nil || !slices.Equal(ids(from), []string{question.ID, note.ID, reply.ID}) {
		t.Fatalf("MessagesFrom %v, %v", ids(from), err)
	}
	recent, err := f.store.RecentMessages(ctx, f.ws.ID, f.conv.ID, 10)
	if err != nil || !slices.Equal(ids(recent), []string{question.ID, reply.ID}) {
		t.Fatalf("RecentMessages %v, %v; want no note", ids(recent), err)
	}
	// The limit counts what is returned: the note does not take a place.
	if recent, err := f.store.RecentMessages(ctx, f.ws.ID, f.conv.ID, 2); err != nil || !slices.Equal(ids(recent), []string{question.ID, reply.ID}) {
		t.Fatalf("RecentMessages(2) %v, %v", ids(recent), err)
	}
	tr, err := f.store.HandoffTranscript(ctx, f.ws.ID, f.conv.ID, 10)
	if err != nil || !slices.Equal(ids(tr.Messages), []string{question.ID, reply.ID}) || tr.MessageCount != 3 {
		t.Fatalf("HandoffTranscript %v (count %d), %v; want no note, count 3", ids(tr.Messages), tr.MessageCount, err)
	}
}

// Migration 00019 goes down and up again: down deletes the notes (the old
// role rule cannot hold them) and the author column, up adds them back
// with the rule validated.
func TestNoteMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	provider, db := migrationProvider(t, dsn)
	pg, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pg.Close() })
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	conv := newConversation(t, store, ws.ID, agent, t0)
	question := newMessage(ws.ID, conv.ID, domain.RoleUser, "Hi", t0.Add(time.Second))
	note := newMessage(ws.ID, conv.ID, domain.RoleNote, "internal", t0.Add(2*time.Second))
	for _, m := range []domain.Message{question, note} {
		if _, _, err := store.AppendMessage(ctx, m, ""); err != nil {
			t.Fatal(err)
		}
	}
	if rs, err := provider.DownTo(ctx, 18); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 19 {
		t.Fatalf("down to 18: %+v, %v", rs, err)
	}
	count := func(q string, args ...any) int {
		var n int
		if err := db.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const authorColumn = `SELECT count(*) FROM information_schema.columns WHERE table_name = 'messages' AND column_name = 'author_id'`
	if n := count(authorColumn); n != 0 {
		t.Fatalf("down left the column (%d)", n)
	}
	if n := count(`SELECT count(*) FROM messages WHERE conversation_id = $1`, conv.ID); n != 1 {
		t.Fatalf("down kept %d messages, want the question only", n)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO messages (id, workspace_id, conversation_id, role, content, citations, created_at)
		VALUES ('msg_down', $1, $2, 'NOTE', 'x', '[]', now())`, ws.ID, conv.ID); err == nil {
		t.Fatal("down: a NOTE was accepted")
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if n := count(authorColumn); n != 1 {
		t.Fatalf("up again: %d columns", n)
	}
	if n := count(`SELECT count(*) FROM pg_constraint WHERE conname = 'messages_role_check' AND convalidated`); n != 1 {
		t.Fatalf("role rule validated: %d", n)
	}
	if n := count(`SELECT count(*) FROM pg_constraint WHERE conname = 'messages_role_check_new'`); n != 0 {
		t.Fatalf("the temporary rule is left: %d", n)
	}
	again := newMessage(ws.ID, conv.ID, domain.RoleNote, "internal again", t0.Add(3*time.Second))
	if _, _, err := store.AppendMessage(ctx, again, ""); err != nil {
		t.Fatalf("a note after up: %v", err)
	}
}
