package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// UserStore keeps console users. Emails are stored normalised
// (domain.NormalizeEmail) and are unique.
type UserStore interface {
	// CreateUser stores a new user. Returns domain.ErrConflict if a user
	// with the email exists.
	CreateUser(ctx context.Context, u domain.User) error
	// GetUser returns domain.ErrNotFound if no user has the id.
	GetUser(ctx context.Context, id string) (domain.User, error)
	// FindUserByEmail returns domain.ErrNotFound if no user has the
	// (normalised) email.
	FindUserByEmail(ctx context.Context, email string) (domain.User, error)
	// SetPassword stores a new password hash and deletes every console
	// session of the user except keepSessionID ("" deletes them all), in one
	// transaction, so a changed password never leaves an old session alive.
	// Returns domain.ErrNotFound if no user has the id.
	SetPassword(ctx context.Context, userID, hash, keepSessionID string, at time.Time) error
}

// MemberStore keeps workspace memberships. The last-owner rule is the
// store's to enforce: ChangeMemberRole and RemoveMember lock the workspace's
// owner rows (SELECT ... FOR UPDATE) before counting them, so two concurrent
// demotions of the last two owners cannot both pass.
type MemberStore interface {
	// Memberships returns the user's memberships, oldest first (empty when none).
	Memberships(ctx context.Context, userID string) ([]domain.Member, error)
	// GetMember returns domain.ErrNotFound if the user is not a member of
	// the workspace (or either does not exist).
	GetMember(ctx context.Context, workspaceID, userID string) (domain.Member, error)
	// ListMembers returns the workspace's members, oldest first.
	ListMembers(ctx context.Context, workspaceID string) ([]domain.Member, error)
	// ChangeMemberRole sets a member's role. Inside the transaction, with the
	// member's row locked, it calls allow with the member as stored and
	// returns allow's error unchanged if it refuses. Returns
	// domain.ErrNotFound if the user is not a member, and domain.ErrLastOwner
	// (an ErrConflict) if the change would leave the workspace without an owner.
	ChangeMemberRole(ctx context.Context, workspaceID, userID string, role domain.MemberRole, allow func(domain.Member) error) (domain.Member, error)
	// RemoveMember deletes a membership, with the same allow callback and
	// errors as ChangeMemberRole. In the same transaction it unassigns the
	// member's conversations of the workspace (their status stays), writing
	// the deliveries report returns for each as it was left (none when
	// report is nil), and deletes every console session of the user when no
	// membership is left, so someone who belongs nowhere any more is signed
	// out everywhere. Returns the conversations it unassigned and the
	// deliveries it wrote, for the caller to schedule and announce.
	RemoveMember(ctx context.Context, workspaceID, userID string, allow func(domain.Member) error,
		report func(unassigned domain.Conversation) []domain.Delivery) ([]domain.Conversation, []domain.Delivery, error)
}

// ConsoleSessionStore keeps console sessions, found by the hash of their token.
type ConsoleSessionStore interface {
	// CreateConsoleSession stores a new session. Returns domain.ErrNotFound if
	// the user does not exist.
	CreateConsoleSession(ctx context.Context, s domain.ConsoleSession) error
	// FindConsoleSession returns domain.ErrNotFound if no session has the
	// token hash.
	FindConsoleSession(ctx context.Context, tokenHash string) (domain.ConsoleSession, error)
	// TouchConsoleSession moves the session's last use to at, skipping the
	// write when the stored time is less than a minute older. An unknown
	// session is not an error.
	TouchConsoleSession(ctx context.Context, id string, at time.Time) error
	// ListConsoleSessions returns the user's sessions, most recently used first.
	ListConsoleSessions(ctx context.Context, userID string) ([]domain.ConsoleSession, error)
	// DeleteConsoleSessions deletes the given sessions of the user, or, with
	// no ids, every session of the user except keepID; it returns how many
	// it deleted. Unknown ids are not an error.
	DeleteConsoleSessions(ctx context.Context, userID, keepID string, ids ...string) (int, error)
}

