// Package ports declares the interfaces the core needs from the outside world,
// in domain types only. Each method documents the domain error kinds it
// returns; any other error is an infrastructure failure the edges report as
// UNAVAILABLE or INTERNAL.
package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Clock tells the time; tests pass a fixed one.
type Clock interface {
	Now() time.Time
}

// WorkspaceStore keeps workspaces and their API keys.
type WorkspaceStore interface {
	// CreateWorkspace stores a new workspace together with its first API key, atomically.
	CreateWorkspace(ctx context.Context, ws domain.Workspace, key domain.APIKey) error
	// GetWorkspace returns domain.ErrNotFound if no workspace has the id.
	GetWorkspace(ctx context.Context, id string) (domain.Workspace, error)
	// UpdateWorkspace saves plan, add-ons, name and webhook secrets.
	// Returns domain.ErrNotFound if the workspace does not exist.
	UpdateWorkspace(ctx context.Context, ws domain.Workspace) error
	// FindWorkspaceByWebhookSecretHash looks a workspace up by the hash of its current
	// or previous webhook secret. Returns domain.ErrNotFound when none matches.
	FindWorkspaceByWebhookSecretHash(ctx context.Context, hash string) (domain.Workspace, error)
}

// WorkspaceNotifier tells every pod that a workspace's settings changed
// (plan, add-ons, secrets, API keys, integrations), so each drops what it
// cached of the workspace: the pod that made the change before the call
// returns, the others as soon as the announcement reaches them. Delivery is
// best effort: a pod that misses it still sees the change within its cache's
// lifetime (CONCIERGE_AUTH_CACHE_TTL).
type WorkspaceNotifier interface {
	// WorkspaceChanged announces the change. Returns an error wrapping
	// domain.ErrUnavailable when the other pods cannot be told; this pod's
	// copies are dropped all the same.
	WorkspaceChanged(ctx context.Context, workspaceID string) error
}

// APIKeyStore keeps API keys (hashes only).
type APIKeyStore interface {
	// CreateAPIKey stores a key. Returns domain.ErrNotFound if its workspace does not exist.
	CreateAPIKey(ctx context.Context, key domain.APIKey) error
	// FindAPIKeyByHash returns the key (revoked or not) whose hash matches.
	// Returns domain.ErrNotFound when none does.
	FindAPIKeyByHash(ctx context.Context, hash string) (domain.APIKey, error)
	// ListAPIKeys returns a workspace's keys, newest first.
	ListAPIKeys(ctx context.Context, workspaceID string) ([]domain.APIKey, error)
	// RevokeAPIKey marks a key revoked at the given time. Revoking twice keeps the
	// first time. Returns domain.ErrNotFound if the workspace has no such key.
	RevokeAPIKey(ctx context.Context, workspaceID, keyID string, at time.Time) (domain.APIKey, error)
	// TouchAPIKey records a use of the key; it may skip the write if the stored
	// value is recent, so hot paths do not write on every request.
	TouchAPIKey(ctx context.Context, keyID string, at time.Time) error
}

// AgentLookups reads agents, always scoped by workspace. The answer engine
// needs only these, so a cache can stand in for the store.
type AgentLookups interface {
	// GetAgentBySlug returns domain.ErrNotFound if the workspace has no such agent.
	GetAgentBySlug(ctx context.Context, workspaceID, slug string) (domain.Agent, error)
	// GetAgentByID returns domain.ErrNotFound if the workspace has no such agent.
	GetAgentByID(ctx context.Context, workspaceID, id string) (domain.Agent, error)
	// FirstAgent returns the workspace's earliest created agent, or domain.ErrNotFound.
	FirstAgent(ctx context.Context, workspaceID string) (domain.Agent, error)
}

