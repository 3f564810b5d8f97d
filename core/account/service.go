package account

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Deps are the Service's ports. Mailer may be nil: links are then only
// shown to whoever made them (the inviter, the operator).
type Deps struct {
	Users       ports.UserStore
	Members     ports.MemberStore
	Sessions    ports.ConsoleSessionStore
	Invitations ports.InvitationStore
	Resets      ports.ResetStore
	Limiter     ports.RateLimiter
	Mailer      ports.Mailer
	// Sweep deletes ended sessions and old links (SweepEnded); only the
	// worker needs it, so it may be nil elsewhere.
	Sweep ports.AccountSweepStore
	// Assignees reports the conversations a removed member held, as every
	// change of assignee is reported (conversation.Lifecycle's
	// AssigneeReport and Reassigned): conversation.assigned to the events
	// URL, written with the removal, and on the workspace event stream
	// after it, so the team's inboxes move them to Unassigned. Nil reports
	// nothing (the unassignment still happens).
	Assignees Assignees
	Clock     ports.Clock
	Log       *slog.Logger
}

// Options are the Service's knobs. Zero values take the defaults named on
// each field.
type Options struct {
	// BaseURL is the service's public address (config PublicURL); links are
	// BaseURL + "/console/invitations/<token>" and "/console/reset/<token>".
	// Required.
	BaseURL string
	// IdleTimeout ends a session not used for this long (default 24 hours:
	// a working day and the night after it, so a console left open over
	// night needs a new sign-in only the day after).
	IdleTimeout time.Duration
	// AbsoluteTimeout ends a session this long after sign-in however much it
	// is used (default 7 days), bounding what a stolen cookie is worth.
	AbsoluteTimeout time.Duration
	// InvitationTTL is how long an invitation link works (default 7 days).
	InvitationTTL time.Duration
	// ResetTTL is how long a password reset link works (default 1 hour).
	ResetTTL time.Duration
	// SignInPerMinute bounds sign-in attempts per account (default 5) and
	// SignInPerMinutePerIP per client address (default 20). Both count every
	// attempt, so a guesser is slowed whether or not the email exists.
	SignInPerMinute      int
	SignInPerMinutePerIP int
	// ResetsPerMinute bounds reset requests per email and per client
	// address (default 3), so nobody can flood an inbox.
	ResetsPerMinute int
	// LinkRetention is how long invitations and password resets, used or
	// not, are kept after their expiry before SweepEnded deletes them
	// (default 30 days): long
	// enough to answer "did they accept?" and to look into abuse, short
	// enough that the tables do not grow with every link ever sent.
	LinkRetention time.Duration
	// Argon2 are the password hashing costs (default DefaultArgon2Params);
	// tests pass cheap ones.
	Argon2 Argon2Params
}

func (o Options) withDefaults() Options {
	def := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	defInt := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.IdleTimeout, 24*time.Hour)
	def(&o.AbsoluteTimeout, 7*24*time.Hour)
	def(&o.InvitationTTL, 7*24*time.Hour)
	def(&o.ResetTTL, time.Hour)
	def(&o.LinkRetention, 30*24*time.Hour)
	defInt(&o.SignInPerMinute, 5)
	defInt(&o.SignInPerMinutePerIP, 20)
	defInt(&o.ResetsPerMinute, 3)
	if o.Argon2 == (Argon2Params{}) {
		o.Argon2 = DefaultArgon2Params
	}
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	return o
}

// touchEvery is how stale a session's LastSeenAt must be before a request
// writes it again: idle timeouts are hours long, so minute precision costs
// nothing and spares every console request a write.
const touchEvery = time.Minute

// maxClientText bounds the IP and user agent stored with a session.
const maxClientText = 512

// Service runs the account use cases: sign-in and sessions, members and
// roles, invitations and password resets.
type Service struct {
	d   Deps
	o   Options
	log *slog.Logger
	// dummyHash is checked against when the email is unknown, so that an
	// unknown email costs the same argon2 work as a wrong password and
	// timing does not tell which one it was.
	dummyHash string
}

