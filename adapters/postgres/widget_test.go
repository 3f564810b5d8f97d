package postgres_test

import (
	"database/sql"
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestWidgetSlugFirstComeNeverStolen(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsC, _, _ := newWorkspace(t, store, domain.PlanStandard)

	first := newAgent(t, store, wsA.ID, "support", t0)
	second := newAgent(t, store, wsB.ID, "support", t0)
	if first.WidgetSlug != "support" || second.WidgetSlug != "" {
		t.Fatalf("widget slugs = %q, %q; want the first agent to claim the address", first.WidgetSlug, second.WidgetSlug)
	}
	if got, err := store.GetAgentByWidgetSlug(ctx, "support"); err != nil || !reflect.DeepEqual(got, first) {
		t.Fatalf("GetAgentByWidgetSlug = %+v, %v; want %+v", got, err, first)
	}
	if got, err := store.GetAgentByGlobalID(ctx, second.ID); err != nil || !reflect.DeepEqual(got, second) {
		t.Fatalf("GetAgentByGlobalID = %+v, %v; want %+v", got, err, second)
	}

	// Updates keep the claim.
	first.Name = "Renamed"
	if err := store.UpdateAgent(ctx, &first); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.GetAgentByWidgetSlug(ctx, "support"); got.ID != first.ID || got.Name != "Renamed" {
		t.Fatalf("after an update the address resolves to %+v", got)
	}

	// Deleting the holder frees the address for the next agent created with
	// the slug; the agent already living at its id stays there.
	if err := store.DeleteAgent(ctx, wsA.ID, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := store.GetAgentByWidgetSlug(ctx, "support"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("freed address: err = %v, want ErrNotFound", err)
	}
	third := newAgent(t, store, wsC.ID, "support", t0)
	if third.WidgetSlug != "support" {
		t.Fatalf("the freed address was not claimed: %q", third.WidgetSlug)
	}
	if got, _ := store.GetAgentByGlobalID(ctx, second.ID); got.WidgetSlug != "" {
		t.Fatalf("an existing agent took the address: %+v", got)
	}

	for _, miss := range []func() error{
		func() error { _, err := store.GetAgentByWidgetSlug(ctx, "nobody"); return err },
		func() error { _, err := store.GetAgentByGlobalID(ctx, domain.NewID(domain.PrefixAgent)); return err },
	} {
		if err := miss(); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("miss: err = %v, want ErrNotFound", err)
		}
	}
}

// TestWidgetSlugRace creates agents with one slug in many workspaces at
// once: every create succeeds and exactly one claims the address.
func TestWidgetSlugRace(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	const n = 8
	agents := make([]domain.Agent, n)
	for i := range agents {
		ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
		agents[i] = domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "race", Name: "Race",
			Config: domain.AgentConfig{Published: true}, CreatedAt: t0, UpdatedAt: t0}
	}
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range agents {
		wg.Go(func() { errs[i] = store.CreateAgent(ctx, &agents[i]) })
	}
	wg.Wait()
	claimed := 0
	for i, a := range agents {
		if errs[i] != nil {
			t.Fatalf("CreateAgent %d: %v", i, errs[i])
		}
		if a.WidgetSlug == "race" {
			claimed++
		}
	}
	if claimed != 1 {
		t.Fatalf("%d agents claimed the address, want 1", claimed)
	}
}

func TestAgentWidgetConfigRoundTrip(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	a := domain.Agent{ID: domain.NewID(domain.PrefixAgent), WorkspaceID: ws.ID, Slug: "branded", Name: "Branded",
		Config: domain.AgentConfig{Published: true, PrimaryColor: "#112233", AvatarURL: "https://cdn.example.com/a.png",
			AllowedOrigins: []string{"https://www.example.com", "http://localhost:3000"}, RetrievalTopK: 5},
		CreatedAt: t0, UpdatedAt: t0}
	if err := store.CreateAgent(ctx, &a); err != nil {
		t.Fatal(err)
	}
	got, err := store.GetAgentByID(ctx, ws.ID, a.ID)
	if err != nil || !reflect.DeepEqual(got, a) {
		t.Fatalf("stored %+v, %v; want %+v", got, err, a)
	}
}

// TestWidgetSlugBackfill migrates a database holding agents that share
// slugs across workspaces: the oldest (by seq) of each slug gets the
// address, the others none.
func TestWidgetSlugBackfill(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewEmptyDatabase(t)
	ctx := ctxT(t)
	provider, db := migrationProvider(t, dsn)
	if _, err := provider.UpTo(ctx, 5); err != nil {
		t.Fatalf("migrating to 00005: %v", err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, ws := range []string{"ws_a", "ws_b", "ws_c"} {
		exec(`INSERT INTO workspaces (id, name, plan, webhook_secret, webhook_secret_hash, created_at, updated_at)
			VALUES ($1, $1, 'free', $1, $1, now(), now())`, ws)
	}
	// Inserted in this order: seq decides, whatever created_at says.
	rows := []struct{ id, ws, slug string }{
		{"agt_b_support", "ws_b", "support"},
		{"agt_a_support", "ws_a", "support"},
		{"agt_a_sales", "ws_a", "sales"},
		{"agt_c_support", "ws_c", "support"},
	}
	for i, r := range rows {
		exec(`INSERT INTO agents (id, workspace_id, slug, name, created_at, updated_at) VALUES ($1, $2, $3, $3, $4, $4)`,
			r.id, r.ws, r.slug, time.Date(2026, 1, 10-i, 0, 0, 0, 0, time.UTC))
	}
	if _, err := provider.UpTo(ctx, 6); err != nil {
		t.Fatalf("migrating to 00006: %v", err)
	}
	want := map[string]sql.NullString{
		"agt_b_support": {String: "support", Valid: true},
		"agt_a_support": {},
		"agt_a_sales":   {String: "sales", Valid: true},
		"agt_c_support": {},
	}
	for id, w := range want {
		var got sql.NullString
		if err := db.QueryRowContext(ctx, `SELECT widget_slug FROM agents WHERE id = $1`, id).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != w {
			t.Errorf("%s: widget_slug = %v, want %v", id, got, w)
		}
	}
	// And the migration goes down and up again.
	if _, err := provider.DownTo(ctx, 5); err != nil {
		t.Fatalf("down to 00005: %v", err)
	}
	if _, err := provider.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}
}
