package account_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// cheap keeps argon2id fast in unit tests; the format and the comparison
// are the same as with the real costs.
var cheap = account.Argon2Params{Time: 1, MemoryKiB: 64, Threads: 1, SaltLen: 16, KeyLen: 32}

const password = "correct horse battery"

type fixture struct {
	svc       *account.Service
	store     *memStore
	assignees *fakeAssignees
	clock     *fakeClock
	limiter   *fakeLimiter
	mailer    *fakeMailer
	ws        string
}

func newFixture(t *testing.T, withMailer bool) *fixture {
	t.Helper()
	f := &fixture{store: newMemStore(), clock: &fakeClock{t: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)},
		limiter: &fakeLimiter{}, mailer: &fakeMailer{}, ws: domain.NewID(domain.PrefixWorkspace), assignees: &fakeAssignees{}}
	deps := account.Deps{Users: f.store, Members: f.store, Sessions: f.store, Invitations: f.store, Resets: f.store,
		Limiter: f.limiter, Clock: f.clock, Assignees: f.assignees}
	if withMailer {
		deps.Mailer = f.mailer
	}
	svc, err := account.NewService(deps, account.Options{BaseURL: "https://chat.example.com/", Argon2: cheap})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = svc
	return f
}

// join makes a user of the given role through an operator invitation.
func (f *fixture) join(t *testing.T, email string, role domain.MemberRole) (domain.Member, account.SignedIn) {
	t.Helper()
	ctx := context.Background()
	inv, err := f.svc.InviteByOperator(ctx, f.ws, account.InviteRequest{Email: email, Role: role})
	if err != nil {
		t.Fatalf("InviteByOperator(%s): %v", email, err)
	}
	signed, err := f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: tokenOf(t, inv.Link), Name: "Person " + email, Password: password})
	if err != nil {
		t.Fatalf("AcceptInvitation(%s): %v", email, err)
	}
	m, err := f.svc.Member(ctx, signed.User.ID, f.ws)
	if err != nil {
		t.Fatal(err)
	}
	return m, signed
}

func tokenOf(t *testing.T, link string) string {
	t.Helper()
	i := strings.LastIndex(link, "/")
	if i < 0 || !strings.HasPrefix(link[i+1:], domain.PrefixLinkToken) {
		t.Fatalf("link %q has no token", link)
	}
	return link[i+1:]
}

func TestNewServiceRefusesMissingDependenciesAndBadBaseURL(t *testing.T) {
	t.Parallel()
	s := newMemStore()
	full := account.Deps{Users: s, Members: s, Sessions: s, Invitations: s, Resets: s, Limiter: &fakeLimiter{}, Clock: &fakeClock{}}
	cases := []struct {
		name string
		deps account.Deps
		base string
	}{
		{"no limiter", account.Deps{Users: s, Members: s, Sessions: s, Invitations: s, Resets: s, Clock: &fakeClock{}}, "http://x"},
		{"no base URL", full, ""},
		{"not http", full, "ftp://example.com"},
	}
	for _, tc := range cases {
		if _, err := account.NewService(tc.deps, account.Options{BaseURL: tc.base}); err == nil {
			t.Errorf("%s: NewService succeeded", tc.name)
		}
	}
}

func TestSignIn(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, _ = f.join(t, "ada@example.com", domain.MemberOwner)
	ctx := context.Background()

	cases := []struct {
		name, email, password string
		want                  error
		message               string
	}{
		{"right password, other spelling of the email", "  Ada@Example.COM ", password, nil, ""},
		{"wrong password", "ada@example.com", "not the password", domain.ErrUnauthorized, "email or password is incorrect"},
		{"unknown email", "bob@example.com", password, domain.ErrUnauthorized, "email or password is incorrect"},
		{"not an email", "ada", password, domain.ErrInvalidInput, "email: must be an email address such as ada@example.com"},
		{"no password", "ada@example.com", "", domain.ErrInvalidInput, "password: is required"},
		{"absurdly long password", "ada@example.com", strings.Repeat("x", 129), domain.ErrInvalidInput, "password: must be at most 128 characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.svc.SignIn(ctx, account.SignInRequest{Email: tc.email, Password: tc.password, IP: "203.0.113.9", UserAgent: "test"})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("SignIn: %v", err)
				}
				if !strings.HasPrefix(got.Token, domain.PrefixConsoleToken) || len(got.Token) != len(domain.PrefixConsoleToken)+52 {
					t.Fatalf("token %q is not cs_ + 256 bits", got.Token)
				}
				if got.Session.CSRFToken == "" || got.Session.IP != "203.0.113.9" || got.User.Email != "ada@example.com" {
					t.Fatalf("SignedIn = %+v", got)
				}
				return
			}
			if !errors.Is(err, tc.want) || err.Error() != tc.message {
				t.Fatalf("SignIn error = %v, want %v %q", err, tc.want, tc.message)
			}
		})
	}
}