// NewService returns a Service. Every dependency but Mailer is required.
func NewService(d Deps, o Options) (*Service, error) {
	if d.Users == nil || d.Members == nil || d.Sessions == nil || d.Invitations == nil || d.Resets == nil ||
		d.Limiter == nil || d.Clock == nil {
		return nil, errors.New("account.NewService: users, members, sessions, invitations, resets, limiter and clock are required")
	}
	o = o.withDefaults()
	if u, err := url.Parse(o.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("account.NewService: BaseURL %q is not an http(s) URL", o.BaseURL)
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	return &Service{d: d, o: o, log: d.Log, dummyHash: hashPassword("not a password anyone has", o.Argon2)}, nil
}

// errBadCredentials is the one answer for an unknown email and a wrong
// password, so the form cannot be used to learn who has an account.
var errBadCredentials = domain.Unauthorized("email or password is incorrect")

// errWrongPassword refuses a password confirmation.
var errWrongPassword = domain.Unauthorized("the password is incorrect")

// errSignedOut ends a console request whose session is unknown or expired.
var errSignedOut = domain.Unauthorized("your session has ended; sign in again")

// errBadLink is the one answer for an invitation or reset link that is
// unknown, used or expired: which one it was helps nobody but a guesser.
var errBadLink = domain.NotFound("link (it may have been used or have expired)")

// SignIn checks an email and password and starts a new session with a new
// token. Unknown emails and wrong passwords give the same ErrUnauthorized
// after the same hashing work; too many attempts per account or per IP give
// a domain.RateLimitError.
func (s *Service) SignIn(ctx context.Context, req SignInRequest) (SignedIn, error) {
	email, err := domain.NormalizeEmail(req.Email)
	if err != nil {
		return SignedIn{}, err
	}
	if req.Password == "" {
		return SignedIn{}, domain.InvalidField("password", "is required")
	}
	if utf8.RuneCountInString(req.Password) > MaxPasswordLength {
		return SignedIn{}, domain.InvalidField("password", fmt.Sprintf("must be at most %d characters", MaxPasswordLength))
	}
	if err := s.throttle(ctx, "account:signin:ip:"+clientKey(req.IP), s.o.SignInPerMinutePerIP); err != nil {
		return SignedIn{}, err
	}
	if err := s.throttle(ctx, "account:signin:email:"+emailKey(email), s.o.SignInPerMinute); err != nil {
		return SignedIn{}, err
	}
	user, err := s.d.Users.FindUserByEmail(ctx, email)
	switch {
	case errors.Is(err, domain.ErrNotFound):
		_, _ = checkPassword(req.Password, s.dummyHash)
		return SignedIn{}, errBadCredentials
	case err != nil:
		return SignedIn{}, err
	}
	if ok, err := s.passwordMatches(req.Password, user); err != nil || !ok {
		if err != nil {
			return SignedIn{}, err
		}
		return SignedIn{}, errBadCredentials
	}
	return s.startSession(ctx, user, req.IP, req.UserAgent)
}

// passwordMatches checks password against the user's hash; a user with no
// password yet is checked against the dummy hash and never matches.
func (s *Service) passwordMatches(password string, u domain.User) (bool, error) {
	if u.PasswordHash == "" {
		_, _ = checkPassword(password, s.dummyHash)
		return false, nil
	}
	return checkPassword(password, u.PasswordHash)
}

// startSession stores a new session for the user with a fresh random token
// and CSRF token. A new token on every sign-in is what defeats session
// fixation: no token known before signing in is ever valid after it.
func (s *Service) startSession(ctx context.Context, u domain.User, ip, userAgent string) (SignedIn, error) {
	now := s.d.Clock.Now()
	token := domain.NewSecret(domain.PrefixConsoleToken)
	cs := domain.ConsoleSession{
		ID:         domain.NewID(domain.PrefixConsoleSession),
		UserID:     u.ID,
		TokenHash:  domain.HashSecret(token),
		CSRFToken:  domain.NewSecret(""),
		IP:         truncate(ip, maxClientText),
		UserAgent:  truncate(userAgent, maxClientText),
		CreatedAt:  now,
		LastSeenAt: now,
		ExpiresAt:  now.Add(s.o.AbsoluteTimeout),
	}
	if err := s.d.Sessions.CreateConsoleSession(ctx, cs); err != nil {
		return SignedIn{}, err
	}
	s.pruneSessions(ctx, u.ID, now)
	return SignedIn{Token: token, Session: sessionView(cs), User: u}, nil
}

// pruneSessions deletes the user's ended sessions. Sessions are otherwise
// deleted only when presented after their end, so without this a user
// who signs in often but never signs out would pile them up; doing it at
// sign-in bounds them per user with no sweeper. Best effort: a failure is
// logged.
func (s *Service) pruneSessions(ctx context.Context, userID string, now time.Time) {
	all, err := s.d.Sessions.ListConsoleSessions(ctx, userID)
	if err == nil {
		var ended []string
		for _, cs := range all {
			if !s.live(cs, now) {
				ended = append(ended, cs.ID)
			}
		}
		if len(ended) == 0 {
			return
		}
		_, err = s.d.Sessions.DeleteConsoleSessions(ctx, userID, "", ended...)
	}
	if err != nil {
		s.log.WarnContext(ctx, "deleting ended console sessions failed", "userId", userID, "error", err)
	}
}

// Authenticate returns who the session token belongs to. Unknown tokens and
// sessions past their idle or absolute end give ErrUnauthorized; expired
// sessions are deleted on the way.
func (s *Service) Authenticate(ctx context.Context, token string) (Principal, error) {
	cs, err := s.findSession(ctx, token)
	if err != nil {
		return Principal{}, err
	}
	user, err := s.d.Users.GetUser(ctx, cs.UserID)
	if errors.Is(err, domain.ErrNotFound) {
		return Principal{}, errSignedOut
	}
	if err != nil {
		return Principal{}, err
	}
	now := s.d.Clock.Now()
	if now.Sub(cs.LastSeenAt) >= touchEvery {
		if err := s.d.Sessions.TouchConsoleSession(ctx, cs.ID, now); err != nil {
			// The request is authenticated either way; a missed touch only
			// brings the idle end a little closer.
			s.log.WarnContext(ctx, "recording a console session's use failed", "sessionId", cs.ID, "error", err)
		} else {
			cs.LastSeenAt = now
		}
	}
	return Principal{User: user, Session: sessionView(cs)}, nil
}

// findSession returns the live session of a token, deleting it when expired.
func (s *Service) findSession(ctx context.Context, token string) (domain.ConsoleSession, error) {
	if !strings.HasPrefix(token, domain.PrefixConsoleToken) || len(token) > 128 {
		return domain.ConsoleSession{}, errSignedOut
	}
	cs, err := s.d.Sessions.FindConsoleSession(ctx, domain.HashSecret(token))
	if errors.Is(err, domain.ErrNotFound) {
		return domain.ConsoleSession{}, errSignedOut
	}
	if err != nil {
		return domain.ConsoleSession{}, err
	}
	if !s.live(cs, s.d.Clock.Now()) {
		if _, err := s.d.Sessions.DeleteConsoleSessions(ctx, cs.UserID, "", cs.ID); err != nil {
			s.log.WarnContext(ctx, "deleting an expired console session failed", "sessionId", cs.ID, "error", err)
		}
		return domain.ConsoleSession{}, errSignedOut
	}
	return cs, nil
}

// live reports whether a session is within both its idle and absolute ends.
func (s *Service) live(cs domain.ConsoleSession, now time.Time) bool {
	return now.Before(cs.ExpiresAt) && now.Sub(cs.LastSeenAt) < s.o.IdleTimeout
}

// sweepBatch is how many rows one sweep statement deletes: small enough
// that each statement holds its row locks only briefly.
const sweepBatch = 500

// SweepEnded deletes console sessions past their idle or absolute end
// (sessions are otherwise deleted only when presented again or at their
// user's next sign-in), and invitations and resets that expired more
// than LinkRetention ago, used or not. It deletes batch after batch until a batch comes
// back short, and returns how many rows it deleted. Idempotent, and safe
// on every worker pod at once (AccountSweepStore). Returns an error when
// built without Deps.Sweep.
func (s *Service) SweepEnded(ctx context.Context) (int, error) {
	if s.d.Sweep == nil {
		return 0, errors.New("account: SweepEnded needs Deps.Sweep")
	}
	now := s.d.Clock.Now()
	total := 0
	for _, step := range []func() (int, error){
		func() (int, error) {
			return s.d.Sweep.DeleteEndedSessions(ctx, now, now.Add(-s.o.IdleTimeout), sweepBatch)
		},
		func() (int, error) { return s.d.Sweep.DeleteOldLinks(ctx, now.Add(-s.o.LinkRetention), sweepBatch) },
	} {
		for {
			n, err := step()
			total += n
			if err != nil {
				return total, err
			}
			// DeleteOldLinks deletes up to a batch from each of two tables.
			if n < sweepBatch || ctx.Err() != nil {
				break
			}
		}
	}
	return total, ctx.Err()
}

// SignOut ends the token's session. An unknown or expired token is not an
// error: the caller is signed out either way.
func (s *Service) SignOut(ctx context.Context, token string) error {
	cs, err := s.findSession(ctx, token)
	if errors.Is(err, domain.ErrUnauthorized) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = s.d.Sessions.DeleteConsoleSessions(ctx, cs.UserID, "", cs.ID)
	return err
}

// SignOutOthers ends every session of the token's user but this one and
// returns how many it ended. ErrUnauthorized if the token's session has ended.
func (s *Service) SignOutOthers(ctx context.Context, token string) (int, error) {
	cs, err := s.findSession(ctx, token)
	if err != nil {
		return 0, err
	}
	return s.d.Sessions.DeleteConsoleSessions(ctx, cs.UserID, cs.ID)
}

// Sessions returns the user's live sessions, most recently used first.
func (s *Service) Sessions(ctx context.Context, userID string) ([]Session, error) {
	all, err := s.d.Sessions.ListConsoleSessions(ctx, userID)
	if err != nil {
		return nil, err
	}
	now := s.d.Clock.Now()
	out := make([]Session, 0, len(all))
	for _, cs := range all {
		if s.live(cs, now) {
			out = append(out, sessionView(cs))
		}
	}
	return out, nil
}

// Memberships returns the workspaces the user belongs to, with their role.
func (s *Service) Memberships(ctx context.Context, userID string) ([]domain.Member, error) {
	return s.d.Members.Memberships(ctx, userID)
}

// Member returns the user's membership of the workspace. Not being a member
// and an unknown workspace give the same ErrNotFound, so a user cannot
// probe other tenants' workspace ids.
func (s *Service) Member(ctx context.Context, userID, workspaceID string) (domain.Member, error) {
	m, err := s.d.Members.GetMember(ctx, workspaceID, userID)
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Member{}, domain.NotFound("workspace")
	}
	return m, err
}

