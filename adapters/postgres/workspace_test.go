package postgres_test

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestWorkspaceRoundTrip(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, key, _ := newWorkspace(t, store, domain.PlanStandard)

	got, err := store.GetWorkspace(ctx, ws.ID)
	if err != nil {
		t.Fatalf("GetWorkspace: %v", err)
	}
	want := ws
	want.CreatedAt, want.UpdatedAt = micro(ws.CreatedAt), micro(ws.UpdatedAt)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GetWorkspace = %+v, want %+v", got, want)
	}
	gotKey, err := store.FindAPIKeyByHash(ctx, key.Hash)
	if err != nil {
		t.Fatalf("FindAPIKeyByHash: %v", err)
	}
	if gotKey.ID != key.ID || gotKey.WorkspaceID != ws.ID {
		t.Fatalf("first key = %+v, want id %s of %s", gotKey, key.ID, ws.ID)
	}

	// Rotate the secret, upgrade, add an add-on.
	rotated := got
	rotated.Name = "Acme Inc"
	rotated.Plan = domain.PlanEnterprise
	rotated.Addons = []domain.Feature{domain.FeatureWhiteLabel, domain.FeatureIdentityVerification}
	rotated.PreviousWebhookSecret = ws.WebhookSecret
	rotated.PreviousSecretExpiresAt = t0.Add(24 * time.Hour)
	rotated.WebhookSecret = domain.NewSecret(domain.PrefixWebhookSecret)
	rotated.UpdatedAt = t0.Add(time.Hour)
	if err := store.UpdateWorkspace(ctx, rotated); err != nil {
		t.Fatalf("UpdateWorkspace: %v", err)
	}
	got, err = store.GetWorkspace(ctx, ws.ID)
	if err != nil {
		t.Fatalf("GetWorkspace: %v", err)
	}
	want = rotated
	want.PreviousSecretExpiresAt = micro(rotated.PreviousSecretExpiresAt)
	want.UpdatedAt = micro(rotated.UpdatedAt)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after update = %+v, want %+v", got, want)
	}

	for name, secret := range map[string]string{"current": rotated.WebhookSecret, "previous": ws.WebhookSecret} {
		found, err := store.FindWorkspaceByWebhookSecretHash(ctx, domain.HashSecret(secret))
		if err != nil || found.ID != ws.ID {
			t.Errorf("FindWorkspaceByWebhookSecretHash(%s) = %v, %v; want %s", name, found.ID, err, ws.ID)
		}
	}

	// Ending the rotation clears the previous secret (zero values must be written).
	ended := got
	ended.PreviousWebhookSecret = ""
	ended.PreviousSecretExpiresAt = time.Time{}
	ended.Addons = nil
	if err := store.UpdateWorkspace(ctx, ended); err != nil {
		t.Fatalf("UpdateWorkspace: %v", err)
	}
	got, err = store.GetWorkspace(ctx, ws.ID)
	if err != nil {
		t.Fatalf("GetWorkspace: %v", err)
	}
	if !reflect.DeepEqual(got, ended) {
		t.Fatalf("after ending rotation = %+v, want %+v", got, ended)
	}
	if _, err := store.FindWorkspaceByWebhookSecretHash(ctx, domain.HashSecret(ws.WebhookSecret)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("old secret after rotation ended: err = %v, want ErrNotFound", err)
	}
}

func TestWorkspaceErrors(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanFree)

	missing := ws
	missing.ID = domain.NewID(domain.PrefixWorkspace)
	missing.WebhookSecret = domain.NewSecret(domain.PrefixWebhookSecret)

	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"get unknown", func() error { _, err := store.GetWorkspace(ctx, missing.ID); return err }, domain.ErrNotFound},
		{"update unknown", func() error { return store.UpdateWorkspace(ctx, missing) }, domain.ErrNotFound},
		{"find unknown hash", func() error {
			_, err := store.FindWorkspaceByWebhookSecretHash(ctx, domain.HashSecret("nope"))
			return err
		}, domain.ErrNotFound},
		{"find empty hash", func() error { _, err := store.FindWorkspaceByWebhookSecretHash(ctx, ""); return err }, domain.ErrNotFound},
		{"create duplicate id", func() error {
			dup := ws
			dup.WebhookSecret = domain.NewSecret(domain.PrefixWebhookSecret)
			key, _ := domain.NewAPIKey(ws.ID, "k", t0)
			return store.CreateWorkspace(ctx, dup, key)
		}, domain.ErrConflict},
		{"create duplicate webhook secret", func() error {
			dup := ws
			dup.ID = domain.NewID(domain.PrefixWorkspace)
			key, _ := domain.NewAPIKey(dup.ID, "k", t0)
			return store.CreateWorkspace(ctx, dup, key)
		}, domain.ErrConflict},
		{"update to another workspace's secret", func() error {
			other, _, _ := newWorkspace(t, store, domain.PlanFree)
			other.WebhookSecret = ws.WebhookSecret
			return store.UpdateWorkspace(ctx, other)
		}, domain.ErrConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}

	var nf *domain.NotFoundError
	if _, err := store.GetWorkspace(ctx, missing.ID); !errors.As(err, &nf) || nf.What != "workspace" {
		t.Fatalf("err = %v, want a NotFoundError naming the workspace", err)
	}
}

func TestCreateWorkspaceIsAtomic(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	first, key, _ := newWorkspace(t, store, domain.PlanFree)

	// The second workspace's key reuses the first key's hash: the whole
	// creation must roll back, leaving no workspace behind.
	ws := domain.Workspace{
		ID: domain.NewID(domain.PrefixWorkspace), Name: "Other", Plan: domain.PlanFree,
		WebhookSecret: domain.NewSecret(domain.PrefixWebhookSecret), CreatedAt: t0, UpdatedAt: t0,
	}
	dupKey := key
	dupKey.ID = domain.NewID(domain.PrefixAPIKey)
	dupKey.WorkspaceID = ws.ID
	if err := store.CreateWorkspace(ctx, ws, dupKey); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("CreateWorkspace with a duplicate key hash: err = %v, want ErrConflict", err)
	}
	if _, err := store.GetWorkspace(ctx, ws.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("workspace survived a failed creation: err = %v", err)
	}
	if _, err := store.GetWorkspace(ctx, first.ID); err != nil {
		t.Fatalf("first workspace: %v", err)
	}

	// A key for another workspace is refused outright.
	otherKey, _ := domain.NewAPIKey(first.ID, "k", t0)
	ws.WebhookSecret = domain.NewSecret(domain.PrefixWebhookSecret)
	if err := store.CreateWorkspace(ctx, ws, otherKey); err == nil {
		t.Fatal("CreateWorkspace accepted a key of another workspace")
	}
}
