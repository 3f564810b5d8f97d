package postgres_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres"
	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func newUser(t *testing.T, store *postgres.Store, email string) domain.User {
	t.Helper()
	u := domain.User{ID: domain.NewID(domain.PrefixUser), Email: email, Name: "Person " + email,
		PasswordHash: "$argon2id$v=19$m=64,t=1,p=1$c2FsdA$a2V5", CreatedAt: t0, UpdatedAt: t0}
	if err := store.CreateUser(ctxT(t), u); err != nil {
		t.Fatalf("CreateUser: %v", err)
	}
	return u
}

// addMember makes the user a member through an accepted invitation, the
// only way the store creates memberships.
func addMember(t *testing.T, store *postgres.Store, workspaceID string, u domain.User, role domain.MemberRole) domain.Member {
	t.Helper()
	inv := newInvitation(t, store, workspaceID, u.Email, role, t0.Add(time.Hour))
	m, err := store.AcceptInvitation(ctxT(t), inv.TokenHash, u, false, t0)
	if err != nil {
		t.Fatalf("AcceptInvitation: %v", err)
	}
	return m
}

func newInvitation(t *testing.T, store *postgres.Store, workspaceID, email string, role domain.MemberRole, expires time.Time) domain.Invitation {
	t.Helper()
	inv := domain.Invitation{ID: domain.NewID(domain.PrefixInvitation), WorkspaceID: workspaceID, Email: email, Role: role,
		TokenHash: domain.HashSecret(domain.NewSecret(domain.PrefixLinkToken)), CreatedAt: t0, ExpiresAt: expires}
	if err := store.CreateInvitation(ctxT(t), inv); err != nil {
		t.Fatalf("CreateInvitation: %v", err)
	}
	return inv
}

func TestUsers(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	u := newUser(t, store, "ada@example.com")

	got, err := store.GetUser(ctx, u.ID)
	if err != nil || got.Email != u.Email || got.PasswordHash != u.PasswordHash || !got.CreatedAt.Equal(micro(t0)) {
		t.Fatalf("GetUser = %+v, %v", got, err)
	}
	if got, err := store.FindUserByEmail(ctx, "ada@example.com"); err != nil || got.ID != u.ID {
		t.Fatalf("FindUserByEmail = %+v, %v", got, err)
	}
	dup := u
	dup.ID = domain.NewID(domain.PrefixUser)
	if err := store.CreateUser(ctx, dup); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("duplicate email: %v, want ErrConflict", err)
	}
	for name, err := range map[string]error{
		"GetUser":         func() error { _, err := store.GetUser(ctx, domain.NewID(domain.PrefixUser)); return err }(),
		"FindUserByEmail": func() error { _, err := store.FindUserByEmail(ctx, "nobody@example.com"); return err }(),
		"SetPassword":     store.SetPassword(ctx, domain.NewID(domain.PrefixUser), "h", "", t0),
	} {
		if !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s of an unknown user: %v, want ErrNotFound", name, err)
		}
	}
}

