package console

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/delivery"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/inbox"
	"github.com/conciergehq/concierge/core/report"
	"github.com/conciergehq/concierge/core/savedreply"
)

// Reports answers the Reports page (report.Service).
type Reports interface {
	// Report returns the workspace's report: a ValidationError naming
	// preset, from or to for a bad range, domain.ErrNotFound for an agent
	// the workspace does not have.
	Report(ctx context.Context, workspaceID string, r report.Request) (domain.Report, error)
}

// The use cases the console calls, each exactly as much of its service as
// the pages need, so every handler can be tested with a scripted fake.
// Errors are the domain's kinds; the one ErrorHandler maps them to a status
// and the console renders that as a page.

// Sessions signs people in and out (account.Service).
type Sessions interface {
	// SignIn checks an email and password and starts a new session with a
	// new token. Returns domain.ErrUnauthorized, the same for an unknown
	// email and a wrong password, and a domain.RateLimitError when the
	// account or the IP tried too often.
	SignIn(ctx context.Context, req account.SignInRequest) (account.SignedIn, error)
	// Authenticate returns who holds the session token. Returns
	// domain.ErrUnauthorized for an unknown, ended or expired token.
	Authenticate(ctx context.Context, token string) (account.Principal, error)
	// SignOut ends the session of the token. Ending an unknown one is not
	// an error.
	SignOut(ctx context.Context, token string) error
	// SignOutOthers ends every other session of the token's user and says
	// how many it ended. Returns domain.ErrUnauthorized for a bad token.
	SignOutOthers(ctx context.Context, token string) (int, error)
	// Sessions lists the user's live sessions.
	Sessions(ctx context.Context, userID string) ([]account.Session, error)
	// ChangePassword sets a new password after checking the current one.
	// Returns domain.ErrUnauthorized for a wrong current password and a
	// domain.ValidationError for a weak new one.
	ChangePassword(ctx context.Context, p account.Principal, current, next string) error
}

// Members reads and manages workspace memberships (account.Service). The
// actor is the member acting; the service checks what the actor's role
// allows and returns a domain.ForbiddenError otherwise.
type Members interface {
	// Memberships lists the workspaces the user belongs to.
	Memberships(ctx context.Context, userID string) ([]domain.Member, error)
	// Member returns the user's membership of the workspace, or
	// domain.ErrNotFound when the user is not a member.
	Member(ctx context.Context, userID, workspaceID string) (domain.Member, error)
	// Members lists the actor's workspace's members.
	Members(ctx context.Context, actor domain.Member) ([]domain.Member, error)
	// Invitations lists the open invitations of the actor's workspace.
	Invitations(ctx context.Context, actor domain.Member) ([]account.Invitation, error)
	// Invite makes an invitation; its Link is returned by this call only.
	// Returns a domain.ValidationError for a bad email or role and a
	// domain.ConflictError for a member already in the workspace.
	Invite(ctx context.Context, actor domain.Member, req account.InviteRequest) (account.Invitation, error)
	// RevokeInvitation cancels an open invitation, or domain.ErrNotFound.
	RevokeInvitation(ctx context.Context, actor domain.Member, invitationID string) error
	// ChangeRole gives a member another role. Returns domain.ErrNotFound
	// and a domain.ConflictError when it would leave no owner.
	ChangeRole(ctx context.Context, actor domain.Member, userID string, role domain.MemberRole) (domain.Member, error)
	// RemoveMember removes a member. Returns domain.ErrNotFound and a
	// domain.ConflictError when it would leave no owner.
	RemoveMember(ctx context.Context, actor domain.Member, userID string) error
}

// Links serves the single-use links sent to people: invitations and
// password resets (account.Service).
type Links interface {
	// InvitationByToken returns the open invitation of a link token, or
	// domain.ErrNotFound for an unknown, used or expired one.
	InvitationByToken(ctx context.Context, token string) (account.Invitation, error)
	// AcceptInvitation accepts it: a new user with a name and password, an
	// existing user by confirming their password; either way a new session.
	// Returns domain.ErrNotFound for a bad link, domain.ErrUnauthorized for
	// a wrong password and a domain.ValidationError for bad fields.
	AcceptInvitation(ctx context.Context, req account.AcceptRequest) (account.SignedIn, error)
	// RequestReset sends a reset link when the email has an account, and
	// says nothing either way. Returns a domain.RateLimitError when asked
	// too often.
	RequestReset(ctx context.Context, email, ip string) error
	// ResetPassword sets a new password through a reset link. Returns
	// domain.ErrNotFound for an unknown, used or expired link and a
	// domain.ValidationError for a weak password.
	ResetPassword(ctx context.Context, req account.ResetRequest) error
}

