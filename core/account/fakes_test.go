package account_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// memStore is a scripted in-memory stand-in for every account port; the
// PostgreSQL adapter's own tests cover the real thing.
type memStore struct {
	mu          sync.Mutex
	users       map[string]domain.User
	members     []domain.Member
	sessions    map[string]domain.ConsoleSession
	invitations map[string]domain.Invitation
	resets      map[string]domain.PasswordReset
	touches     int
	// conversations are the workspace conversations RemoveMember
	// unassigns.
	conversations []domain.Conversation
}

func newMemStore() *memStore {
	return &memStore{users: map[string]domain.User{}, sessions: map[string]domain.ConsoleSession{},
		invitations: map[string]domain.Invitation{}, resets: map[string]domain.PasswordReset{}}
}

var (
	_ ports.UserStore           = (*memStore)(nil)
	_ ports.MemberStore         = (*memStore)(nil)
	_ ports.ConsoleSessionStore = (*memStore)(nil)
	_ ports.InvitationStore     = (*memStore)(nil)
	_ ports.ResetStore          = (*memStore)(nil)
)

func (m *memStore) CreateUser(_ context.Context, u domain.User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.createUserLocked(u)
}

func (m *memStore) createUserLocked(u domain.User) error {
	for _, x := range m.users {
		if x.Email == u.Email {
			return domain.Conflict("email taken")
		}
	}
	m.users[u.ID] = u
	return nil
}

func (m *memStore) GetUser(_ context.Context, id string) (domain.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return domain.User{}, domain.NotFound("user")
	}
	return u, nil
}

func (m *memStore) FindUserByEmail(_ context.Context, email string) (domain.User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range m.users {
		if u.Email == email {
			return u, nil
		}
	}
	return domain.User{}, domain.NotFound("user")
}

func (m *memStore) SetPassword(_ context.Context, userID, hash, keep string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[userID]
	if !ok {
		return domain.NotFound("user")
	}
	u.PasswordHash, u.UpdatedAt = hash, at
	m.users[userID] = u
	m.deleteSessionsLocked(userID, keep)
	return nil
}

func (m *memStore) deleteSessionsLocked(userID, keep string, ids ...string) int {
	n := 0
	for h, s := range m.sessions {
		if s.UserID != userID || s.ID == keep || (len(ids) > 0 && !slices.Contains(ids, s.ID)) {
			continue
		}
		delete(m.sessions, h)
		n++
	}
	return n
}

func (m *memStore) withUser(mb domain.Member) domain.Member {
	u := m.users[mb.UserID]
	mb.Email, mb.Name = u.Email, u.Name
	return mb
}

func (m *memStore) Memberships(_ context.Context, userID string) ([]domain.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []domain.Member
	for _, mb := range m.members {
		if mb.UserID == userID {
			out = append(out, m.withUser(mb))
		}
	}
	return out, nil
}

func (m *memStore) GetMember(_ context.Context, workspaceID, userID string) (domain.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.memberIndex(workspaceID, userID)
	if i < 0 {
		return domain.Member{}, domain.NotFound("member")
	}
	return m.withUser(m.members[i]), nil
}

func (m *memStore) memberIndex(workspaceID, userID string) int {
	return slices.IndexFunc(m.members, func(mb domain.Member) bool { return mb.WorkspaceID == workspaceID && mb.UserID == userID })
}

func (m *memStore) ListMembers(_ context.Context, workspaceID string) ([]domain.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []domain.Member
	for _, mb := range m.members {
		if mb.WorkspaceID == workspaceID {
			out = append(out, m.withUser(mb))
		}
	}
	return out, nil
}

func (m *memStore) owners(workspaceID string) int {
	n := 0
	for _, mb := range m.members {
		if mb.WorkspaceID == workspaceID && mb.Role == domain.MemberOwner {
			n++
		}
	}
	return n
}

func (m *memStore) ChangeMemberRole(_ context.Context, workspaceID, userID string, role domain.MemberRole, allow func(domain.Member) error) (domain.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.memberIndex(workspaceID, userID)
	if i < 0 {
		return domain.Member{}, domain.NotFound("member")
	}
	if err := allow(m.withUser(m.members[i])); err != nil {
		return domain.Member{}, err
	}
	if m.members[i].Role == domain.MemberOwner && role != domain.MemberOwner && m.owners(workspaceID) <= 1 {
		return domain.Member{}, domain.ErrLastOwner
	}
	m.members[i].Role = role
	return m.withUser(m.members[i]), nil
}

