package savedreply_test

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// fakeClock always says the same time.
type fakeClock struct{ now time.Time }

func (c fakeClock) Now() time.Time { return c.now }

// fakeStore keeps replies in memory with the port's documented errors.
// Its prefix match folds ASCII case only, which the tests keep to.
type fakeStore struct {
	replies []domain.SavedReply
	// lastQuery is what ListSavedReplies was last asked.
	lastQuery ports.SavedReplyQuery
	calls     int
}

var _ ports.SavedReplyStore = (*fakeStore)(nil)

func (f *fakeStore) find(workspaceID, id string) int {
	return slices.IndexFunc(f.replies, func(r domain.SavedReply) bool { return r.WorkspaceID == workspaceID && r.ID == id })
}

func (f *fakeStore) taken(r *domain.SavedReply) bool {
	return slices.ContainsFunc(f.replies, func(o domain.SavedReply) bool {
		return o.WorkspaceID == r.WorkspaceID && o.Shortcut == r.Shortcut && o.ID != r.ID
	})
}

func (f *fakeStore) CreateSavedReply(_ context.Context, r *domain.SavedReply) error {
	f.calls++
	if f.taken(r) {
		return domain.Conflict("taken")
	}
	f.replies = append(f.replies, *r)
	return nil
}

func (f *fakeStore) GetSavedReply(_ context.Context, workspaceID, id string) (domain.SavedReply, error) {
	f.calls++
	if i := f.find(workspaceID, id); i >= 0 {
		return f.replies[i], nil
	}
	return domain.SavedReply{}, domain.NotFound("saved reply")
}

func (f *fakeStore) ListSavedReplies(_ context.Context, workspaceID string, q ports.SavedReplyQuery) (domain.Page[domain.SavedReply], error) {
	f.calls++
	f.lastQuery = q
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

func (f *fakeStore) UpdateSavedReply(_ context.Context, r *domain.SavedReply) error {
	f.calls++
	i := f.find(r.WorkspaceID, r.ID)
	if i < 0 {
		return domain.NotFound("saved reply")
	}
	if f.taken(r) {
		return domain.Conflict("taken")
	}
	f.replies[i] = *r
	return nil
}

func (f *fakeStore) DeleteSavedReply(_ context.Context, workspaceID, id string) error {
	f.calls++
	i := f.find(workspaceID, id)
	if i < 0 {
		return domain.NotFound("saved reply")
	}
	f.replies = slices.Delete(f.replies, i, i+1)
	return nil
}