// Accounts is everything the console asks of the account service.
type Accounts interface {
	Sessions
	Members
	Links
	PasswordConfirmer
}

// Workspaces names the workspaces the console shows (workspace.Service).
type Workspaces interface {
	// GetWorkspace returns the workspace, or domain.ErrNotFound.
	GetWorkspace(ctx context.Context, id string) (domain.Workspace, error)
	APIKeys
	WebhookSecrets
}

// Agents manages a workspace's agents (agent.Service).
type Agents interface {
	// List returns a page of the workspace's agents in creation order.
	List(ctx context.Context, workspaceID string, page domain.PageRequest) (domain.Page[domain.Agent], error)
	// Create stores a new agent. Returns a domain.ValidationError for bad
	// fields and domain.ErrConflict when the slug is taken.
	Create(ctx context.Context, workspaceID string, a domain.Agent) (domain.Agent, error)
	// Get returns the agent with the slug, or domain.ErrNotFound.
	Get(ctx context.Context, workspaceID, slug string) (domain.Agent, error)
	// Update applies a patch. Returns domain.ErrNotFound or a
	// domain.ValidationError.
	Update(ctx context.Context, workspaceID, slug string, p agent.Patch) (domain.Agent, error)
	// Delete removes the agent and its knowledge. Returns domain.ErrNotFound.
	Delete(ctx context.Context, workspaceID, slug string) error
	// Knowledge: the agent's sources.
	Sources
}

// Knowledge

// Sources manages an agent's knowledge sources (agent.Service), the same
// calls the v2 API makes, so the limits and validation are the same.
type Sources interface {
	// AddSource validates and stores a source, PENDING, and schedules its
	// indexing. Returns domain.ErrNotFound for an unknown agent and a
	// domain.ValidationError for bad fields.
	AddSource(ctx context.Context, workspaceID, slug string, src domain.Source) (domain.Source, error)
	// ListSources returns a page of the agent's sources, newest first, or
	// domain.ErrNotFound for an unknown agent.
	ListSources(ctx context.Context, workspaceID, slug string, page domain.PageRequest) (domain.Page[domain.Source], error)
	// GetSource returns one of the agent's sources, or domain.ErrNotFound.
	GetSource(ctx context.Context, workspaceID, slug, sourceID string) (domain.Source, error)
	// Reindex schedules the source's indexing again. Returns
	// domain.ErrNotFound.
	Reindex(ctx context.Context, workspaceID, slug, sourceID string) (domain.Source, error)
	// DeleteSource removes the source and its chunks. Returns
	// domain.ErrNotFound.
	DeleteSource(ctx context.Context, workspaceID, slug, sourceID string) error
}

// Settings

// PasswordConfirmer checks a signed-in person's password again before a
// secret is shown (account.Service).
type PasswordConfirmer interface {
	// ConfirmPassword returns nil when password is the user's. Returns
	// domain.ErrUnauthorized when it is wrong and a domain.RateLimitError
	// (domain.ErrRateLimited) when the user tried too often.
	ConfirmPassword(ctx context.Context, userID, password string) error
}

// APIKeys makes, lists and revokes a workspace's API keys
// (workspace.Service).
type APIKeys interface {
	// CreateAPIKey makes a key and returns its secret, which exists only
	// in this answer. Returns a domain.ValidationError for a name over 100
	// characters and domain.ErrNotFound for an unknown workspace.
	CreateAPIKey(ctx context.Context, workspaceID, name string) (domain.APIKey, string, error)
	// ListAPIKeys lists the workspace's keys, newest first, never their
	// secrets. Returns domain.ErrNotFound for an unknown workspace.
	ListAPIKeys(ctx context.Context, workspaceID string) ([]domain.APIKey, error)
	// RevokeAPIKey revokes a key of the workspace (again is harmless).
	// Returns domain.ErrNotFound for a key of no such workspace.
	RevokeAPIKey(ctx context.Context, workspaceID, keyID string) (domain.APIKey, error)
}

// WebhookSecrets rotates the secret inbound webhooks authenticate with
// (workspace.Service).
type WebhookSecrets interface {
	// RotateWebhookSecret makes a new secret; the previous one stays
	// valid for grace. Returns a domain.ValidationError for a grace
	// outside 0 to 720 hours and domain.ErrNotFound.
	RotateWebhookSecret(ctx context.Context, id string, grace time.Duration) (domain.Workspace, error)
}