// InvitationStore keeps invitations. Acceptance is single use by a
// conditional UPDATE (accepted_at IS NULL AND expires_at > now) in the same
// transaction that creates the user and the membership.
type InvitationStore interface {
	// CreateInvitation stores an invitation, replacing (deleting) any pending
	// invitation of the same email to the same workspace in the same
	// transaction, so only the newest link works. Returns domain.ErrNotFound
	// if the workspace does not exist.
	CreateInvitation(ctx context.Context, inv domain.Invitation) error
	// PendingInvitations returns the workspace's invitations not yet
	// accepted (expired ones included), newest first.
	PendingInvitations(ctx context.Context, workspaceID string) ([]domain.Invitation, error)
	// DeleteInvitation revokes a pending invitation. Returns
	// domain.ErrNotFound unless the workspace has such a pending invitation.
	DeleteInvitation(ctx context.Context, workspaceID, id string) error
	// FindInvitation returns the invitation whose token hash matches,
	// accepted or not. Returns domain.ErrNotFound when none does.
	FindInvitation(ctx context.Context, tokenHash string) (domain.Invitation, error)
	// AcceptInvitation marks the invitation accepted at the given time and,
	// in the same transaction, creates user when newUser is true and makes
	// user a member with the invitation's role (a user who already is a
	// member keeps their role). Returns the membership, domain.ErrNotFound
	// if the invitation is unknown, accepted or expired at that time (so a
	// second use fails even when both race), and domain.ErrConflict if
	// newUser is true and the email is taken; on any error nothing is
	// written and the invitation stays usable.
	AcceptInvitation(ctx context.Context, tokenHash string, user domain.User, newUser bool, at time.Time) (domain.Member, error)
}

// ResetStore keeps password resets.
type ResetStore interface {
	// CreateReset stores a reset. Returns domain.ErrNotFound if the user
	// does not exist.
	CreateReset(ctx context.Context, r domain.PasswordReset) error
	// UseReset marks the reset used at the given time, stores the user's new
	// password hash and deletes every console session of the user, in one
	// transaction, and returns the user's id. Returns domain.ErrNotFound if
	// the reset is unknown, used or expired at that time (a conditional
	// UPDATE, so a second use fails even when both race).
	UseReset(ctx context.Context, tokenHash, passwordHash string, at time.Time) (string, error)
}

// OneTimeStore keeps small opaque values that are read at most once and
// expire by themselves: the console keeps a secret it just made (a new API
// key, an invitation link) there between the POST that made it and the one
// GET that shows it, so a reload shows it no more and never makes another.
// Values are opaque bytes: callers encrypt what must stay secret.
type OneTimeStore interface {
	// PutOnce stores value under key for ttl (positive), replacing any
	// value the key had. Returns an error wrapping domain.ErrUnavailable
	// when the store cannot be reached.
	PutOnce(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// TakeOnce returns the key's value and deletes it in one step, so of
	// two concurrent readers only one gets it. Returns domain.ErrNotFound
	// when the key has no value (never stored, taken, or expired) and an
	// error wrapping domain.ErrUnavailable when the store cannot be reached.
	TakeOnce(ctx context.Context, key string) ([]byte, error)
}

// AccountSweepStore deletes what the console no longer needs, for the
// worker's sweeper. Every pod may sweep at once: each call deletes at most
// limit rows, skipping rows another sweep has locked, so sweeps never wait
// on each other and a row is deleted once.
type AccountSweepStore interface {
	// DeleteEndedSessions deletes console sessions whose absolute end is
	// not after now or that were last used before idleSince, at most limit,
	// and returns how many it deleted.
	DeleteEndedSessions(ctx context.Context, now, idleSince time.Time, limit int) (int, error)
	// DeleteOldLinks deletes invitations and password resets, used or not,
	// whose expiry is before before, at most limit of each, and returns how
	// many it deleted. (A link is used before its expiry, so a used link
	// goes at most one link lifetime after its use.)
	DeleteOldLinks(ctx context.Context, before time.Time, limit int) (int, error)
}
