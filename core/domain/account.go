package domain

import (
	"net/mail"
	"strings"
	"time"
)

// ID prefixes of the people side: users, console sessions, invitations and
// password resets. Like every id they carry 128 random bits.
const (
	PrefixUser       = "usr_"
	PrefixInvitation = "inv_"
	PrefixReset      = "rst_"
	// PrefixConsoleToken starts a console session's cookie value. Only the
	// token's hash is stored, as for API keys.
	PrefixConsoleToken = "cs_"
	// PrefixLinkToken starts the secret of an invitation or reset link.
	PrefixLinkToken = "lt_"
	// PrefixConsoleSession names a console session in lists; unlike the
	// token it grants nothing.
	PrefixConsoleSession = "css_"
)

// MemberRole is what a member may do in one workspace. A workspace always keeps at
// least one owner.
type MemberRole string

// Member roles, from most to least trusted.
const (
	// MemberOwner may do everything, including managing owners and secrets.
	MemberOwner MemberRole = "owner"
	// MemberAdmin manages agents, knowledge, keys, integrations and members
	// other than owners.
	MemberAdmin MemberRole = "admin"
	// MemberAgent is a human helper: inbox, conversations and the playground;
	// no settings.
	MemberAgent MemberRole = "agent"
)

// MemberRoles lists every role, most trusted first.
var MemberRoles = []MemberRole{MemberOwner, MemberAdmin, MemberAgent}

// ParseMemberRole returns the role named s, or a ValidationError on field "role".
func ParseMemberRole(s string) (MemberRole, error) {
	for _, r := range MemberRoles {
		if string(r) == s {
			return r, nil
		}
	}
	return "", InvalidField("role", "must be one of owner, admin, agent")
}

// Permission is one thing a role may do in the console.
type Permission string

// Permissions, checked server-side on every console route.
const (
	// PermConversations: read conversations, the inbox and the playground.
	PermConversations Permission = "conversations"
	// PermAgents: create, edit, publish and delete agents and their knowledge.
	PermAgents Permission = "agents"
	// PermSettings: API keys, integrations, the plan.
	PermSettings Permission = "settings"
	// PermMembers: invite, change and remove members (owners only by owners).
	PermMembers Permission = "members"
	// PermSecrets: reveal and rotate the webhook secret.
	PermSecrets Permission = "secrets"
	// PermSavedReplies: create, edit and delete the workspace's saved replies.
	// Every member reads them (the composer offers them to agents), so reading
	// needs no permission beyond membership.
	PermSavedReplies Permission = "saved-replies"
)

var rolePermissions = map[MemberRole]map[Permission]bool{
	MemberOwner: {PermConversations: true, PermAgents: true, PermSettings: true, PermMembers: true, PermSecrets: true, PermSavedReplies: true},
	MemberAdmin: {PermConversations: true, PermAgents: true, PermSettings: true, PermMembers: true, PermSavedReplies: true},
	MemberAgent: {PermConversations: true},
}

// Can reports whether the role has permission p.
func (r MemberRole) Can(p Permission) bool { return rolePermissions[r][p] }

// Require returns an ErrForbidden naming the permission when the role lacks it.
func (r MemberRole) Require(p Permission) error {
	if r.Can(p) {
		return nil
	}
	return &ForbiddenError{Reason: "your role (" + string(r) + ") may not use " + string(p)}
}

// ForbiddenError is an ErrForbidden with a reason meant for the caller.
type ForbiddenError struct{ Reason string }

func (e *ForbiddenError) Error() string { return e.Reason }

// Unwrap makes errors.Is(err, ErrForbidden) true.
func (e *ForbiddenError) Unwrap() error { return ErrForbidden }

// User is a person who signs in to the console. One user may be a member of
// several workspaces.
type User struct {
	ID    string
	Email string // normalised by NormalizeEmail
	Name  string
	// PasswordHash is the encoded hash with its algorithm and parameters
	// (a PHC string); "" until the user has set a password.
	PasswordHash string
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Member is a user's membership of one workspace, with the user's name and
// email for display.
type Member struct {
	WorkspaceID string
	UserID      string
	Email       string
	Name        string
	Role        MemberRole
	// Available says the member is there to answer visitors now; false
	// (away) until they say so. When nobody in a workspace is available,
	// the widget tells visitors who ask for a person and asks for their
	// email.
	Available bool
	CreatedAt time.Time
}

// MaxEmailLength and MaxPersonNameLength bound people's fields.
const (
	MaxEmailLength      = 254
	MaxPersonNameLength = 200
)

// NormalizeEmail trims and lowercases an address and checks that it is one
// plain address (no display name). Errors are ValidationErrors on "email".
func NormalizeEmail(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" {
		return "", InvalidField("email", "is required")
	}
	if len(s) > MaxEmailLength {
		return "", InvalidField("email", "must be at most 254 characters")
	}
	addr, err := mail.ParseAddress(s)
	if err != nil || addr.Address != s || addr.Name != "" {
		return "", InvalidField("email", "must be an email address such as ada@example.com")
	}
	return s, nil
}

// Email is one message for a Mailer to send.
type Email struct {
	To      string
	Subject string
	// Text is the plain-text body; HTML, when set, is sent as an alternative.
	Text string
	HTML string
}

// ConsoleSession is a stored console session. The cookie's token never is:
// TokenHash is HashSecret of it, so a copy of the database signs nobody in.
type ConsoleSession struct {
	ID        string
	UserID    string
	TokenHash string
	// CSRFToken is the session's synchronizer token. It is stored as is: it
	// only proves that a request came from a page of this session, and is
	// worthless without the cookie.
	CSRFToken  string
	IP         string
	UserAgent  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// Invitation is a stored invitation to a workspace. TokenHash is HashSecret
// of the link's secret; the secret itself is shown once.
type Invitation struct {
	ID          string
	WorkspaceID string
	Email       string
	Role        MemberRole
	InvitedBy   string // user id; "" when made by the operator
	TokenHash   string
	CreatedAt   time.Time
	ExpiresAt   time.Time
	AcceptedAt  time.Time // zero while pending
}

// PasswordReset is a stored, single-use password reset. TokenHash is
// HashSecret of the link's secret.
type PasswordReset struct {
	ID        string
	UserID    string
	TokenHash string
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    time.Time // zero until used
}

// ErrLastOwner refuses a change that would leave a workspace without an
// owner: nobody could then manage its owners and secrets.
var ErrLastOwner = &ConflictError{Message: "a workspace needs at least one owner: make another member an owner first"}