// Deliveries is where a workspace's handoffs and events go and the log of
// what was sent there (delivery.Service), as the v2 API uses it.
type Deliveries interface {
	// Integrations returns the workspace with its current settings.
	// Returns domain.ErrNotFound.
	Integrations(ctx context.Context, workspaceID string) (domain.Workspace, error)
	// SetIntegrations saves the URLs; newSecret is set when the workspace
	// got its signing secret now. Returns a domain.ValidationError naming
	// the field (helpdeskUrl, eventsUrl) of a URL no delivery would be
	// sent to, and a domain.PlanError for a helpdesk URL without handoff.
	SetIntegrations(ctx context.Context, ws *domain.Workspace, change delivery.IntegrationsChange) (updated domain.Workspace, newSecret string, err error)
	// RotateSigningSecret replaces the signing secret at once and returns
	// the workspace with it. Returns domain.ErrNotFound.
	RotateSigningSecret(ctx context.Context, workspaceID string) (domain.Workspace, error)
	// List returns a page of deliveries, newest first. Returns a
	// domain.ValidationError for an unknown filter value.
	List(ctx context.Context, workspaceID string, filter domain.DeliveryFilter, page domain.PageRequest) (domain.Page[domain.Delivery], error)
	// Get returns a delivery and its attempts, oldest first. Returns
	// domain.ErrNotFound unless it belongs to the workspace.
	Get(ctx context.Context, workspaceID, id string) (domain.Delivery, []domain.DeliveryAttempt, error)
	// Retry re-drives a FAILED delivery. Returns domain.ErrNotFound and
	// domain.ErrConflict unless it is FAILED.
	Retry(ctx context.Context, workspaceID, id string) (domain.Delivery, error)
}

// Conversations

// Conversations reads a workspace's conversations (conversation.Service),
// the calls GET /api/v2/conversations makes, so filters and cursors are
// checked the same way.
type Conversations interface {
	// List returns a page of the workspace's conversations, newest
	// activity first. An unknown agent slug is domain.ErrNotFound, an
	// unknown status a domain.ValidationError.
	List(ctx context.Context, workspaceID string, f conversation.ListFilter, page domain.PageRequest) (domain.Page[domain.Conversation], error)
	// Get returns a conversation with a page of its messages, oldest
	// first. Returns domain.ErrNotFound for unknown or foreign ids.
	Get(ctx context.Context, workspaceID, id string, page domain.PageRequest) (domain.Conversation, domain.Page[domain.Message], error)
	// MessageTrace returns how an answer's knowledge was retrieved.
	// Returns domain.ErrNotFound for unknown or foreign ids and for
	// messages without a trace.
	MessageTrace(ctx context.Context, workspaceID, conversationID, messageID string) (domain.RetrievalTrace, error)
}

// Chat starts playground turns (chat.Service through ChatEngine, since its
// Start returns the concrete *chat.Pending).
type Chat interface {
	// Start checks a request and resolves (or creates) its session.
	// Returns a domain.ValidationError for an empty or oversize message,
	// domain.ErrNotFound for an unknown agent or a session of another
	// workspace, and a domain.ConflictError while the same question is
	// still being answered.
	Start(ctx context.Context, req chat.Request) (Turn, error)
}

// Turn is a chat turn ready to run (*chat.Pending).
type Turn interface {
	// Run generates and stores the answer; problems during generation
	// become a fallback answer. An error means nothing could be stored.
	Run(ctx context.Context, emit chat.Emit) (domain.Answer, error)
}

// ChatEngine adapts the answer engine to Chat, for the wiring.
func ChatEngine(engine *chat.Service) Chat { return chatEngine{engine} }

type chatEngine struct{ engine *chat.Service }

func (e chatEngine) Start(ctx context.Context, req chat.Request) (Turn, error) {
	p, err := e.engine.Start(ctx, req)
	if err != nil {
		return nil, err // not a nil *chat.Pending in a non-nil interface
	}
	return p, nil
}

// Inbox

// Inbox reads the human inbox (inbox.Service). actor is the member the
// page acts as; every method returns domain.ErrForbidden for a role that
// cannot read conversations.
type Inbox interface {
	// List returns a page of a view. Returns a domain.ValidationError on
	// view or q and domain.ErrNotFound for an unknown agent.
	List(ctx context.Context, actor domain.Member, req inbox.Request, page domain.PageRequest) (domain.Page[domain.Conversation], error)
	// Counts counts each view, capped at domain.InboxCountCap. Errors as
	// List's.
	Counts(ctx context.Context, actor domain.Member, agentSlug string) (domain.InboxCounts, error)
	// Earlier returns the latest other conversations of conv's verified
	// user, newest first; none without one.
	Earlier(ctx context.Context, actor domain.Member, conv domain.Conversation) ([]domain.Conversation, error)
	// Teammates lists the workspace's members, who a conversation may be
	// assigned to.
	Teammates(ctx context.Context, actor domain.Member) ([]domain.Member, error)
}

