package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/conciergehq/concierge/core/domain"
)

// PostgreSQL error codes this package reacts to.
const (
	codeUniqueViolation     = "23505"
	codeForeignKeyViolation = "23503"
	codeInvalidCatalogName  = "3D000" // the database does not exist
	codeDuplicateDatabase   = "42P04"
)

// EnsureDatabase creates the database named by dsn when it does not exist, by
// connecting to a maintenance database (postgres, else template1) on the same
// server. It first tries the target itself, so a role that may not create
// databases still works against an existing one. A concurrent creator winning
// the race is not an error. Connection failures wrap domain.ErrUnavailable.
func EnsureDatabase(ctx context.Context, dsn string) error {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return fmt.Errorf("postgres: parse dsn: %w", err)
	}
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return conn.Close(ctx)
	}
	if pgCode(err) != codeInvalidCatalogName {
		return domain.Unavailable("postgres: connect", err)
	}
	name := cfg.Database
	for _, maintenance := range []string{"postgres", "template1"} {
		admin := cfg.Copy()
		admin.Database = maintenance
		created, err := createDatabase(ctx, admin, name)
		if created {
			return nil
		}
		if pgCode(err) == codeInvalidCatalogName {
			continue // no such maintenance database on this server; try the next
		}
		return err
	}
	return fmt.Errorf("postgres: create database %q: no maintenance database to connect to", name)
}

// createDatabase reports created true when the database exists afterwards.
func createDatabase(ctx context.Context, admin *pgx.ConnConfig, name string) (created bool, err error) {
	conn, err := pgx.ConnectConfig(ctx, admin)
	if err != nil {
		if pgCode(err) == codeInvalidCatalogName {
			return false, err
		}
		return false, domain.Unavailable("postgres: connect", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	_, err = conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
	switch pgCode(err) {
	case "":
		if err != nil {
			return false, dbError("create database", err)
		}
		return true, nil
	case codeDuplicateDatabase, codeUniqueViolation:
		// Another process created it between our check and our CREATE; two
		// concurrent CREATE DATABASE can also collide on pg_database's unique index.
		return true, nil
	default:
		return false, fmt.Errorf("postgres: create database %q: %w", name, err)
	}
}

// Migrate applies every pending embedded migration to the database named by
// dsn. A PostgreSQL session advisory lock serialises concurrent callers (for
// example several pods starting at once): the others wait, then find nothing
// left to apply. A nil logger discards goose's messages.
func Migrate(ctx context.Context, dsn string, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	provider, db, err := newProvider(ctx, dsn, logger, true)
	if err != nil {
		return err
	}
	defer db.Close()
	results, err := provider.Up(ctx)
	for _, r := range results {
		if r.Error == nil {
			logger.InfoContext(ctx, "migration applied",
				"version", r.Source.Version, "file", path.Base(r.Source.Path), "duration", r.Duration)
		}
	}
	if err != nil {
		return dbError("migrate", err)
	}
	return nil
}

// MigrationState is one embedded migration and whether the database has it.
type MigrationState struct {
	Version   int64
	Name      string
	Applied   bool
	AppliedAt time.Time
}

// MigrationStatus lists the embedded migrations in version order with their
// state in the database named by dsn.
func MigrationStatus(ctx context.Context, dsn string) ([]MigrationState, error) {
	provider, db, err := newProvider(ctx, dsn, slog.New(slog.DiscardHandler), false)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	statuses, err := provider.Status(ctx)
	if err != nil {
		return nil, dbError("migration status", err)
	}
	out := make([]MigrationState, 0, len(statuses))
	for _, s := range statuses {
		out = append(out, MigrationState{
			Version:   s.Source.Version,
			Name:      path.Base(s.Source.Path),
			Applied:   s.State == goose.StateApplied,
			AppliedAt: s.AppliedAt,
		})
	}
	return out, nil
}

// newProvider opens a database/sql handle on the pgx driver (goose needs
// database/sql) and builds a goose provider over the embedded migrations.
func newProvider(ctx context.Context, dsn string, logger *slog.Logger, locked bool) (*goose.Provider, *sql.DB, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("postgres: parse dsn: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, nil, dbError("connect", err)
	}
	fsys, err := fs.Sub(Migrations, "migrations")
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	opts := []goose.ProviderOption{goose.WithSlog(logger), goose.WithDisableGlobalRegistry(true)}
	if locked {
		// Poll every second for up to ten minutes: the default 5 s interval would
		// make every pod but the first wait at least 5 s at startup.
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 600))
		if err != nil {
			db.Close()
			return nil, nil, err
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, fsys, opts...)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("postgres: migrations: %w", err)
	}
	return provider, db, nil
}

// pgCode returns the SQLSTATE of a PostgreSQL error in err's chain, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