func (m *memStore) RemoveMember(_ context.Context, workspaceID, userID string, allow func(domain.Member) error,
	report func(domain.Conversation) []domain.Delivery) ([]domain.Conversation, []domain.Delivery, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	i := m.memberIndex(workspaceID, userID)
	if i < 0 {
		return nil, nil, domain.NotFound("member")
	}
	if err := allow(m.withUser(m.members[i])); err != nil {
		return nil, nil, err
	}
	if m.members[i].Role == domain.MemberOwner && m.owners(workspaceID) <= 1 {
		return nil, nil, domain.ErrLastOwner
	}
	m.members = slices.Delete(m.members, i, i+1)
	var (
		unassigned []domain.Conversation
		deliveries []domain.Delivery
	)
	for j, c := range m.conversations {
		if c.WorkspaceID == workspaceID && c.AssigneeID == userID {
			m.conversations[j].AssigneeID = ""
			unassigned = append(unassigned, m.conversations[j])
			if report != nil {
				deliveries = append(deliveries, report(m.conversations[j])...)
			}
		}
	}
	// As the port promises: no membership left, no session left.
	for _, mb := range m.members {
		if mb.UserID == userID {
			return unassigned, deliveries, nil
		}
	}
	m.deleteSessionsLocked(userID, "")
	return unassigned, deliveries, nil
}

func (m *memStore) CreateConsoleSession(_ context.Context, s domain.ConsoleSession) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[s.TokenHash] = s
	return nil
}

func (m *memStore) FindConsoleSession(_ context.Context, hash string) (domain.ConsoleSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[hash]
	if !ok {
		return domain.ConsoleSession{}, domain.NotFound("session")
	}
	return s, nil
}

func (m *memStore) TouchConsoleSession(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, s := range m.sessions {
		if s.ID == id && at.Sub(s.LastSeenAt) >= time.Minute {
			s.LastSeenAt = at
			m.sessions[h] = s
			m.touches++
		}
	}
	return nil
}

func (m *memStore) ListConsoleSessions(_ context.Context, userID string) ([]domain.ConsoleSession, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []domain.ConsoleSession
	for _, s := range m.sessions {
		if s.UserID == userID {
			out = append(out, s)
		}
	}
	return out, nil
}

func (m *memStore) DeleteConsoleSessions(_ context.Context, userID, keep string, ids ...string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.deleteSessionsLocked(userID, keep, ids...), nil
}

func (m *memStore) CreateInvitation(_ context.Context, inv domain.Invitation) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, x := range m.invitations {
		if x.WorkspaceID == inv.WorkspaceID && x.Email == inv.Email && x.AcceptedAt.IsZero() {
			delete(m.invitations, h)
		}
	}
	m.invitations[inv.TokenHash] = inv
	return nil
}

func (m *memStore) PendingInvitations(_ context.Context, workspaceID string) ([]domain.Invitation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []domain.Invitation
	for _, x := range m.invitations {
		if x.WorkspaceID == workspaceID && x.AcceptedAt.IsZero() {
			out = append(out, x)
		}
	}
	return out, nil
}

func (m *memStore) DeleteInvitation(_ context.Context, workspaceID, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for h, x := range m.invitations {
		if x.WorkspaceID == workspaceID && x.ID == id && x.AcceptedAt.IsZero() {
			delete(m.invitations, h)
			return nil
		}
	}
	return domain.NotFound("invitation")
}

func (m *memStore) FindInvitation(_ context.Context, hash string) (domain.Invitation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inv, ok := m.invitations[hash]
	if !ok {
		return domain.Invitation{}, domain.NotFound("invitation")
	}
	return inv, nil
}