// Members lists the actor's workspace's members. Needs PermMembers.
func (s *Service) Members(ctx context.Context, actor domain.Member) ([]domain.Member, error) {
	if err := actor.Role.Require(domain.PermMembers); err != nil {
		return nil, err
	}
	return s.d.Members.ListMembers(ctx, actor.WorkspaceID)
}

// Invitations lists the actor's workspace's pending invitations, expired
// ones included (so they can be sent again). Needs PermMembers.
func (s *Service) Invitations(ctx context.Context, actor domain.Member) ([]Invitation, error) {
	if err := actor.Role.Require(domain.PermMembers); err != nil {
		return nil, err
	}
	all, err := s.d.Invitations.PendingInvitations(ctx, actor.WorkspaceID)
	if err != nil {
		return nil, err
	}
	out := make([]Invitation, 0, len(all))
	for _, inv := range all {
		out = append(out, invitationView(inv))
	}
	return out, nil
}

// Invite invites an email address into the actor's workspace. Needs
// PermMembers; only owners may invite owners. The result carries the
// one-time link, which is also emailed when a Mailer is configured; a mail
// failure is logged and leaves Emailed false, never loses the invitation.
// Inviting an address with a pending invitation replaces its link.
func (s *Service) Invite(ctx context.Context, actor domain.Member, req InviteRequest) (Invitation, error) {
	if err := actor.Role.Require(domain.PermMembers); err != nil {
		return Invitation{}, err
	}
	if req.Role == domain.MemberOwner && actor.Role != domain.MemberOwner {
		return Invitation{}, &domain.ForbiddenError{Reason: "only owners may invite owners"}
	}
	return s.invite(ctx, actor.WorkspaceID, actor.UserID, req)
}

