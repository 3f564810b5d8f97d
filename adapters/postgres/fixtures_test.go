package postgres_test

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"gorm.io/gorm"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// t0 is a fixed time with nanoseconds, so tests also check truncation to
// PostgreSQL's microseconds.
var t0 = time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.UTC)

func ctxT(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// micro is what PostgreSQL gives back for t.
func micro(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func newWorkspace(t testing.TB, store *postgres.Store, plan domain.Plan) (domain.Workspace, domain.APIKey, string) {
	t.Helper()
	ws := domain.Workspace{
		ID:            domain.NewID(domain.PrefixWorkspace),
		Name:          "Acme",
		Plan:          plan,
		WebhookSecret: domain.NewSecret(domain.PrefixWebhookSecret),
		CreatedAt:     t0,
		UpdatedAt:     t0,
	}
	key, secret := domain.NewAPIKey(ws.ID, "default", t0)
	if err := store.CreateWorkspace(ctxT(t), ws, key); err != nil {
		t.Fatalf("CreateWorkspace: %v", err)
	}
	return ws, key, secret
}

func newAgent(t testing.TB, store *postgres.Store, workspaceID, slug string, created time.Time) domain.Agent {
	t.Helper()
	a := domain.Agent{
		ID:          domain.NewID(domain.PrefixAgent),
		WorkspaceID: workspaceID,
		Slug:        slug,
		Name:        "Agent " + slug,
		Config: domain.AgentConfig{
			SystemPrompt:       "Be helpful.",
			WelcomeMessage:     "Hi!",
			SuggestedQuestions: []string{"How do I reset my password?"},
			Published:          true,
			RetrievalTopK:      domain.DefaultRetrievalTopK,
			RetrievalThreshold: domain.DefaultRetrievalThreshold,
		},
		CreatedAt: created,
		UpdatedAt: created,
	}
	if err := store.CreateAgent(ctxT(t), &a); err != nil {
		t.Fatalf("CreateAgent: %v", err)
	}
	return a
}

func newConversation(t *testing.T, store *postgres.Store, workspaceID string, agent domain.Agent, at time.Time) domain.Conversation {
	t.Helper()
	c := domain.NewConversation(workspaceID, &agent, "", at)
	if err := store.CreateConversation(ctxT(t), &c); err != nil {
		t.Fatalf("CreateConversation: %v", err)
	}
	return c
}

// conversationFixture is where most conversation tests start: a fresh
// database with a Standard workspace, its agent "support" and one empty
// conversation.
type conversationFixture struct {
	db    *gorm.DB
	store *postgres.Store
	ws    domain.Workspace
	agent domain.Agent
	conv  domain.Conversation
}

func newConversationFixture(t *testing.T) conversationFixture {
	t.Helper()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	return conversationFixture{db: db, store: store, ws: ws, agent: agent, conv: newConversation(t, store, ws.ID, agent, t0)}
}

func newMessage(workspaceID, conversationID string, role domain.Role, content string, at time.Time) domain.Message {
	return domain.Message{
		ID:             domain.NewID(domain.PrefixMessage),
		WorkspaceID:    workspaceID,
		ConversationID: conversationID,
		Role:           role,
		Content:        content,
		CreatedAt:      at,
	}
}

// sortedIDs returns the ids of items sorted by less.
func sortedIDs[T any](items []T, id func(T) string, less func(a, b T) bool) []string {
	sorted := slices.Clone(items)
	slices.SortFunc(sorted, func(a, b T) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	ids := make([]string, len(sorted))
	for i, it := range sorted {
		ids[i] = id(it)
	}
	return ids
}

// migrationFixture is what a test taking migrations down and up again
// starts from: a migrated database (its DSN, for migrationProvider), a
// small pool on it to write rows the migrations must keep (close it before
// migrating), a workspace and its agent "support" created at created.
func migrationFixture(t *testing.T, created time.Time) (string, *postgres.DB, *postgres.Store, domain.Workspace, domain.Agent) {
	t.Helper()
	dsn := pgtest.NewDatabase(t)
	pg, err := postgres.Open(ctxT(t), dsn, postgres.Options{MaxOpenConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	return dsn, pg, store, ws, newAgent(t, store, ws.ID, "support", created)
}

// migrationProvider returns goose's provider of the project's migrations
// over the database at dsn, as the migrate command runs them, and the
// connection it uses (closed when the test ends), for the tests that take
// a migration down and up again.
func migrationProvider(t *testing.T, dsn string) (*goose.Provider, *sql.DB) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { db.Close() })
	migrations, err := fs.Sub(postgres.Migrations, "migrations")
	if err != nil {
		t.Fatal(err)
	}
	provider, err := goose.NewProvider(goose.DialectPostgres, db, migrations, goose.WithDisableGlobalRegistry(true))
	if err != nil {
		t.Fatal(err)
	}
	return provider, db
}
