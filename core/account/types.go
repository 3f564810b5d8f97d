// Package account holds the people side of a workspace: users, their
// memberships and roles, console sign-in with server-side sessions,
// throttling, invitations and password resets. The console edge calls it;
// nothing in it knows about HTTP or cookies.
package account

import (
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Session is one signed-in console session. The cookie holds a random token
// (domain.PrefixConsoleToken + 256 bits); only its hash is stored, so a
// stolen database does not sign anyone in.
type Session struct {
	// ID names the session in lists ("signed in on ..."); it is not the token.
	ID     string
	UserID string
	// CSRFToken is the session's synchronizer token: every state-changing
	// console request must carry it (form field or header).
	CSRFToken string
	IP        string
	UserAgent string
	CreatedAt time.Time
	// LastSeenAt moves on use; the session ends IdleTimeout after it.
	LastSeenAt time.Time
	// ExpiresAt is the absolute end, whatever the use.
	ExpiresAt time.Time
}

// Principal is who a console request acts as: a signed-in user and the
// session it came with. Which workspace and role apply is decided per
// request by Service.Member, from the workspace the request names.
type Principal struct {
	User    domain.User
	Session Session
}

// SignInRequest is what the sign-in form sends.
type SignInRequest struct {
	Email     string
	Password  string
	IP        string
	UserAgent string
}

// SignedIn is a new session. Token goes into the cookie and nowhere else.
type SignedIn struct {
	Token   string
	Session Session
	User    domain.User
}

// InviteRequest invites an email address into the actor's workspace.
type InviteRequest struct {
	Email string
	Role  domain.MemberRole
}

// Invitation is a single-use, expiring invitation to a workspace.
type Invitation struct {
	ID          string
	WorkspaceID string
	Email       string
	Role        domain.MemberRole
	InvitedBy   string // user id; "" when made by the operator CLI
	CreatedAt   time.Time
	ExpiresAt   time.Time
	AcceptedAt  time.Time // zero until accepted
	// Link is the one-time URL, present only in the result of the call that
	// made it (the secret is stored hashed).
	Link string
	// Emailed says whether a Mailer sent the link.
	Emailed bool
	// ForExistingUser, set by Service.InvitationByToken, says that a user
	// with the invited email exists: the accept page then asks for that
	// user's password instead of a name and a new password.
	ForExistingUser bool
}

// AcceptRequest accepts an invitation. A new user chooses a name and a
// password; an existing user (same email) confirms with their password.
type AcceptRequest struct {
	Token     string
	Name      string
	Password  string
	IP        string
	UserAgent string
}

// ResetRequest sets a new password through a reset link.
type ResetRequest struct {
	Token    string
	Password string
}
