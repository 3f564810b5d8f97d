package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSlowQueriesAreLoggedWithoutParameters(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	var logs syncBuffer
	db, err := postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{
		SlowQueryThreshold: time.Nanosecond, // every query is slow
		Logger:             slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	store := postgres.NewStore(db.Gorm, db.Pool)

	ws, _, apiSecret := newWorkspace(t, store, domain.PlanStandard)
	if _, err := store.FindWorkspaceByWebhookSecretHash(ctx, domain.HashSecret(ws.WebhookSecret)); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "slow query") || !strings.Contains(out, "INSERT INTO") {
		t.Fatalf("slow queries were not logged:\n%s", out)
	}
	for name, secret := range map[string]string{
		"webhook secret":      ws.WebhookSecret,
		"webhook secret hash": domain.HashSecret(ws.WebhookSecret),
		"API key secret":      apiSecret,
		"API key hash":        domain.HashSecret(apiSecret),
	} {
		if strings.Contains(out, secret) {
			t.Errorf("the log contains the %s", name)
		}
	}
}

func TestDefaultOptionsLogNothing(t *testing.T) {
	t.Parallel()
	ctx := ctxT(t)
	var logs syncBuffer
	db, err := postgres.Open(ctx, pgtest.NewDatabase(t), postgres.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	store := postgres.NewStore(db.Gorm, db.Pool)
	newWorkspace(t, store, domain.PlanStandard)
	// Misses and conflicts are answers, not log lines.
	_, _ = store.GetWorkspace(ctx, "ws_missing")
	ws, key, _ := newWorkspace(t, store, domain.PlanStandard)
	_ = store.CreateWorkspace(ctx, ws, key)
	if out := logs.String(); out != "" {
		t.Fatalf("fast queries and expected errors were logged:\n%s", out)
	}
}

func TestCancelledContextIsNotAnOutage(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := store.GetWorkspace(ctx, "ws_x")
	if !errors.Is(err, context.Canceled) || errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err = %v, want context.Canceled and not ErrUnavailable", err)
	}
}