// InviteByOperator invites an email address into a workspace on the
// operator's authority (the CLI), for example its first owner. Returns
// ErrNotFound if the workspace does not exist.
func (s *Service) InviteByOperator(ctx context.Context, workspaceID string, req InviteRequest) (Invitation, error) {
	if !domain.ValidID(domain.PrefixWorkspace, workspaceID) {
		return Invitation{}, domain.InvalidField("workspace", "must be a workspace id such as ws_...")
	}
	return s.invite(ctx, workspaceID, "", req)
}

func (s *Service) invite(ctx context.Context, workspaceID, invitedBy string, req InviteRequest) (Invitation, error) {
	email, err := domain.NormalizeEmail(req.Email)
	if err != nil {
		return Invitation{}, err
	}
	role, err := domain.ParseMemberRole(string(req.Role))
	if err != nil {
		return Invitation{}, err
	}
	if u, err := s.d.Users.FindUserByEmail(ctx, email); err == nil {
		if _, err := s.d.Members.GetMember(ctx, workspaceID, u.ID); err == nil {
			return Invitation{}, domain.Conflict("%s is already a member of this workspace", email)
		} else if !errors.Is(err, domain.ErrNotFound) {
			return Invitation{}, err
		}
	} else if !errors.Is(err, domain.ErrNotFound) {
		return Invitation{}, err
	}
	now := s.d.Clock.Now()
	token := domain.NewSecret(domain.PrefixLinkToken)
	inv := domain.Invitation{
		ID: domain.NewID(domain.PrefixInvitation), WorkspaceID: workspaceID, Email: email, Role: role,
		InvitedBy: invitedBy, TokenHash: domain.HashSecret(token), CreatedAt: now, ExpiresAt: now.Add(s.o.InvitationTTL),
	}
	if err := s.d.Invitations.CreateInvitation(ctx, inv); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return Invitation{}, domain.NotFound("workspace")
		}
		return Invitation{}, err
	}
	out := invitationView(inv)
	out.Link = s.o.BaseURL + "/console/invitations/" + token
	if s.d.Mailer != nil {
		err := s.d.Mailer.Send(ctx, domain.Email{
			To:      email,
			Subject: "You are invited to a Concierge workspace",
			Text: fmt.Sprintf("You have been invited to join a Concierge workspace as %s.\n\nAccept the invitation here (the link works once, until %s):\n\n%s\n\nIf you did not expect this invitation, ignore this email.\n",
				role, inv.ExpiresAt.UTC().Format("2 January 2006 15:04 MST"), out.Link),
		})
		if err != nil {
			s.log.WarnContext(ctx, "emailing an invitation failed; its link is shown to the inviter instead",
				"invitationId", inv.ID, "workspaceId", workspaceID, "error", err)
		} else {
			out.Emailed = true
		}
	}
	return out, nil
}