func TestSignInMakesANewTokenEachTimeAndStoresOnlyItsHash(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, first := f.join(t, "ada@example.com", domain.MemberOwner)
	second, err := f.svc.SignIn(context.Background(), account.SignInRequest{Email: "ada@example.com", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	if first.Token == second.Token || first.Session.ID == second.Session.ID || first.Session.CSRFToken == second.Session.CSRFToken {
		t.Fatal("two sign-ins share a token, session id or CSRF token")
	}
	for hash := range f.store.sessions {
		if hash == first.Token || hash == second.Token || hash != domain.HashSecret(first.Token) && hash != domain.HashSecret(second.Token) {
			t.Fatalf("stored session key %q is not the hash of a token", hash)
		}
	}
}

func TestSignInThrottling(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, _ = f.join(t, "ada@example.com", domain.MemberOwner)
	f.limiter.limit = 2
	ctx := context.Background()
	for i := range 2 {
		if _, err := f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: "wrong password", IP: "198.51.100.1"}); !errors.Is(err, domain.ErrUnauthorized) {
			t.Fatalf("attempt %d: %v", i, err)
		}
	}
	// The third attempt is refused even with the right password.
	_, err := f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: password, IP: "198.51.100.1"})
	var rl *domain.RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, domain.ErrRateLimited) || rl.RetryAfterSeconds != 3 {
		t.Fatalf("third attempt: %v, want a RateLimitError retrying after 3 s", err)
	}
	// Another address still meets the per-account limit; the key holds no email.
	_, err = f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: password, IP: "198.51.100.2"})
	if !errors.Is(err, domain.ErrRateLimited) {
		t.Fatalf("from another IP: %v, want ErrRateLimited (per account)", err)
	}
	for key := range f.limiter.counts {
		if strings.Contains(key, "ada") {
			t.Fatalf("rate-limit key %q contains the email", key)
		}
	}
	// An unknown email is throttled the same way, so throttling tells nothing either.
	for range 2 {
		_, _ = f.svc.SignIn(ctx, account.SignInRequest{Email: "nobody@example.com", Password: "x", IP: "192.0.2.7"})
	}
	if _, err := f.svc.SignIn(ctx, account.SignInRequest{Email: "nobody@example.com", Password: "x", IP: "192.0.2.8"}); !errors.Is(err, domain.ErrRateLimited) {
		t.Fatalf("unknown email: %v, want ErrRateLimited", err)
	}
}

func TestSignInFailsClosedWhenTheLimiterIsDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, _ = f.join(t, "ada@example.com", domain.MemberOwner)
	f.limiter.err = domain.Unavailable("redis", errors.New("down"))
	_, err := f.svc.SignIn(context.Background(), account.SignInRequest{Email: "ada@example.com", Password: password})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("SignIn = %v, want ErrUnavailable", err)
	}
}

func TestAuthenticateExpiry(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		steps []time.Duration // each a use after that much time
		then  time.Duration
		live  bool
	}{
		{"fresh", nil, time.Minute, true},
		{"just under idle", nil, 24*time.Hour - time.Second, true},
		{"idle", nil, 24 * time.Hour, false},
		{"kept alive for six days", []time.Duration{20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour}, time.Hour, true},
		{"kept alive past the absolute end", []time.Duration{20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour, 20 * time.Hour}, 9 * time.Hour, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			_, signed := f.join(t, "ada@example.com", domain.MemberOwner)
			ctx := context.Background()
			for i, d := range tc.steps {
				f.clock.Advance(d)
				if _, err := f.svc.Authenticate(ctx, signed.Token); err != nil {
					t.Fatalf("use %d: %v", i, err)
				}
			}
			f.clock.Advance(tc.then)
			p, err := f.svc.Authenticate(ctx, signed.Token)
			if tc.live {
				if err != nil || p.User.ID != signed.User.ID || p.Session.ID != signed.Session.ID {
					t.Fatalf("Authenticate = %+v, %v", p, err)
				}
				return
			}
			if !errors.Is(err, domain.ErrUnauthorized) {
				t.Fatalf("Authenticate = %v, want ErrUnauthorized", err)
			}
			if len(f.store.sessions) != 0 {
				t.Fatal("the expired session was not deleted")
			}
		})
	}
}

