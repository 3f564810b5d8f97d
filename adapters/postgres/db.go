package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	gormpg "gorm.io/driver/postgres"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Options tunes the connection pool and logging of Open. Zero values pick
// the defaults noted on each field.
type Options struct {
	// Tracer hears every statement on the pool, gorm's included
	// (adapters/tracing); nil hears nothing.
	Tracer pgx.QueryTracer
	// MaxOpenConns caps connections to the server (default 20). Keep the sum
	// over all pods below the server's max_connections.
	MaxOpenConns int
	// MaxIdleConns keeps warm connections (default MaxOpenConns).
	MaxIdleConns int
	// ConnMaxLifetime recycles connections (default 30 minutes), so pods
	// rebalance after a failover and server-side memory does not grow forever.
	ConnMaxLifetime time.Duration
	// ConnMaxIdleTime closes connections idle that long (default 5 minutes).
	ConnMaxIdleTime time.Duration
	// SlowQueryThreshold logs queries slower than this at warn (default 200 ms;
	// negative disables).
	SlowQueryThreshold time.Duration
	// Logger receives slow-query warnings (default: discarded).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.MaxOpenConns <= 0 {
		o.MaxOpenConns = 20
	}
	if o.MaxIdleConns <= 0 || o.MaxIdleConns > o.MaxOpenConns {
		o.MaxIdleConns = o.MaxOpenConns
	}
	if o.ConnMaxLifetime <= 0 {
		o.ConnMaxLifetime = 30 * time.Minute
	}
	if o.ConnMaxIdleTime <= 0 {
		o.ConnMaxIdleTime = 5 * time.Minute
	}
	if o.SlowQueryThreshold == 0 {
		o.SlowQueryThreshold = 200 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// DB is an open connection to PostgreSQL: a pgx pool, and a gorm handle
// over that same pool, so a process holds one set of connections whichever
// way it queries. Both go to NewStore; Close closes both.
type DB struct {
	// Gorm is the handle for queries through row structs (see the package
	// documentation for which queries use which).
	Gorm *gorm.DB
	// Pool is the pgx pool under Gorm.
	Pool *pgxpool.Pool
}

// Open connects to PostgreSQL through a pgx pool, puts gorm on that pool,
// and checks the connection. gorm skips its implicit transaction around
// single writes and prepares statements, which the measurements in
// DEPENDENCIES.md show matter on the hot paths, and translates driver
// errors. A server that cannot be reached gives an error wrapping
// domain.ErrUnavailable. Close the connection with Close.
func Open(ctx context.Context, dsn string, opts Options) (*DB, error) {
	opts = opts.withDefaults()
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse dsn: %w", err)
	}
	cfg.MaxConns = int32(opts.MaxOpenConns)
	cfg.MinIdleConns = int32(min(opts.MaxIdleConns, opts.MaxOpenConns, 4))
	cfg.MaxConnLifetime = opts.ConnMaxLifetime
	cfg.MaxConnIdleTime = opts.ConnMaxIdleTime
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, dbError("connect", err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, dbError("connect", err)
	}
	// gorm and the pgx queries share one pgx pool, so a pod holds one set
	// of connections whichever way it queries.
	sqlDB := stdlib.OpenDBFromPool(pool)
	db, err := gorm.Open(gormpg.New(gormpg.Config{Conn: sqlDB}), &gorm.Config{
		SkipDefaultTransaction: true,
		PrepareStmt:            true,
		TranslateError:         true,
		// Select the row struct's columns rather than *, so reads never fetch
		// columns they do not map (the sources' generated tsvector).
		QueryFields: true,
		// We pinged above with the caller's context; gorm's own ping has none.
		DisableAutomaticPing: true,
		Logger:               &queryLogger{log: opts.Logger, slow: opts.SlowQueryThreshold},
		// The time of every row comes from the domain (the Clock port), never
		// from gorm's autoCreateTime/autoUpdateTime.
		NowFunc: func() time.Time { return time.Now().UTC().Truncate(time.Microsecond) },
	})
	if err != nil {
		sqlDB.Close()
		pool.Close()
		return nil, fmt.Errorf("postgres: open gorm: %w", err)
	}
	return &DB{Gorm: db, Pool: pool}, nil
}