// AgentStore keeps agents, always scoped by workspace.
type AgentStore interface {
	// CreateAgent stores a new agent and sets its Seq and WidgetSlug: the agent
	// claims the service-wide widget address of its slug when no agent of any
	// workspace holds it (first come; a lost race leaves WidgetSlug ""). Returns
	// domain.ErrConflict if the slug is taken in the workspace.
	CreateAgent(ctx context.Context, agent *domain.Agent) error
	AgentLookups
	// ListAgents returns a page of agents in creation order (oldest first).
	ListAgents(ctx context.Context, workspaceID string, page domain.PageRequest) (domain.Page[domain.Agent], error)
	// UpdateAgent saves name and configuration (the slug is immutable). Returns
	// domain.ErrNotFound if the agent does not exist in the workspace.
	UpdateAgent(ctx context.Context, agent *domain.Agent) error
	// DeleteAgent removes the agent with its sources, conversations and messages.
	// Returns domain.ErrNotFound if the workspace has no such agent.
	DeleteAgent(ctx context.Context, workspaceID, id string) error
}

// SourceStore keeps knowledge sources.
type SourceStore interface {
	// CreateSource stores a source.
	CreateSource(ctx context.Context, src *domain.Source) error
	// ListSources returns a page of an agent's sources, newest first.
	ListSources(ctx context.Context, workspaceID, agentID string, page domain.PageRequest) (domain.Page[domain.Source], error)
	// GetSource returns domain.ErrNotFound unless the source belongs to the agent and workspace.
	GetSource(ctx context.Context, workspaceID, agentID, id string) (domain.Source, error)
	// DeleteSource removes the source and its chunks and bumps the agent's
	// knowledge version, which it returns. Returns domain.ErrNotFound unless
	// the source belongs to the agent and workspace.
	DeleteSource(ctx context.Context, workspaceID, agentID, id string) (KnowledgeChange, error)
	// RequestReindex moves the source to PENDING with a new generation and
	// returns it. Returns domain.ErrNotFound unless the source belongs to the
	// agent and workspace.
	RequestReindex(ctx context.Context, workspaceID, agentID, id string, at time.Time) (domain.Source, error)
}

// ConversationReader reads conversations and their messages, always scoped
// by workspace except for the widget's session lookup. The use cases that
// only show or check conversations (listing, reading, the inbound webhook,
// the live relay) need only these.
type ConversationReader interface {
	// GetConversation returns domain.ErrNotFound unless the conversation belongs to the workspace.
	GetConversation(ctx context.Context, workspaceID, id string) (domain.Conversation, error)
	// GetConversationBySession looks a conversation up by its session id alone, for
	// callers whose capability is the session id (the widget). Returns domain.ErrNotFound.
	GetConversationBySession(ctx context.Context, sessionID string) (domain.Conversation, error)
	// ListConversations returns a page ordered by (last activity, id), newest first,
	// of the conversations matching every filter set (domain.ConversationFilter;
	// the caller has validated it). It returns no domain errors of its own.
	ListConversations(ctx context.Context, workspaceID string, filter domain.ConversationFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error)
	// ListMessages returns a page of a conversation's messages, oldest first.
	// Returns domain.ErrNotFound unless the conversation belongs to the workspace.
	ListMessages(ctx context.Context, workspaceID, conversationID string, page domain.PageRequest) (domain.Page[domain.Message], error)
	// RecentMessages returns up to limit of the conversation's latest messages,
	// oldest first, for the model's context; internal notes
	// (domain.Role.Internal) are not among them.
	RecentMessages(ctx context.Context, workspaceID, conversationID string, limit int) ([]domain.Message, error)
	// HandoffTranscript returns up to limit of the conversation's latest
	// messages but internal notes (domain.Role.Internal), oldest first, and how many messages the conversation had
	// when they were read (one snapshot), for a domain.StatusChange's MessageCount.
	// Returns domain.ErrNotFound unless the conversation belongs to the
	// workspace.
	HandoffTranscript(ctx context.Context, workspaceID, conversationID string, limit int) (domain.HandoffTranscript, error)
	// MessageTrace returns the retrieval trace stored with a message. Returns
	// domain.ErrNotFound unless the message belongs to the conversation and
	// workspace and has a trace.
	MessageTrace(ctx context.Context, workspaceID, conversationID, messageID string) (domain.RetrievalTrace, error)
}

