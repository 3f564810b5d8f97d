// Package widget holds the use cases of the public chat widget: finding the
// agent behind a widget address (/chat/{slug}) and opening a session there.
// The widget needs no API key and is not plan-gated; only published agents
// are reachable.
package widget

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Deps are the ports the widget use cases need.
type Deps struct {
	Workspaces ports.WorkspaceStore
	// Agents should be cached (agent.Cache.Widgets): every page view and
	// every new session resolves an address.
	Agents ports.WidgetAgents
	// Lifecycle opens the sessions.
	Lifecycle *conversation.Lifecycle
	Clock     ports.Clock
}

// Service runs the widget use cases.
type Service struct {
	workspaces ports.WorkspaceStore
	agents     ports.WidgetAgents
	lifecycle  *conversation.Lifecycle
	clock      ports.Clock
}

// NewService returns a Service.
func NewService(d Deps) *Service {
	return &Service{workspaces: d.Workspaces, agents: d.Agents, lifecycle: d.Lifecycle, clock: d.Clock}
}

// Widget is a published agent as its widget shows it.
type Widget struct {
	// Address is the {slug} the widget was reached by: the agent's widget
	// slug or its id.
	Address   string
	Agent     domain.Agent
	Workspace domain.Workspace
	// HandoffAvailable says the plan lets visitors ask for a person.
	HandoffAvailable bool
	// PoweredBy shows the "powered by" line, which white-label removes.
	PoweredBy bool
}

var errNoWidget = domain.NotFound("agent")

// Resolve finds the published agent behind a widget address: a widget slug
// or an agent id (agent ids hold '_', which slugs never do). Returns
// domain.ErrNotFound for anything else, unknown, unpublished or deleted
// agents alike.
func (s *Service) Resolve(ctx context.Context, address string) (Widget, error) {
	var (
		agent domain.Agent
		err   error
	)
	switch {
	case domain.ValidID(domain.PrefixAgent, address):
		agent, err = s.agents.GetAgentByGlobalID(ctx, address)
	case domain.ValidateSlug(address) == nil:
		agent, err = s.agents.GetAgentByWidgetSlug(ctx, address)
	default:
		return Widget{}, errNoWidget
	}
	if errors.Is(err, domain.ErrNotFound) || (err == nil && !agent.Config.Published) {
		return Widget{}, errNoWidget
	}
	if err != nil {
		return Widget{}, err
	}
	ws, err := s.workspaces.GetWorkspace(ctx, agent.WorkspaceID)
	if errors.Is(err, domain.ErrNotFound) {
		return Widget{}, errNoWidget // deleted with its workspace since the agent was read
	}
	if err != nil {
		return Widget{}, err
	}
	return Widget{
		Address: address, Agent: agent, Workspace: ws,
		HandoffAvailable: ws.Allows(domain.FeatureHandoff),
		PoweredBy:        !ws.Allows(domain.FeatureWhiteLabel),
	}, nil
}

// SessionRequest opens a widget session.
type SessionRequest struct {
	Address string
	// Session is the caller of a session not opened yet: no workspace and
	// no ID, only the identity headers it sent; a verified user's session
	// carries its id.
	Session conversation.SessionRef
}

// StartSession opens a conversation with the agent behind the address, as
// POST /api/v1/sessions does for an API caller, with the identity headers
// verified the same way. Returns domain.ErrNotFound as Resolve does, and
// the errors of domain.VerifyIdentity (ErrInvalidInput, ErrUnauthorized, a
// PlanError without identity verification).
func (s *Service) StartSession(ctx context.Context, req SessionRequest) (domain.Conversation, error) {
	w, err := s.Resolve(ctx, req.Address)
	if err != nil {
		return domain.Conversation{}, err
	}
	identity, err := domain.VerifyIdentity(&w.Workspace, req.Session.IdentityHeader, req.Session.SignatureHeader, s.clock.Now())
	if err != nil {
		return domain.Conversation{}, err
	}
	return s.lifecycle.Open(ctx, &w.Workspace, &w.Agent, identity)
}
