package v2

import (
	"context"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/feedback"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/report"
	"github.com/conciergehq/concierge/core/savedreply"
)

// The use cases the v2 handlers call, each exactly as much of its service
// as the handlers need, so that every handler can be tested with a scripted
// fake. Errors are the domain's kinds; the one ErrorHandler maps them.

// Agents manages a workspace's agents (agent.Service).
type Agents interface {
	// List returns a page of the workspace's agents in creation order.
	List(ctx context.Context, workspaceID string, page domain.PageRequest) (domain.Page[domain.Agent], error)
	// Create stores a new agent. Returns domain.ErrInvalidInput for bad
	// fields and domain.ErrConflict when the slug is taken.
	Create(ctx context.Context, workspaceID string, a domain.Agent) (domain.Agent, error)
	// Get returns the agent with the slug, or domain.ErrNotFound.
	Get(ctx context.Context, workspaceID, slug string) (domain.Agent, error)
	// Update applies a patch. Returns domain.ErrNotFound or
	// domain.ErrInvalidInput.
	Update(ctx context.Context, workspaceID, slug string, p agent.Patch) (domain.Agent, error)
	// Delete removes the agent. Returns domain.ErrNotFound.
	Delete(ctx context.Context, workspaceID, slug string) error
}

// Sources manages an agent's knowledge sources (agent.Service). Each
// returns domain.ErrNotFound for an unknown agent or source.
type Sources interface {
	// AddSource stores a source and schedules its indexing. Returns
	// domain.ErrInvalidInput for bad fields and a domain.PlanError for a
	// source type or count the plan lacks.
	AddSource(ctx context.Context, workspaceID, slug string, src domain.Source) (domain.Source, error)
	// ListSources returns a page of the agent's sources, newest first.
	ListSources(ctx context.Context, workspaceID, slug string, page domain.PageRequest) (domain.Page[domain.Source], error)
	// GetSource returns one of the agent's sources.
	GetSource(ctx context.Context, workspaceID, slug, sourceID string) (domain.Source, error)
	// Reindex schedules the source's indexing again.
	Reindex(ctx context.Context, workspaceID, slug, sourceID string) (domain.Source, error)
	// DeleteSource removes one of the agent's sources.
	DeleteSource(ctx context.Context, workspaceID, slug, sourceID string) error
}

// Conversations reads a workspace's conversations (conversation.Service).
type Conversations interface {
	// List returns a page of the workspace's conversations, newest
	// activity first. An unknown agent slug is domain.ErrNotFound, an
	// unknown status domain.ErrInvalidInput.
	List(ctx context.Context, workspaceID string, f conversation.ListFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error)
	// Get returns a conversation with a page of its messages, oldest
	// first. Returns domain.ErrNotFound for unknown or foreign ids.
	Get(ctx context.Context, workspaceID, id string, page domain.PageRequest) (domain.Conversation, domain.Page[domain.Message], error)
	// MessageTrace returns how an answer's knowledge was retrieved.
	// Returns domain.ErrNotFound for unknown or foreign ids and for
	// messages without a trace.
	MessageTrace(ctx context.Context, workspaceID, conversationID, messageID string) (domain.RetrievalTrace, error)
}

// Chat starts chat turns (chat.Service, whose Start returns *chat.Pending).
type Chat interface {
	// Start checks a request and resolves (or creates) its session. Its
	// errors come before anything is answered: domain.ErrInvalidInput,
	// domain.ErrNotFound, a domain.PlanError, domain.ErrUnauthorized for
	// bad identity headers, and a domain.ConflictError for an
	// Idempotency-Key reused with another request or still being answered.
	Start(ctx context.Context, req chat.Request) (sse.Turn, error)
}

// Retrieval runs an agent's retrieval for an admin (chat.Service).
type Retrieval interface {
	// Retrieve returns the chunks an answer would use, best first, with
	// the trace. Returns domain.ErrNotFound for an unknown agent and
	// domain.ErrInvalidInput for a bad query or settings out of range.
	Retrieve(ctx context.Context, req chat.RetrieveRequest) ([]domain.Chunk, domain.RetrievalTrace, error)
}

// Suggestions drafts replies for a person to edit and send (chat.Service).
type Suggestions interface {
	// Suggest drafts a reply to the conversation's latest visitor message
	// from its agent's knowledge, storing and sending nothing. Returns
	// domain.ErrNotFound unless the conversation belongs to the workspace,
	// a domain.PlanError without the handoff feature and a
	// domain.ConflictError when the visitor has said nothing yet.
	Suggest(ctx context.Context, ws *domain.Workspace, conversationID string) (chat.Suggestion, error)
}