// RevokeInvitation deletes a pending invitation of the actor's workspace, so
// its link stops working. Needs PermMembers; only owners may revoke an
// invitation to become owner. ErrNotFound if there is no such pending invitation.
func (s *Service) RevokeInvitation(ctx context.Context, actor domain.Member, invitationID string) error {
	if err := actor.Role.Require(domain.PermMembers); err != nil {
		return err
	}
	pending, err := s.d.Invitations.PendingInvitations(ctx, actor.WorkspaceID)
	if err != nil {
		return err
	}
	for _, inv := range pending {
		if inv.ID != invitationID {
			continue
		}
		if inv.Role == domain.MemberOwner && actor.Role != domain.MemberOwner {
			return &domain.ForbiddenError{Reason: "only owners may revoke an invitation to become owner"}
		}
		return s.d.Invitations.DeleteInvitation(ctx, actor.WorkspaceID, invitationID)
	}
	return domain.NotFound("invitation")
}

// InvitationByToken returns the pending invitation of a link, for the page
// that accepts it. Unknown, accepted and expired links give one ErrNotFound.
func (s *Service) InvitationByToken(ctx context.Context, token string) (Invitation, error) {
	inv, err := s.pendingInvitation(ctx, token)
	if err != nil {
		return Invitation{}, err
	}
	out := invitationView(inv)
	_, err = s.d.Users.FindUserByEmail(ctx, inv.Email)
	switch {
	case err == nil:
		out.ForExistingUser = true
	case !errors.Is(err, domain.ErrNotFound):
		return Invitation{}, err
	}
	return out, nil
}

func (s *Service) pendingInvitation(ctx context.Context, token string) (domain.Invitation, error) {
	if !strings.HasPrefix(token, domain.PrefixLinkToken) || len(token) > 128 {
		return domain.Invitation{}, errBadLink
	}
	inv, err := s.d.Invitations.FindInvitation(ctx, domain.HashSecret(token))
	if errors.Is(err, domain.ErrNotFound) {
		return domain.Invitation{}, errBadLink
	}
	if err != nil {
		return domain.Invitation{}, err
	}
	if !inv.AcceptedAt.IsZero() || !s.d.Clock.Now().Before(inv.ExpiresAt) {
		return domain.Invitation{}, errBadLink
	}
	return inv, nil
}