func TestSignInDeletesTheUsersEndedSessions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, old := f.join(t, "ada@example.com", domain.MemberOwner)
	_, other := f.join(t, "bob@example.com", domain.MemberOwner)
	f.clock.Advance(25 * time.Hour)
	fresh, err := f.svc.SignIn(context.Background(), account.SignInRequest{Email: "ada@example.com", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	f.store.mu.Lock()
	_, oldKept := f.store.sessions[domain.HashSecret(old.Token)]
	_, freshKept := f.store.sessions[domain.HashSecret(fresh.Token)]
	_, otherKept := f.store.sessions[domain.HashSecret(other.Token)]
	f.store.mu.Unlock()
	if oldKept || !freshKept || !otherKept {
		t.Fatalf("after sign-in: idle session kept %v, new kept %v, another user's kept %v; want false, true, true", oldKept, freshKept, otherKept)
	}
}

func TestAuthenticateWritesLastSeenAtMostOnceAMinute(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, signed := f.join(t, "ada@example.com", domain.MemberOwner)
	ctx := context.Background()
	for range 5 {
		f.clock.Advance(10 * time.Second)
		if _, err := f.svc.Authenticate(ctx, signed.Token); err != nil {
			t.Fatal(err)
		}
	}
	if f.store.touches != 0 {
		t.Fatalf("%d touches within 50 s, want 0", f.store.touches)
	}
	f.clock.Advance(20 * time.Second)
	p, err := f.svc.Authenticate(ctx, signed.Token)
	if err != nil || f.store.touches != 1 || !p.Session.LastSeenAt.Equal(f.clock.Now()) {
		t.Fatalf("after 70 s: touches %d, LastSeenAt %v, %v", f.store.touches, p.Session.LastSeenAt, err)
	}
}

func TestAuthenticateRefusesGarbage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	for _, token := range []string{"", "cs_", "cs_unknown", "key_abc", strings.Repeat("c", 1000)} {
		if _, err := f.svc.Authenticate(context.Background(), token); !errors.Is(err, domain.ErrUnauthorized) {
			t.Errorf("Authenticate(%q) = %v, want ErrUnauthorized", token, err)
		}
	}
}

func TestSignOutAndSignOutOthers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, a := f.join(t, "ada@example.com", domain.MemberOwner)
	ctx := context.Background()
	b, _ := f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: password})
	c, _ := f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: password})
	_, other := f.join(t, "bob@example.com", domain.MemberAgent)

	list, err := f.svc.Sessions(ctx, a.User.ID)
	if err != nil || len(list) != 3 {
		t.Fatalf("Sessions = %d, %v; want 3", len(list), err)
	}
	n, err := f.svc.SignOutOthers(ctx, b.Token)
	if err != nil || n != 2 {
		t.Fatalf("SignOutOthers = %d, %v; want 2", n, err)
	}
	for _, tok := range []string{a.Token, c.Token} {
		if _, err := f.svc.Authenticate(ctx, tok); !errors.Is(err, domain.ErrUnauthorized) {
			t.Fatalf("other session still works: %v", err)
		}
	}
	if _, err := f.svc.Authenticate(ctx, other.Token); err != nil {
		t.Fatalf("another user's session ended: %v", err)
	}
	if err := f.svc.SignOut(ctx, b.Token); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, b.Token); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("signed-out session still works: %v", err)
	}
	if err := f.svc.SignOut(ctx, b.Token); err != nil {
		t.Fatalf("signing out twice: %v", err)
	}
	if _, err := f.svc.SignOutOthers(ctx, b.Token); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("SignOutOthers with an ended session = %v, want ErrUnauthorized", err)
	}
}

func TestMemberHidesOtherWorkspaces(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, a := f.join(t, "ada@example.com", domain.MemberOwner)
	ctx := context.Background()
	_, errUnknown := f.svc.Member(ctx, a.User.ID, domain.NewID(domain.PrefixWorkspace))
	if !errors.Is(errUnknown, domain.ErrNotFound) || errUnknown.Error() != "workspace not found" {
		t.Fatalf("Member of an unknown workspace = %v", errUnknown)
	}
	ms, err := f.svc.Memberships(ctx, a.User.ID)
	if err != nil || len(ms) != 1 || ms[0].WorkspaceID != f.ws || ms[0].Role != domain.MemberOwner {
		t.Fatalf("Memberships = %+v, %v", ms, err)
	}
}

// roles of a workspace with two owners, an admin and an agent.
type team struct {
	owner, owner2, admin, agent domain.Member
}

func newTeam(t *testing.T, f *fixture) team {
	t.Helper()
	var tm team
	tm.owner, _ = f.join(t, "owner@example.com", domain.MemberOwner)
	tm.owner2, _ = f.join(t, "owner2@example.com", domain.MemberOwner)
	tm.admin, _ = f.join(t, "admin@example.com", domain.MemberAdmin)
	tm.agent, _ = f.join(t, "agent@example.com", domain.MemberAgent)
	return tm
}

