// Package workspace holds the use cases of workspaces: creation and plans,
// API keys, webhook secret rotation, and authenticating callers.
package workspace

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// MaxRotationGrace bounds how long a rotated-out webhook secret stays valid.
const MaxRotationGrace = 30 * 24 * time.Hour

// Service runs workspace use cases.
type Service struct {
	workspaces ports.WorkspaceStore
	keys       ports.APIKeyStore
	clock      ports.Clock
	log        *slog.Logger
	cache      *authCache
	changes    ports.WorkspaceNotifier
}

// NewService returns a Service. authCacheTTL is how long a successful API-key
// authentication is reused without a database round trip (0 disables it); it
// bounds how long a revocation or plan change made on another process takes
// to reach this one if its announcement to changes is lost.
func NewService(workspaces ports.WorkspaceStore, keys ports.APIKeyStore, clock ports.Clock, log *slog.Logger, authCacheTTL time.Duration,
	changes ports.WorkspaceNotifier) *Service {
	return &Service{workspaces: workspaces, keys: keys, clock: clock, log: log, cache: newAuthCache(authCacheTTL), changes: changes}
}

// Forget drops this process's cached copies of the workspace, for a change
// made by another use case or announced by another pod.
func (s *Service) Forget(workspaceID string) {
	s.cache.forgetWorkspace(workspaceID)
}

// ForgetAll drops every cached authentication, for when announcements of
// changes may have been lost.
func (s *Service) ForgetAll() {
	s.cache.clear()
}

// changed drops this process's copies of the workspace at once and tells the
// other pods. A failed announcement is logged, not returned: the change is
// stored, and other pods' copies expire within the cache's lifetime anyway.
func (s *Service) changed(ctx context.Context, workspaceID string) {
	s.Forget(workspaceID)
	if err := s.changes.WorkspaceChanged(ctx, workspaceID); err != nil {
		s.log.WarnContext(ctx, "announcing a workspace change failed; other pods see it within the auth cache's lifetime",
			"workspaceId", workspaceID, "error", err)
	}
}

// Created is a new workspace with the secrets that are shown only once.
type Created struct {
	Workspace    domain.Workspace
	APIKey       domain.APIKey
	APIKeySecret string
}

// CreateWorkspace creates a workspace with a webhook secret and a first API key.
func (s *Service) CreateWorkspace(ctx context.Context, name string, plan domain.Plan) (Created, error) {
	name, err := domain.ValidateWorkspaceName(name)
	if err != nil {
		return Created{}, err
	}
	if plan, err = domain.ParsePlan(string(plan)); err != nil {
		return Created{}, err
	}
	now := s.clock.Now()
	ws := domain.Workspace{
		ID:            domain.NewID(domain.PrefixWorkspace),
		Name:          name,
		Plan:          plan,
		WebhookSecret: domain.NewSecret(domain.PrefixWebhookSecret),
		CreatedAt:     now,
		UpdatedAt:     now,
	}
	key, secret := domain.NewAPIKey(ws.ID, "default", now)
	if err := s.workspaces.CreateWorkspace(ctx, ws, key); err != nil {
		return Created{}, err
	}
	return Created{Workspace: ws, APIKey: key, APIKeySecret: secret}, nil
}

// GetWorkspace returns domain.ErrNotFound for an unknown id.
func (s *Service) GetWorkspace(ctx context.Context, id string) (domain.Workspace, error) {
	return s.workspaces.GetWorkspace(ctx, id)
}

// SetPlan changes a workspace's plan.
func (s *Service) SetPlan(ctx context.Context, id string, plan domain.Plan) (domain.Workspace, error) {
	plan, err := domain.ParsePlan(string(plan))
	if err != nil {
		return domain.Workspace{}, err
	}
	return s.update(ctx, id, func(ws *domain.Workspace) error {
		ws.Plan = plan
		return nil
	})
}

// SetAddon turns an add-on (identity verification, white-label) on or off.
func (s *Service) SetAddon(ctx context.Context, id string, addon domain.Feature, enabled bool) (domain.Workspace, error) {
	addon, err := domain.ParseAddon(string(addon))
	if err != nil {
		return domain.Workspace{}, err
	}
	return s.update(ctx, id, func(ws *domain.Workspace) error {
		kept := ws.Addons[:0:0]
		for _, a := range ws.Addons {
			if a != addon {
				kept = append(kept, a)
			}
		}
		if enabled {
			kept = append(kept, addon)
		}
		ws.Addons = kept
		return nil
	})
}

// RotateWebhookSecret makes a new current secret; the old one stays valid for
// grace (0 ends it at once), so integrators can switch without losing events.
func (s *Service) RotateWebhookSecret(ctx context.Context, id string, grace time.Duration) (domain.Workspace, error) {
	if grace < 0 || grace > MaxRotationGrace {
		return domain.Workspace{}, domain.InvalidField("grace", "must be between 0 and 720h")
	}
	return s.update(ctx, id, func(ws *domain.Workspace) error {
		ws.PreviousWebhookSecret = ws.WebhookSecret
		ws.PreviousSecretExpiresAt = s.clock.Now().Add(grace)
		if grace == 0 {
			ws.PreviousWebhookSecret = ""
			ws.PreviousSecretExpiresAt = time.Time{}
		}
		ws.WebhookSecret = domain.NewSecret(domain.PrefixWebhookSecret)
		return nil
	})
}