// AcceptInvitation uses an invitation link once: a new user gives a name and
// a password, an existing user with the invited email confirms their current
// password. It makes the membership and signs the user in. A used, expired or
// unknown link gives ErrNotFound, also when two accepts race.
func (s *Service) AcceptInvitation(ctx context.Context, req AcceptRequest) (SignedIn, error) {
	inv, err := s.pendingInvitation(ctx, req.Token)
	if err != nil {
		return SignedIn{}, err
	}
	user, err := s.d.Users.FindUserByEmail(ctx, inv.Email)
	newUser := errors.Is(err, domain.ErrNotFound)
	switch {
	case newUser:
		name := strings.TrimSpace(req.Name)
		if name == "" {
			return SignedIn{}, domain.InvalidField("name", "is required")
		}
		if utf8.RuneCountInString(name) > domain.MaxPersonNameLength || !utf8.ValidString(name) {
			return SignedIn{}, domain.InvalidField("name", fmt.Sprintf("must be at most %d characters of text", domain.MaxPersonNameLength))
		}
		if err := ValidatePassword(req.Password); err != nil {
			return SignedIn{}, err
		}
		now := s.d.Clock.Now()
		user = domain.User{ID: domain.NewID(domain.PrefixUser), Email: inv.Email, Name: name,
			PasswordHash: hashPassword(req.Password, s.o.Argon2), CreatedAt: now, UpdatedAt: now}
	case err != nil:
		return SignedIn{}, err
	default:
		// Confirming with the password is a guess at it: throttled like a sign-in.
		if err := s.throttle(ctx, "account:signin:email:"+emailKey(inv.Email), s.o.SignInPerMinute); err != nil {
			return SignedIn{}, err
		}
		ok, err := s.passwordMatches(req.Password, user)
		if err != nil {
			return SignedIn{}, err
		}
		if !ok {
			return SignedIn{}, domain.InvalidField("password", "is not the current password of "+inv.Email)
		}
	}
	if _, err := s.d.Invitations.AcceptInvitation(ctx, inv.TokenHash, user, newUser, s.d.Clock.Now()); err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return SignedIn{}, errBadLink
		}
		return SignedIn{}, err
	}
	return s.startSession(ctx, user, req.IP, req.UserAgent)
}

// ChangeRole gives a member of the actor's workspace a new role. Needs
// PermMembers; only owners may make owners or change an owner's role. The
// last owner cannot be demoted (domain.ErrLastOwner, an ErrConflict),
// checked by the store under a lock so concurrent demotions cannot both pass.
func (s *Service) ChangeRole(ctx context.Context, actor domain.Member, userID string, role domain.MemberRole) (domain.Member, error) {
	if err := actor.Role.Require(domain.PermMembers); err != nil {
		return domain.Member{}, err
	}
	role, err := domain.ParseMemberRole(string(role))
	if err != nil {
		return domain.Member{}, err
	}
	if role == domain.MemberOwner && actor.Role != domain.MemberOwner {
		return domain.Member{}, &domain.ForbiddenError{Reason: "only owners may make owners"}
	}
	return s.d.Members.ChangeMemberRole(ctx, actor.WorkspaceID, userID, role, ownersOnlyOnOwners(actor, "change an owner's role"))
}

// Assignees is how a removal reports the conversations it unassigns;
// *conversation.Lifecycle provides it.
type Assignees interface {
	// AssigneeReport returns what the store writes, in the removal's
	// transaction, for each conversation it unassigns in the workspace.
	AssigneeReport(ctx context.Context, workspaceID string) (func(after domain.Conversation) []domain.Delivery, error)
	// Reassigned schedules the deliveries written and tells the
	// workspace's followers who holds each conversation now. It never
	// fails.
	Reassigned(ctx context.Context, deliveries []domain.Delivery, convs ...domain.Conversation)
}

