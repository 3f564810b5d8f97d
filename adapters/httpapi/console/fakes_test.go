package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/conciergehq/concierge/core/account"
	"github.com/conciergehq/concierge/core/agent"
	"github.com/conciergehq/concierge/core/domain"
)

// fakeAccounts is a scripted account service: a few users and sessions in
// memory, with the contract's errors. It decides nothing the console
// decides; the console's tests check what the console does with it.
type fakeAccounts struct {
	mu          sync.Mutex
	users       map[string]domain.User       // by id
	passwords   map[string]string            // by email
	sessions    map[string]account.Principal // by token
	members     []domain.Member
	invitations map[string]account.Invitation // by link token
	signedOut   []string
	// fail, when set, is returned by Members (to test error pages).
	fail error
	// confirmLimited makes ConfirmPassword throttled (settings tests).
	confirmLimited bool
}

var errFakeDatabase = errors.New("pq: connection refused to 10.0.0.7 (secret detail)")

func newFakeAccounts() *fakeAccounts {
	f := &fakeAccounts{
		users: map[string]domain.User{}, passwords: map[string]string{},
		sessions: map[string]account.Principal{}, invitations: map[string]account.Invitation{},
	}
	add := func(id, name, email, ws string, role domain.MemberRole) {
		f.users[id] = domain.User{ID: id, Name: name, Email: email}
		f.passwords[email] = "correct horse " + id
		f.sessions["cs_"+id] = account.Principal{User: f.users[id], Session: account.Session{
			ID: "ses_" + id, UserID: id, CSRFToken: "csrf_" + id, CreatedAt: time.Unix(1_800_000_000, 0), LastSeenAt: time.Unix(1_800_000_000, 0),
		}}
		f.members = append(f.members, domain.Member{WorkspaceID: ws, UserID: id, Email: email, Name: name, Role: role})
	}
	add("owner", "Olive Owner", "olive@example.com", "ws_a", domain.MemberOwner)
	add("admin", "Adam Admin", "adam@example.com", "ws_a", domain.MemberAdmin)
	add("agent", "Agnes Agent", "agnes@example.com", "ws_a", domain.MemberAgent)
	add("other", "Otto Other", "otto@example.com", "ws_b", domain.MemberOwner)
	f.invitations["lt_open"] = account.Invitation{ID: "inv_1", WorkspaceID: "ws_a", Email: "new@example.com", Role: domain.MemberAgent,
		ExpiresAt: time.Unix(1_900_000_000, 0)}
	return f
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return domain.PrefixConsoleToken + hex.EncodeToString(b)
}

func (f *fakeAccounts) newSession(u domain.User) account.SignedIn {
	tok := randomToken()
	s := account.Session{ID: "ses_" + tok[3:11], UserID: u.ID, CSRFToken: "csrf_" + tok[3:11], ExpiresAt: time.Now().Add(24 * time.Hour)}
	f.sessions[tok] = account.Principal{User: u, Session: s}
	return account.SignedIn{Token: tok, Session: s, User: u}
}

func (f *fakeAccounts) SignIn(_ context.Context, req account.SignInRequest) (account.SignedIn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if req.Email == "limited@example.com" {
		return account.SignedIn{}, &domain.RateLimitError{RetryAfterSeconds: 30}
	}
	if req.Email == "" {
		return account.SignedIn{}, domain.InvalidField("email", "is required")
	}
	if pw, ok := f.passwords[req.Email]; !ok || pw != req.Password {
		return account.SignedIn{}, domain.Unauthorized("wrong email or password")
	}
	for _, u := range f.users {
		if u.Email == req.Email {
			return f.newSession(u), nil
		}
	}
	return account.SignedIn{}, domain.Unauthorized("wrong email or password")
}

func (f *fakeAccounts) Authenticate(_ context.Context, token string) (account.Principal, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.sessions[token]
	if !ok {
		return account.Principal{}, domain.Unauthorized("session expired")
	}
	return p, nil
}

func (f *fakeAccounts) SignOut(_ context.Context, token string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.sessions, token)
	f.signedOut = append(f.signedOut, token)
	return nil
}

func (f *fakeAccounts) SignOutOthers(_ context.Context, token string) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.sessions[token]
	if !ok {
		return 0, domain.Unauthorized("session expired")
	}
	n := 0
	for tok, q := range f.sessions {
		if tok != token && q.User.ID == p.User.ID {
			delete(f.sessions, tok)
			n++
		}
	}
	return n, nil
}

func (f *fakeAccounts) Sessions(_ context.Context, userID string) ([]account.Session, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []account.Session
	for _, p := range f.sessions {
		if p.User.ID == userID {
			out = append(out, p.Session)
		}
	}
	return out, nil
}