func TestInviteRoleMatrix(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	tm := newTeam(t, f)
	cases := []struct {
		actor domain.Member
		role  domain.MemberRole
		want  error
	}{
		{tm.owner, domain.MemberOwner, nil},
		{tm.owner, domain.MemberAdmin, nil},
		{tm.owner, domain.MemberAgent, nil},
		{tm.admin, domain.MemberOwner, domain.ErrForbidden},
		{tm.admin, domain.MemberAdmin, nil},
		{tm.admin, domain.MemberAgent, nil},
		{tm.agent, domain.MemberAgent, domain.ErrForbidden},
		{tm.owner, "boss", domain.ErrInvalidInput},
	}
	for i, tc := range cases {
		inv, err := f.svc.Invite(context.Background(), tc.actor, account.InviteRequest{Email: "new" + string(rune('a'+i)) + "@example.com", Role: tc.role})
		if tc.want == nil {
			if err != nil || inv.Link == "" || inv.InvitedBy != tc.actor.UserID || inv.Role != tc.role || inv.WorkspaceID != f.ws {
				t.Errorf("%s invites %s: %+v, %v", tc.actor.Role, tc.role, inv, err)
			}
			continue
		}
		if !errors.Is(err, tc.want) {
			t.Errorf("%s invites %s: %v, want %v", tc.actor.Role, tc.role, err, tc.want)
		}
	}
	if _, err := f.svc.Invite(context.Background(), tm.owner, account.InviteRequest{Email: "not an email", Role: domain.MemberAgent}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("bad email: %v", err)
	}
	if _, err := f.svc.Invite(context.Background(), tm.owner, account.InviteRequest{Email: "admin@example.com", Role: domain.MemberAgent}); !errors.Is(err, domain.ErrConflict) {
		t.Errorf("inviting a member: %v, want ErrConflict", err)
	}
}

func TestChangeRoleAndRemoveMemberRoleMatrix(t *testing.T) {
	t.Parallel()
	type op func(f *fixture, actor domain.Member, target string) error
	change := func(role domain.MemberRole) op {
		return func(f *fixture, actor domain.Member, target string) error {
			m, err := f.svc.ChangeRole(context.Background(), actor, target, role)
			if err == nil && m.Role != role {
				return errors.New("role not changed")
			}
			return err
		}
	}
	remove := func(f *fixture, actor domain.Member, target string) error {
		return f.svc.RemoveMember(context.Background(), actor, target)
	}
	pick := func(tm team, who string) domain.Member {
		return map[string]domain.Member{"owner": tm.owner, "owner2": tm.owner2, "admin": tm.admin, "agent": tm.agent}[who]
	}
	cases := []struct {
		name          string
		actor, target string
		do            op
		want          error
	}{
		{"owner demotes an owner", "owner", "owner2", change(domain.MemberAdmin), nil},
		{"owner promotes the agent to owner", "owner", "agent", change(domain.MemberOwner), nil},
		{"owner removes an owner", "owner", "owner2", remove, nil},
		{"admin promotes the agent to admin", "admin", "agent", change(domain.MemberAdmin), nil},
		{"admin promotes the agent to owner", "admin", "agent", change(domain.MemberOwner), domain.ErrForbidden},
		{"admin demotes an owner", "admin", "owner", change(domain.MemberAgent), domain.ErrForbidden},
		{"admin removes an owner", "admin", "owner", remove, domain.ErrForbidden},
		{"admin removes the agent", "admin", "agent", remove, nil},
		{"agent removes the admin", "agent", "admin", remove, domain.ErrForbidden},
		{"agent promotes itself", "agent", "agent", change(domain.MemberAdmin), domain.ErrForbidden},
		{"unknown role", "owner", "agent", change("boss"), domain.ErrInvalidInput},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			tm := newTeam(t, f)
			err := tc.do(f, pick(tm, tc.actor), pick(tm, tc.target).UserID)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("unknown member", func(t *testing.T) {
		f := newFixture(t, false)
		tm := newTeam(t, f)
		if err := f.svc.RemoveMember(context.Background(), tm.owner, domain.NewID(domain.PrefixUser)); !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("got %v", err)
		}
	})
}