// Ownership takes conversations over and assigns them (assignment.Service,
// with the signatures of issue 17's contract, item 4).
type Ownership interface {
	// TakeOver assigns the conversation to actor and moves it to HUMAN.
	// Returns domain.ErrNotFound, a domain.ConflictError with Details
	// {"assigneeId": holder} when another member holds it, and a
	// domain.PlanError without handoff.
	TakeOver(ctx context.Context, ws *domain.Workspace, conversationID string, actor domain.Member) (domain.Conversation, error)
	// Assign gives it to a member. Returns domain.ErrNotFound and a
	// domain.ValidationError on assigneeId for a non-member.
	Assign(ctx context.Context, ws *domain.Workspace, conversationID, assigneeUserID string, actor *domain.Member) (domain.Conversation, error)
	// Unassign leaves it to nobody. Returns domain.ErrNotFound.
	Unassign(ctx context.Context, ws *domain.Workspace, conversationID string, actor *domain.Member) (domain.Conversation, error)
}

// Composer writes to a thread (handoff.Service): a reply (role HUMAN,
// published to the visitor, taking the conversation over) or an internal
// note (role NOTE, stored only), written by the member AuthorID, named
// AuthorName; and the thread's status.
type Composer interface {
	// PostHumanMessage stores the reply or note. Returns a
	// domain.ValidationError on content, domain.ErrNotFound and a
	// domain.PlanError without handoff.
	PostHumanMessage(ctx context.Context, ws *domain.Workspace, conversationID string, m handoff.HumanMessage) (domain.Message, error)
	// SetStatus moves the conversation. Returns domain.ErrNotFound, a
	// domain.ConflictError for a move the state machine forbids and a
	// domain.PlanError without handoff.
	SetStatus(ctx context.Context, ws *domain.Workspace, conversationID string, to domain.ConversationStatus) (domain.Conversation, error)
}

// SavedReplies finds the workspace's saved replies for the composer's "/"
// and manages them on their settings page (savedreply.Service). Every
// method returns domain.ErrForbidden for an actor with no role; the ones
// that change a reply also for a role without domain.PermSavedReplies.
type SavedReplies interface {
	// Search returns up to limit replies whose shortcut or title starts
	// with prefix.
	Search(ctx context.Context, actor savedreply.Actor, prefix string, limit int) ([]domain.SavedReply, error)
	// List returns a page of the replies in shortcut order. Returns
	// domain.ErrInvalidInput for a bad position (AfterShortcut).
	List(ctx context.Context, actor savedreply.Actor, req savedreply.ListRequest) (domain.Page[domain.SavedReply], error)
	// Get returns one reply, or domain.ErrNotFound unless the actor's
	// workspace has it.
	Get(ctx context.Context, actor savedreply.Actor, id string) (domain.SavedReply, error)
	// Create stores a new reply. Returns a domain.ValidationError naming
	// the field (shortcut, title, body) and a domain.ConflictError when
	// the shortcut is taken or the workspace is full.
	Create(ctx context.Context, actor savedreply.Actor, d savedreply.Draft) (domain.SavedReply, error)
	// Update applies a patch. Returns domain.ErrNotFound and the errors
	// of Create.
	Update(ctx context.Context, actor savedreply.Actor, id string, p savedreply.Patch) (domain.SavedReply, error)
	// Delete removes a reply. Returns domain.ErrNotFound.
	Delete(ctx context.Context, actor savedreply.Actor, id string) error
}

// Availability sets a member's own availability (availability.Service).
type Availability interface {
	// SetAvailable records whether the actor is available to answer
	// visitors. Returns domain.ErrNotFound when the actor is no longer a
	// member.
	SetAvailable(ctx context.Context, actor domain.Member, available bool) (domain.Member, error)
}

// Suggestions drafts replies for the inbox's "Suggest a reply"
// (chat.Service).
type Suggestions interface {
	// Suggest drafts a reply to the conversation's latest visitor message
	// from its agent's knowledge, storing and sending nothing. Returns
	// domain.ErrNotFound unless the conversation belongs to the workspace,
	// a domain.PlanError without the handoff feature and a
	// domain.ConflictError when the visitor has said nothing yet.
	Suggest(ctx context.Context, ws *domain.Workspace, conversationID string) (chat.Suggestion, error)
}