// RemoveMember removes a member from the actor's workspace. Needs
// PermMembers; only owners may remove owners; the last owner cannot be
// removed (domain.ErrLastOwner). The conversations the member held are
// unassigned in the same write, each reported as conversation.assigned
// with no assignee (Deps.Assignees); their status stays.
func (s *Service) RemoveMember(ctx context.Context, actor domain.Member, userID string) error {
	if err := actor.Role.Require(domain.PermMembers); err != nil {
		return err
	}
	var report func(domain.Conversation) []domain.Delivery
	if s.d.Assignees != nil {
		var err error
		if report, err = s.d.Assignees.AssigneeReport(ctx, actor.WorkspaceID); err != nil {
			return err
		}
	}
	unassigned, deliveries, err := s.d.Members.RemoveMember(ctx, actor.WorkspaceID, userID, ownersOnlyOnOwners(actor, "remove an owner"), report)
	if err != nil {
		return err
	}
	if s.d.Assignees != nil {
		s.d.Assignees.Reassigned(ctx, deliveries, unassigned...)
	}
	return nil
}

// ownersOnlyOnOwners refuses an admin's change to an owner. It runs inside
// the store's transaction on the member as stored, so a concurrent
// promotion cannot slip past it.
func ownersOnlyOnOwners(actor domain.Member, what string) func(domain.Member) error {
	return func(target domain.Member) error {
		if target.Role == domain.MemberOwner && actor.Role != domain.MemberOwner {
			return &domain.ForbiddenError{Reason: "only owners may " + what}
		}
		return nil
	}
}

