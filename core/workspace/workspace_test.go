package workspace

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// memStore is a hand-written fake of WorkspaceStore and APIKeyStore that
// counts reads, so tests can see when the cache spares a round trip.
type memStore struct {
	mu         sync.Mutex
	workspaces map[string]domain.Workspace
	keys       map[string]domain.APIKey // by id
	reads      int
	touches    int
}

func newMemStore() *memStore {
	return &memStore{workspaces: map[string]domain.Workspace{}, keys: map[string]domain.APIKey{}}
}

func (m *memStore) CreateWorkspace(_ context.Context, ws domain.Workspace, key domain.APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.workspaces[ws.ID], m.keys[key.ID] = ws, key
	return nil
}

func (m *memStore) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	ws, ok := m.workspaces[id]
	if !ok {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	return ws, nil
}

func (m *memStore) UpdateWorkspace(_ context.Context, ws domain.Workspace) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.workspaces[ws.ID] = ws
	return nil
}

func (m *memStore) FindWorkspaceByWebhookSecretHash(_ context.Context, hash string) (domain.Workspace, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ws := range m.workspaces {
		if domain.HashSecret(ws.WebhookSecret) == hash || (ws.PreviousWebhookSecret != "" && domain.HashSecret(ws.PreviousWebhookSecret) == hash) {
			return ws, nil
		}
	}
	return domain.Workspace{}, domain.NotFound("workspace")
}

func (m *memStore) CreateAPIKey(_ context.Context, key domain.APIKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.keys[key.ID] = key
	return nil
}

func (m *memStore) FindAPIKeyByHash(_ context.Context, hash string) (domain.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reads++
	for _, k := range m.keys {
		if k.Hash == hash {
			return k, nil
		}
	}
	return domain.APIKey{}, domain.NotFound("API key")
}

func (m *memStore) ListAPIKeys(_ context.Context, ws string) ([]domain.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []domain.APIKey
	for _, k := range m.keys {
		if k.WorkspaceID == ws {
			out = append(out, k)
		}
	}
	return out, nil
}

func (m *memStore) RevokeAPIKey(_ context.Context, ws, id string, at time.Time) (domain.APIKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if !ok || k.WorkspaceID != ws {
		return domain.APIKey{}, domain.NotFound("API key")
	}
	if k.RevokedAt == nil {
		k.RevokedAt = &at
	}
	m.keys[id] = k
	return k, nil
}

func (m *memStore) TouchAPIKey(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.touches++
	k := m.keys[id]
	k.LastUsedAt = &at
	m.keys[id] = k
	return nil
}

type clock struct{ t time.Time }

func (c *clock) Now() time.Time { return c.t }

// announcements records WorkspaceChanged calls.
type announcements struct {
	mu  sync.Mutex
	ids []string
}

func (a *announcements) WorkspaceChanged(_ context.Context, id string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ids = append(a.ids, id)
	return nil
}

func (a *announcements) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.ids)
}

func newService(ttl time.Duration) (*Service, *memStore, *clock) {
	store := newMemStore()
	clk := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	return NewService(store, store, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), ttl, &announcements{}), store, clk
}

func TestAuthenticateAPIKey(t *testing.T) {
	svc, store, _ := newService(5 * time.Second)
	ctx := context.Background()
	std, err := svc.CreateWorkspace(ctx, "Acme", domain.PlanStandard)
	if err != nil {
		t.Fatal(err)
	}
	free, _ := svc.CreateWorkspace(ctx, "Tiny", domain.PlanFree)
	revoked, _ := svc.CreateWorkspace(ctx, "Gone", domain.PlanEnterprise)
	if _, err := svc.RevokeAPIKey(ctx, revoked.Workspace.ID, revoked.APIKey.ID); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		secret  string
		wantErr error
		wantWS  string
	}{
		{"valid", std.APIKeySecret, nil, std.Workspace.ID},
		{"empty", "", domain.ErrUnauthorized, ""},
		{"foreign prefix", "sk-abc", domain.ErrUnauthorized, ""},
		{"unknown", domain.NewSecret(domain.PrefixAPIKeySecret), domain.ErrUnauthorized, ""},
		{"revoked", revoked.APIKeySecret, domain.ErrUnauthorized, ""},
		{"free plan", free.APIKeySecret, domain.ErrForbidden, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := svc.AuthenticateAPIKey(ctx, tt.secret)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && p.Workspace.ID != tt.wantWS {
				t.Fatalf("workspace = %s", p.Workspace.ID)
			}
			var plan *domain.PlanError
			if errors.Is(tt.wantErr, domain.ErrForbidden) && (!errors.As(err, &plan) || plan.Feature != domain.FeatureAPIAccess) {
				t.Fatalf("want a PlanError naming apiAccess, got %#v", err)
			}
		})
	}
	if store.touches != 1 {
		t.Fatalf("lastUsedAt written %d times, want once", store.touches)
	}
}

