package account_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/domain"
)

// scriptedSweep answers each call with the next count of its script (0
// once it runs out) and records the arguments.
type scriptedSweep struct {
	sessions, links       []int
	now, idleSince, since []time.Time
	limits                []int
	err                   error
}

func (s *scriptedSweep) DeleteEndedSessions(_ context.Context, now, idleSince time.Time, limit int) (int, error) {
	s.now, s.idleSince, s.limits = append(s.now, now), append(s.idleSince, idleSince), append(s.limits, limit)
	if len(s.sessions) == 0 {
		return 0, s.err
	}
	n := s.sessions[0]
	s.sessions = s.sessions[1:]
	return n, nil
}

func (s *scriptedSweep) DeleteOldLinks(_ context.Context, before time.Time, limit int) (int, error) {
	s.since, s.limits = append(s.since, before), append(s.limits, limit)
	if len(s.links) == 0 {
		return 0, nil
	}
	n := s.links[0]
	s.links = s.links[1:]
	return n, nil
}

// SweepEnded deletes batch after batch until one comes back short, with
// the idle timeout and the link retention as the cut-offs.
func TestSweepEnded(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)}
	tests := []struct {
		name            string
		sessions, links []int
		err             error
		want            int
		sessionCalls    int
		linkCalls       int
	}{
		{name: "nothing to do", want: 0, sessionCalls: 1, linkCalls: 1},
		{name: "several batches", sessions: []int{500, 500, 3}, links: []int{500, 12}, want: 1515, sessionCalls: 3, linkCalls: 2},
		{name: "a full last batch is followed by an empty one", sessions: []int{500}, want: 500, sessionCalls: 2, linkCalls: 1},
		{name: "a failure stops the sweep", err: errors.New("db down"), want: 0, sessionCalls: 1, linkCalls: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := newMemStore()
			sweep := &scriptedSweep{sessions: tc.sessions, links: tc.links, err: tc.err}
			svc, err := account.NewService(account.Deps{Users: store, Members: store, Sessions: store, Invitations: store,
				Resets: store, Limiter: &fakeLimiter{}, Clock: clock, Sweep: sweep},
				account.Options{BaseURL: "https://x.example", Argon2: cheap, IdleTimeout: 2 * time.Hour, LinkRetention: 72 * time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			n, err := svc.SweepEnded(context.Background())
			if n != tc.want || (err != nil) != (tc.err != nil) {
				t.Fatalf("SweepEnded = %d, %v; want %d, %v", n, err, tc.want, tc.err)
			}
			if len(sweep.now) != tc.sessionCalls || len(sweep.since) != tc.linkCalls {
				t.Fatalf("%d session and %d link calls, want %d and %d", len(sweep.now), len(sweep.since), tc.sessionCalls, tc.linkCalls)
			}
			now := clock.Now()
			for i := range sweep.now {
				if !sweep.now[i].Equal(now) || !sweep.idleSince[i].Equal(now.Add(-2*time.Hour)) {
					t.Errorf("session cut-offs %v, %v", sweep.now[i], sweep.idleSince[i])
				}
			}
			for _, b := range sweep.since {
				if !b.Equal(now.Add(-72 * time.Hour)) {
					t.Errorf("link cut-off %v, want 72 hours ago", b)
				}
			}
			for _, l := range sweep.limits {
				if l <= 0 {
					t.Errorf("limit %d", l)
				}
			}
		})
	}

	t.Run("without the sweep store", func(t *testing.T) {
		f := newFixture(t, false)
		if _, err := f.svc.SweepEnded(context.Background()); err == nil {
			t.Fatal("SweepEnded without Deps.Sweep succeeded")
		}
	})
}

// A member who is removed or demoted has the new rights on their very next
// request: Member reads the store each time (nothing is cached), and the
// last removal ends every session of the user, while a removal from one of
// two workspaces keeps them signed in for the other.
func TestRemovedOrDemotedMemberLosesAccessAtOnce(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	owner, _ := f.join(t, "owner@example.com", domain.MemberOwner)
	admin, signed := f.join(t, "ada@example.com", domain.MemberAdmin)
	second, err := f.svc.SignIn(ctx, account.SignInRequest{Email: "ada@example.com", Password: password})
	if err != nil {
		t.Fatal(err)
	}
	other := domain.NewID(domain.PrefixWorkspace)
	if _, err := f.store.AddMember(other, admin.UserID, domain.MemberAgent); err != nil {
		t.Fatal(err)
	}

	if _, err := f.svc.ChangeRole(ctx, owner, admin.UserID, domain.MemberAgent); err != nil {
		t.Fatal(err)
	}
	m, err := f.svc.Member(ctx, admin.UserID, f.ws)
	if err != nil || m.Role != domain.MemberAgent || m.Role.Require(domain.PermSettings) == nil {
		t.Fatalf("after demotion Member = %+v, %v; want an agent without settings", m, err)
	}

	if err := f.svc.RemoveMember(ctx, owner, admin.UserID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Member(ctx, admin.UserID, f.ws); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("after removal Member = %v, want ErrNotFound", err)
	}
	for _, tok := range []string{signed.Token, second.Token} {
		if _, err := f.svc.Authenticate(ctx, tok); err != nil {
			t.Fatalf("a session ended though the user still belongs to another workspace: %v", err)
		}
	}

	otherOwner := domain.Member{WorkspaceID: other, UserID: owner.UserID, Role: domain.MemberOwner}
	if _, err := f.store.AddMember(other, owner.UserID, domain.MemberOwner); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.RemoveMember(ctx, otherOwner, admin.UserID); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{signed.Token, second.Token} {
		if _, err := f.svc.Authenticate(ctx, tok); !errors.Is(err, domain.ErrUnauthorized) {
			t.Fatalf("a session survived the last removal: %v", err)
		}
	}
}
