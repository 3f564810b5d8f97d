package pgtest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conciergehq/concierge/adapters/postgres"
)

// Databases copied from the template carry every migration, and each is a
// database of its own: a row written in one is not in the other.
func TestNewDatabaseIsMigratedAndIndependent(t *testing.T) {
	ctx := context.Background()
	first, second := NewDatabase(t), NewDatabase(t)
	if first == second {
		t.Fatalf("two tests were given the same database %s", first)
	}
	for _, dsn := range []string{first, second} {
		states, err := postgres.MigrationStatus(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if len(states) == 0 {
			t.Fatal("no embedded migrations listed")
		}
		for _, s := range states {
			if !s.Applied {
				t.Errorf("%s: migration %d %s not applied", dsn, s.Version, s.Name)
			}
		}
	}
	conn, err := pgx.Connect(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE only_here (id int)`); err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	var found bool
	if err := other.QueryRow(ctx, `SELECT to_regclass('only_here') IS NOT NULL`).Scan(&found); err != nil {
		t.Fatal(err)
	}
	if found {
		t.Fatal("a table created in one test database shows in another")
	}
}

// A template dropped under a running suite is built again rather than
// failing the test, and building one clears templates over a day old.
func TestNewDatabaseRebuildsADroppedTemplate(t *testing.T) {
	ctx := context.Background()
	NewDatabase(t)
	name, err := templateName()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, ServerURL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) }) // after the drops below: cleanups run last first
	// Beside it, a template of another migration set built two days ago, and
	// one built just now (another checkout may be using it).
	stale, fresh := "concierge_template_stale"+randomHex(4), "concierge_template_fresh"+randomHex(4)
	for db, built := range map[string]time.Time{stale: time.Now().Add(-48 * time.Hour), fresh: time.Now()} {
		if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{db}.Sanitize()); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS '%d'", pgx.Identifier{db}.Sanitize(), built.Unix())); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = conn.Exec(context.Background(), "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize())
		})
	}
	if _, err := conn.Exec(ctx, "DROP DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatal(err)
	}
	dsn := NewDatabase(t)
	for db, want := range map[string]bool{stale: false, fresh: true} {
		var exists bool
		if err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", db).Scan(&exists); err != nil {
			t.Fatal(err)
		}
		if exists != want {
			t.Errorf("after a rebuild, %s exists = %v, want %v (templates over a day old go, newer ones stay)", db, exists, want)
		}
	}
	states, err := postgres.MigrationStatus(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range states {
		if !s.Applied {
			t.Errorf("migration %d %s not applied after the rebuild", s.Version, s.Name)
		}
	}
}
