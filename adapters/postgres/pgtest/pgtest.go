// Package pgtest gives tests a fresh PostgreSQL database with the real
// migrations applied, on the server named by CONCIERGE_TEST_DATABASE_URL
// (default postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable).
// Each database is dropped when its test ends.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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

// NewDatabase creates an empty, uniquely named database (concierge_test_<hex>)
// without migrating it, registers its removal, and returns its DSN.
func NewDatabase(t testing.TB) string {
	t.Helper()
	dsn := newEmptyDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := postgres.Migrate(ctx, dsn, nil); err != nil {
		t.Fatalf("pgtest: migrate: %v", err)
	}
	return dsn
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
	conn, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Fatalf("pgtest: connect to %s (set %s): %v", redact(server), EnvDatabaseURL, err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() { dropDatabase(t, server, name) })
	dsn, err := withDatabase(server, name)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	return dsn
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
