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

// Sweeping deletes exactly the ended sessions and the old links, when
// several pods sweep at once in small batches, and sweeping again deletes
// nothing more.
func TestSweepEndedSessionsAndOldLinks(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanFree)
	u := newUser(t, store, "ada@example.com")
	addMember(t, store, ws.ID, u, domain.MemberOwner)

	now := t0.Add(30 * 24 * time.Hour)
	const idle = 24 * time.Hour
	sessions := map[string]bool{} // id: kept
	mkSession := func(seen, expires time.Time, kept bool) {
		cs := domain.ConsoleSession{ID: domain.NewID(domain.PrefixConsoleSession), UserID: u.ID,
			TokenHash: domain.HashSecret(domain.NewSecret(domain.PrefixConsoleToken)), CSRFToken: "c",
			CreatedAt: t0, LastSeenAt: seen, ExpiresAt: expires}
		if err := store.CreateConsoleSession(ctx, cs); err != nil {
			t.Fatal(err)
		}
		sessions[cs.ID] = kept
	}
	for range 12 {
		mkSession(now.Add(-time.Hour), now.Add(time.Hour), true)          // live
		mkSession(now.Add(-idle-time.Minute), now.Add(time.Hour), false)  // idle too long
		mkSession(now.Add(-time.Minute), now.Add(-time.Second), false)    // past its absolute end
		mkSession(now.Add(-time.Minute), now, false)                      // ends right now
		mkSession(now.Add(-idle+time.Minute), now.Add(time.Minute), true) // nearly idle
	}

	retention := 7 * 24 * time.Hour
	before := now.Add(-retention)
	invitations := map[string]bool{}
	mkInvitation := func(expires time.Time, acceptedAt *time.Time, kept bool) {
		email := domain.NewID("x") + "@example.com"
		inv := newInvitation(t, store, ws.ID, email, domain.MemberAgent, expires)
		if acceptedAt != nil {
			if err := pg.Gorm.Exec(`UPDATE invitations SET accepted_at = ? WHERE id = ?`, *acceptedAt, inv.ID).Error; err != nil {
				t.Fatal(err)
			}
		}
		invitations[inv.ID] = kept
	}
	// The invitation addMember accepted at t0 expired long before the
	// retention's start.
	var accepted []string
	if err := pg.Gorm.Raw(`SELECT id FROM invitations`).Scan(&accepted).Error; err != nil || len(accepted) != 1 {
		t.Fatalf("invitations before: %v, %v", accepted, err)
	}
	invitations[accepted[0]] = false
	old, recent := before.Add(-time.Hour), before.Add(time.Hour)
	for range 4 {
		mkInvitation(now.Add(time.Hour), nil, true)     // pending
		mkInvitation(recent, nil, true)                 // expired within the retention
		mkInvitation(old, nil, false)                   // expired long ago
		mkInvitation(now.Add(time.Hour), &recent, true) // accepted lately
		mkInvitation(old, &old, false)                  // accepted, and expired, long ago
		mkInvitation(recent, &old, true)                // accepted long ago, expired lately
	}
	resets := map[string]bool{}
	mkReset := func(expires time.Time, usedAt *time.Time, kept bool) {
		r := domain.PasswordReset{ID: domain.NewID(domain.PrefixReset), UserID: u.ID,
			TokenHash: domain.HashSecret(domain.NewSecret(domain.PrefixLinkToken)), CreatedAt: t0, ExpiresAt: expires}
		if err := store.CreateReset(ctx, r); err != nil {
			t.Fatal(err)
		}
		if usedAt != nil {
			if err := pg.Gorm.Exec(`UPDATE password_resets SET used_at = ? WHERE id = ?`, *usedAt, r.ID).Error; err != nil {
				t.Fatal(err)
			}
		}
		resets[r.ID] = kept
	}
	for range 4 {
		mkReset(now.Add(time.Hour), nil, true)
		mkReset(recent, nil, true)
		mkReset(old, nil, false)
		mkReset(old, &old, false)                 // used and expired long ago
		mkReset(old.Add(time.Hour*2), &old, true) // used long ago, expired within the retention
		mkReset(now.Add(time.Hour), &recent, true)
	}
	want := 0
	for _, m := range []map[string]bool{sessions, invitations, resets} {
		for _, kept := range m {
			if !kept {
				want++
			}
		}
	}

	// Three pods sweep at once, in batches of 5, each until a batch is short.
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		deleted int
		errs    []error
	)
	for range 3 {
		wg.Go(func() {
			n := 0
			for {
				k, err := store.DeleteEndedSessions(ctx, now, now.Add(-idle), 5)
				n += k
				if err != nil || k < 5 {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					break
				}
			}
			for {
				k, err := store.DeleteOldLinks(ctx, before, 5)
				n += k
				if err != nil || k < 5 {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					break
				}
			}
			mu.Lock()
			deleted += n
			mu.Unlock()
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if deleted != want {
		t.Fatalf("the pods deleted %d rows together, want %d (each once)", deleted, want)
	}

	check := func(table string, rows map[string]bool) {
		t.Helper()
		var left []string
		if err := pg.Gorm.Raw(`SELECT id FROM ` + table).Scan(&left).Error; err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, id := range left {
			got[id] = true
		}
		for id, kept := range rows {
			if got[id] != kept {
				t.Errorf("%s %s: left %v, want %v", table, id, got[id], kept)
			}
		}
	}
	check("console_sessions", sessions)
	check("invitations", invitations)
	check("password_resets", resets)

	// Sweeping again deletes nothing.
	if n, err := store.DeleteEndedSessions(ctx, now, now.Add(-idle), 5); n != 0 || err != nil {
		t.Fatalf("second session sweep = %d, %v", n, err)
	}
	if n, err := store.DeleteOldLinks(ctx, before, 5); n != 0 || err != nil {
		t.Fatalf("second link sweep = %d, %v", n, err)
	}
}

// Removing a user from their last workspace ends their console sessions in
// the same transaction; removing them from one of two keeps them signed in.
func TestRemoveLastMembershipEndsSessions(t *testing.T) {
	t.Parallel()
	pg := pgtest.NewDB(t)
	store := postgres.NewStore(pg.Gorm, pg.Pool)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanFree)
	wsB, _, _ := newWorkspace(t, store, domain.PlanFree)
	owner := newUser(t, store, "owner@example.com")
	addMember(t, store, wsA.ID, owner, domain.MemberOwner)
	addMember(t, store, wsB.ID, owner, domain.MemberOwner)
	u := newUser(t, store, "ada@example.com")
	addMember(t, store, wsA.ID, u, domain.MemberAgent)
	addMember(t, store, wsB.ID, u, domain.MemberAdmin)
	for _, who := range []domain.User{u, u, owner} {
		cs := domain.ConsoleSession{ID: domain.NewID(domain.PrefixConsoleSession), UserID: who.ID,
			TokenHash: domain.HashSecret(domain.NewSecret(domain.PrefixConsoleToken)), CSRFToken: "c",
			CreatedAt: t0, LastSeenAt: t0, ExpiresAt: t0.Add(time.Hour)}
		if err := store.CreateConsoleSession(ctx, cs); err != nil {
			t.Fatal(err)
		}
	}
	count := func(userID string) int {
		t.Helper()
		list, err := store.ListConsoleSessions(ctx, userID)
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	for _, step := range []struct {
		ws        string
		sessions  int
		ownerKept int
	}{
		{wsA.ID, 2, 1}, // still a member of B
		{wsB.ID, 0, 1}, // a member of nothing: signed out everywhere
	} {
		if _, _, err := store.RemoveMember(ctx, step.ws, u.ID, nil, nil); err != nil {
			t.Fatal(err)
		}
		if got, owners := count(u.ID), count(owner.ID); got != step.sessions || owners != step.ownerKept {
			t.Fatalf("after removal from %s: %d sessions (want %d), the owner's %d (want %d)", step.ws, got, step.sessions, owners, step.ownerKept)
		}
	}
}