// Close closes gorm's database/sql handle and then the pool under it.
func (d *DB) Close() error {
	sqlDB, err := d.Gorm.DB()
	if err == nil {
		err = sqlDB.Close()
	}
	d.Pool.Close()
	return err
}

// Store implements the store ports on a gorm handle and the pgx pool under
// it; the package documentation says which queries use which. It is safe
// for concurrent use.
type Store struct {
	db   *gorm.DB
	pool *pgxpool.Pool
}

// NewStore returns a Store over db and pool, which must be the two halves
// of one DB from Open (its Gorm and Pool), so that both reach the same
// database through one set of connections.
func NewStore(db *gorm.DB, pool *pgxpool.Pool) *Store {
	if db == nil || pool == nil {
		panic("postgres.NewStore: both the gorm handle and the pgx pool are required")
	}
	return &Store{db: db, pool: pool}
}

var _ ports.HealthChecker = (*Store)(nil)

// Ping checks that the server answers. Failures wrap domain.ErrUnavailable.
func (s *Store) Ping(ctx context.Context) error {
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		return domain.Unavailable("postgres: ping", err)
	}
	return nil
}

// queryLogger is gorm's logger: silent except for slow queries, which are
// logged at warn without their parameters, so secrets and user text never
// reach the logs. Query errors are returned to callers, who decide whether
// they are worth logging (a duplicate slug is not).
type queryLogger struct {
	log  *slog.Logger
	slow time.Duration
}

var (
	_ logger.Interface  = (*queryLogger)(nil)
	_ gorm.ParamsFilter = (*queryLogger)(nil)
)

func (l *queryLogger) LogMode(logger.LogLevel) logger.Interface { return l }

func (l *queryLogger) Info(ctx context.Context, msg string, args ...any) {
	l.log.DebugContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l *queryLogger) Warn(ctx context.Context, msg string, args ...any) {
	l.log.WarnContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l *queryLogger) Error(ctx context.Context, msg string, args ...any) {
	l.log.ErrorContext(ctx, "gorm: "+fmt.Sprintf(msg, args...))
}

func (l *queryLogger) Trace(ctx context.Context, begin time.Time, fc func() (string, int64), _ error) {
	if l.slow <= 0 {
		return
	}
	if elapsed := time.Since(begin); elapsed > l.slow {
		query, rows := fc()
		l.log.WarnContext(ctx, "slow query", "duration", elapsed, "sql", unwrapPlaceholders(query), "rows", rows)
	}
}

// ParamsFilter drops the parameters from logged SQL, leaving $n placeholders.
func (l *queryLogger) ParamsFilter(_ context.Context, query string, _ ...any) (string, []any) {
	return query, nil
}

// unwrapPlaceholders undoes the "$1$" gorm's SQL explainer writes for
// placeholders whose parameters were filtered out, giving back "$1".
func unwrapPlaceholders(query string) string {
	var b strings.Builder
	b.Grow(len(query))
	for i := 0; i < len(query); i++ {
		b.WriteByte(query[i])
		if query[i] != '$' {
			continue
		}
		j := i + 1
		for j < len(query) && query[j] >= '0' && query[j] <= '9' {
			j++
		}
		if j > i+1 && j < len(query) && query[j] == '$' {
			b.WriteString(query[i+1 : j])
			i = j // skip the closing '$'
		}
	}
	return b.String()
}

// dbTime converts a domain time to what PostgreSQL stores: UTC, microseconds.
func dbTime(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

// dbTimePtr is dbTime for optional times; nil and the zero time become NULL.
func dbTimePtr(t *time.Time) *time.Time {
	if t == nil || t.IsZero() {
		return nil
	}
	v := dbTime(*t)
	return &v
}

// domainTimePtr returns a stored optional time in UTC.
func domainTimePtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	v := t.UTC()
	return &v
}

// nullString stores "" as NULL, for optional columns with unique or partial indexes.
func nullString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// deref reads an optional column back as "".
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// nullTime stores the zero time as NULL.
func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	v := dbTime(t)
	return &v
}

// timeOrZero reads an optional time back as the zero time.
func timeOrZero(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.UTC()
}