// Removing a member unassigns what they held and reports it as every
// change of assignee is reported: the report is asked for the actor's
// workspace before the write, and after it the deliveries written and the
// conversations as left are handed over to be scheduled and announced. A
// removal that fails reports nothing; a report that cannot be built stops
// the removal.
func TestRemoveMemberReportsUnassigned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	setup := func(t *testing.T) (*fixture, team, []domain.Conversation) {
		f := newFixture(t, false)
		tm := newTeam(t, f)
		convs := []domain.Conversation{
			{ID: "ses_agent1", WorkspaceID: f.ws, AssigneeID: tm.agent.UserID, Status: domain.StatusHuman},
			{ID: "ses_admin", WorkspaceID: f.ws, AssigneeID: tm.admin.UserID, Status: domain.StatusHuman},
			{ID: "ses_agent2", WorkspaceID: f.ws, AssigneeID: tm.agent.UserID, Status: domain.StatusHandoffRequested},
			{ID: "ses_elsewhere", WorkspaceID: domain.NewID(domain.PrefixWorkspace), AssigneeID: tm.agent.UserID, Status: domain.StatusHuman},
		}
		f.store.mu.Lock()
		f.store.conversations = slices.Clone(convs)
		f.store.mu.Unlock()
		return f, tm, convs
	}
	t.Run("removed", func(t *testing.T) {
		f, tm, _ := setup(t)
		if err := f.svc.RemoveMember(ctx, tm.admin, tm.agent.UserID); err != nil {
			t.Fatal(err)
		}
		a := f.assignees
		if !slices.Equal(a.reportsFor, []string{f.ws}) || len(a.reassigned) != 1 {
			t.Fatalf("reports asked for %v, %d announcements; want one of each", a.reportsFor, len(a.reassigned))
		}
		got := a.reassigned[0]
		var ids []string
		for _, c := range got.convs {
			if c.AssigneeID != "" {
				t.Errorf("announced %s still assigned to %q", c.ID, c.AssigneeID)
			}
			ids = append(ids, c.ID)
		}
		if !slices.Equal(ids, []string{"ses_agent1", "ses_agent2"}) {
			t.Errorf("announced %v, want the agent's conversations of this workspace", ids)
		}
		if len(got.deliveries) != 2 || got.deliveries[0].ConversationID != "ses_agent1" || got.deliveries[0].Type != domain.EventConversationAssigned {
			t.Errorf("announced deliveries %+v, want the ones the report wrote", got.deliveries)
		}
	})
	t.Run("refused", func(t *testing.T) {
		f, tm, convs := setup(t)
		if err := f.svc.RemoveMember(ctx, tm.admin, tm.owner.UserID); !errors.Is(err, domain.ErrForbidden) {
			t.Fatalf("admin removes an owner: %v", err)
		}
		if len(f.assignees.reassigned) != 0 || !slices.Equal(f.store.conversations, convs) {
			t.Fatalf("a refused removal announced %d changes or unassigned something", len(f.assignees.reassigned))
		}
	})
	t.Run("no report", func(t *testing.T) {
		f, tm, convs := setup(t)
		f.assignees.err = domain.ErrUnavailable
		if err := f.svc.RemoveMember(ctx, tm.admin, tm.agent.UserID); !errors.Is(err, domain.ErrUnavailable) {
			t.Fatalf("got %v, want the report's error", err)
		}
		if _, err := f.store.GetMember(ctx, f.ws, tm.agent.UserID); err != nil || !slices.Equal(f.store.conversations, convs) {
			t.Fatalf("the member was removed (%v) or conversations unassigned without their report", err)
		}
	})
}

func TestLastOwner(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	owner, _ := f.join(t, "owner@example.com", domain.MemberOwner)
	ctx := context.Background()
	if _, err := f.svc.ChangeRole(ctx, owner, owner.UserID, domain.MemberAdmin); !errors.Is(err, domain.ErrConflict) ||
		!strings.Contains(err.Error(), "at least one owner") {
		t.Fatalf("demoting the last owner: %v", err)
	}
	if err := f.svc.RemoveMember(ctx, owner, owner.UserID); !errors.Is(err, domain.ErrLastOwner) {
		t.Fatalf("removing the last owner: %v", err)
	}
	// With a second owner, the first may step down.
	second, _ := f.join(t, "second@example.com", domain.MemberOwner)
	if _, err := f.svc.ChangeRole(ctx, owner, owner.UserID, domain.MemberAdmin); err != nil {
		t.Fatalf("stepping down with another owner: %v", err)
	}
	if err := f.svc.RemoveMember(ctx, second, second.UserID); !errors.Is(err, domain.ErrLastOwner) {
		t.Fatalf("the remaining owner left: %v", err)
	}
}