// HumanReplies lets a helpdesk or an inbox take part in conversations
// (handoff.Service). Both return domain.ErrNotFound unless the
// conversation belongs to the workspace.
type HumanReplies interface {
	// PostHumanMessage stores a person's reply (HUMAN) or internal note
	// (NOTE). Returns domain.ErrInvalidInput for a bad message and a
	// domain.ConflictError when the conversation changed under it.
	PostHumanMessage(ctx context.Context, ws *domain.Workspace, conversationID string, m handoff.HumanMessage) (domain.Message, error)
	// SetStatus moves the conversation. Returns domain.ErrInvalidInput
	// for an unknown state and a domain.ConflictError for a move the
	// state machine forbids.
	SetStatus(ctx context.Context, ws *domain.Workspace, conversationID string, to domain.ConversationStatus) (domain.Conversation, error)
}

// Assignments changes who owns a conversation (assignment.Service).
type Assignments interface {
	// Assign gives the conversation to a member; actor is nil for an API
	// key. Returns domain.ErrNotFound for an unknown or foreign
	// conversation and domain.ErrInvalidInput naming assigneeId when the
	// assignee is not a member of the workspace.
	Assign(ctx context.Context, ws *domain.Workspace, conversationID, assigneeUserID string, actor *domain.Member) (domain.Conversation, error)
	// Unassign leaves the conversation to nobody. Returns
	// domain.ErrNotFound for an unknown or foreign conversation.
	Unassign(ctx context.Context, ws *domain.Workspace, conversationID string, actor *domain.Member) (domain.Conversation, error)
}

// Integrations reads and changes where a workspace's deliveries go
// (delivery.Service).
type Integrations interface {
	// Integrations returns the workspace with its settings. Returns
	// domain.ErrNotFound for an unknown workspace.
	Integrations(ctx context.Context, workspaceID string) (domain.Workspace, error)
	// SetIntegrations saves the settings; newSecret is set when the
	// workspace got its signing secret now. Returns
	// domain.ErrInvalidInput naming the field of a URL no delivery would
	// be sent to, and a domain.PlanError for a helpdesk URL without the
	// handoff feature.
	SetIntegrations(ctx context.Context, ws *domain.Workspace, change delivery.IntegrationsChange) (updated domain.Workspace, newSecret string, err error)
	// RotateSigningSecret replaces the signing secret. Returns
	// domain.ErrNotFound for an unknown workspace.
	RotateSigningSecret(ctx context.Context, workspaceID string) (domain.Workspace, error)
}

// DeliveryLog reads and re-drives a workspace's deliveries
// (delivery.Service).
type DeliveryLog interface {
	// List returns a page of deliveries, newest first. Returns
	// domain.ErrInvalidInput for an unknown filter value.
	List(ctx context.Context, workspaceID string, filter domain.DeliveryFilter, page domain.PageRequest) (domain.Page[domain.Delivery], error)
	// Get returns a delivery and its attempts. Returns
	// domain.ErrNotFound unless it belongs to the workspace.
	Get(ctx context.Context, workspaceID, id string) (domain.Delivery, []domain.DeliveryAttempt, error)
	// Retry re-drives a FAILED delivery. Returns domain.ErrNotFound unless
	// it belongs to the workspace and domain.ErrConflict unless it is
	// FAILED.
	Retry(ctx context.Context, workspaceID, id string) (domain.Delivery, error)
}

// RatedAnswers lists what visitors said about the answers
// (feedback.Service).
type RatedAnswers interface {
	// List returns a page of rated answers, most recently rated first. An
	// unknown agent slug is domain.ErrNotFound; a rating other than up or
	// down is domain.ErrInvalidInput.
	List(ctx context.Context, workspaceID string, f feedback.ListFilter, page domain.PageRequest) (domain.Page[domain.RatedAnswer], error)
}

// SavedReplies manages the workspace's saved replies (savedreply.Service).
// An API key acts with the whole workspace's access.
type SavedReplies interface {
	// List returns a page in shortcut order. Returns domain.ErrInvalidInput
	// for a bad prefix, cursor or limit.
	List(ctx context.Context, actor savedreply.Actor, req savedreply.ListRequest) (domain.Page[domain.SavedReply], error)
	// Get returns domain.ErrNotFound for unknown or foreign ids.
	Get(ctx context.Context, actor savedreply.Actor, id string) (domain.SavedReply, error)
	// Create returns domain.ErrInvalidInput for bad fields and
	// domain.ErrConflict for a taken shortcut or a full workspace.
	Create(ctx context.Context, actor savedreply.Actor, d savedreply.Draft) (domain.SavedReply, error)
	// Update returns domain.ErrNotFound, domain.ErrInvalidInput or
	// domain.ErrConflict (taken shortcut).
	Update(ctx context.Context, actor savedreply.Actor, id string, p savedreply.Patch) (domain.SavedReply, error)
	// Delete returns domain.ErrNotFound.
	Delete(ctx context.Context, actor savedreply.Actor, id string) error
}

// Reports answers report requests (report.Service, issue 18).
type Reports interface {
	// Report returns the workspace's report for r: a ValidationError naming
	// preset, from or to for a bad range, domain.ErrNotFound for an agent
	// the workspace does not have.
	Report(ctx context.Context, workspaceID string, r report.Request) (domain.Report, error)
}