func (s *Service) update(ctx context.Context, id string, change func(*domain.Workspace) error) (domain.Workspace, error) {
	ws, err := s.workspaces.GetWorkspace(ctx, id)
	if err != nil {
		return domain.Workspace{}, err
	}
	if err := change(&ws); err != nil {
		return domain.Workspace{}, err
	}
	ws.UpdatedAt = s.clock.Now()
	if err := s.workspaces.UpdateWorkspace(ctx, ws); err != nil {
		return domain.Workspace{}, err
	}
	s.changed(ctx, ws.ID)
	return ws, nil
}

// CreateAPIKey makes a key for the workspace and returns its secret, shown once.
func (s *Service) CreateAPIKey(ctx context.Context, workspaceID, name string) (domain.APIKey, string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		name = "default"
	}
	if len([]rune(name)) > 100 {
		return domain.APIKey{}, "", domain.InvalidField("name", "must be at most 100 characters")
	}
	if _, err := s.workspaces.GetWorkspace(ctx, workspaceID); err != nil {
		return domain.APIKey{}, "", err
	}
	key, secret := domain.NewAPIKey(workspaceID, name, s.clock.Now())
	if err := s.keys.CreateAPIKey(ctx, key); err != nil {
		return domain.APIKey{}, "", err
	}
	return key, secret, nil
}

// ListAPIKeys lists a workspace's keys (never their secrets).
func (s *Service) ListAPIKeys(ctx context.Context, workspaceID string) ([]domain.APIKey, error) {
	if _, err := s.workspaces.GetWorkspace(ctx, workspaceID); err != nil {
		return nil, err
	}
	return s.keys.ListAPIKeys(ctx, workspaceID)
}

// RevokeAPIKey revokes a key of the workspace; revoking twice is harmless.
func (s *Service) RevokeAPIKey(ctx context.Context, workspaceID, keyID string) (domain.APIKey, error) {
	key, err := s.keys.RevokeAPIKey(ctx, workspaceID, keyID, s.clock.Now())
	if err != nil {
		return domain.APIKey{}, err
	}
	s.changed(ctx, workspaceID)
	return key, nil
}

// Principal is an authenticated API caller.
type Principal struct {
	Workspace domain.Workspace
	KeyID     string
}

// AuthenticateAPIKey checks a bearer secret and that the workspace has API
// access. Returns domain.ErrUnauthorized for a missing, unknown or revoked key
// and a domain.PlanError (ErrForbidden) when the plan lacks apiAccess.
func (s *Service) AuthenticateAPIKey(ctx context.Context, secret string) (Principal, error) {
	if !strings.HasPrefix(secret, domain.PrefixAPIKeySecret) {
		// Not one of ours: answer without a database round trip.
		return Principal{}, domain.Unauthorized("invalid API key")
	}
	hash := domain.HashSecret(secret)
	now := s.clock.Now()
	if e, ok := s.cache.get(hash, now); ok {
		s.touch(ctx, hash, e.principal.KeyID, e.touched, now)
		return e.principal, nil
	}
	key, err := s.keys.FindAPIKeyByHash(ctx, hash)
	if errors.Is(err, domain.ErrNotFound) {
		return Principal{}, domain.Unauthorized("invalid API key")
	}
	if err != nil {
		return Principal{}, err
	}
	if !key.Active() {
		return Principal{}, domain.Unauthorized("this API key has been revoked")
	}
	ws, err := s.workspaces.GetWorkspace(ctx, key.WorkspaceID)
	if errors.Is(err, domain.ErrNotFound) {
		return Principal{}, domain.Unauthorized("invalid API key")
	}
	if err != nil {
		return Principal{}, err
	}
	if err := ws.Require(domain.FeatureAPIAccess); err != nil {
		return Principal{}, err
	}
	p := Principal{Workspace: ws, KeyID: key.ID}
	var touched time.Time
	if key.LastUsedAt != nil {
		touched = *key.LastUsedAt
	}
	s.cache.put(hash, p, now, touched)
	s.touch(ctx, hash, key.ID, touched, now)
	return p, nil
}

// touch records the key's use at most once a minute. lastUsedAt is
// bookkeeping: a failure to record it must not fail the call.
func (s *Service) touch(ctx context.Context, hash, keyID string, last, now time.Time) {
	if now.Sub(last) < touchEvery {
		return
	}
	if err := s.keys.TouchAPIKey(ctx, keyID, now); err != nil {
		s.log.WarnContext(ctx, "recording API key use failed", "keyId", keyID, "error", err)
		return
	}
	s.cache.markTouched(hash, now)
}

// AuthenticateWebhook finds the workspace whose current (or, within its grace
// period, previous) webhook secret is given. Returns domain.ErrUnauthorized
// when none matches and a domain.PlanError when the plan lacks apiAccess.
func (s *Service) AuthenticateWebhook(ctx context.Context, secret string) (domain.Workspace, error) {
	if secret == "" {
		return domain.Workspace{}, domain.Unauthorized("missing x-webhook-secret header")
	}
	ws, err := s.workspaces.FindWorkspaceByWebhookSecretHash(ctx, domain.HashSecret(secret))
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Workspace{}, domain.Unauthorized("invalid webhook secret")
	}
	if err != nil {
		return domain.Workspace{}, err
	}
	// The hash lookup found a candidate; the constant-time comparison and the
	// grace period decide.
	if !ws.AcceptsWebhookSecret(secret, s.clock.Now()) {
		return domain.Workspace{}, domain.Unauthorized("invalid webhook secret")
	}
	if err := ws.Require(domain.FeatureAPIAccess); err != nil {
		return domain.Workspace{}, err
	}
	return ws, nil
}