func TestInvitationLinks(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	owner, _ := f.join(t, "owner@example.com", domain.MemberOwner)
	ctx := context.Background()

	inv, err := f.svc.Invite(ctx, owner, account.InviteRequest{Email: "New@Example.com", Role: domain.MemberAgent})
	if err != nil || !inv.Emailed || !strings.HasPrefix(inv.Link, "https://chat.example.com/console/invitations/lt_") {
		t.Fatalf("Invite = %+v, %v", inv, err)
	}
	mail, err := f.mailer.last()
	if err != nil || mail.To != "new@example.com" || !strings.Contains(mail.Text, inv.Link) {
		t.Fatalf("mail = %+v, %v", mail, err)
	}
	// Re-inviting replaces the link.
	again, err := f.svc.Invite(ctx, owner, account.InviteRequest{Email: "new@example.com", Role: domain.MemberAdmin})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.InvitationByToken(ctx, tokenOf(t, inv.Link)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the replaced link still works: %v", err)
	}
	pending, _ := f.svc.Invitations(ctx, owner)
	if len(pending) != 1 || pending[0].ID != again.ID || pending[0].Link != "" {
		t.Fatalf("Invitations = %+v", pending)
	}
	shown, err := f.svc.InvitationByToken(ctx, tokenOf(t, again.Link))
	if err != nil || shown.Email != "new@example.com" || shown.Role != domain.MemberAdmin || shown.ForExistingUser {
		t.Fatalf("InvitationByToken = %+v, %v", shown, err)
	}

	// Bad input to accept: a short password, no name.
	tok := tokenOf(t, again.Link)
	if _, err := f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: tok, Name: "New", Password: "short"}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("short password: %v", err)
	}
	if _, err := f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: tok, Name: " ", Password: password}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("no name: %v", err)
	}
	signed, err := f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: tok, Name: "New Person", Password: password})
	if err != nil || signed.User.Email != "new@example.com" || signed.Token == "" {
		t.Fatalf("AcceptInvitation = %+v, %v", signed, err)
	}
	if m, err := f.svc.Member(ctx, signed.User.ID, f.ws); err != nil || m.Role != domain.MemberAdmin {
		t.Fatalf("membership = %+v, %v", m, err)
	}
	// Used twice: the same error as an unknown link.
	_, err = f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: tok, Name: "New Person", Password: password})
	_, errUnknown := f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: domain.NewSecret(domain.PrefixLinkToken), Name: "X", Password: password})
	if !errors.Is(err, domain.ErrNotFound) || errUnknown == nil || err.Error() != errUnknown.Error() {
		t.Fatalf("second use = %v, unknown = %v; want the same ErrNotFound", err, errUnknown)
	}

	// Expired.
	late, _ := f.svc.Invite(ctx, owner, account.InviteRequest{Email: "late@example.com", Role: domain.MemberAgent})
	f.clock.Advance(7 * 24 * time.Hour)
	if _, err := f.svc.InvitationByToken(ctx, tokenOf(t, late.Link)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("expired link shown: %v", err)
	}
	if _, err := f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: tokenOf(t, late.Link), Name: "Late", Password: password}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("expired link accepted: %v", err)
	}
}

func TestAcceptInvitationByAnExistingUserNeedsTheirPassword(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	owner, _ := f.join(t, "owner@example.com", domain.MemberOwner)
	ctx := context.Background()
	// ada belongs to another workspace first.
	other := f.ws
	f.ws = domain.NewID(domain.PrefixWorkspace)
	_, ada := f.join(t, "ada@example.com", domain.MemberOwner)
	f.ws = other

	inv, err := f.svc.Invite(ctx, owner, account.InviteRequest{Email: "ada@example.com", Role: domain.MemberAgent})
	if err != nil || inv.Emailed {
		t.Fatalf("Invite = %+v, %v (no mailer: Emailed must be false)", inv, err)
	}
	tok := tokenOf(t, inv.Link)
	if shown, err := f.svc.InvitationByToken(ctx, tok); err != nil || !shown.ForExistingUser {
		t.Fatalf("InvitationByToken = %+v, %v", shown, err)
	}
	if _, err := f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: tok, Password: "somebody else's"}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("wrong password: %v", err)
	}
	signed, err := f.svc.AcceptInvitation(ctx, account.AcceptRequest{Token: tok, Password: password, Name: "ignored"})
	if err != nil || signed.User.ID != ada.User.ID || signed.User.Name != ada.User.Name {
		t.Fatalf("AcceptInvitation = %+v, %v", signed, err)
	}
	ms, _ := f.svc.Memberships(ctx, ada.User.ID)
	if len(ms) != 2 {
		t.Fatalf("ada has %d memberships, want 2", len(ms))
	}
}

func TestInviteSurvivesAMailFailure(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	owner, _ := f.join(t, "owner@example.com", domain.MemberOwner)
	f.mailer.err = domain.Unavailable("smtp", errors.New("connection refused"))
	inv, err := f.svc.Invite(context.Background(), owner, account.InviteRequest{Email: "new@example.com", Role: domain.MemberAgent})
	if err != nil || inv.Emailed || inv.Link == "" {
		t.Fatalf("Invite = %+v, %v; want the link, not emailed", inv, err)
	}
	if _, err := f.svc.InvitationByToken(context.Background(), tokenOf(t, inv.Link)); err != nil {
		t.Fatalf("the link does not work: %v", err)
	}
}