func TestAuthCache(t *testing.T) {
	ctx := context.Background()

	t.Run("repeated calls hit the store once per TTL", func(t *testing.T) {
		svc, store, clk := newService(5 * time.Second)
		ws, _ := svc.CreateWorkspace(ctx, "Acme", domain.PlanStandard)
		for range 10 {
			if _, err := svc.AuthenticateAPIKey(ctx, ws.APIKeySecret); err != nil {
				t.Fatal(err)
			}
		}
		if store.reads != 2 { // one key lookup, one workspace lookup
			t.Fatalf("store reads = %d, want 2", store.reads)
		}
		clk.t = clk.t.Add(5 * time.Second)
		if _, err := svc.AuthenticateAPIKey(ctx, ws.APIKeySecret); err != nil {
			t.Fatal(err)
		}
		if store.reads != 4 {
			t.Fatalf("after the TTL, store reads = %d, want 4", store.reads)
		}
	})

	t.Run("revocation elsewhere applies within the TTL", func(t *testing.T) {
		pod, store, clk := newService(5 * time.Second)
		ws, _ := pod.CreateWorkspace(ctx, "Acme", domain.PlanStandard)
		if _, err := pod.AuthenticateAPIKey(ctx, ws.APIKeySecret); err != nil {
			t.Fatal(err)
		}
		// The admin CLI is another process with its own Service on the same store.
		admin := NewService(store, store, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), 0, &announcements{})
		if _, err := admin.RevokeAPIKey(ctx, ws.Workspace.ID, ws.APIKey.ID); err != nil {
			t.Fatal(err)
		}
		clk.t = clk.t.Add(4 * time.Second)
		if _, err := pod.AuthenticateAPIKey(ctx, ws.APIKeySecret); err != nil {
			t.Fatalf("within the TTL the cached check may still pass: %v", err)
		}
		clk.t = clk.t.Add(time.Second)
		if _, err := pod.AuthenticateAPIKey(ctx, ws.APIKeySecret); !errors.Is(err, domain.ErrUnauthorized) {
			t.Fatalf("after the TTL: err = %v, want unauthorized", err)
		}
	})

	changes := []struct {
		name   string
		change func(svc *Service, ws Created) error
		want   error
	}{
		{"revocation", func(svc *Service, ws Created) error {
			_, err := svc.RevokeAPIKey(ctx, ws.Workspace.ID, ws.APIKey.ID)
			return err
		}, domain.ErrUnauthorized},
		{"downgrade", func(svc *Service, ws Created) error {
			_, err := svc.SetPlan(ctx, ws.Workspace.ID, domain.PlanHobby)
			return err
		}, domain.ErrForbidden},
	}
	for _, tc := range changes {
		t.Run(tc.name+" in this process applies at once", func(t *testing.T) {
			svc, _, _ := newService(time.Minute)
			ws, _ := svc.CreateWorkspace(ctx, "Acme", domain.PlanStandard)
			if _, err := svc.AuthenticateAPIKey(ctx, ws.APIKeySecret); err != nil {
				t.Fatal(err)
			}
			if err := tc.change(svc, ws); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.AuthenticateAPIKey(ctx, ws.APIKeySecret); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}

	// Every change is announced, so other pods drop their copies at once
	// rather than within the TTL; here the announcement is carried to the
	// pod by hand, as the Redis fan-out does.
	t.Run("an announced change elsewhere applies at once", func(t *testing.T) {
		pod, store, clk := newService(time.Minute)
		ws, _ := pod.CreateWorkspace(ctx, "Acme", domain.PlanStandard)
		if _, err := pod.AuthenticateAPIKey(ctx, ws.APIKeySecret); err != nil {
			t.Fatal(err)
		}
		fanOut := &forwarder{to: pod}
		admin := NewService(store, store, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), 0, fanOut)
		if _, err := admin.SetPlan(ctx, ws.Workspace.ID, domain.PlanHobby); err != nil {
			t.Fatal(err)
		}
		if _, err := pod.AuthenticateAPIKey(ctx, ws.APIKeySecret); !errors.Is(err, domain.ErrForbidden) {
			t.Fatalf("after an announced downgrade: err = %v, want the plan error", err)
		}
		if fanOut.calls != 1 {
			t.Fatalf("%d announcements, want 1", fanOut.calls)
		}
	})

	t.Run("TTL zero disables the cache", func(t *testing.T) {
		svc, store, _ := newService(0)
		ws, _ := svc.CreateWorkspace(ctx, "Acme", domain.PlanStandard)
		for range 3 {
			if _, err := svc.AuthenticateAPIKey(ctx, ws.APIKeySecret); err != nil {
				t.Fatal(err)
			}
		}
		if store.reads != 6 {
			t.Fatalf("store reads = %d, want 6", store.reads)
		}
	})
}

