package ports

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// SavedReplyQuery selects a page of a workspace's saved replies, ordered by
// shortcut.
type SavedReplyQuery struct {
	// Prefix, when set, keeps the replies whose shortcut or title starts with
	// it, ignoring case (the composer's "/" lookup).
	Prefix string
	// AfterShortcut continues after the reply with this shortcut; "" starts
	// at the first. A shortcut rather than an id, so a cursor stays valid
	// when the reply it points at is renamed or deleted.
	AfterShortcut string
	// Limit is the page size (domain.PageRequest's rules).
	Limit int
}

// SavedReplyReader reads a workspace's saved replies.
type SavedReplyReader interface {
	// GetSavedReply returns domain.ErrNotFound if the workspace has no reply
	// with the id.
	GetSavedReply(ctx context.Context, workspaceID, id string) (domain.SavedReply, error)
	// ListSavedReplies returns a page of the workspace's replies in shortcut
	// order; Page.Next carries the last shortcut in its ID. It returns no
	// domain error kinds (an unknown workspace has no replies).
	ListSavedReplies(ctx context.Context, workspaceID string, q SavedReplyQuery) (domain.Page[domain.SavedReply], error)
}

// SavedReplyStore keeps saved replies, always scoped by workspace.
type SavedReplyStore interface {
	SavedReplyReader
	// CreateSavedReply stores a new reply. Returns domain.ErrConflict if the
	// shortcut is taken in the workspace or the workspace already keeps
	// domain.MaxSavedRepliesPerWorkspace replies (checked under a lock, so
	// concurrent creations cannot pass it), domain.ErrNotFound if the
	// workspace does not exist.
	CreateSavedReply(ctx context.Context, r *domain.SavedReply) error
	// UpdateSavedReply saves shortcut, title, body and update time. Returns
	// domain.ErrNotFound if the workspace has no reply with the id,
	// domain.ErrConflict if the new shortcut is taken.
	UpdateSavedReply(ctx context.Context, r *domain.SavedReply) error
	// DeleteSavedReply returns domain.ErrNotFound if the workspace has no
	// reply with the id.
	DeleteSavedReply(ctx context.Context, workspaceID, id string) error
}
