package postgres_test

import (
	"context"
	"errors"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestConcurrentMigrate(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewEmptyDatabase(t)
	ctx := ctxT(t)

	status, err := postgres.MigrationStatus(ctx, dsn)
	if err != nil || len(status) == 0 || status[0].Applied {
		t.Fatalf("status before migrating = %+v, %v", status, err)
	}

	const pods = 3
	var wg sync.WaitGroup
	errs := make([]error, pods)
	for i := range pods {
		wg.Go(func() { errs[i] = postgres.Migrate(ctx, dsn, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Migrate %d: %v", i, err)
		}
	}
	// Migrating again is a no-op.
	if err := postgres.Migrate(ctx, dsn, nil); err != nil {
		t.Fatalf("Migrate again: %v", err)
	}

	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var applied int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id > 0`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if applied != len(status) {
		t.Fatalf("goose recorded %d applied migrations, want %d (once each)", applied, len(status))
	}
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY tablename`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"agents", "answers_in_progress", "api_keys", "chunks", "console_sessions", "conversation_facts", "conversation_outcomes", "conversations", "crawl_progress", "crawl_steps", "delivery_attempts", "goose_db_version", "inbound_events", "invitations", "memberships", "messages", "outbox", "password_resets", "report_days", "report_rollup_state", "saved_replies", "source_files", "sources", "unanswered_questions", "unanswered_topic_sources", "unanswered_topics", "users", "workspaces"}
	if strings.Join(tables, ",") != strings.Join(want, ",") {
		t.Fatalf("tables = %v, want %v", tables, want)
	}
	rows, err = conn.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = 'public'`)
	if err != nil {
		t.Fatal(err)
	}
	indexes, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(indexes)
	for _, name := range []string{
		"conversations_activity_idx", "conversations_agent_activity_idx", "conversations_status_activity_idx",
		"messages_conversation_seq_idx", "messages_inbound_event_id_key", "chunks_search_idx",
		"inbound_events_idempotency_key_idx", "inbound_events_pending_idx", "agents_workspace_slug_key",
		"workspaces_webhook_secret_hash_key", "workspaces_previous_webhook_secret_hash_idx", "api_keys_hash_key",
		"outbox_due_idx", "outbox_workspace_created_idx",
		"console_sessions_last_seen_idx", "invitations_expires_idx", "password_resets_expires_idx",
		"saved_replies_workspace_shortcut_key", "saved_replies_created_by_idx",
		"unanswered_topics_open_idx", "unanswered_questions_pending_idx",
		"conversation_outcomes_facts_due_idx",
	} {
		if !hasString(indexes, name) {
			t.Errorf("index %s missing; have %v", name, indexes)
		}
	}

	status, err = postgres.MigrationStatus(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range status {
		if !s.Applied || s.AppliedAt.IsZero() || !strings.HasSuffix(s.Name, ".sql") {
			t.Fatalf("status after migrating = %+v", s)
		}
	}
}

func hasString(sorted []string, s string) bool {
	i := sort.SearchStrings(sorted, s)
	return i < len(sorted) && sorted[i] == s
}

func TestEnsureDatabase(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	// A database pgtest did not create: pgtest gives us the server, we pick the name.
	server, err := url.Parse(pgtest.ServerURL())
	if err != nil {
		t.Skipf("EnsureDatabase test needs a URL-style %s: %v", pgtest.EnvDatabaseURL, err)
	}
	name := "concierge_ensure_" + strings.ToLower(domain.NewID("")[:12])
	target := *server
	target.Path = "/" + name
	dsn := target.String()
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), pgtest.ServerURL())
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			t.Error(err)
		}
	})

	// Concurrent first calls race on CREATE DATABASE; all succeed.
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = postgres.EnsureDatabase(ctx, dsn) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("EnsureDatabase %d: %v", i, err)
		}
	}
	if err := postgres.EnsureDatabase(ctx, dsn); err != nil {
		t.Fatalf("EnsureDatabase on an existing database: %v", err)
	}
	if err := postgres.Migrate(ctx, dsn, nil); err != nil {
		t.Fatalf("Migrate the ensured database: %v", err)
	}
}

func TestUnreachableServerIsUnavailable(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Port 1 on loopback refuses connections at once.
	dsn := "postgres://postgres@127.0.0.1:1/concierge?sslmode=disable&connect_timeout=2"
	if _, err := postgres.Open(ctx, dsn, postgres.Options{}); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Open: err = %v, want ErrUnavailable", err)
	}
	if err := postgres.EnsureDatabase(ctx, dsn); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("EnsureDatabase: err = %v, want ErrUnavailable", err)
	}
	if err := postgres.Migrate(ctx, dsn, nil); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Migrate: err = %v, want ErrUnavailable", err)
	}
	if _, err := postgres.Open(ctx, "postgres://%zz", postgres.Options{}); err == nil || errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Open with a malformed DSN: err = %v, want a non-availability error", err)
	}
}

func TestPingAndClosedPool(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	db, err := postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	store := postgres.NewStore(db.Gorm, db.Pool)
	if err := store.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.Ping(ctx); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Ping on a closed pool: err = %v, want ErrUnavailable", err)
	}
}

// Migration 00008 stores traces as json compressed with lz4 (the server
// here has it): what makes storing an answer's trace cheap.
func TestTraceStorage(t *testing.T) {
	t.Parallel()
	db := pgtest.NewDB(t).Gorm
	var got struct {
		Type        string
		Compression string
	}
	if err := db.Raw(`SELECT format_type(atttypid, atttypmod) AS type, attcompression::text AS compression
		FROM pg_attribute WHERE attrelid = 'messages'::regclass AND attname = 'trace'`).Scan(&got).Error; err != nil {
		t.Fatal(err)
	}
	if got.Type != "json" || got.Compression != "l" {
		t.Errorf("messages.trace is %s compressed with %q, want json with lz4 (l)", got.Type, got.Compression)
	}
}

// TestPlaygroundChannelMigration checks that 00014, which swaps the
// conversations' channel CHECK without a long lock, leaves the schema the
// plain DROP + ADD did (one validated conversations_channel_check allowing
// CHAT and PLAYGROUND), and that its Up runs again from any point where it
// stopped.
func TestPlaygroundChannelMigration(t *testing.T) {
	t.Parallel()
	dsn := pgtest.NewDatabase(t)
	ctx := ctxT(t)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())

	checkSchema := func(when string) {
		t.Helper()
		rows, err := conn.Query(ctx, `SELECT conname, pg_get_constraintdef(oid), convalidated FROM pg_constraint
			WHERE conrelid = 'conversations'::regclass AND conname LIKE 'conversations_channel_check%'`)
		if err != nil {
			t.Fatal(err)
		}
		type check struct {
			Name, Def string
			Valid     bool
		}
		got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[check])
		if err != nil {
			t.Fatal(err)
		}
		want := check{"conversations_channel_check", "CHECK ((channel = ANY (ARRAY['CHAT'::text, 'PLAYGROUND'::text])))", true}
		if len(got) != 1 || got[0] != want {
			t.Fatalf("%s: channel constraints = %+v, want only %+v", when, got, want)
		}
	}
	checkSchema("after migrating")

	raw, err := postgres.Migrations.ReadFile("migrations/00014_playground_channel.sql")
	if err != nil {
		t.Fatal(err)
	}
	_, up, _ := strings.Cut(string(raw), "-- +goose Up")
	up, _, _ = strings.Cut(up, "-- +goose Down")
	var stmts []string
	for _, s := range strings.Split(up, ";\n") {
		if s = strings.TrimSpace(s); s != "" {
			stmts = append(stmts, s)
		}
	}
	if len(stmts) != 5 {
		t.Fatalf("00014 Up has %d statements, want 5: %q", len(stmts), stmts)
	}
	// Stopped after each statement, then run again from the first.
	for stop := range len(stmts) + 1 {
		for _, s := range stmts[:stop] {
			if _, err := conn.Exec(ctx, s); err != nil {
				t.Fatalf("stop %d: %s: %v", stop, s, err)
			}
		}
		for _, s := range stmts {
			if _, err := conn.Exec(ctx, s); err != nil {
				t.Fatalf("stop %d, again: %s: %v", stop, s, err)
			}
		}
		checkSchema("run again after stopping at statement " + strconv.Itoa(stop))
	}
}
