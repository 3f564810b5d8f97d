package sse

import (
	"bufio"
	"context"
	"encoding/json"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/relay"
)

// WorkspaceOpener opens workspaces' event streams (relay.Service).
type WorkspaceOpener interface {
	// OpenWorkspace positions a stream of the workspace's events after
	// lastEventID. It returns a domain.ValidationError for a malformed
	// Last-Event-ID and errors wrapping domain.ErrUnavailable.
	OpenWorkspace(ctx context.Context, workspaceID, lastEventID string) (WorkspaceStream, error)
}

// WorkspaceStream is an opened workspace stream (*relay.WorkspaceStream).
type WorkspaceStream interface {
	// Run writes the stream's events to sink until ctx ends or sink fails.
	Run(ctx context.Context, sink relay.WorkspaceSink) error
}

// FollowWorkspace serves the event stream of a workspace the caller may
// see (the route checked it), resuming after the client's Last-Event-ID.
// Errors before the stream opens are returned for the edge's error page
// or JSON body.
func FollowWorkspace(c *fiber.Ctx, opener WorkspaceOpener, workspaceID string) error {
	ctx := c.UserContext()
	st, err := opener.OpenWorkspace(ctx, workspaceID, LastEventID(c))
	if err != nil {
		return err
	}
	setHeaders(c)
	guard := newStallGuard(c, WriteStall)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer guard.done()
		sink := &workspaceSink{w: w, guard: guard}
		// Headers go with the first flushed bytes (see live).
		_ = sink.KeepAlive()
		_ = st.Run(ctx, sink)
	})
	return nil
}

// workspaceSink writes workspace events as SSE frames with an event line:
// a client listens per type (addEventListener("message.created", ...)).
type workspaceSink struct {
	w     *bufio.Writer
	guard stallGuard
}

func (s *workspaceSink) Send(ev domain.WorkspaceEvent) error {
	data, err := json.Marshal(wire.WorkspaceEventData(ev))
	if err != nil {
		return err
	}
	return s.write(ev.ID, ev.Type, data)
}

// Reset sends `event: reset` with data {}: "reload what you show".
func (s *workspaceSink) Reset() error { return s.write("", "reset", []byte("{}")) }

// Fail sends the terminal error event, without an id.
func (s *workspaceSink) Fail(code, message string) error {
	data, err := json.Marshal(map[string]string{"code": code, "message": message})
	if err != nil {
		return err
	}
	return s.write("", "error", data)
}

func (s *workspaceSink) KeepAlive() error { return ping(s.w, s.guard) }

func (s *workspaceSink) write(id, event string, data []byte) error {
	b := make([]byte, 0, len(id)+len(event)+len(data)+24)
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "event: "...)
	b = append(b, event...)
	b = append(b, "\ndata: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.guard.flush(s.w)
}
