package ports

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/core/domain"
)

// ErrFeedClosed ends every subscription when the feed shuts down (the
// server is stopping). The client resumes on another pod.
var ErrFeedClosed = errors.New("the live feed is shutting down")

// Subscription is one local follower of a session's live events.
type Subscription interface {
	// Events delivers the session's events in publish order, and Gap
	// markers. It is never closed: watch Done.
	Events() <-chan *domain.LiveEvent
	// Done is closed when the subscription ends: Close, the feed shutting
	// down (ErrFeedClosed) or losing Redis for longer than it waits (Err
	// wraps domain.ErrUnavailable).
	Done() <-chan struct{}
	// Err says why Done was closed; nil after Close or while open.
	Err() error
	// Close ends the subscription; it may be called more than once.
	Close()
}

// EventFeed delivers every pod's session events to this pod's followers.
type EventFeed interface {
	// Subscribe follows a session. It returns once the feed is sure to
	// deliver every event published from then on, so a caller may start
	// the work whose events it wants to see. Returns an error wrapping
	// domain.ErrUnavailable if that cannot be confirmed before ctx ends or
	// the feed's own bound, and ErrFeedClosed after the feed shut down.
	Subscribe(ctx context.Context, sessionID string) (Subscription, error)
}

// EventLog reads the short-lived log of a session's recent events, the
// replay source for answers still being generated.
type EventLog interface {
	// Tail returns the LogID of the session's newest logged event, or ""
	// when its log is empty. Returns an error wrapping
	// domain.ErrUnavailable when the log cannot be read.
	Tail(ctx context.Context, sessionID string) (string, error)
	// Since returns the events logged after the one with LogID logID,
	// oldest first, and whether logID is still in the log; when it is not
	// (trimmed, expired or lost), events is every logged event. Errors as
	// Tail.
	Since(ctx context.Context, sessionID, logID string) (events []*domain.LiveEvent, found bool, err error)
	// After returns the events logged after the one whose SSE id
	// (domain.SessionEvent.EventID) is eventID, oldest first, and that event's
	// LogID, at; when it is not in the log (trimmed, expired or lost), at is
	// "" and events is every logged event. Errors as Tail.
	After(ctx context.Context, sessionID, eventID string) (events []*domain.LiveEvent, at string, err error)
	// Newer reports whether LogID a was logged after LogID b in one
	// session's log; every LogID is newer than "". It reads nothing.
	Newer(a, b string) bool
}

// Transcript reads a conversation's stored messages, the replay source of
// live streams once the recent log no longer has what a client missed.
type Transcript interface {
	// MessagesFrom returns up to limit of the conversation's messages in
	// append order, starting with messageID itself ("" starts at the
	// first). Returns domain.ErrNotFound unless the conversation belongs to
	// the workspace and, when messageID is set, has that message.
	MessagesFrom(ctx context.Context, workspaceID, conversationID, messageID string, limit int) ([]domain.Message, error)
}
