package sse

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/relay"
)

// Live serves a live stream: it sets the SSE headers and runs run on the
// response's writer goroutine, after the handler returned, with a sink
// that writes each event as one flushed frame, taken from frames (nil:
// rendered for this stream alone). run must return when its sink fails
// (the client left, noticed by a failed flush) and must not touch c.
func Live(c *fiber.Ctx, frames *Frames, run func(sink *LiveSink)) error {
	return live(c, WriteStall, frames, run)
}

func live(c *fiber.Ctx, stall time.Duration, frames *Frames, run func(sink *LiveSink)) error {
	setHeaders(c)
	guard := newStallGuard(c, stall)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer guard.done()
		sink := &LiveSink{w: w, guard: guard, frames: frames}
		// fasthttp sends the headers with the first flushed bytes: without
		// this a client would not know the stream is open (EventSource's
		// open event) until the first event or heartbeat. A failure shows
		// again on run's first write, which ends it.
		_ = sink.KeepAlive()
		run(sink)
	})
	return nil
}

// Opener opens the live streams of conversations (relay.Service).
type Opener interface {
	// Open checks the caller's access and positions a stream after
	// req.LastEventID. It returns domain.ErrNotFound for a conversation
	// the caller cannot see, a domain.ValidationError for a malformed or
	// unknown Last-Event-ID, domain.ErrUnauthorized for a bad identity
	// signature, and errors wrapping domain.ErrUnavailable.
	Open(ctx context.Context, req relay.Request) (LiveStream, error)
}

// LiveStream is an opened live stream (*relay.Stream).
type LiveStream interface {
	// Run writes the stream's events to sink until ctx ends or sink fails.
	Run(ctx context.Context, sink relay.Sink) error
}

// Follower serves the pod's live streams of conversations, sharing one
// cache of rendered frames among them.
type Follower struct {
	relay  Opener
	frames *Frames
}

// NewFollower returns the pod's Follower over the relay.
func NewFollower(r Opener) *Follower {
	return &Follower{relay: r, frames: NewFrames()}
}

// Follow serves the live stream of a conversation: it opens req (with the
// client's Last-Event-ID) on the relay and streams it. Errors before the
// stream opens (an unknown session, a Last-Event-ID the conversation does
// not know) are returned for the ErrorHandler's JSON body.
func (f *Follower) Follow(c *fiber.Ctx, req relay.Request) error {
	ctx := c.UserContext()
	req.LastEventID = LastEventID(c)
	st, err := f.relay.Open(ctx, req)
	if err != nil {
		return err
	}
	return Live(c, f.frames, func(sink *LiveSink) { _ = st.Run(ctx, sink) })
}

// LastEventID is where a client resumes: the Last-Event-ID header, which
// EventSource sends when it reconnects, or else the lastEventId query
// parameter, for a client opening a new URL (EventSource cannot set
// headers). The header wins: on its own reconnects EventSource keeps the
// URL, query included, and sends the newer id in the header.
func LastEventID(c *fiber.Ctx) string {
	if id := strings.TrimSpace(c.Get("Last-Event-ID")); id != "" {
		return strings.Clone(id)
	}
	return strings.Clone(c.Query("lastEventId"))
}

// LiveSink writes live events as SSE frames.
type LiveSink struct {
	w      *bufio.Writer
	guard  stallGuard
	frames *Frames
}

// Send writes one event and flushes it. The frame is rendered once per
// event, however many streams of the pod write it (Frames).
func (s *LiveSink) Send(ev *domain.LiveEvent) error {
	if _, err := s.w.Write(s.frames.frame(ev, renderLive)); err != nil {
		return err
	}
	return s.guard.flush(s.w)
}

// KeepAlive writes the heartbeat comment.
func (s *LiveSink) KeepAlive() error { return ping(s.w, s.guard) }

// renderLive is an event's frame: its id line (none for a stream's own
// terminal error) and its data, exactly as the POST stream writes them.
func renderLive(ev *domain.LiveEvent) []byte {
	data, err := json.Marshal(wire.EventData(ev.SessionEvent))
	if err != nil {
		// Only plain strings, numbers and slices of them: cannot happen.
		data = []byte(`{"type":"error","code":"INTERNAL","message":"internal error"}`)
	}
	return frame(ev.EventID(), data)
}
