package relay

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// WorkspaceDeps are the workspace streams' outside-world pieces.
type WorkspaceDeps struct {
	// Log is the workspaces' event logs: the order and the replay source.
	Log ports.WorkspaceEventLog
	// Feed wakes this pod's followers when a workspace's log grows.
	Feed ports.WorkspaceFeed
}

// workspacePage is how many events one read of a workspace's log takes.
const workspacePage = 200

// firstReadRetry is how soon a failed read of the log is tried again; the
// wait doubles at each failure, up to the keep-alive. Without it an event
// would wait for the next wake-up or keep-alive (15 s by default) once
// Redis is back.
const firstReadRetry = 250 * time.Millisecond

// WorkspaceSink is where a workspace stream writes. Its methods run on the
// stream's goroutine; an error (the client left) ends the stream.
type WorkspaceSink interface {
	// Send writes one event.
	Send(ev domain.WorkspaceEvent) error
	// Reset tells the client that events it missed are no longer kept:
	// it reloads what it shows.
	Reset() error
	// Fail writes the stream's terminal error (code and message).
	Fail(code, message string) error
	// KeepAlive writes something the client ignores.
	KeepAlive() error
}

// WorkspaceStream is one client's stream of a workspace's events: new
// messages, status and assignment changes of every conversation.
type WorkspaceStream struct {
	s           *Service
	workspaceID string
	sub         ports.Subscription
	// pos is the position of the last event the client has ("" is the
	// log's start); reset says the client's own was no longer kept.
	pos   string
	reset bool
	first []domain.WorkspaceEvent
}

// OpenWorkspace subscribes to a workspace's events (confirmed) and finds
// where the client resumes: after lastEventID, or live from now without
// one. A position the log no longer keeps makes the stream start with a
// reset, then go on live. Its errors come before anything is streamed: a
// domain.ValidationError for a malformed Last-Event-ID, and errors wrapping
// domain.ErrUnavailable when Redis cannot be reached. The caller has
// checked that its client may see the workspace. The stream must be Run or
// Closed.
func (s *Service) OpenWorkspace(ctx context.Context, workspaceID, lastEventID string) (*WorkspaceStream, error) {
	w := s.d.Workspace
	if w.Log == nil || w.Feed == nil {
		return nil, domain.Unavailable("workspace events", errors.New("no workspace event log is configured"))
	}
	sub, err := w.Feed.Watch(ctx, workspaceID)
	if err != nil {
		return nil, err
	}
	st := &WorkspaceStream{s: s, workspaceID: workspaceID, sub: sub}
	if err := st.position(ctx, lastEventID); err != nil {
		sub.Close()
		return nil, err
	}
	return st, nil
}

func (st *WorkspaceStream) position(ctx context.Context, lastEventID string) error {
	log := st.s.d.Workspace.Log
	if lastEventID != "" {
		events, retained, err := log.After(ctx, st.workspaceID, lastEventID, workspacePage)
		if err != nil {
			return err
		}
		if retained {
			st.pos, st.first = lastEventID, events
			return nil
		}
		st.reset = true
	}
	// Live from now: after the newest logged event, read after the
	// subscription was confirmed, so nothing falls in between.
	tail, err := log.Tail(ctx, st.workspaceID)
	st.pos = tail
	return err
}

// Close ends the stream's subscription; Run does it when it returns.
func (st *WorkspaceStream) Close() { st.sub.Close() }