func (m *memStore) AcceptInvitation(_ context.Context, hash string, u domain.User, newUser bool, at time.Time) (domain.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	inv, ok := m.invitations[hash]
	if !ok || !inv.AcceptedAt.IsZero() || !at.Before(inv.ExpiresAt) {
		return domain.Member{}, domain.NotFound("invitation")
	}
	if newUser {
		if err := m.createUserLocked(u); err != nil {
			return domain.Member{}, err
		}
	}
	inv.AcceptedAt = at
	m.invitations[hash] = inv
	if i := m.memberIndex(inv.WorkspaceID, u.ID); i >= 0 {
		return m.withUser(m.members[i]), nil
	}
	mb := domain.Member{WorkspaceID: inv.WorkspaceID, UserID: u.ID, Role: inv.Role, CreatedAt: at}
	m.members = append(m.members, mb)
	return m.withUser(mb), nil
}

func (m *memStore) CreateReset(_ context.Context, r domain.PasswordReset) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.resets[r.TokenHash] = r
	return nil
}

func (m *memStore) UseReset(_ context.Context, hash, pw string, at time.Time) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.resets[hash]
	if !ok || !r.UsedAt.IsZero() || !at.Before(r.ExpiresAt) {
		return "", domain.NotFound("reset")
	}
	r.UsedAt = at
	m.resets[hash] = r
	u := m.users[r.UserID]
	u.PasswordHash = pw
	m.users[r.UserID] = u
	m.deleteSessionsLocked(r.UserID, "")
	return r.UserID, nil
}

// fakeLimiter allows limit calls per key (unlimited when limit is 0) and
// records the keys it saw.
type fakeLimiter struct {
	mu     sync.Mutex
	limit  int
	counts map[string]int
	err    error
}

func (l *fakeLimiter) Allow(_ context.Context, key string, _ int) (ports.RateLimit, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return ports.RateLimit{}, l.err
	}
	if l.counts == nil {
		l.counts = map[string]int{}
	}
	l.counts[key]++
	if l.limit > 0 && l.counts[key] > l.limit {
		return ports.RateLimit{Allowed: false, RetryAfter: 2500 * time.Millisecond}, nil
	}
	return ports.RateLimit{Allowed: true}, nil
}

// fakeMailer records messages, or fails with err.
type fakeMailer struct {
	mu   sync.Mutex
	sent []domain.Email
	err  error
}

func (f *fakeMailer) Send(_ context.Context, e domain.Email) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.sent = append(f.sent, e)
	return nil
}

func (f *fakeMailer) last() (domain.Email, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sent) == 0 {
		return domain.Email{}, errors.New("no mail sent")
	}
	return f.sent[len(f.sent)-1], nil
}

// wait returns the last message once one has been sent, for mail sent in
// the background.
func (f *fakeMailer) wait(d time.Duration) (domain.Email, error) {
	deadline := time.Now().Add(d)
	for {
		m, err := f.last()
		if err == nil || time.Now().After(deadline) {
			return m, err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (f *fakeMailer) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = nil
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// AddMember makes the user a member directly, for tests that need a second
// workspace without an invitation.
func (m *memStore) AddMember(workspaceID, userID string, role domain.MemberRole) (domain.Member, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	mb := domain.Member{WorkspaceID: workspaceID, UserID: userID, Role: role, CreatedAt: time.Now()}
	m.members = append(m.members, mb)
	return mb, nil
}

// fakeAssignees records what a removal asks of conversation.Lifecycle:
// the report it builds (conversation.assigned for each conversation, as
// the lifecycle's is) and the announcements after the write.
type fakeAssignees struct {
	mu         sync.Mutex
	err        error
	reportsFor []string
	reassigned []reassigned
}

type reassigned struct {
	deliveries []domain.Delivery
	convs      []domain.Conversation
}

func (f *fakeAssignees) AssigneeReport(_ context.Context, workspaceID string) (func(domain.Conversation) []domain.Delivery, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	f.reportsFor = append(f.reportsFor, workspaceID)
	ws := domain.Workspace{ID: workspaceID, EventsURL: "https://events.example.com/in"}
	return func(after domain.Conversation) []domain.Delivery {
		return domain.AssignedDeliveries(&ws, after, time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC))
	}, nil
}

func (f *fakeAssignees) Reassigned(_ context.Context, deliveries []domain.Delivery, convs ...domain.Conversation) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reassigned = append(f.reassigned, reassigned{deliveries: deliveries, convs: convs})
}
