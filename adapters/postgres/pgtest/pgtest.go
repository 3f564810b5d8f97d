// Package pgtest gives tests a fresh PostgreSQL database with the real
// migrations applied, on the server named by CONCIERGE_TEST_DATABASE_URL
// (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable).
// Each database is dropped when its test ends.
//
// Migrating a database takes about ten times as long as copying one, and the
// suite makes hundreds, so the migrations run once per migration set into a
// template database (concierge_template_<hash of the embedded migrations>)
// that every test database is then copied from. The template is built under
// an advisory lock, so test processes running at the same time build it once;
// a change to any migration names a new template, and building one drops
// those built over a day ago (checkouts with other migrations may be testing
// with theirs right now).
package pgtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/conciergehq/concierge/adapters/postgres"
)

// EnvDatabaseURL names the environment variable holding the server to test against.
const EnvDatabaseURL = "CONCIERGE_TEST_DATABASE_URL"

// DefaultDatabaseURL is used when EnvDatabaseURL is unset.
const DefaultDatabaseURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// ServerURL returns the DSN of the test server's maintenance database.
func ServerURL() string {
	if v := os.Getenv(EnvDatabaseURL); v != "" {
		return v
	}
	return DefaultDatabaseURL
}

// NewDatabase creates a uniquely named database (concierge_test_<hex>) with
// every migration applied, registers its removal, and returns its DSN.
func NewDatabase(t testing.TB) string {
	t.Helper()
	server := ServerURL()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	conn := connect(ctx, t, server)
	defer conn.Close(context.Background())
	name := "concierge_test_" + randomHex(8)
	// A template dropped by a process that was building a newer one is
	// built again, once.
	for attempt := 0; ; attempt++ {
		template, err := ensureTemplate(ctx, conn, server)
		if err != nil {
			t.Fatalf("pgtest: %v", err)
		}
		_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()+" TEMPLATE "+pgx.Identifier{template}.Sanitize())
		if err == nil {
			break
		}
		if pgCode(err) != "3D000" || attempt > 0 {
			t.Fatalf("pgtest: create database %s from %s: %v", name, template, err)
		}
	}
	return registered(ctx, t, conn, server, name)
}

// NewEmptyDatabase is NewDatabase without the migrations, for tests of
// migrating itself.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	return newEmptyDatabase(t)
}

func newEmptyDatabase(t testing.TB) string {
	t.Helper()
	server := ServerURL()
	name := "concierge_test_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conn := connect(ctx, t, server)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return registered(ctx, t, conn, server, name)
}

// registered registers the removal of the database name at the test's end
// and returns its DSN. A test's sessions commit without waiting for the WAL
// flush: no test crashes the server, and on a machine with a slow disk the
// suite's thousands of commits otherwise wait on fsync one after another.
// Benchmarks keep the server's setting, so their latencies include the
// flush a production server pays.
func registered(ctx context.Context, t testing.TB, conn *pgx.Conn, server, name string) string {
	t.Helper()
	t.Cleanup(func() { dropDatabase(t, server, name) })
	if _, benchmark := t.(*testing.B); !benchmark {
		if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{name}.Sanitize()+" SET synchronous_commit = off"); err != nil {
			t.Fatalf("pgtest: configure database %s: %v", name, err)
		}
	}
	dsn, err := withDatabase(server, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
}

func connect(ctx context.Context, t testing.TB, server string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("pgtest: connect to %s (set %s): %v", redact(server), EnvDatabaseURL, err)
	}
	return conn
}

// templateLockKey is the advisory lock under which templates are built.
const templateLockKey = 0x636f6e63 // "conc"