func TestConsoleSessions(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	u := newUser(t, store, "ada@example.com")
	other := newUser(t, store, "bob@example.com")

	mk := func(userID string, seen time.Time) domain.ConsoleSession {
		cs := domain.ConsoleSession{ID: domain.NewID(domain.PrefixConsoleSession), UserID: userID,
			TokenHash: domain.HashSecret(domain.NewSecret(domain.PrefixConsoleToken)), CSRFToken: domain.NewSecret(""),
			IP: "203.0.113.1", UserAgent: "Firefox", CreatedAt: t0, LastSeenAt: seen, ExpiresAt: t0.Add(7 * 24 * time.Hour)}
		if err := store.CreateConsoleSession(ctx, cs); err != nil {
			t.Fatalf("CreateConsoleSession: %v", err)
		}
		return cs
	}
	a, b, c := mk(u.ID, t0), mk(u.ID, t0.Add(time.Minute)), mk(u.ID, t0.Add(2*time.Minute))
	theirs := mk(other.ID, t0)

	got, err := store.FindConsoleSession(ctx, a.TokenHash)
	if err != nil || got.ID != a.ID || got.CSRFToken != a.CSRFToken || got.UserAgent != "Firefox" || !got.ExpiresAt.Equal(micro(a.ExpiresAt)) {
		t.Fatalf("FindConsoleSession = %+v, %v", got, err)
	}
	if _, err := store.FindConsoleSession(ctx, domain.HashSecret("cs_nope")); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("unknown hash: %v", err)
	}
	bad := a
	bad.ID, bad.TokenHash, bad.UserID = domain.NewID(domain.PrefixConsoleSession), "other", domain.NewID(domain.PrefixUser)
	if err := store.CreateConsoleSession(ctx, bad); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("session of an unknown user: %v", err)
	}

	// Touch writes only when the stored time is over a minute old.
	if err := store.TouchConsoleSession(ctx, a.ID, t0.Add(30*time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.FindConsoleSession(ctx, a.TokenHash); !got.LastSeenAt.Equal(micro(t0)) {
		t.Fatalf("touched within a minute: %v", got.LastSeenAt)
	}
	if err := store.TouchConsoleSession(ctx, a.ID, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if got, _ := store.FindConsoleSession(ctx, a.TokenHash); !got.LastSeenAt.Equal(micro(t0.Add(5 * time.Minute))) {
		t.Fatalf("not touched after five minutes: %v", got.LastSeenAt)
	}

	list, err := store.ListConsoleSessions(ctx, u.ID)
	if err != nil || len(list) != 3 || list[0].ID != a.ID || list[1].ID != c.ID || list[2].ID != b.ID {
		t.Fatalf("ListConsoleSessions = %+v, %v; want a, c, b", list, err)
	}
	if n, err := store.DeleteConsoleSessions(ctx, u.ID, "", c.ID, theirs.ID); err != nil || n != 1 {
		t.Fatalf("delete one (and another user's id) = %d, %v; want 1", n, err)
	}
	if n, err := store.DeleteConsoleSessions(ctx, u.ID, a.ID); err != nil || n != 1 {
		t.Fatalf("delete all but a = %d, %v; want 1 (b)", n, err)
	}
	if _, err := store.FindConsoleSession(ctx, theirs.TokenHash); err != nil {
		t.Fatalf("another user's session was deleted: %v", err)
	}
	if err := store.SetPassword(ctx, u.ID, "new-hash", "", t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if list, _ := store.ListConsoleSessions(ctx, u.ID); len(list) != 0 {
		t.Fatalf("SetPassword left %d sessions", len(list))
	}
	if got, _ := store.GetUser(ctx, u.ID); got.PasswordHash != "new-hash" {
		t.Fatalf("password hash = %q", got.PasswordHash)
	}
}

func TestMembersAndTheLastOwner(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	ws2, _, _ := newWorkspace(t, store, domain.PlanFree)
	ada, bob := newUser(t, store, "ada@example.com"), newUser(t, store, "bob@example.com")
	addMember(t, store, ws.ID, ada, domain.MemberOwner)
	addMember(t, store, ws.ID, bob, domain.MemberAgent)
	addMember(t, store, ws2.ID, bob, domain.MemberAdmin)

	ms, err := store.Memberships(ctx, bob.ID)
	if err != nil || len(ms) != 2 || ms[0].Email != "bob@example.com" || ms[0].Name == "" {
		t.Fatalf("Memberships = %+v, %v", ms, err)
	}
	members, err := store.ListMembers(ctx, ws.ID)
	if err != nil || len(members) != 2 {
		t.Fatalf("ListMembers = %+v, %v", members, err)
	}
	if _, err := store.GetMember(ctx, ws2.ID, ada.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("GetMember of a non-member: %v", err)
	}

	if _, err := store.ChangeMemberRole(ctx, ws.ID, ada.ID, domain.MemberAdmin, nil); !errors.Is(err, domain.ErrLastOwner) {
		t.Fatalf("demoting the last owner: %v", err)
	}
	if _, _, err := store.RemoveMember(ctx, ws.ID, ada.ID, nil, nil); !errors.Is(err, domain.ErrLastOwner) {
		t.Fatalf("removing the last owner: %v", err)
	}
	refuse := func(domain.Member) error { return &domain.ForbiddenError{Reason: "no"} }
	if _, err := store.ChangeMemberRole(ctx, ws.ID, bob.ID, domain.MemberAdmin, refuse); !errors.Is(err, domain.ErrForbidden) {
		t.Fatalf("a refusing allow: %v", err)
	}
	if m, _ := store.GetMember(ctx, ws.ID, bob.ID); m.Role != domain.MemberAgent {
		t.Fatalf("a refused change was written: %+v", m)
	}
	m, err := store.ChangeMemberRole(ctx, ws.ID, bob.ID, domain.MemberOwner, nil)
	if err != nil || m.Role != domain.MemberOwner || m.Email != "bob@example.com" {
		t.Fatalf("promote = %+v, %v", m, err)
	}
	if _, err := store.ChangeMemberRole(ctx, ws.ID, ada.ID, domain.MemberAgent, nil); err != nil {
		t.Fatalf("demoting one of two owners: %v", err)
	}
	if _, _, err := store.RemoveMember(ctx, ws.ID, ada.ID, nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.RemoveMember(ctx, ws.ID, ada.ID, nil, nil); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("removing twice: %v", err)
	}
}

// Two owners each demote (or remove) the other at the same moment: exactly
// one may win, or the workspace would be left with no owner.
func TestConcurrentDemotionsKeepAnOwner(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	for round := range 10 {
		ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
		a, b := newUser(t, store, domain.NewID("a")+"@example.com"), newUser(t, store, domain.NewID("b")+"@example.com")
		addMember(t, store, ws.ID, a, domain.MemberOwner)
		addMember(t, store, ws.ID, b, domain.MemberOwner)
		var wg sync.WaitGroup
		errs := make([]error, 2)
		start := make(chan struct{})
		for i, u := range []domain.User{a, b} {
			wg.Go(func() {
				<-start
				if round%2 == 0 {
					_, errs[i] = store.ChangeMemberRole(ctx, ws.ID, u.ID, domain.MemberAdmin, nil)
				} else {
					_, _, errs[i] = store.RemoveMember(ctx, ws.ID, u.ID, nil, nil)
				}
			})
		}
		close(start)
		wg.Wait()
		won, lost := 0, 0
		for _, err := range errs {
			switch {
			case err == nil:
				won++
			case errors.Is(err, domain.ErrLastOwner):
				lost++
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		var owners int64
		if err := pg.Gorm.Raw(`SELECT count(*) FROM memberships WHERE workspace_id = ? AND role = 'owner'`, ws.ID).Scan(&owners).Error; err != nil {
			t.Fatal(err)
		}
		if won != 1 || lost != 1 || owners != 1 {
			t.Fatalf("round %d: %d won, %d refused, %d owners left; want 1, 1, 1", round, won, lost, owners)
		}
	}
}

func TestInvitations(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)

	first := newInvitation(t, store, ws.ID, "new@example.com", domain.MemberAgent, t0.Add(time.Hour))
	second := newInvitation(t, store, ws.ID, "new@example.com", domain.MemberAdmin, t0.Add(time.Hour))
	if _, err := store.FindInvitation(ctx, first.TokenHash); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the replaced invitation is still stored: %v", err)
	}
	pending, err := store.PendingInvitations(ctx, ws.ID)
	if err != nil || len(pending) != 1 || pending[0].ID != second.ID || pending[0].Role != domain.MemberAdmin || pending[0].InvitedBy != "" {
		t.Fatalf("PendingInvitations = %+v, %v", pending, err)
	}
	orphan := second
	orphan.ID, orphan.TokenHash, orphan.WorkspaceID = domain.NewID(domain.PrefixInvitation), "x", domain.NewID(domain.PrefixWorkspace)
	if err := store.CreateInvitation(ctx, orphan); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("invitation to an unknown workspace: %v", err)
	}

	// A new user whose email is taken: nothing is written and the link still works.
	taken := newUser(t, store, "taken@example.com")
	clash := domain.User{ID: domain.NewID(domain.PrefixUser), Email: taken.Email, Name: "Clash", CreatedAt: t0, UpdatedAt: t0}
	if _, err := store.AcceptInvitation(ctx, second.TokenHash, clash, true, t0); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("accept with a taken email: %v", err)
	}
	if inv, err := store.FindInvitation(ctx, second.TokenHash); err != nil || !inv.AcceptedAt.IsZero() {
		t.Fatalf("the failed accept used the invitation: %+v, %v", inv, err)
	}

	// Racing accepts: one wins, the others find it used.
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() {
			u := domain.User{ID: domain.NewID(domain.PrefixUser), Email: "new@example.com", Name: "New", CreatedAt: t0, UpdatedAt: t0}
			_, errs[i] = store.AcceptInvitation(ctx, second.TokenHash, u, true, t0.Add(time.Minute))
		})
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		} else if !errors.Is(err, domain.ErrNotFound) {
			t.Fatalf("racing accept: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d accepts won, want 1", wins)
	}
	u, err := store.FindUserByEmail(ctx, "new@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := store.GetMember(ctx, ws.ID, u.ID); err != nil || m.Role != domain.MemberAdmin {
		t.Fatalf("member = %+v, %v", m, err)
	}
	if inv, _ := store.FindInvitation(ctx, second.TokenHash); !inv.AcceptedAt.Equal(micro(t0.Add(time.Minute))) {
		t.Fatalf("AcceptedAt = %v", inv.AcceptedAt)
	}
	if pending, _ := store.PendingInvitations(ctx, ws.ID); len(pending) != 0 {
		t.Fatalf("accepted invitation still pending: %+v", pending)
	}

	// Expired; then revoked.
	late := newInvitation(t, store, ws.ID, "late@example.com", domain.MemberAgent, t0.Add(time.Hour))
	if _, err := store.AcceptInvitation(ctx, late.TokenHash, taken, false, t0.Add(time.Hour)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("accept at expiry: %v", err)
	}
	if err := store.DeleteInvitation(ctx, ws.ID, late.ID); err != nil {
		t.Fatal(err)
	}
	if err := store.DeleteInvitation(ctx, ws.ID, late.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	if err := store.DeleteInvitation(ctx, ws.ID, second.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("deleting an accepted invitation: %v", err)
	}

	// An existing member accepting again keeps their role.
	again := newInvitation(t, store, ws.ID, "new@example.com", domain.MemberAgent, t0.Add(time.Hour))
	if m, err := store.AcceptInvitation(ctx, again.TokenHash, u, false, t0); err != nil || m.Role != domain.MemberAdmin {
		t.Fatalf("re-accept = %+v, %v; want the admin role kept", m, err)
	}
}

