package ports

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// AvailabilityStore keeps whether members are available to answer visitors.
type AvailabilityStore interface {
	// SetAvailable records whether the member is available and returns the
	// membership as it is afterwards. Returns domain.ErrNotFound unless the
	// user is a member of the workspace.
	SetAvailable(ctx context.Context, workspaceID, userID string, available bool) (domain.Member, error)
	// AnyAvailable reports whether at least one member of the workspace is
	// available. An unknown workspace has nobody: false, no error.
	AnyAvailable(ctx context.Context, workspaceID string) (bool, error)
}