func TestWebhookSecretRotation(t *testing.T) {
	svc, _, clk := newService(0)
	ctx := context.Background()
	ws, _ := svc.CreateWorkspace(ctx, "Acme", domain.PlanStandard)
	old := ws.Workspace.WebhookSecret

	rotated, err := svc.RotateWebhookSecret(ctx, ws.Workspace.ID, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{old, rotated.WebhookSecret} {
		if _, err := svc.AuthenticateWebhook(ctx, secret); err != nil {
			t.Fatalf("during the grace period %q: %v", secret[:10], err)
		}
	}
	clk.t = clk.t.Add(time.Hour)
	if _, err := svc.AuthenticateWebhook(ctx, old); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("after the grace period the old secret: err = %v", err)
	}
	if _, err := svc.AuthenticateWebhook(ctx, rotated.WebhookSecret); err != nil {
		t.Fatal(err)
	}
	again, err := svc.RotateWebhookSecret(ctx, ws.Workspace.ID, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AuthenticateWebhook(ctx, rotated.WebhookSecret); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("grace 0 ends the previous secret at once: err = %v", err)
	}
	if _, err := svc.AuthenticateWebhook(ctx, again.WebhookSecret); err != nil {
		t.Fatal(err)
	}
	for _, grace := range []time.Duration{-time.Second, MaxRotationGrace + time.Second} {
		if _, err := svc.RotateWebhookSecret(ctx, ws.Workspace.ID, grace); !errors.Is(err, domain.ErrInvalidInput) {
			t.Fatalf("grace %s: err = %v", grace, err)
		}
	}
	hobby, _ := svc.CreateWorkspace(ctx, "Small", domain.PlanHobby)
	if _, err := svc.AuthenticateWebhook(ctx, hobby.Workspace.WebhookSecret); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("hobby: err = %v", err)
	}
}

func TestCreateWorkspaceValidation(t *testing.T) {
	svc, _, _ := newService(0)
	tests := []struct {
		name, wsName string
		plan         domain.Plan
		ok           bool
	}{
		{"valid", "Acme", domain.PlanStandard, true},
		{"plan any case", "Acme", "Enterprise", true},
		{"blank name", "  ", domain.PlanStandard, false},
		{"unknown plan", "Acme", "gold", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := svc.CreateWorkspace(context.Background(), tt.wsName, tt.plan)
			if tt.ok != (err == nil) {
				t.Fatalf("err = %v", err)
			}
			if err != nil && !errors.Is(err, domain.ErrInvalidInput) {
				t.Fatalf("err kind = %v", err)
			}
			if tt.ok && (!domain.ValidID(domain.PrefixWorkspace, c.Workspace.ID) || c.APIKey.Hash != domain.HashSecret(c.APIKeySecret) || len(c.APIKeySecret) < len(domain.PrefixAPIKeySecret)+50) {
				t.Fatalf("created = %+v", c)
			}
		})
	}
}

// forwarder hands announcements to another process's Service, as the
// pods' Redis subscription does.
type forwarder struct {
	to    *Service
	calls int
}

func (f *forwarder) WorkspaceChanged(_ context.Context, id string) error {
	f.calls++
	f.to.Forget(id)
	return nil
}

// TestChangesAreAnnounced: every use case that changes a workspace tells the
// other pods which one.
func TestChangesAreAnnounced(t *testing.T) {
	ctx := context.Background()
	store := newMemStore()
	clk := &clock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	rec := &announcements{}
	svc := NewService(store, store, clk, slog.New(slog.NewTextHandler(io.Discard, nil)), time.Minute, rec)
	ws, err := svc.CreateWorkspace(ctx, "Acme", domain.PlanStandard)
	if err != nil {
		t.Fatal(err)
	}
	id := ws.Workspace.ID
	steps := []func() error{
		func() error { _, err := svc.SetPlan(ctx, id, domain.PlanEnterprise); return err },
		func() error { _, err := svc.SetAddon(ctx, id, domain.FeatureIdentityVerification, true); return err },
		func() error { _, err := svc.RotateWebhookSecret(ctx, id, time.Hour); return err },
		func() error { _, err := svc.RevokeAPIKey(ctx, id, ws.APIKey.ID); return err },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := rec.all(); len(got) != i+1 || got[i] != id {
			t.Fatalf("after step %d announcements are %v, want one more for %s", i, got, id)
		}
	}
}