// ConversationWriter stores conversations, their messages and their state
// changes, each with the deliveries reporting it in the same transaction.
type ConversationWriter interface {
	// CreateConversation stores a new conversation, with the deliveries
	// reporting it in the same transaction; AgentID and AgentSlug must name
	// the same agent of the workspace, else domain.ErrNotFound.
	CreateConversation(ctx context.Context, conv *domain.Conversation, deliveries ...domain.Delivery) error
	// StartConversation stores a new conversation together with its first
	// messages (a question, or a question and its reply), in order, and the
	// deliveries reporting them, atomically (in one round trip when there
	// are no deliveries: the first turn of every conversation). The
	// conversation counts them, and its last message and activity are the
	// last one's. Returns the messages as stored, and domain.ErrNotFound
	// when AgentID and AgentSlug do not name an agent of the workspace;
	// nothing is stored then. Messages with an InboundEventID go through
	// AppendMessage.
	StartConversation(ctx context.Context, conv *domain.Conversation, first []domain.Message, deliveries ...domain.Delivery) ([]domain.Message, error)
	// AppendMessage stores a message and updates the conversation's last message,
	// message count and last activity in one transaction, with the deliveries
	// reporting the message (written only if the message was). A message whose
	// InboundEventID was already appended is not stored again: the stored one is
	// returned with created false. Returns domain.ErrNotFound if the conversation
	// does not belong to the message's workspace.
	//
	// while, when not empty, is the state the caller read and decided the
	// deliveries (and whether the agent answers) under: if the conversation
	// is in another state when the message is written, nothing is written and
	// domain.ErrStatusChanged is returned. Appends and state changes
	// serialize on the conversation, so a message racing a handoff is either
	// written before it (and in its transcript, see ChangeStatus) or decided
	// again under the new state (and delivered to the helpdesk).
	AppendMessage(ctx context.Context, msg domain.Message, while domain.ConversationStatus, deliveries ...domain.Delivery) (stored domain.Message, created bool, err error)
	// AppendMessages stores several messages of one conversation (a
	// question and its reply), in order, as AppendMessage stores one: all
	// of them with their deliveries or nothing, and nothing when the
	// conversation is no longer in state while (domain.ErrStatusChanged).
	// Returns the messages as stored, and domain.ErrNotFound if the
	// conversation does not belong to their workspace. Messages with an
	// InboundEventID go through AppendMessage.
	AppendMessages(ctx context.Context, msgs []domain.Message, while domain.ConversationStatus, deliveries ...domain.Delivery) ([]domain.Message, error)
	// ChangeStatus applies a domain.StatusChange atomically: the conversation moves
	// to change.To if its status is one of the allowed ones, the contact (if
	// any) is stored, the notice appended (counted and dated like any message,
	// without replacing the last message's preview) and the deliveries
	// written. A move to HANDOFF_REQUESTED also sets HandoffRequestedAt to
	// the notice's time, on every request; other moves keep it. When the
	// status is not one of them nothing is written and the
	// conversation is returned as it is, with changed false; so too for a
	// take-over (change.AssigneeID) of a conversation another member holds.
	// Returns domain.ErrNotFound unless the conversation belongs to the
	// workspace, and domain.ErrForbidden for a take-over by a user who is
	// no member of it.
	ChangeStatus(ctx context.Context, change domain.StatusChange) (conv domain.Conversation, changed bool, err error)
}

// ConversationStore keeps conversations and their messages. The lifecycle,
// the answer engine and handoff read a conversation and then write to it,
// so they take both halves.
type ConversationStore interface {
	ConversationReader
	ConversationWriter
}

// AssignmentStore keeps who owns a conversation.
type AssignmentStore interface {
	// ChangeAssignee applies change in one conditional statement, with the
	// deliveries change.Report builds (only when the assignee changed), in
	// one transaction, and returns the conversation as it is afterwards and
	// the deliveries written (to be scheduled). Assigning a conversation to
	// its assignee changes and writes nothing. It returns
	// domain.ErrNotFound unless the conversation belongs to the workspace;
	// a domain.ValidationError on field assigneeId when the assignee is not
	// a member of the workspace (checked in the same statement, so a member
	// removed meanwhile is never assigned); for a take-over, the
	// domain.ConflictError of domain.HeldByOther when another member holds
	// it, or domain.ErrStatusChanged when it is not HUMAN. An
	// auto-assignment (change.Choose) holds a lock of the workspace's
	// auto-assignments while it reads the candidates and writes, so two
	// at once never both choose by the same counts; when the conversation
	// is assigned or no longer HANDOFF_REQUESTED, or Choose names nobody,
	// it changes nothing and returns no error.
	ChangeAssignee(ctx context.Context, change domain.AssigneeChange) (domain.Conversation, []domain.Delivery, error)
}

