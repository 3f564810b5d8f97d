// Package sse writes Server-Sent Events streams on fiber, as PRODUCT.md
// specifies them: `id:` and `data:` lines per event, one flush per event, a
// `: ping` heartbeat, and generation that outlives a client that leaves.
package sse

import (
	"bufio"
	"encoding/json"
	"net"
	"sync"
	"time"

	"github.com/gofiber/fiber/v2"
)

// Heartbeat is how often an idle stream sends a comment, so proxies keep it
// open and a vanished client is noticed (fasthttp reports a disconnect only
// when a flush fails).
const Heartbeat = 15 * time.Second

// WriteStall is how long one flush may wait for a client to take the bytes.
// A client that stops reading (a frozen tab, a dead network path with no
// reset) would otherwise block the stream's writer goroutine, and with it
// its buffers and subscription, until TCP gives up hours later: no write
// timeout is set on the server, as it would cap the life of every stream.
const WriteStall = 30 * time.Second

// stallGuard bounds each flush of a stream with a write deadline on its
// connection, and clears it when the stream ends so a kept-alive connection
// serves its next request without one.
type stallGuard struct {
	conn  net.Conn
	stall time.Duration
}

func newStallGuard(c *fiber.Ctx, stall time.Duration) stallGuard {
	return stallGuard{conn: c.Context().Conn(), stall: stall}
}

// flush flushes w within the stall limit.
func (g stallGuard) flush(w *bufio.Writer) error {
	if g.conn != nil {
		_ = g.conn.SetWriteDeadline(time.Now().Add(g.stall))
	}
	return w.Flush()
}

func (g stallGuard) done() {
	if g.conn != nil {
		_ = g.conn.SetWriteDeadline(time.Time{})
	}
}

// Event is one SSE event: its id line and its JSON data.
type Event struct {
	ID   string
	Data any
}

// Stream is a queue of events between a producer that must never block on
// the client (the answer engine) and the writer that serves the client.
type Stream struct {
	events    chan Event
	gone      chan struct{}
	once      sync.Once
	heartbeat time.Duration
	stall     time.Duration
}

// NewStream returns a stream buffering up to size events, with the standard
// heartbeat.
func NewStream(size int) *Stream {
	return &Stream{events: make(chan Event, size), gone: make(chan struct{}), heartbeat: Heartbeat, stall: WriteStall}
}

// Send queues an event. Once the client is gone it returns at once and drops
// the event; while the client is slow it waits for room, which is bounded by
// the buffer and the heartbeat's flush failing.
func (s *Stream) Send(ev Event) {
	select {
	case s.events <- ev:
	case <-s.gone:
	}
}

// Close ends the stream after the queued events are written.
func (s *Stream) Close() { close(s.events) }

func (s *Stream) markGone() { s.once.Do(func() { close(s.gone) }) }

// Serve sets the SSE headers and writes the stream's events until it is
// closed or the client leaves. The writer runs after the handler returns, so
// it must not touch c: everything it needs is in s.
func Serve(c *fiber.Ctx, s *Stream) error {
	setHeaders(c)
	guard := newStallGuard(c, s.stall)
	c.Context().SetBodyStreamWriter(func(w *bufio.Writer) {
		defer s.markGone()
		defer guard.done()
		ticker := time.NewTicker(s.heartbeat)
		defer ticker.Stop()
		for {
			select {
			case ev, ok := <-s.events:
				if !ok {
					return
				}
				if err := write(w, guard, ev); err != nil {
					return
				}
			case <-ticker.C:
				if err := ping(w, guard); err != nil {
					return
				}
			}
		}
	})
	return nil
}

// setHeaders sets what PRODUCT.md requires of every stream; no-cache and
// X-Accel-Buffering keep proxies from holding events back.
func setHeaders(c *fiber.Ctx) {
	c.Set(fiber.HeaderContentType, "text/event-stream")
	c.Set(fiber.HeaderCacheControl, "no-cache")
	c.Set(fiber.HeaderConnection, "keep-alive")
	c.Set("X-Accel-Buffering", "no")
}

func write(w *bufio.Writer, guard stallGuard, ev Event) error {
	data, err := json.Marshal(ev.Data)
	if err != nil {
		return err
	}
	if _, err := w.Write(frame(ev.ID, data)); err != nil {
		return err
	}
	return guard.flush(w)
}

// frame is one event as the stream carries it: its id line (none without an
// id) and its data line.
func frame(id string, data []byte) []byte {
	b := make([]byte, 0, len(id)+len(data)+16)
	if id != "" {
		b = append(b, "id: "...)
		b = append(b, id...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	return append(b, "\n\n"...)
}

// ping writes the heartbeat comment and flushes it; the failed flush is how
// a client that left is noticed.
func ping(w *bufio.Writer, guard stallGuard) error {
	if _, err := w.WriteString(": ping\n\n"); err != nil {
		return err
	}
	return guard.flush(w)
}
