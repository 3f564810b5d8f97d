package console_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/helpdesk/webhook"
	"github.com/conciergehq/concierge/adapters/httpapi"
	"github.com/conciergehq/concierge/adapters/httpapi/console"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
)

// Settings fakes: keys, secrets, plans and integrations per workspace, with
// the errors of workspace.Service and delivery.Service. URLs are checked by
// the real receiver policy (the webhook sender's), as the v2 API's are.

var errNoSettings = errors.New("fake: built without settings")

// fakeNow is the fakes' clock: every stamp is fixed, so pages compare.
var fakeNow = time.Date(2027, 3, 1, 9, 30, 0, 0, time.UTC)

type fakeIntegrations struct {
	helpdesk, events, signing string
	autoAssign                bool
}

type fakeSecret struct {
	current, previous string
	until             time.Time
}

type fakeSettings struct {
	mu           sync.Mutex
	keys         map[string][]domain.APIKey // by workspace, newest first
	secrets      map[string]fakeSecret
	plans        map[string]domain.Plan
	addons       map[string][]domain.Feature
	integrations map[string]fakeIntegrations
}

func newFakeSettings() *fakeSettings {
	return &fakeSettings{
		keys: map[string][]domain.APIKey{}, secrets: map[string]fakeSecret{}, plans: map[string]domain.Plan{},
		addons: map[string][]domain.Feature{}, integrations: map[string]fakeIntegrations{},
	}
}

// apply puts the workspace's settings on ws; a nil fakeSettings leaves it.
func (s *fakeSettings) apply(ws *domain.Workspace) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.plans[ws.ID]; ok {
		ws.Plan = p
	}
	ws.Addons = s.addons[ws.ID]
	if sec, ok := s.secrets[ws.ID]; ok {
		ws.WebhookSecret, ws.PreviousWebhookSecret, ws.PreviousSecretExpiresAt = sec.current, sec.previous, sec.until
	}
	in := s.integrations[ws.ID]
	ws.HelpdeskURL, ws.EventsURL, ws.SigningSecret, ws.AutoAssign = in.helpdesk, in.events, in.signing, in.autoAssign
}

func (f fakeWorkspaces) CreateAPIKey(_ context.Context, ws, name string) (domain.APIKey, string, error) {
	if f.settings == nil {
		return domain.APIKey{}, "", errNoSettings
	}
	if _, ok := f.names[ws]; !ok {
		return domain.APIKey{}, "", domain.NotFound("workspace")
	}
	if name == "" {
		name = "default"
	}
	if len([]rune(name)) > 100 {
		return domain.APIKey{}, "", domain.InvalidField("name", "must be at most 100 characters")
	}
	key, secret := domain.NewAPIKey(ws, name, fakeNow)
	f.settings.mu.Lock()
	defer f.settings.mu.Unlock()
	f.settings.keys[ws] = append([]domain.APIKey{key}, f.settings.keys[ws]...)
	return key, secret, nil
}

func (f fakeWorkspaces) ListAPIKeys(_ context.Context, ws string) ([]domain.APIKey, error) {
	if f.settings == nil {
		return nil, errNoSettings
	}
	if _, ok := f.names[ws]; !ok {
		return nil, domain.NotFound("workspace")
	}
	f.settings.mu.Lock()
	defer f.settings.mu.Unlock()
	return append([]domain.APIKey(nil), f.settings.keys[ws]...), nil
}

func (f fakeWorkspaces) RevokeAPIKey(_ context.Context, ws, keyID string) (domain.APIKey, error) {
	if f.settings == nil {
		return domain.APIKey{}, errNoSettings
	}
	f.settings.mu.Lock()
	defer f.settings.mu.Unlock()
	for i, k := range f.settings.keys[ws] {
		if k.ID == keyID {
			if k.RevokedAt == nil {
				at := fakeNow
				f.settings.keys[ws][i].RevokedAt = &at
			}
			return f.settings.keys[ws][i], nil
		}
	}
	return domain.APIKey{}, domain.NotFound("API key")
}

func (f fakeWorkspaces) RotateWebhookSecret(ctx context.Context, id string, grace time.Duration) (domain.Workspace, error) {
	if f.settings == nil {
		return domain.Workspace{}, errNoSettings
	}
	if grace < 0 || grace > 720*time.Hour {
		return domain.Workspace{}, domain.InvalidField("grace", "must be between 0 and 720h")
	}
	ws, err := f.GetWorkspace(ctx, id)
	if err != nil {
		return domain.Workspace{}, err
	}
	sec := fakeSecret{current: domain.NewSecret(domain.PrefixWebhookSecret)}
	if grace > 0 {
		sec.previous, sec.until = ws.WebhookSecret, time.Now().Add(grace)
	}
	f.settings.mu.Lock()
	f.settings.secrets[id] = sec
	f.settings.mu.Unlock()
	return f.GetWorkspace(ctx, id)
}

func (f *fakeAccounts) ConfirmPassword(_ context.Context, userID, password string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.confirmLimited {
		return &domain.RateLimitError{RetryAfterSeconds: 42}
	}
	u, ok := f.users[userID]
	if !ok || f.passwords[u.Email] != password {
		return domain.Unauthorized("wrong password")
	}
	return nil
}

// fakeDeliveries is delivery.Service's settings and log over fakeSettings
// and a list of deliveries.
type fakeDeliveries struct {
	workspaces fakeWorkspaces
	urls       *webhook.Sender
	mu         sync.Mutex
	items      []domain.Delivery // newest first
	attempts   map[string][]domain.DeliveryAttempt
	retried    []string
}