func (f *fakeAccounts) ChangePassword(_ context.Context, p account.Principal, current, next string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	// As account.Service does: the new password is checked first, and a
	// wrong current one is a validation error on "currentPassword".
	if len(next) < 12 {
		return domain.InvalidField("password", "must be at least 12 characters")
	}
	if f.passwords[p.User.Email] != current {
		return domain.InvalidField("currentPassword", "is incorrect")
	}
	f.passwords[p.User.Email] = next
	return nil
}

func (f *fakeAccounts) Memberships(_ context.Context, userID string) ([]domain.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []domain.Member
	for _, m := range f.members {
		if m.UserID == userID {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeAccounts) Member(_ context.Context, userID, workspaceID string) (domain.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, m := range f.members {
		if m.UserID == userID && m.WorkspaceID == workspaceID {
			return m, nil
		}
	}
	return domain.Member{}, domain.NotFound("workspace")
}

func (f *fakeAccounts) Members(_ context.Context, actor domain.Member) ([]domain.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	var out []domain.Member
	for _, m := range f.members {
		if m.WorkspaceID == actor.WorkspaceID {
			out = append(out, m)
		}
	}
	return out, nil
}

func (f *fakeAccounts) Invitations(_ context.Context, actor domain.Member) ([]account.Invitation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []account.Invitation
	for _, inv := range f.invitations {
		if inv.WorkspaceID == actor.WorkspaceID {
			out = append(out, inv)
		}
	}
	return out, nil
}

func (f *fakeAccounts) Invite(_ context.Context, actor domain.Member, req account.InviteRequest) (account.Invitation, error) {
	email, err := domain.NormalizeEmail(req.Email)
	if err != nil {
		return account.Invitation{}, err
	}
	if req.Role == domain.MemberOwner && actor.Role != domain.MemberOwner {
		return account.Invitation{}, &domain.ForbiddenError{Reason: "only owners may invite owners"}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	tok := "lt_" + randomToken()[3:]
	inv := account.Invitation{ID: "inv_" + tok[3:9], WorkspaceID: actor.WorkspaceID, Email: email, Role: req.Role,
		InvitedBy: actor.UserID, ExpiresAt: time.Unix(1_900_000_000, 0)}
	f.invitations[tok] = inv
	inv.Link = "https://console.example/console/invitations/" + tok
	return inv, nil
}

func (f *fakeAccounts) RevokeInvitation(_ context.Context, actor domain.Member, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for tok, inv := range f.invitations {
		if inv.ID == id && inv.WorkspaceID == actor.WorkspaceID {
			delete(f.invitations, tok)
			return nil
		}
	}
	return domain.NotFound("invitation")
}

func (f *fakeAccounts) owners(ws string) int {
	n := 0
	for _, m := range f.members {
		if m.WorkspaceID == ws && m.Role == domain.MemberOwner {
			n++
		}
	}
	return n
}

func (f *fakeAccounts) ChangeRole(_ context.Context, actor domain.Member, userID string, role domain.MemberRole) (domain.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.members {
		if m.WorkspaceID == actor.WorkspaceID && m.UserID == userID {
			if m.Role == domain.MemberOwner && role != domain.MemberOwner && f.owners(m.WorkspaceID) == 1 {
				return domain.Member{}, domain.Conflict("a workspace keeps at least one owner: make someone else owner first")
			}
			f.members[i].Role = role
			return f.members[i], nil
		}
	}
	return domain.Member{}, domain.NotFound("member")
}

func (f *fakeAccounts) RemoveMember(_ context.Context, actor domain.Member, userID string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, m := range f.members {
		if m.WorkspaceID == actor.WorkspaceID && m.UserID == userID {
			if m.Role == domain.MemberOwner && f.owners(m.WorkspaceID) == 1 {
				return domain.Conflict("a workspace keeps at least one owner: make someone else owner first")
			}
			f.members = append(f.members[:i], f.members[i+1:]...)
			return nil
		}
	}
	return domain.NotFound("member")
}

func (f *fakeAccounts) InvitationByToken(_ context.Context, token string) (account.Invitation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	inv, ok := f.invitations[token]
	if !ok {
		return account.Invitation{}, domain.NotFound("invitation")
	}
	return inv, nil
}

func (f *fakeAccounts) AcceptInvitation(_ context.Context, req account.AcceptRequest) (account.SignedIn, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	inv, ok := f.invitations[req.Token]
	if !ok {
		return account.SignedIn{}, domain.NotFound("invitation")
	}
	if strings.TrimSpace(req.Name) == "" {
		return account.SignedIn{}, domain.InvalidField("name", "is required")
	}
	if len(req.Password) < 12 {
		return account.SignedIn{}, domain.InvalidField("password", "must be at least 12 characters")
	}
	delete(f.invitations, req.Token)
	u := domain.User{ID: "usr_new", Email: inv.Email, Name: req.Name}
	f.users[u.ID] = u
	f.members = append(f.members, domain.Member{WorkspaceID: inv.WorkspaceID, UserID: u.ID, Email: u.Email, Name: u.Name, Role: inv.Role})
	return f.newSession(u), nil
}

func (f *fakeAccounts) RequestReset(_ context.Context, email, _ string) error {
	_, err := domain.NormalizeEmail(email)
	return err
}

func (f *fakeAccounts) ResetPassword(_ context.Context, req account.ResetRequest) error {
	if req.Token != "lt_reset" {
		return domain.NotFound("reset link")
	}
	if len(req.Password) < 12 {
		return domain.InvalidField("password", "must be at least 12 characters")
	}
	return nil
}

// fakeWorkspaces names two workspaces.
type fakeWorkspaces struct {
	names map[string]string
	// settings holds keys and secrets (settings_fakes_test.go); nil in
	// tests that need none.
	settings *fakeSettings
}

func (f fakeWorkspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	name, ok := f.names[id]
	if !ok {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	ws := domain.Workspace{ID: id, Name: name, Plan: domain.PlanFree, WebhookSecret: "whsec_never_shown"}
	f.settings.apply(&ws)
	return ws, nil
}

// fakeAgents keeps agents in memory and validates them as agent.Service
// does (domain.Agent.Validate).
type fakeAgents struct {
	mu     sync.Mutex
	agents map[string]domain.Agent // by workspace + "/" + slug
	order  []string
	// Knowledge: the agents' sources (fakes_knowledge_test.go).
	sources *fakeSources
}

func newFakeAgents() *fakeAgents { return &fakeAgents{agents: map[string]domain.Agent{}} }

func (f *fakeAgents) List(_ context.Context, ws string, _ domain.PageRequest) (domain.Page[domain.Agent], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []domain.Agent
	for _, k := range f.order {
		if a, ok := f.agents[k]; ok && a.WorkspaceID == ws {
			out = append(out, a)
		}
	}
	return domain.Page[domain.Agent]{Items: out}, nil
}

func (f *fakeAgents) Create(_ context.Context, ws string, a domain.Agent) (domain.Agent, error) {
	if err := a.Validate(); err != nil {
		return domain.Agent{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	k := ws + "/" + a.Slug
	if _, ok := f.agents[k]; ok {
		return domain.Agent{}, domain.Conflict("an agent with slug %q already exists", a.Slug)
	}
	a.ID, a.WorkspaceID, a.WidgetSlug = "agt_"+a.Slug, ws, a.Slug
	f.agents[k] = a
	f.order = append(f.order, k)
	return a, nil
}

func (f *fakeAgents) Get(_ context.Context, ws, slug string) (domain.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a, ok := f.agents[ws+"/"+slug]
	if !ok {
		return domain.Agent{}, domain.NotFound("agent")
	}
	return a, nil
}

func (f *fakeAgents) Update(ctx context.Context, ws, slug string, p agent.Patch) (domain.Agent, error) {
	a, err := f.Get(ctx, ws, slug)
	if err != nil {
		return domain.Agent{}, err
	}
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&a.Name, p.Name)
	set(&a.Config.SystemPrompt, p.SystemPrompt)
	set(&a.Config.WelcomeMessage, p.WelcomeMessage)
	set(&a.Config.FallbackMessage, p.FallbackMessage)
	set(&a.Config.Model, p.Model)
	set(&a.Config.PrimaryColor, p.PrimaryColor)
	set(&a.Config.AvatarURL, p.AvatarURL)
	if p.SuggestedQuestions != nil {
		a.Config.SuggestedQuestions = *p.SuggestedQuestions
	}
	if p.BlockedTopics != nil {
		a.Config.BlockedTopics = *p.BlockedTopics
	}
	if p.AllowedOrigins != nil {
		a.Config.AllowedOrigins = *p.AllowedOrigins
	}
	if p.RetrievalTopK != nil {
		a.Config.RetrievalTopK = *p.RetrievalTopK
	}
	if p.RetrievalThreshold != nil {
		a.Config.RetrievalThreshold = *p.RetrievalThreshold
	}
	if p.Published != nil {
		a.Config.Published = *p.Published
	}
	if err := a.Validate(); err != nil {
		return domain.Agent{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.agents[ws+"/"+slug] = a
	return a, nil
}

func (f *fakeAgents) Delete(_ context.Context, ws, slug string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.agents[ws+"/"+slug]; !ok {
		return domain.NotFound("agent")
	}
	delete(f.agents, ws+"/"+slug)
	return nil
}