func TestPasswordResets(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	u := newUser(t, store, "ada@example.com")
	cs := domain.ConsoleSession{ID: domain.NewID(domain.PrefixConsoleSession), UserID: u.ID, TokenHash: "h1", CSRFToken: "c",
		CreatedAt: t0, LastSeenAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := store.CreateConsoleSession(ctx, cs); err != nil {
		t.Fatal(err)
	}
	r := domain.PasswordReset{ID: domain.NewID(domain.PrefixReset), UserID: u.ID, TokenHash: domain.HashSecret("lt_x"),
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := store.CreateReset(ctx, r); err != nil {
		t.Fatal(err)
	}
	bad := r
	bad.ID, bad.TokenHash, bad.UserID = domain.NewID(domain.PrefixReset), "y", domain.NewID(domain.PrefixUser)
	if err := store.CreateReset(ctx, bad); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("reset of an unknown user: %v", err)
	}

	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Go(func() { _, errs[i] = store.UseReset(ctx, r.TokenHash, "new-hash", t0.Add(time.Minute)) })
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		if err == nil {
			wins++
		} else if !errors.Is(err, domain.ErrNotFound) {
			t.Fatal(err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d uses won, want 1", wins)
	}
	if got, _ := store.GetUser(ctx, u.ID); got.PasswordHash != "new-hash" {
		t.Fatalf("password hash = %q", got.PasswordHash)
	}
	if _, err := store.FindConsoleSession(ctx, "h1"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("a session survived the reset: %v", err)
	}

	expired := domain.PasswordReset{ID: domain.NewID(domain.PrefixReset), UserID: u.ID, TokenHash: domain.HashSecret("lt_y"),
		CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := store.CreateReset(ctx, expired); err != nil {
		t.Fatal(err)
	}
	if _, err := store.UseReset(ctx, expired.TokenHash, "h", t0.Add(time.Hour)); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("expired reset: %v", err)
	}
}
