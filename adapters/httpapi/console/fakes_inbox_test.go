package console_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/handoff"
	"github.com/conciergehq/concierge/core/inbox"
	"github.com/conciergehq/concierge/ports"
)

// fakeInbox is the inbox's read side over the fake conversations and
// accounts, with the contract's errors: views filtered and ordered as the
// store orders them, counts capped.
type fakeInbox struct {
	convs    *fakeConversations
	accounts *fakeAccounts
	agents   *fakeAgents
	// lists records the requests List was called with.
	mu    sync.Mutex
	lists []inbox.Request
}

func (f *fakeInbox) inView(c domain.Conversation, actor domain.Member, view domain.InboxView) bool {
	open := c.Status == domain.StatusHandoffRequested || c.Status == domain.StatusHuman
	switch view {
	case domain.InboxNeeds:
		return c.Status == domain.StatusHandoffRequested
	case domain.InboxMine:
		return open && c.AssigneeID == actor.UserID
	case domain.InboxUnassigned:
		return open && c.AssigneeID == ""
	case domain.InboxOpen:
		return open
	}
	return c.Status == domain.StatusResolved
}

func (f *fakeInbox) check(ctx context.Context, actor domain.Member, req inbox.Request) (string, error) {
	if err := actor.Role.Require(domain.PermConversations); err != nil {
		return "", err
	}
	if req.View != "" && !req.View.Valid() {
		return "", domain.InvalidField("view", "unknown view")
	}
	if q := strings.TrimSpace(req.Query); q != "" && len([]rune(q)) < domain.MinConversationQueryLength {
		return "", domain.InvalidField("q", "too short")
	}
	if req.AgentSlug == "" {
		return "", nil
	}
	a, err := f.agents.Get(ctx, actor.WorkspaceID, req.AgentSlug)
	return a.ID, err
}

func (f *fakeInbox) List(ctx context.Context, actor domain.Member, req inbox.Request, page domain.PageRequest) (domain.Page[domain.Conversation], error) {
	f.mu.Lock()
	f.lists = append(f.lists, req)
	f.mu.Unlock()
	agentID, err := f.check(ctx, actor, req)
	if err != nil {
		return domain.Page[domain.Conversation]{}, err
	}
	if req.View == "" {
		req.View = domain.InboxNeeds
	}
	f.convs.mu.Lock()
	var items []domain.Conversation // f.convs.convs is newest first
	for _, c := range f.convs.convs {
		q := strings.ToLower(strings.TrimSpace(req.Query))
		if c.WorkspaceID == actor.WorkspaceID && f.inView(c, actor, req.View) && (agentID == "" || c.AgentID == agentID) &&
			(q == "" || f.matches(c, q)) {
			items = append(items, c)
		}
	}
	f.convs.mu.Unlock()
	if req.View.Oldest() {
		// The longest wait first, by when the handoff was requested.
		slices.SortStableFunc(items, func(a, b domain.Conversation) int {
			if c := a.HandoffRequestedAt.Compare(b.HandoffRequestedAt); c != 0 {
				return c
			}
			return strings.Compare(a.ID, b.ID)
		})
		return pageOf(items, page, func(c domain.Conversation) domain.Position {
			return domain.Position{Time: c.HandoffRequestedAt, ID: c.ID}
		}), nil
	}
	return pageOf(items, page, func(c domain.Conversation) domain.Position { return domain.Position{Time: c.LastActivityAt, ID: c.ID} }), nil
}

func (f *fakeInbox) Counts(ctx context.Context, actor domain.Member, agentSlug string) (domain.InboxCounts, error) {
	agentID, err := f.check(ctx, actor, inbox.Request{AgentSlug: agentSlug})
	if err != nil {
		return nil, err
	}
	counts := domain.InboxCounts{}
	f.convs.mu.Lock()
	defer f.convs.mu.Unlock()
	for _, view := range domain.InboxViews {
		for _, c := range f.convs.convs {
			if c.WorkspaceID == actor.WorkspaceID && f.inView(c, actor, view) && (agentID == "" || c.AgentID == agentID) {
				counts[view] = min(counts[view]+1, domain.InboxCountCap)
			}
		}
	}
	return counts, nil
}

func (f *fakeInbox) Earlier(_ context.Context, actor domain.Member, conv domain.Conversation) ([]domain.Conversation, error) {
	if conv.VerifiedUserID == "" {
		return nil, nil
	}
	f.convs.mu.Lock()
	defer f.convs.mu.Unlock()
	var out []domain.Conversation
	for _, c := range f.convs.convs {
		if c.WorkspaceID == actor.WorkspaceID && c.VerifiedUserID == conv.VerifiedUserID && c.ID != conv.ID {
			out = append(out, c)
		}
	}
	return out, nil
}