// ensureTemplate returns the name of the migrated template for the embedded
// migrations, building it when it does not exist yet. It is built under
// another name and renamed when complete, so a template that exists is whole
// even if a process building one was killed.
func ensureTemplate(ctx context.Context, conn *pgx.Conn, server string) (string, error) {
	name, err := templateName()
	if err != nil {
		return "", err
	}
	exists := func() (bool, error) {
		var found bool
		err := conn.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)", name).Scan(&found)
		return found, err
	}
	if found, err := exists(); err != nil || found {
		return name, err
	}
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", templateLockKey); err != nil {
		return "", fmt.Errorf("lock templates: %w", err)
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", templateLockKey) //nolint:errcheck // the session ends soon after
	if found, err := exists(); err != nil || found {
		return name, err // another process built it while this one waited
	}
	// A template of another migration set may be in use by another checkout's
	// tests right now, so only those built over a day ago go (their comment
	// holds when); a DROP waits for a copy being made from one to end.
	rows, err := conn.Query(ctx, `SELECT datname FROM pg_database
	WHERE datname LIKE 'concierge\_template\_%' AND datname <> $1
	  AND coalesce(shobj_description(oid, 'pg_database'), '') ~ '^[0-9]+$'
	  AND shobj_description(oid, 'pg_database')::bigint < extract(epoch FROM now() - interval '1 day')`, name)
	if err != nil {
		return "", err
	}
	old, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", err
	}
	for _, db := range old {
		_, _ = conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{db}.Sanitize())
	}
	// What a killed build left behind; only a holder of the lock builds.
	building := name + "_building"
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", fmt.Errorf("drop half-built template %s: %w", building, err)
	}
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{building}.Sanitize()); err != nil {
		return "", fmt.Errorf("create template %s: %w", building, err)
	}
	if _, err := conn.Exec(ctx, fmt.Sprintf("COMMENT ON DATABASE %s IS '%d'", pgx.Identifier{building}.Sanitize(), time.Now().Unix())); err != nil {
		return "", fmt.Errorf("date template %s: %w", building, err)
	}
	dsn, err := withDatabase(server, building)
	if err != nil {
		return "", err
	}
	if err := postgres.Migrate(ctx, dsn, nil); err != nil {
		return "", fmt.Errorf("migrate template %s: %w", building, err)
	}
	// RENAME waits for no one: the migration's sessions may take a moment to
	// end after their pool closed, so retry briefly.
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, err = conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{building}.Sanitize()+" RENAME TO "+pgx.Identifier{name}.Sanitize())
		if err == nil || pgCode(err) != "55006" || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return "", fmt.Errorf("rename template %s: %w", building, err)
	}
	return name, nil
}

// templateName names the template after a hash of every embedded migration's
// name and content.
func templateName() (string, error) {
	sum := sha256.New()
	err := fs.WalkDir(postgres.Migrations, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(postgres.Migrations, p)
		if err != nil {
			return err
		}
		fmt.Fprintf(sum, "%s\x00%d\x00", p, len(b))
		sum.Write(b)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("hash migrations: %w", err)
	}
	return "concierge_template_" + hex.EncodeToString(sum.Sum(nil))[:16], nil
}

func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}

// NewDB opens a fresh migrated database, closed when the test ends (before
// the database is dropped).
func NewDB(t testing.TB) *postgres.DB {
	t.Helper()
	dsn := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := postgres.Open(ctx, dsn, postgres.Options{MaxOpenConns: 10})
	if err != nil {
		t.Fatalf("pgtest: open: %v", err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("pgtest: close: %v", err)
		}
	})
	return db
}

// NewStore returns a Store on a fresh migrated database.
func NewStore(t testing.TB) *postgres.Store {
	t.Helper()
	db := NewDB(t)
	return postgres.NewStore(db.Gorm, db.Pool)
}

func dropDatabase(t testing.TB, server, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Errorf("pgtest: connect to drop %s: %v", name, err)
		return
	}
	defer conn.Close(context.Background())
	// FORCE ends sessions a test left open, so a leak cannot keep the database.
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("pgtest: drop database %s: %v", name, err)
	}
}

// withDatabase returns dsn pointing at another database on the same server.
// It accepts URLs and keyword/value strings, where a later keyword wins.
func withDatabase(dsn, name string) (string, error) {
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, err := url.Parse(dsn)
		if err != nil {
			return "", err
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	return dsn + " dbname=" + name, nil
}

func redact(dsn string) string {
	if u, err := url.Parse(dsn); err == nil && u.User != nil {
		return u.Redacted()
	}
	return "the test server"
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
