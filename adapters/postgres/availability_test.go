package postgres_test

import (
	"errors"
	"testing"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestMemberAvailability(t *testing.T) {
	t.Parallel()
	f := newConversationFixture(t)
	ada, bob, stranger := assignees(t, f)
	ctx := ctxT(t)

	// Everyone starts away.
	for _, m := range []domain.Member{ada, bob} {
		got, err := f.store.GetMember(ctx, f.ws.ID, m.UserID)
		if err != nil || got.Available {
			t.Fatalf("new member %s: available %v (%v), want away", m.Email, got.Available, err)
		}
	}
	if any, err := f.store.AnyAvailable(ctx, f.ws.ID); err != nil || any {
		t.Fatalf("AnyAvailable with everyone away = %v, %v", any, err)
	}

	got, err := f.store.SetAvailable(ctx, f.ws.ID, ada.UserID, true)
	if err != nil || !got.Available || got.UserID != ada.UserID || got.Email != ada.Email || got.Role != ada.Role {
		t.Fatalf("SetAvailable(ada, true) = %+v, %v", got, err)
	}
	if any, err := f.store.AnyAvailable(ctx, f.ws.ID); err != nil || !any {
		t.Fatalf("AnyAvailable with ada available = %v, %v", any, err)
	}
	// Only ada's row changed, and the lists carry it.
	members, err := f.store.ListMembers(ctx, f.ws.ID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range members {
		if m.Available != (m.UserID == ada.UserID) {
			t.Errorf("ListMembers: %s available %v", m.Email, m.Available)
		}
	}
	// Another workspace is not touched by this one's members.
	if any, err := f.store.AnyAvailable(ctx, stranger.WorkspaceID); err != nil || any {
		t.Fatalf("AnyAvailable of the other workspace = %v, %v", any, err)
	}

	// Tenant isolation: a member of another workspace, an unknown user.
	for name, userID := range map[string]string{"stranger": stranger.UserID, "unknown": domain.NewID(domain.PrefixUser)} {
		if _, err := f.store.SetAvailable(ctx, f.ws.ID, userID, true); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("SetAvailable(%s) = %v, want ErrNotFound", name, err)
		}
	}
	if any, err := f.store.AnyAvailable(ctx, stranger.WorkspaceID); err != nil || any {
		t.Fatalf("a refused SetAvailable changed the other workspace: %v, %v", any, err)
	}

	if got, err := f.store.SetAvailable(ctx, f.ws.ID, ada.UserID, false); err != nil || got.Available {
		t.Fatalf("SetAvailable(ada, false) = %+v, %v", got, err)
	}
	if any, err := f.store.AnyAvailable(ctx, f.ws.ID); err != nil || any {
		t.Fatalf("AnyAvailable after ada went away = %v, %v", any, err)
	}
	if any, err := f.store.AnyAvailable(ctx, domain.NewID(domain.PrefixWorkspace)); err != nil || any {
		t.Fatalf("AnyAvailable(unknown workspace) = %v, %v", any, err)
	}
}

// Migration 00020 goes down and up again on a table holding rows; the
// rows come back away.
func TestAvailabilityMigrationDownAndUp(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	provider, db := migrationProvider(t, dsn)
	if rs, err := provider.DownTo(ctx, 19); err != nil || len(rs) == 0 || rs[len(rs)-1].Source.Version != 20 {
		t.Fatalf("down to 19: %+v, %v", rs, err)
	}
	count := func(query string) int {
		var n int
		if err := db.QueryRowContext(ctx, query).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	const column = `SELECT count(*) FROM information_schema.columns WHERE table_name = 'memberships' AND column_name = 'available'`
	const index = `SELECT count(*) FROM pg_indexes WHERE indexname = 'memberships_available_idx'`
	if c, i := count(column), count(index); c != 0 || i != 0 {
		t.Fatalf("down left column %d, index %d", c, i)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO workspaces (id, name, plan, webhook_secret, webhook_secret_hash, created_at, updated_at)
		VALUES ('ws_down', 'Down', 'standard', 'whs_x', 'hash_x', now(), now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO users (id, email, name, password_hash, created_at, updated_at)
		VALUES ('usr_down', 'down@example.com', 'Down', '', now(), now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO memberships (workspace_id, user_id, role, created_at)
		VALUES ('ws_down', 'usr_down', 'agent', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
	if c, i := count(column), count(index); c != 1 || i != 1 {
		t.Fatalf("up again: column %d, index %d", c, i)
	}
	if n := count(`SELECT count(*) FROM memberships WHERE user_id = 'usr_down' AND NOT available`); n != 1 {
		t.Fatalf("the row stored while down is not away (%d)", n)
	}
}