func (f *fakeInbox) Teammates(_ context.Context, actor domain.Member) ([]domain.Member, error) {
	if err := actor.Role.Require(domain.PermConversations); err != nil {
		return nil, err
	}
	f.accounts.mu.Lock()
	defer f.accounts.mu.Unlock()
	var out []domain.Member
	for _, m := range f.accounts.members {
		if m.WorkspaceID == actor.WorkspaceID {
			out = append(out, m)
		}
	}
	return out, nil
}

// fakeOwnership changes the fake conversations' assignee and status as
// the assignment service would, with its conflict when another member
// holds the conversation.
type fakeOwnership struct {
	convs    *fakeConversations
	accounts *fakeAccounts
	calls    []string
}

func (f *fakeOwnership) change(ws *domain.Workspace, id string, apply func(*domain.Conversation) error) (domain.Conversation, error) {
	f.convs.mu.Lock()
	defer f.convs.mu.Unlock()
	for i := range f.convs.convs {
		c := &f.convs.convs[i]
		if c.ID == id && c.WorkspaceID == ws.ID {
			if err := apply(c); err != nil {
				return domain.Conversation{}, err
			}
			return *c, nil
		}
	}
	return domain.Conversation{}, domain.NotFound("conversation")
}

func (f *fakeOwnership) TakeOver(_ context.Context, ws *domain.Workspace, id string, actor domain.Member) (domain.Conversation, error) {
	f.calls = append(f.calls, "take-over "+id+" "+actor.UserID)
	return f.change(ws, id, func(c *domain.Conversation) error {
		if c.AssigneeID != "" && c.AssigneeID != actor.UserID {
			return &domain.ConflictError{Message: "another member holds this conversation", Details: map[string]string{"assigneeId": c.AssigneeID}}
		}
		c.AssigneeID, c.Status = actor.UserID, domain.StatusHuman
		return nil
	})
}

func (f *fakeOwnership) Assign(_ context.Context, ws *domain.Workspace, id, assignee string, actor *domain.Member) (domain.Conversation, error) {
	f.calls = append(f.calls, "assign "+id+" "+assignee)
	f.accounts.mu.Lock()
	member := slices.ContainsFunc(f.accounts.members, func(m domain.Member) bool { return m.WorkspaceID == ws.ID && m.UserID == assignee })
	f.accounts.mu.Unlock()
	if !member {
		return domain.Conversation{}, domain.InvalidField("assigneeId", "is not a member of this workspace")
	}
	return f.change(ws, id, func(c *domain.Conversation) error { c.AssigneeID = assignee; return nil })
}

func (f *fakeOwnership) Unassign(_ context.Context, ws *domain.Workspace, id string, actor *domain.Member) (domain.Conversation, error) {
	f.calls = append(f.calls, "unassign "+id)
	return f.change(ws, id, func(c *domain.Conversation) error { c.AssigneeID = ""; return nil })
}

// fakeComposer stores replies and notes in the fake conversations and
// moves their status with the state machine's rule.
type fakeComposer struct {
	convs *fakeConversations
	posts []handoff.HumanMessage
}

func (f *fakeComposer) PostHumanMessage(_ context.Context, ws *domain.Workspace, id string, m handoff.HumanMessage) (domain.Message, error) {
	f.convs.mu.Lock()
	defer f.convs.mu.Unlock()
	c, ok := f.convs.find(ws.ID, id)
	if !ok {
		return domain.Message{}, domain.NotFound("conversation")
	}
	f.posts = append(f.posts, m)
	msg := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: ws.ID, Role: domain.Role(m.Role), Content: m.Content, AuthorName: m.AuthorName, AuthorID: m.AuthorID}
	f.convs.appendLocked(c.ID, msg)
	return msg, nil
}

func (f *fakeComposer) SetStatus(_ context.Context, ws *domain.Workspace, id string, to domain.ConversationStatus) (domain.Conversation, error) {
	f.convs.mu.Lock()
	defer f.convs.mu.Unlock()
	for i := range f.convs.convs {
		c := &f.convs.convs[i]
		if c.ID == id && c.WorkspaceID == ws.ID {
			if c.Status != to && !c.Status.CanMoveTo(to) {
				return domain.Conversation{}, &domain.ConflictError{Message: "cannot move", Details: map[string]string{"from": string(c.Status), "to": string(to)}}
			}
			c.Status = to
			return *c, nil
		}
	}
	return domain.Conversation{}, domain.NotFound("conversation")
}