// AutoAssignQueue schedules the auto-assignment of a conversation just
// handed off (core/assignment.AutoAssign), run by the workers.
type AutoAssignQueue interface {
	// EnqueueAutoAssign returns an error wrapping domain.ErrUnavailable if
	// the queue cannot be reached; the conversation then waits unassigned
	// in "Needs a person", as without auto-assignment.
	EnqueueAutoAssign(ctx context.Context, workspaceID, conversationID string) error
}

// InboundEventStore keeps inbound webhook events durably.
type InboundEventStore interface {
	// SaveInboundEvent stores the event. If the workspace already has an event with
	// the same non-empty IdempotencyKey, nothing is written and the existing event is
	// returned with created false (the caller compares BodyHash).
	SaveInboundEvent(ctx context.Context, ev domain.InboundEvent) (stored domain.InboundEvent, created bool, err error)
	// GetInboundEvent returns domain.ErrNotFound if no event has the id.
	GetInboundEvent(ctx context.Context, id string) (domain.InboundEvent, error)
	// MarkInboundEvent records the outcome of processing.
	MarkInboundEvent(ctx context.Context, id string, status domain.InboundStatus, messageID, errText string, at time.Time) error
	// ListStaleInboundEvents returns ids of PENDING events received before the
	// given time, oldest first, so a sweeper can re-enqueue what a crash lost.
	ListStaleInboundEvents(ctx context.Context, before time.Time, limit int) ([]string, error)
}

// JobQueue enqueues background work.
type JobQueue interface {
	// EnqueueInboundEvent schedules processing of a stored inbound event. Enqueueing
	// the same event twice is allowed: processing is idempotent.
	EnqueueInboundEvent(ctx context.Context, eventID string) error
}

// EventBus publishes session events to every pod.
type EventBus interface {
	// Publish sends events, in order, to subscribers of their sessions'
	// channels; several events go in one round trip. Returns an error wrapping
	// domain.ErrUnavailable if the bus cannot be reached (some of the events
	// may have been published).
	Publish(ctx context.Context, events ...domain.SessionEvent) error
}

// RateLimit is the outcome of one rate-limit check.
type RateLimit struct {
	Allowed   bool
	Limit     int
	Remaining int
	// ResetAfter is how long until the full quota is available again.
	ResetAfter time.Duration
	// RetryAfter is how long to wait before the next call can pass; 0 when Allowed.
	RetryAfter time.Duration
}

// RateLimiter counts calls per key across every pod.
type RateLimiter interface {
	// Allow counts one call against key, allowing perMinute calls a minute.
	// Returns domain.ErrUnavailable if the limiter's store cannot be reached.
	Allow(ctx context.Context, key string, perMinute int) (RateLimit, error)
}

// HealthChecker reports whether a dependency is reachable.
type HealthChecker interface {
	// Ping returns an error when the dependency cannot be reached.
	Ping(ctx context.Context) error
}

// InboxStore reads the human inbox's views of a workspace's conversations.
type InboxStore interface {
	// ListInbox returns a page of the view, in its order (domain.InboxView):
	// oldest handoff request first for domain.InboxNeeds, paged by
	// (handoff_requested_at, id), newest activity first for the others,
	// paged by (last_activity_at, id). It returns no domain error
	// kinds; the caller validates the query.
	ListInbox(ctx context.Context, workspaceID string, q domain.InboxQuery, page domain.PageRequest) (domain.Page[domain.Conversation], error)
	// CountInbox counts every view for the member userID, of one agent when
	// agentID is set, each count capped at domain.InboxCountCap.
	CountInbox(ctx context.Context, workspaceID, userID, agentID string) (domain.InboxCounts, error)
	// VerifiedUserConversations returns up to limit of the workspace's
	// conversations with the verified user id, but exceptID, newest
	// activity first.
	VerifiedUserConversations(ctx context.Context, workspaceID, verifiedUserID, exceptID string, limit int) ([]domain.Conversation, error)
}
