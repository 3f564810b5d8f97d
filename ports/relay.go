package ports

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"

	"github.com/conciergehq/concierge/core/domain"
)

// EventID is the event's SSE id, "<MessageID>:<Seq>", with which a client
// resumes (Last-Event-ID) and by which the recent log finds it; "" for an
// event without a message id.
func (ev SessionEvent) EventID() string {
	if ev.MessageID == "" {
		return ""
	}
	return ev.MessageID + ":" + strconv.Itoa(ev.Seq)
}

// LiveEvent is a session event as the live relay carries it: shared,
// read-only, by every local follower of the session.
type LiveEvent struct {
	SessionEvent
	// LogID is the event's entry in the session's recent log (EventLog);
	// "" for an event rebuilt from stored messages.
	LogID string
	// Gap marks not an event but a hole before this point in a
	// subscription: the feed lost its connection, or the follower fell
	// behind, and events published meanwhile were not delivered. The
	// follower catches up from the log.
	Gap bool

	frame atomic.Pointer[[]byte]
}

// Frame returns the event rendered by render, rendering it once however
// many followers of the session write it (render must depend on the event
// alone).
func (e *LiveEvent) Frame(render func(*LiveEvent) []byte) []byte {
	if f := e.frame.Load(); f != nil {
		return *f
	}
	f := render(e)
	e.frame.Store(&f)
	return f
}

// ErrFeedClosed ends every subscription when the feed shuts down (the
// server is stopping). The client resumes on another pod.
var ErrFeedClosed = errors.New("the live feed is shutting down")

// Subscription is one local follower of a session's live events.
type Subscription interface {
	// Events delivers the session's events in publish order, and Gap
	// markers. It is never closed: watch Done.
	Events() <-chan *LiveEvent
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
	Since(ctx context.Context, sessionID, logID string) (events []*LiveEvent, found bool, err error)
	// After returns the events logged after the one whose SSE id
	// (SessionEvent.EventID) is eventID, oldest first, and that event's
	// LogID, at; when it is not in the log (trimmed, expired or lost), at is
	// "" and events is every logged event. Errors as Tail.
	After(ctx context.Context, sessionID, eventID string) (events []*LiveEvent, at string, err error)
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