// Run sends the reset or the replay Open planned, then every event the
// workspace's log gains, until ctx ends, the client leaves (sink fails) or
// the feed ends the subscription. It reads the log once the replay is
// sent (a replay longer than a page goes on at once, and events logged
// since Open are not left for a wake-up), whenever the feed wakes it and
// at every keep-alive, so a lost wake-up delays an event by one keep-alive
// at most. A read that fails (Redis is away) is retried after
// firstReadRetry, doubling up to the keep-alive; still failing after
// OutageLimit, or the feed giving up on Redis, ends the stream with an
// error event (code UNAVAILABLE) telling the client to reconnect with its
// Last-Event-ID. The feed shutting down ends it without one. The returned
// error is for logs.
func (st *WorkspaceStream) Run(ctx context.Context, sink WorkspaceSink) error {
	defer st.sub.Close()
	if st.reset {
		if err := sink.Reset(); err != nil {
			return nil
		}
	}
	if err := st.send(sink, st.first); err != nil {
		return nil
	}
	st.first = nil
	keepAlive := time.NewTicker(st.s.opts.KeepAlive)
	defer keepAlive.Stop()
	var failingSince time.Time
	// retry fires when a failed read is due again; nil while reads work.
	var retry <-chan time.Time
	backoff := firstReadRetry
	read := func() error {
		err := st.catchUp(ctx, sink)
		switch {
		case err == nil:
			failingSince, retry, backoff = time.Time{}, nil, firstReadRetry
			return nil
		case errors.Is(err, errClientGone):
			return err
		case failingSince.IsZero():
			failingSince = time.Now()
		case time.Since(failingSince) >= st.s.opts.OutageLimit:
			return st.fail(sink, err)
		}
		retry = time.After(backoff)
		backoff = min(2*backoff, st.s.opts.KeepAlive)
		return nil
	}
	if err := read(); err != nil {
		return clientGone(err)
	}
	for {
		select {
		case <-retry:
			if err := read(); err != nil {
				return clientGone(err)
			}
		case <-st.sub.Events():
			// One read covers every wake-up queued so far.
			drain(st.sub.Events())
			if err := read(); err != nil {
				return clientGone(err)
			}
		case <-keepAlive.C:
			if err := sink.KeepAlive(); err != nil {
				return nil
			}
			if err := read(); err != nil {
				return clientGone(err)
			}
		case <-st.sub.Done():
			if err := st.sub.Err(); err != nil && !errors.Is(err, ports.ErrFeedClosed) {
				return clientGone(st.fail(sink, err))
			}
			return nil
		case <-ctx.Done():
			return nil
		}
	}
}

// catchUp sends every event logged after the stream's position.
func (st *WorkspaceStream) catchUp(ctx context.Context, sink WorkspaceSink) error {
	for {
		events, retained, err := st.s.d.Workspace.Log.After(ctx, st.workspaceID, st.pos, workspacePage)
		if err != nil {
			return err
		}
		if !retained {
			// It fell further behind than the log keeps (or the log
			// expired): the client reloads, and follows on from the tail.
			// The tail is read before the reset is sent: an event logged
			// after the reset reached the client may be missing from its
			// reload, so it must come after the new position, and the
			// next turn reads it.
			tail, err := st.s.d.Workspace.Log.Tail(ctx, st.workspaceID)
			if err != nil {
				return err
			}
			if err := sink.Reset(); err != nil {
				return fmt.Errorf("%w: %w", errClientGone, err)
			}
			st.pos = tail
			continue
		}
		if err := st.send(sink, events); err != nil {
			return err
		}
		if len(events) < workspacePage {
			return nil
		}
	}
}

func (st *WorkspaceStream) send(sink WorkspaceSink, events []domain.WorkspaceEvent) error {
	for _, ev := range events {
		if err := sink.Send(ev); err != nil {
			return fmt.Errorf("%w: %w", errClientGone, err)
		}
		st.pos = ev.ID
	}
	return nil
}

// fail ends the stream with its terminal error event.
func (st *WorkspaceStream) fail(sink WorkspaceSink, err error) error {
	_ = sink.Fail(domain.CodeUnavailable, unavailable)
	st.s.d.Log.Info("workspace stream ended with an error; the client resumes", "workspaceId", st.workspaceID, "error", err)
	return fmt.Errorf("workspace stream of %s: %w", st.workspaceID, err)
}

// clientGone is nil for a client that left (nobody to tell), else err.
func clientGone(err error) error {
	if errors.Is(err, errClientGone) {
		return nil
	}
	return err
}

func drain(ch <-chan *domain.LiveEvent) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}