// fakeSavedReplies is the saved reply store in memory, with the port's
// documented errors (the Postgres store's words for a taken shortcut and a
// full workspace). The harness puts the real savedreply.Service on it, so
// the console's pages meet the service's own role checks and validation.
// Its prefix match folds ASCII case only, which the tests keep to.
type fakeSavedReplies struct {
	mu      sync.Mutex
	replies []domain.SavedReply
}

var _ ports.SavedReplyStore = (*fakeSavedReplies)(nil)

func (f *fakeSavedReplies) find(workspaceID, id string) int {
	return slices.IndexFunc(f.replies, func(r domain.SavedReply) bool { return r.WorkspaceID == workspaceID && r.ID == id })
}

func (f *fakeSavedReplies) taken(r *domain.SavedReply) error {
	if slices.ContainsFunc(f.replies, func(o domain.SavedReply) bool {
		return o.WorkspaceID == r.WorkspaceID && o.Shortcut == r.Shortcut && o.ID != r.ID
	}) {
		return domain.Conflict("a saved reply with shortcut %q already exists", r.Shortcut)
	}
	return nil
}

func (f *fakeSavedReplies) CreateSavedReply(_ context.Context, r *domain.SavedReply) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, o := range f.replies {
		if o.WorkspaceID == r.WorkspaceID {
			n++
		}
	}
	if n >= domain.MaxSavedRepliesPerWorkspace {
		return domain.Conflict("a workspace keeps at most %d saved replies; delete one first", domain.MaxSavedRepliesPerWorkspace)
	}
	if err := f.taken(r); err != nil {
		return err
	}
	f.replies = append(f.replies, *r)
	return nil
}

func (f *fakeSavedReplies) GetSavedReply(_ context.Context, workspaceID, id string) (domain.SavedReply, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if i := f.find(workspaceID, id); i >= 0 {
		return f.replies[i], nil
	}
	return domain.SavedReply{}, domain.NotFound("saved reply")
}

func (f *fakeSavedReplies) ListSavedReplies(_ context.Context, workspaceID string, q ports.SavedReplyQuery) (domain.Page[domain.SavedReply], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var items []domain.SavedReply
	prefix := strings.ToLower(q.Prefix)
	for _, r := range f.replies {
		if r.WorkspaceID != workspaceID || r.Shortcut <= q.AfterShortcut {
			continue
		}
		if strings.HasPrefix(r.Shortcut, prefix) || strings.HasPrefix(strings.ToLower(r.Title), prefix) {
			items = append(items, r)
		}
	}
	slices.SortFunc(items, func(a, b domain.SavedReply) int { return strings.Compare(a.Shortcut, b.Shortcut) })
	page := domain.Page[domain.SavedReply]{Items: items}
	if len(items) > q.Limit {
		page.Items, page.HasMore = items[:q.Limit], true
		page.Next = &domain.Position{ID: page.Items[q.Limit-1].Shortcut}
	}
	return page, nil
}

func (f *fakeSavedReplies) UpdateSavedReply(_ context.Context, r *domain.SavedReply) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.find(r.WorkspaceID, r.ID)
	if i < 0 {
		return domain.NotFound("saved reply")
	}
	if err := f.taken(r); err != nil {
		return err
	}
	f.replies[i] = *r
	return nil
}

func (f *fakeSavedReplies) DeleteSavedReply(_ context.Context, workspaceID, id string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.find(workspaceID, id)
	if i < 0 {
		return domain.NotFound("saved reply")
	}
	f.replies = slices.Delete(f.replies, i, i+1)
	return nil
}

// seed stores replies as they are, for pages to show.
func (f *fakeSavedReplies) seed(rs ...domain.SavedReply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.replies = append(f.replies, rs...)
}

// all returns a copy of every stored reply.
func (f *fakeSavedReplies) all() []domain.SavedReply {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.replies)
}

// fixedClock always says the same time.
type fixedClock struct{ now time.Time }

func (c fixedClock) Now() time.Time { return c.now }

// matches is the search: the contact or a message's text (lower case q).
func (f *fakeInbox) matches(c domain.Conversation, q string) bool {
	if strings.Contains(strings.ToLower(c.ContactName+" "+c.ContactEmail), q) {
		return true
	}
	for _, m := range f.convs.msgs[c.ID] {
		if m.Role != domain.RoleSystem && strings.Contains(strings.ToLower(m.Content), q) {
			return true
		}
	}
	return false
}
