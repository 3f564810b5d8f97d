package widget

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/memory"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

var now = time.Date(2026, 11, 22, 9, 0, 0, 0, time.UTC)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return now }

// agents holds agents by widget slug; lookups by id scan them.
type agents map[string]domain.Agent

func (a agents) GetAgentByWidgetSlug(_ context.Context, slug string) (domain.Agent, error) {
	if ag, ok := a[slug]; ok {
		return ag, nil
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func (a agents) GetAgentByGlobalID(_ context.Context, id string) (domain.Agent, error) {
	for _, ag := range a {
		if ag.ID == id {
			return ag, nil
		}
	}
	return domain.Agent{}, domain.NotFound("agent")
}

type workspaces struct {
	ports.WorkspaceStore
	byID map[string]domain.Workspace
}

func (w workspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	if ws, ok := w.byID[id]; ok {
		return ws, nil
	}
	return domain.Workspace{}, domain.NotFound("workspace")
}

type noDeliveries struct{}

func (noDeliveries) EnqueueDelivery(context.Context, domain.Delivery) error { return nil }

func fixture(t *testing.T) (*Service, *memory.Conversations, map[string]domain.Agent, map[string]domain.Workspace) {
	t.Helper()
	wss := map[string]domain.Workspace{
		"ws_free":  {ID: "ws_free", Plan: domain.PlanFree, WebhookSecret: "whsec_free"},
		"ws_std":   {ID: "ws_std", Plan: domain.PlanStandard, WebhookSecret: "whsec_std", Addons: []domain.Feature{domain.FeatureIdentityVerification}},
		"ws_white": {ID: "ws_white", Plan: domain.PlanHobby, Addons: []domain.Feature{domain.FeatureWhiteLabel}},
		"ws_ent":   {ID: "ws_ent", Plan: domain.PlanEnterprise},
	}
	published := domain.AgentConfig{Published: true}
	ags := agents{
		"free":     {ID: domain.NewID(domain.PrefixAgent), WorkspaceID: "ws_free", Slug: "free", WidgetSlug: "free", Config: published},
		"std":      {ID: domain.NewID(domain.PrefixAgent), WorkspaceID: "ws_std", Slug: "std", WidgetSlug: "std", Config: published},
		"white":    {ID: domain.NewID(domain.PrefixAgent), WorkspaceID: "ws_white", Slug: "white", WidgetSlug: "white", Config: published},
		"ent":      {ID: domain.NewID(domain.PrefixAgent), WorkspaceID: "ws_ent", Slug: "ent", WidgetSlug: "ent", Config: published},
		"draft":    {ID: domain.NewID(domain.PrefixAgent), WorkspaceID: "ws_std", Slug: "draft", WidgetSlug: "draft"},
		"orphaned": {ID: domain.NewID(domain.PrefixAgent), WorkspaceID: "ws_gone", Slug: "orphaned", WidgetSlug: "orphaned", Config: published},
	}
	convs := memory.NewConversations()
	for _, a := range ags {
		convs.AddAgent(a)
	}
	svc := NewService(Deps{
		Workspaces: workspaces{byID: wss}, Agents: ags,
		Lifecycle: conversation.New(conversation.Deps{
			Conversations: convs, Workspaces: workspaces{byID: wss}, Deliveries: noDeliveries{},
			Clock: fixedClock{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		}),
		Clock: fixedClock{},
	})
	return svc, convs, ags, wss
}

func TestResolve(t *testing.T) {
	svc, _, ags, _ := fixture(t)
	tests := []struct {
		name                string
		address             string
		wantErr             error
		wantHandoff, wantPB bool
	}{
		{name: "free plan", address: "free", wantHandoff: false, wantPB: true},
		{name: "standard plan", address: "std", wantHandoff: true, wantPB: true},
		{name: "white-label add-on", address: "white", wantHandoff: false, wantPB: false},
		{name: "enterprise", address: "ent", wantHandoff: true, wantPB: false},
		{name: "by agent id", address: ags["std"].ID, wantHandoff: true, wantPB: true},
		{name: "unknown slug", address: "nobody", wantErr: domain.ErrNotFound},
		{name: "unknown id", address: domain.NewID(domain.PrefixAgent), wantErr: domain.ErrNotFound},
		{name: "unpublished", address: "draft", wantErr: domain.ErrNotFound},
		{name: "unpublished by id", address: ags["draft"].ID, wantErr: domain.ErrNotFound},
		{name: "workspace gone", address: "orphaned", wantErr: domain.ErrNotFound},
		{name: "not a slug", address: "Support!", wantErr: domain.ErrNotFound},
		{name: "empty", address: "", wantErr: domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w, err := svc.Resolve(t.Context(), tt.address)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("err = %v, want %v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if w.Address != tt.address || w.HandoffAvailable != tt.wantHandoff || w.PoweredBy != tt.wantPB || w.Workspace.ID != w.Agent.WorkspaceID {
				t.Fatalf("widget = %+v", w)
			}
		})
	}
}

func TestStartSession(t *testing.T) {
	svc, convs, ags, wss := fixture(t)
	identity := "eyJ1c2VySWQiOiJ1XzEifQ" // {"userId":"u_1"}
	tests := []struct {
		name      string
		req       SessionRequest
		wantErr   error
		wantUser  string
		wantAgent string
	}{
		{name: "anonymous", req: SessionRequest{Address: "free"}, wantAgent: "free"},
		{name: "by id", req: SessionRequest{Address: ags["std"].ID}, wantAgent: "std"},
		{name: "verified user", req: SessionRequest{
			Session: conversation.SessionRef{IdentityHeader: identity, SignatureHeader: domain.SignIdentity(wss["ws_std"].WebhookSecret, identity)},
			Address: "std",
		}, wantAgent: "std", wantUser: "u_1"},
		{name: "bad signature", req: SessionRequest{Session: conversation.SessionRef{IdentityHeader: identity, SignatureHeader: domain.SignIdentity("whsec_other", identity)}, Address: "std"},
			wantErr: domain.ErrUnauthorized},
		{name: "identity without signature", req: SessionRequest{Session: conversation.SessionRef{IdentityHeader: identity}, Address: "std"}, wantErr: domain.ErrInvalidInput},
		{name: "identity on a plan without it", req: SessionRequest{
			Session: conversation.SessionRef{IdentityHeader: identity, SignatureHeader: domain.SignIdentity(wss["ws_free"].WebhookSecret, identity)},
			Address: "free",
		}, wantErr: domain.ErrForbidden},
		{name: "unpublished", req: SessionRequest{Address: "draft"}, wantErr: domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := convs.Len()
			conv, err := svc.StartSession(t.Context(), tt.req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || convs.Len() != before {
					t.Fatalf("err = %v (stored %d), want %v and nothing stored", err, convs.Len()-before, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := ags[tt.wantAgent]
			if conv.AgentID != want.ID || conv.WorkspaceID != want.WorkspaceID || conv.Status != domain.StatusAI ||
				conv.VerifiedUserID != tt.wantUser || !domain.ValidID(domain.PrefixSession, conv.ID) || convs.Len() != before+1 {
				t.Fatalf("conversation = %+v", conv)
			}
		})
	}
}