func TestRevokeInvitation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	tm := newTeam(t, f)
	ctx := context.Background()
	toOwner, _ := f.svc.Invite(ctx, tm.owner, account.InviteRequest{Email: "boss@example.com", Role: domain.MemberOwner})
	toAgent, _ := f.svc.Invite(ctx, tm.admin, account.InviteRequest{Email: "help@example.com", Role: domain.MemberAgent})
	if err := f.svc.RevokeInvitation(ctx, tm.admin, toOwner.ID); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("admin revokes an owner invitation: %v", err)
	}
	if err := f.svc.RevokeInvitation(ctx, tm.agent, toAgent.ID); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("agent revokes: %v", err)
	}
	if err := f.svc.RevokeInvitation(ctx, tm.admin, toAgent.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.InvitationByToken(ctx, tokenOf(t, toAgent.Link)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("revoked link still works: %v", err)
	}
	if err := f.svc.RevokeInvitation(ctx, tm.admin, toAgent.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("revoking twice: %v", err)
	}
}

func TestPasswordReset(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	_, ada := f.join(t, "ada@example.com", domain.MemberOwner)
	ctx := context.Background()

	// Unknown and known emails answer the same; only the known one gets mail.
	f.mailer.reset()
	if err := f.svc.RequestReset(ctx, "nobody@example.com", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.mailer.wait(200 * time.Millisecond); err == nil {
		t.Fatal("mail sent for an unknown email")
	}
	if err := f.svc.RequestReset(ctx, "not-an-email", "192.0.2.1"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("bad email: %v", err)
	}
	if err := f.svc.RequestReset(ctx, "ADA@example.com", "192.0.2.1"); err != nil {
		t.Fatal(err)
	}
	mail, err := f.mailer.wait(5 * time.Second)
	if err != nil || mail.To != "ada@example.com" {
		t.Fatalf("mail = %+v, %v", mail, err)
	}
	i := strings.Index(mail.Text, "https://chat.example.com/console/reset/")
	if i < 0 {
		t.Fatalf("no link in %q", mail.Text)
	}
	link := strings.Fields(mail.Text[i:])[0]
	tok := tokenOf(t, link)

	if err := f.svc.ResetPassword(ctx, account.ResetRequest{Token: tok, Password: "short"}); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("short password: %v", err)
	}
	if err := f.svc.ResetPassword(ctx, account.ResetRequest{Token: tok, Password: "a brand new password"}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, ada.Token); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("a session survived the reset: %v", err)
	}
	if _, err := f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: "a brand new password"}); err != nil {
		t.Fatalf("new password: %v", err)
	}
	if _, err := f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: password}); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("old password still works: %v", err)
	}
	if err := f.svc.ResetPassword(ctx, account.ResetRequest{Token: tok, Password: "yet another password"}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("second use: %v", err)
	}

	// The operator's link expires after an hour.
	opLink, err := f.svc.ResetLink(ctx, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(time.Hour)
	if err := f.svc.ResetPassword(ctx, account.ResetRequest{Token: tokenOf(t, opLink), Password: "yet another password"}); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("expired link: %v", err)
	}
	if _, err := f.svc.ResetLink(ctx, "nobody@example.com"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("ResetLink of an unknown email: %v", err)
	}
}

func TestRequestResetIsThrottled(t *testing.T) {
	t.Parallel()
	f := newFixture(t, true)
	f.limiter.limit = 3
	for range 3 {
		if err := f.svc.RequestReset(context.Background(), "ada@example.com", "192.0.2.1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.svc.RequestReset(context.Background(), "ada@example.com", "192.0.2.1"); !errors.Is(err, domain.ErrRateLimited) {
		t.Fatalf("fourth request: %v", err)
	}
}

func TestChangePassword(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	_, a := f.join(t, "ada@example.com", domain.MemberOwner)
	ctx := context.Background()
	b, _ := f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: password})
	p, err := f.svc.Authenticate(ctx, a.Token)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.svc.ChangePassword(ctx, p, "wrong current", "a brand new password"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("wrong current: %v", err)
	}
	if err := f.svc.ChangePassword(ctx, p, password, "short"); !errors.Is(err, domain.ErrInvalidInput) {
		t.Fatalf("short new: %v", err)
	}
	if err := f.svc.ChangePassword(ctx, p, password, "a brand new password"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Authenticate(ctx, a.Token); err != nil {
		t.Fatalf("this session ended: %v", err)
	}
	if _, err := f.svc.Authenticate(ctx, b.Token); !errors.Is(err, domain.ErrUnauthorized) {
		t.Fatalf("the other session survived: %v", err)
	}
}