// RequestReset emails a single-use reset link when the email belongs to a
// user and a Mailer is configured. It answers the same, in about the same
// time, whether or not the email exists: the link is made and sent in the
// background, and failures are logged, not returned. Too many requests per
// email or IP give a domain.RateLimitError.
func (s *Service) RequestReset(ctx context.Context, email, ip string) error {
	email, err := domain.NormalizeEmail(email)
	if err != nil {
		return err
	}
	if err := s.throttle(ctx, "account:reset:ip:"+clientKey(ip), s.o.ResetsPerMinute); err != nil {
		return err
	}
	if err := s.throttle(ctx, "account:reset:email:"+emailKey(email), s.o.ResetsPerMinute); err != nil {
		return err
	}
	if s.d.Mailer == nil {
		s.log.InfoContext(ctx, "a password reset was requested but no mail server is configured; the operator can make a link with `concierge admin user reset`")
		return nil
	}
	user, err := s.d.Users.FindUserByEmail(ctx, email)
	if errors.Is(err, domain.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	// Storing the reset and talking to the mail server take time that an
	// unknown email does not: done in the background, they cannot tell a
	// caller timing the answer which emails have accounts. A failure is
	// logged; the person can ask again.
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	go func() {
		defer cancel()
		s.emailReset(bg, user)
	}()
	return nil
}

func (s *Service) emailReset(ctx context.Context, user domain.User) {
	link, err := s.newReset(ctx, user)
	if err != nil {
		s.log.WarnContext(ctx, "storing a password reset failed", "userId", user.ID, "error", err)
		return
	}
	err = s.d.Mailer.Send(ctx, domain.Email{
		To:      user.Email,
		Subject: "Reset your Concierge password",
		Text: fmt.Sprintf("Someone asked to reset the password of your Concierge account.\n\nSet a new password here (the link works once, for %s):\n\n%s\n\nIf it was not you, ignore this email: your password stays as it is.\n",
			s.o.ResetTTL, link),
	})
	if err != nil {
		s.log.WarnContext(ctx, "emailing a password reset link failed", "userId", user.ID, "error", err)
	}
}

// ResetLink makes a reset link for the operator CLI, which shows it instead
// of emailing it. ErrNotFound if no user has the email.
func (s *Service) ResetLink(ctx context.Context, email string) (string, error) {
	email, err := domain.NormalizeEmail(email)
	if err != nil {
		return "", err
	}
	user, err := s.d.Users.FindUserByEmail(ctx, email)
	if errors.Is(err, domain.ErrNotFound) {
		return "", domain.NotFound("user with this email")
	}
	if err != nil {
		return "", err
	}
	return s.newReset(ctx, user)
}

func (s *Service) newReset(ctx context.Context, u domain.User) (string, error) {
	now := s.d.Clock.Now()
	token := domain.NewSecret(domain.PrefixLinkToken)
	r := domain.PasswordReset{ID: domain.NewID(domain.PrefixReset), UserID: u.ID, TokenHash: domain.HashSecret(token),
		CreatedAt: now, ExpiresAt: now.Add(s.o.ResetTTL)}
	if err := s.d.Resets.CreateReset(ctx, r); err != nil {
		return "", err
	}
	return s.o.BaseURL + "/console/reset/" + token, nil
}

// ResetPassword sets a new password through a reset link, once, before it
// expires, and signs out every session of the user.
func (s *Service) ResetPassword(ctx context.Context, req ResetRequest) error {
	if err := ValidatePassword(req.Password); err != nil {
		return err
	}
	if !strings.HasPrefix(req.Token, domain.PrefixLinkToken) || len(req.Token) > 128 {
		return errBadLink
	}
	_, err := s.d.Resets.UseReset(ctx, domain.HashSecret(req.Token), hashPassword(req.Password, s.o.Argon2), s.d.Clock.Now())
	if errors.Is(err, domain.ErrNotFound) {
		return errBadLink
	}
	return err
}

// ChangePassword sets a new password for the signed-in user after checking
// the current one, and signs out every other session of the user.
func (s *Service) ChangePassword(ctx context.Context, p Principal, current, next string) error {
	if err := ValidatePassword(next); err != nil {
		return err
	}
	if err := s.throttle(ctx, "account:password:user:"+p.User.ID, s.o.SignInPerMinute); err != nil {
		return err
	}
	user, err := s.d.Users.GetUser(ctx, p.User.ID)
	if errors.Is(err, domain.ErrNotFound) {
		return errSignedOut
	}
	if err != nil {
		return err
	}
	ok, err := s.passwordMatches(current, user)
	if err != nil {
		return err
	}
	if !ok {
		return domain.InvalidField("currentPassword", "is incorrect")
	}
	return s.d.Users.SetPassword(ctx, user.ID, hashPassword(next, s.o.Argon2), p.Session.ID, s.d.Clock.Now())
}

// ConfirmPassword checks a signed-in user's password again before a
// secret is shown or rotated. It is throttled per user like a sign-in, so
// a stolen session cannot be used to guess the password. Returns
// domain.ErrUnauthorized when the password is wrong and a
// domain.RateLimitError when the user tried too often.
func (s *Service) ConfirmPassword(ctx context.Context, userID, password string) error {
	if err := s.throttle(ctx, "account:confirm:user:"+userID, s.o.SignInPerMinute); err != nil {
		return err
	}
	user, err := s.d.Users.GetUser(ctx, userID)
	if errors.Is(err, domain.ErrNotFound) {
		return errSignedOut
	}
	if err != nil {
		return err
	}
	ok, err := s.passwordMatches(password, user)
	if err != nil {
		return err
	}
	if !ok {
		return errWrongPassword
	}
	return nil
}

// throttle counts one call against key and refuses it with a
// domain.RateLimitError when the budget is spent.
func (s *Service) throttle(ctx context.Context, key string, perMinute int) error {
	rl, err := s.d.Limiter.Allow(ctx, key, perMinute)
	if err != nil {
		return err
	}
	if !rl.Allowed {
		return &domain.RateLimitError{RetryAfterSeconds: max(1, int(math.Ceil(rl.RetryAfter.Seconds())))}
	}
	return nil
}

// emailKey names an email in rate-limit keys without writing the address
// itself into Redis.
func emailKey(email string) string { return domain.HashSecret(email)[:32] }

// clientKey names a client address in rate-limit keys.
func clientKey(ip string) string {
	if ip == "" {
		return "unknown"
	}
	return truncate(ip, 64)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func sessionView(cs domain.ConsoleSession) Session {
	return Session{ID: cs.ID, UserID: cs.UserID, CSRFToken: cs.CSRFToken, IP: cs.IP, UserAgent: cs.UserAgent,
		CreatedAt: cs.CreatedAt, LastSeenAt: cs.LastSeenAt, ExpiresAt: cs.ExpiresAt}
}

func invitationView(inv domain.Invitation) Invitation {
	return Invitation{ID: inv.ID, WorkspaceID: inv.WorkspaceID, Email: inv.Email, Role: inv.Role, InvitedBy: inv.InvitedBy,
		CreatedAt: inv.CreatedAt, ExpiresAt: inv.ExpiresAt, AcceptedAt: inv.AcceptedAt}
}
