package ports

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// WorkspaceEventLog is the ordered, short-lived log of each workspace's
// events (domain.WorkspaceEvent), shared by every pod: the order followers
// see, and what a client resuming with Last-Event-ID is replayed from. It
// keeps the recent events only; PostgreSQL holds the conversations.
type WorkspaceEventLog interface {
	// Append adds events to their workspaces' logs, in order, sets each
	// one's ID to its position, and wakes the workspaces' followers on
	// every pod (WorkspaceFeed). Returns an error wrapping
	// domain.ErrUnavailable when the log cannot be reached (some events may
	// have been appended), and a plain error, appending nothing, for an
	// event without a workspace, a conversation or a known type.
	Append(ctx context.Context, events []domain.WorkspaceEvent) error
	// After returns up to limit of the workspace's events logged after the
	// one at position afterID, oldest first, and whether the log still
	// holds everything after afterID (retained); when it does not (trimmed
	// or expired), events is empty and the follower must start over. Returns
	// a domain.ValidationError for an afterID that is not a position of a
	// log, and errors wrapping domain.ErrUnavailable as Append.
	After(ctx context.Context, workspaceID, afterID string, limit int) (events []domain.WorkspaceEvent, retained bool, err error)
	// Tail returns the position of the workspace's newest logged event, or
	// "" when its log is empty. Errors as Append.
	Tail(ctx context.Context, workspaceID string) (string, error)
}

// WorkspaceFeed wakes this pod's followers of a workspace's events.
type WorkspaceFeed interface {
	// Watch follows a workspace. The subscription's Events are wake-ups
	// (domain.LiveEvent Gap markers) that carry nothing: each says the
	// workspace's log may have grown, or that wake-ups may have been lost,
	// and the follower reads the log after its position. It returns once
	// every event appended from then on is sure to wake the follower.
	// Errors as EventFeed.Subscribe.
	Watch(ctx context.Context, workspaceID string) (Subscription, error)
}
