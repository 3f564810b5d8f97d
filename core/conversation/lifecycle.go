package conversation

import (
	"context"
	"log/slog"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// StatusAttempts bounds how often a use case reads a conversation again
// whose state keeps changing under its writes.
const StatusAttempts = 3

// Deps are the ports a Lifecycle needs.
type Deps struct {
	Conversations ports.ConversationStore
	// Workspaces and Agents are read to find a session (Find); the stores,
	// or the per-pod caches in front of them, provide them.
	Workspaces interface {
		GetWorkspace(ctx context.Context, id string) (domain.Workspace, error)
	}
	Agents interface {
		GetAgentByID(ctx context.Context, workspaceID, id string) (domain.Agent, error)
	}
	// Deliveries schedules the outbox rows written with conversations,
	// messages and state changes.
	Deliveries ports.DeliveryQueue
	// Bus carries every session event to the followers of the session.
	Bus ports.EventBus
	// WorkspaceEvents is the workspaces' event logs, which every
	// publication also feeds (Publication, PublishWorkspace); nil publishes
	// no workspace events.
	WorkspaceEvents ports.WorkspaceEventLog
	// AutoAssign schedules the auto-assignment of conversations handed off
	// in workspaces that have it on (Move); nil schedules none.
	AutoAssign ports.AutoAssignQueue
	Clock      ports.Clock
	Log        *slog.Logger
	// Handoffs hears each conversation moved to HANDOFF_REQUESTED
	// (metrics); nil hears nothing.
	Handoffs ports.HandoffObserver
}

// Lifecycle owns the Conversation aggregate: it finds a session for a
// caller (Find), opens one (Open), appends a message under the state the
// caller decided on (Append), moves a conversation between its states
// (Move), reads what happened in it (Poll), and publishes its events under
// one policy (Publish, NewPublication). Every capability that reads or
// changes a conversation does it here, so the rules are written once.
type Lifecycle struct {
	d Deps
	// publish is the publish policy (PublishBudget, PublishWait); tests shorten it.
	publish publishPolicy
	// owners remembers the workspace and agent of conversations whose
	// workspace events were published.
	owners owners
}

// New returns a Lifecycle over d.
func New(d Deps) *Lifecycle {
	return &Lifecycle{d: d, publish: defaultPublishPolicy}
}

// EnqueueDeliveries schedules deliveries that were just stored. It never
// fails its caller: the rows are committed and stay PENDING, so a failure
// is only logged and the delivery sweeper enqueues them later. Every use
// case that writes outbox rows schedules them here (Open, Append and Move
// do it themselves).
func (l *Lifecycle) EnqueueDeliveries(ctx context.Context, deliveries []domain.Delivery) {
	for _, d := range deliveries {
		if err := l.d.Deliveries.EnqueueDelivery(ctx, d); err != nil {
			l.d.Log.WarnContext(ctx, "enqueueing a delivery failed; the sweeper will retry", "deliveryId", d.ID, "type", d.Type, "error", err)
		}
	}
}

// enqueueAutoAssign schedules the auto-assignment of a conversation just
// moved to HANDOFF_REQUESTED when its workspace has it on. ws may be a
// cached copy: the task reads the setting again, so a stale "on" assigns
// nothing, and a change of the setting drops the caches. It never fails
// its caller: the handoff is committed, and a conversation whose
// assignment could not be scheduled waits unassigned in "Needs a person",
// as without auto-assignment, until a member takes it.
func (l *Lifecycle) enqueueAutoAssign(ctx context.Context, ws *domain.Workspace, conv domain.Conversation) {
	if l.d.AutoAssign == nil || !ws.AutoAssign || conv.Status != domain.StatusHandoffRequested || conv.AssigneeID != "" {
		return
	}
	if err := l.d.AutoAssign.EnqueueAutoAssign(ctx, ws.ID, conv.ID); err != nil {
		l.d.Log.WarnContext(ctx, "enqueueing an auto-assignment failed; the conversation waits unassigned",
			"workspaceId", ws.ID, "conversationId", conv.ID, "error", err)
	}
}

// Open stores a new, empty conversation of ws with agent (a verified
// user's when identity is set), with the events reporting it, and schedules
// them. The API's session creation and the widget's open conversations
// alike here. Returns the store's errors.
func (l *Lifecycle) Open(ctx context.Context, ws *domain.Workspace, agent *domain.Agent, identity *domain.Identity) (domain.Conversation, error) {
	userID := ""
	if identity != nil {
		userID = identity.UserID
	}
	conv := domain.NewConversation(ws.ID, agent, userID, l.d.Clock.Now())
	deliveries := domain.ConversationDeliveries(ws, conv, conv.CreatedAt)
	if err := l.d.Conversations.CreateConversation(ctx, &conv, deliveries...); err != nil {
		return domain.Conversation{}, err
	}
	l.EnqueueDeliveries(ctx, deliveries)
	return conv, nil
}

// AgentLookups are the reads AgentBySlug makes.
type AgentLookups interface {
	// GetAgentBySlug returns domain.ErrNotFound if the workspace has no such agent.
	GetAgentBySlug(ctx context.Context, workspaceID, slug string) (domain.Agent, error)
	// FirstAgent returns the workspace's earliest created agent, or domain.ErrNotFound.
	FirstAgent(ctx context.Context, workspaceID string) (domain.Agent, error)
}

// AgentBySlug returns the agent a new session is opened with: the one
// named by slug, or the workspace's first agent when slug is empty. A slug
// that cannot be one is domain.ErrNotFound ("agent") without a query;
// otherwise the errors are agents'.
func AgentBySlug(ctx context.Context, agents AgentLookups, workspaceID, slug string) (domain.Agent, error) {
	switch {
	case slug == "":
		return agents.FirstAgent(ctx, workspaceID)
	case domain.ValidateSlug(slug) != nil:
		return domain.Agent{}, domain.NotFound("agent")
	default:
		return agents.GetAgentBySlug(ctx, workspaceID, slug)
	}
}
