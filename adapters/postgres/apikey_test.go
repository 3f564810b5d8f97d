package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestAPIKeys(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	db, store := pg.Gorm, postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	ws, first, firstSecret := newWorkspace(t, store, domain.PlanStandard)

	second, secondSecret := domain.NewAPIKey(ws.ID, "ci", t0.Add(time.Minute))
	if err := store.CreateAPIKey(ctx, second); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}

	keys, err := store.ListAPIKeys(ctx, ws.ID)
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	if len(keys) != 2 || keys[0].ID != second.ID || keys[1].ID != first.ID {
		t.Fatalf("ListAPIKeys = %+v, want [second, first]", keys)
	}
	if !keys[0].CreatedAt.Equal(micro(second.CreatedAt)) || keys[0].DisplayPrefix != second.DisplayPrefix || keys[0].Name != "ci" {
		t.Fatalf("stored key = %+v, want %+v", keys[0], second)
	}

	// Only hashes are stored: no column of any key row contains a secret.
	var leaks int64
	for _, secret := range []string{firstSecret, secondSecret} {
		var n int64
		if err := db.Raw(`SELECT count(*) FROM api_keys k WHERE strpos(k::text, ?) > 0`, secret).Scan(&n).Error; err != nil {
			t.Fatal(err)
		}
		leaks += n
		if !strings.HasPrefix(secret, second.DisplayPrefix[:len(domain.PrefixAPIKeySecret)]) {
			t.Fatalf("secret %q does not start with the key prefix", secret)
		}
	}
	if leaks != 0 {
		t.Fatalf("%d api_keys rows contain a plaintext secret", leaks)
	}

	got, err := store.FindAPIKeyByHash(ctx, domain.HashSecret(secondSecret))
	if err != nil || got.ID != second.ID {
		t.Fatalf("FindAPIKeyByHash = %+v, %v", got, err)
	}

	// Revoking keeps the first time.
	revoked, err := store.RevokeAPIKey(ctx, ws.ID, second.ID, t0.Add(time.Hour))
	if err != nil {
		t.Fatalf("RevokeAPIKey: %v", err)
	}
	if revoked.RevokedAt == nil || !revoked.RevokedAt.Equal(micro(t0.Add(time.Hour))) || revoked.Active() {
		t.Fatalf("revoked key = %+v", revoked)
	}
	again, err := store.RevokeAPIKey(ctx, ws.ID, second.ID, t0.Add(2*time.Hour))
	if err != nil {
		t.Fatalf("RevokeAPIKey again: %v", err)
	}
	if !again.RevokedAt.Equal(*revoked.RevokedAt) {
		t.Fatalf("second revocation moved revoked_at to %v", again.RevokedAt)
	}
	// A revoked key is still found, so the caller can answer 401 for it.
	got, err = store.FindAPIKeyByHash(ctx, second.Hash)
	if err != nil || got.Active() {
		t.Fatalf("FindAPIKeyByHash(revoked) = %+v, %v", got, err)
	}
}

func TestAPIKeyErrorsAndScoping(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, keyA, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)

	orphan, _ := domain.NewAPIKey(domain.NewID(domain.PrefixWorkspace), "x", t0)
	dup, _ := domain.NewAPIKey(wsA.ID, "dup", t0)
	dup.Hash = keyA.Hash

	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"create for unknown workspace", func() error { return store.CreateAPIKey(ctx, orphan) }, domain.ErrNotFound},
		{"create duplicate hash", func() error { return store.CreateAPIKey(ctx, dup) }, domain.ErrConflict},
		{"find unknown hash", func() error { _, err := store.FindAPIKeyByHash(ctx, domain.HashSecret("x")); return err }, domain.ErrNotFound},
		{"revoke unknown key", func() error {
			_, err := store.RevokeAPIKey(ctx, wsA.ID, domain.NewID(domain.PrefixAPIKey), t0)
			return err
		}, domain.ErrNotFound},
		{"revoke another workspace's key", func() error { _, err := store.RevokeAPIKey(ctx, wsB.ID, keyA.ID, t0); return err }, domain.ErrNotFound},
		{"touch unknown key is a no-op", func() error { return store.TouchAPIKey(ctx, domain.NewID(domain.PrefixAPIKey), t0) }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.run()
			if (tt.want == nil && err != nil) || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}

	// B's failed revocation left A's key alone, and B lists only its own key.
	got, err := store.FindAPIKeyByHash(ctx, keyA.Hash)
	if err != nil || !got.Active() {
		t.Fatalf("workspace A's key after B tried to revoke it = %+v, %v", got, err)
	}
	keys, err := store.ListAPIKeys(ctx, wsB.ID)
	if err != nil || len(keys) != 1 || keys[0].WorkspaceID != wsB.ID {
		t.Fatalf("ListAPIKeys(B) = %+v, %v", keys, err)
	}
	if keys, err := store.ListAPIKeys(ctx, domain.NewID(domain.PrefixWorkspace)); err != nil || keys == nil || len(keys) != 0 {
		t.Fatalf("ListAPIKeys(unknown) = %#v, %v; want an empty slice", keys, err)
	}
}

func TestTouchAPIKeyThrottles(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	_, key, _ := newWorkspace(t, store, domain.PlanStandard)

	lastUsed := func() *time.Time {
		t.Helper()
		k, err := store.FindAPIKeyByHash(ctx, key.Hash)
		if err != nil {
			t.Fatal(err)
		}
		return k.LastUsedAt
	}
	if lastUsed() != nil {
		t.Fatal("a new key has a last use")
	}
	steps := []struct {
		at   time.Time
		want time.Time
	}{
		{t0, t0},                       // first use is always written
		{t0.Add(30 * time.Second), t0}, // within a minute: skipped
		{t0.Add(time.Minute), t0},      // exactly a minute: skipped
		{t0.Add(61 * time.Second), t0.Add(61 * time.Second)}, // over a minute: written
		{t0, t0.Add(61 * time.Second)},                       // an older use never moves it back
	}
	for i, s := range steps {
		if err := store.TouchAPIKey(ctx, key.ID, s.at); err != nil {
			t.Fatalf("step %d: TouchAPIKey: %v", i, err)
		}
		if got := lastUsed(); got == nil || !got.Equal(micro(s.want)) {
			t.Fatalf("step %d: last used = %v, want %v", i, got, micro(s.want))
		}
	}
}