func TestConcurrentAcceptsUseAnInvitationOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t, false)
	owner, _ := f.join(t, "owner@example.com", domain.MemberOwner)
	inv, _ := f.svc.Invite(context.Background(), owner, account.InviteRequest{Email: "new@example.com", Role: domain.MemberAgent})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			_, errs[i] = f.svc.AcceptInvitation(context.Background(), account.AcceptRequest{Token: tokenOf(t, inv.Link), Name: "N", Password: password})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if !errors.Is(err, domain.ErrNotFound) && !errors.Is(err, domain.ErrConflict) {
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d accepts succeeded, want 1", ok)
	}
}

// An unknown email costs the same hashing work as a wrong password, so
// response times do not tell which emails have accounts. Without the dummy
// hash the unknown email would answer hundreds of times faster.
func TestSignInTakesComparableTimeForUnknownEmailAndWrongPassword(t *testing.T) {
	f := newFixture(t, false)
	_, _ = f.join(t, "ada@example.com", domain.MemberOwner)
	// Re-create the service with costs large enough to dominate the timing.
	svc, err := account.NewService(account.Deps{Users: f.store, Members: f.store, Sessions: f.store, Invitations: f.store,
		Resets: f.store, Limiter: f.limiter, Clock: f.clock}, account.Options{BaseURL: "https://x.example",
		Argon2: account.Argon2Params{Time: 1, MemoryKiB: 4096, Threads: 1, SaltLen: 16, KeyLen: 32}})
	if err != nil {
		t.Fatal(err)
	}
	// ada's hash has the cheap test costs; give her one with these.
	signed, _ := f.svc.SignIn(context.Background(), account.SignInRequest{Email: "ada@example.com", Password: password})
	if err := svc.ChangePassword(context.Background(), account.Principal{User: signed.User, Session: signed.Session}, password, password+"!"); err != nil {
		t.Fatal(err)
	}
	// Interleaved, so that load from other processes falls on both alike.
	var wrongs, unknowns []time.Duration
	for range 9 {
		for _, email := range []string{"ada@example.com", "nobody@example.com"} {
			start := time.Now()
			_, err := svc.SignIn(context.Background(), account.SignInRequest{Email: email, Password: "not the password"})
			d := time.Since(start)
			if !errors.Is(err, domain.ErrUnauthorized) {
				t.Fatalf("SignIn(%s) = %v", email, err)
			}
			if email == "ada@example.com" {
				wrongs = append(wrongs, d)
			} else {
				unknowns = append(unknowns, d)
			}
		}
	}
	slices.Sort(wrongs)
	slices.Sort(unknowns)
	wrong, unknown := wrongs[len(wrongs)/2], unknowns[len(unknowns)/2]
	if ratio := float64(unknown) / float64(wrong); ratio < 0.33 || ratio > 3 {
		t.Fatalf("unknown email %v, wrong password %v: the difference reveals which emails exist", unknown, wrong)
	}
	t.Logf("median sign-in: wrong password %v, unknown email %v", wrong, unknown)
}

func TestConfirmPassword(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		user     func(f *fixture, ada domain.Member) string
		password string
		limit    int
		tries    int
		want     error
	}{
		{name: "right password", user: func(_ *fixture, ada domain.Member) string { return ada.UserID }, password: password, tries: 1},
		{name: "wrong password", user: func(_ *fixture, ada domain.Member) string { return ada.UserID }, password: "not the password", tries: 1, want: domain.ErrUnauthorized},
		{name: "empty password", user: func(_ *fixture, ada domain.Member) string { return ada.UserID }, password: "", tries: 1, want: domain.ErrUnauthorized},
		{name: "unknown user", user: func(*fixture, domain.Member) string { return domain.NewID(domain.PrefixUser) }, password: password, tries: 1, want: domain.ErrUnauthorized},
		{name: "throttled after the budget, even with the right password", user: func(_ *fixture, ada domain.Member) string { return ada.UserID }, password: password, limit: 2, tries: 3, want: domain.ErrRateLimited},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, false)
			ada, _ := f.join(t, "ada@example.com", domain.MemberOwner)
			f.limiter.limit = tc.limit
			userID := tc.user(f, ada)
			var err error
			for range tc.tries {
				err = f.svc.ConfirmPassword(context.Background(), userID, tc.password)
			}
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("ConfirmPassword = %v, want %v", err, tc.want)
			}
			var rl *domain.RateLimitError
			if tc.want == domain.ErrRateLimited && (!errors.As(err, &rl) || rl.RetryAfterSeconds < 1) {
				t.Fatalf("throttled without a retry time: %#v", err)
			}
		})
	}
}