func newFakeDeliveries(t testing.TB, ws fakeWorkspaces) *fakeDeliveries {
	t.Helper()
	urls, err := webhook.New(webhook.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return &fakeDeliveries{workspaces: ws, urls: urls, attempts: map[string][]domain.DeliveryAttempt{}}
}

// add stores a delivery of ws_a, newer than those before it.
func (f *fakeDeliveries) add(d domain.Delivery, attempts ...domain.DeliveryAttempt) domain.Delivery {
	f.mu.Lock()
	defer f.mu.Unlock()
	if d.ID == "" {
		d.ID = domain.NewID(domain.PrefixDelivery)
	}
	if d.WorkspaceID == "" {
		d.WorkspaceID = "ws_a"
	}
	if d.CreatedAt.IsZero() {
		d.CreatedAt = fakeNow.Add(time.Duration(len(f.items)) * time.Minute)
	}
	f.items = append([]domain.Delivery{d}, f.items...)
	f.attempts[d.ID] = attempts
	return d
}

func (f *fakeDeliveries) Integrations(ctx context.Context, id string) (domain.Workspace, error) {
	return f.workspaces.GetWorkspace(ctx, id)
}

func (f *fakeDeliveries) SetIntegrations(_ context.Context, ws *domain.Workspace, change delivery.IntegrationsChange) (domain.Workspace, string, error) {
	check := func(field string, in *string) (*string, error) {
		if in == nil || *in == "" {
			return in, nil
		}
		v, err := f.urls.CheckReceiverURL(field, *in)
		return &v, err
	}
	helpdesk, err := check("helpdeskUrl", change.HelpdeskURL)
	if err != nil {
		return domain.Workspace{}, "", err
	}
	events, err := check("eventsUrl", change.EventsURL)
	if err != nil {
		return domain.Workspace{}, "", err
	}
	if helpdesk != nil && *helpdesk != "" {
		if err := ws.Require(domain.FeatureHandoff); err != nil {
			return domain.Workspace{}, "", err
		}
	}
	s := f.workspaces.settings
	s.mu.Lock()
	in := s.integrations[ws.ID]
	if helpdesk != nil {
		in.helpdesk = *helpdesk
	}
	if events != nil {
		in.events = *events
	}
	if change.AutoAssign != nil {
		in.autoAssign = *change.AutoAssign
	}
	secret := ""
	if in.signing == "" && (in.helpdesk != "" || in.events != "") {
		secret = domain.NewSigningSecret()
		in.signing = secret
	}
	s.integrations[ws.ID] = in
	s.mu.Unlock()
	updated, err := f.workspaces.GetWorkspace(context.Background(), ws.ID)
	return updated, secret, err
}

func (f *fakeDeliveries) RotateSigningSecret(ctx context.Context, id string) (domain.Workspace, error) {
	s := f.workspaces.settings
	s.mu.Lock()
	in := s.integrations[id]
	in.signing = domain.NewSigningSecret()
	s.integrations[id] = in
	s.mu.Unlock()
	return f.workspaces.GetWorkspace(ctx, id)
}

func (f *fakeDeliveries) List(_ context.Context, ws string, filter domain.DeliveryFilter, page domain.PageRequest) (domain.Page[domain.Delivery], error) {
	if err := filter.Validate(); err != nil {
		return domain.Page[domain.Delivery]{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out domain.Page[domain.Delivery]
	skipping := page.After != nil
	for _, d := range f.items {
		if d.WorkspaceID != ws || (filter.Target != "" && d.Target != filter.Target) ||
			(filter.Status != "" && d.Status != filter.Status) || (filter.Type != "" && d.Type != filter.Type) {
			continue
		}
		if skipping {
			if d.ID == page.After.ID {
				skipping = false
			}
			continue
		}
		if len(out.Items) == page.Limit {
			out.HasMore = true
			last := out.Items[len(out.Items)-1].Position()
			out.Next = &last
			break
		}
		out.Items = append(out.Items, d)
	}
	return out, nil
}

func (f *fakeDeliveries) Get(_ context.Context, ws, id string) (domain.Delivery, []domain.DeliveryAttempt, error) {
	if !domain.ValidID(domain.PrefixDelivery, id) {
		return domain.Delivery{}, nil, domain.NotFound("delivery")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, d := range f.items {
		if d.ID == id && d.WorkspaceID == ws {
			return d, f.attempts[id], nil
		}
	}
	return domain.Delivery{}, nil, domain.NotFound("delivery")
}

func (f *fakeDeliveries) Retry(_ context.Context, ws, id string) (domain.Delivery, error) {
	if !domain.ValidID(domain.PrefixDelivery, id) {
		return domain.Delivery{}, domain.NotFound("delivery")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, d := range f.items {
		if d.ID == id && d.WorkspaceID == ws {
			if d.Status != domain.DeliveryFailed {
				return domain.Delivery{}, domain.Conflict("delivery %s is %s, not FAILED", id, d.Status)
			}
			f.items[i].Status = domain.DeliveryPending
			f.retried = append(f.retried, id)
			return f.items[i], nil
		}
	}
	return domain.Delivery{}, domain.NotFound("delivery")
}

// newApp serves h's routes as newHarness does, for a console built
// differently.
func newApp(h *console.Handlers) *fiber.App {
	app := fiber.New(fiber.Config{
		ErrorHandler:          httpapi.ErrorHandler(slog.New(slog.NewTextHandler(io.Discard, nil))),
		DisableStartupMessage: true,
	})
	app.Use(func(c *fiber.Ctx) error {
		c.Set("X-Request-Id", "req_test")
		c.SetUserContext(context.Background())
		return c.Next()
	})
	httpapi.ConsoleRoutes(app, h)
	return app
}
