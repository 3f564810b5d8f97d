// Package bodylimit bounds what the HTTP edge reads of request bodies. Every
// request has a limit from the kind of route it is sent to; a body over it is
// refused with 413 as soon as that is known (at once when Content-Length says
// so, while it is read otherwise) and the rest is never read. Bodies that may
// grow past a JSON request's limit (file uploads) are read a few at a time.
//
// It relies on fasthttp streaming request bodies (Configure): without that,
// fasthttp reads every body whole before any handler runs.
package bodylimit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// Class is the kind of route a request is sent to, for its body limit.
type Class int

const (
	// Other is every route that takes no body: reads, health checks, pages.
	Other Class = iota
	// JSON is an API route that takes a JSON body.
	JSON
	// Upload is a multipart file upload. Its body is not read by the guard:
	// the handler streams it with Stream, after authentication.
	Upload
)

// Limits are the body limits, in bytes, and the bound on large bodies.
type Limits struct {
	Other  int
	JSON   int
	Upload int
	// LargeSlots is how many bodies over the JSON limit (uploads declared
	// larger than it, or sent chunked) are read at once.
	LargeSlots int
	// LargeWait is how long a large body waits for a slot before it is
	// refused with ErrBusy.
	LargeWait time.Duration
}

func (l Limits) of(class Class) int {
	switch class {
	case JSON:
		return l.JSON
	case Upload:
		return l.Upload
	}
	return l.Other
}

// ErrTooLarge is the answer to a body over its limit (413
// PAYLOAD_TOO_LARGE through the ErrorHandler), and the error the reader of
// Stream returns once the body passes its limit.
var ErrTooLarge error = fiber.ErrRequestEntityTooLarge

// ErrBusy refuses a large body while every slot is taken: a 503 UNAVAILABLE
// with Retry-After, so the client sends it again a little later.
var ErrBusy = fmt.Errorf("too many large request bodies are being read at once: %w", domain.ErrUnavailable)

// errUnreadable answers a body that could not be read (the client went
// away, or was too slow for the read timeout).
var errUnreadable = fiber.NewError(fiber.StatusBadRequest, "the request body could not be read")

// Configure sets what the guard needs of the fiber app, on top of cfg.
func Configure(cfg fiber.Config, l Limits) fiber.Config {
	// Handlers get the body as a stream, after fasthttp has read at most 8
	// KiB of it, so the guard can refuse it before it is in memory.
	cfg.StreamRequestBody = true
	// Otherwise fasthttp parses a multipart body of known length in full,
	// spilling files to disk, before any handler runs.
	cfg.DisablePreParseMultipartForm = true
	// fasthttp v1.51 (the version fiber v2 pins) hands a connection's read
	// buffer back to its pool once it holds no unread bytes, even while a
	// body stream still reads from it: another connection could then take
	// the buffer mid-body. Fixed upstream (valyala/fasthttp#1844) by never
	// doing so when streaming; here it costs the connection's read and write
	// buffers (20 KiB) for as long as it is open.
	cfg.ReduceMemoryUsage = false
	// With streaming, the body limit only sizes what fasthttp reads ahead
	// (at most 8 KiB); the guard enforces the limits.
	cfg.BodyLimit = max(l.Upload, l.JSON, l.Other)
	return cfg
}

// Guard enforces the limits, as the first middleware after logging.
type Guard struct {
	limits   Limits
	classify func(*fiber.Ctx) Class
	slots    chan struct{}
}

// NewGuard returns a Guard; classify tells each request's route kind from
// its method, path and headers (the guard runs before routing).
func NewGuard(l Limits, classify func(*fiber.Ctx) Class) *Guard {
	return &Guard{limits: l, classify: classify, slots: make(chan struct{}, max(1, l.LargeSlots))}
}

// InUse is how many large bodies are being read now.
func (g *Guard) InUse() int { return len(g.slots) }

type bodyKey struct{}

// Handler refuses bodies over their route's limit, refuses compressed
// bodies (which would inflate past any limit), and reads every body but an
// upload's into memory, so handlers use c.Body() as usual.
func (g *Guard) Handler(c *fiber.Ctx) error {
	req := c.Request()
	// -1 is chunked, -2 no body at all (fasthttp's conventions).
	declared := req.Header.ContentLength()
	if declared == 0 || declared == -2 {
		return c.Next()
	}
	if enc := c.Get(fiber.HeaderContentEncoding); enc != "" && !strings.EqualFold(enc, "identity") {
		abandon(c)
		return fiber.NewError(fiber.StatusUnsupportedMediaType, "Content-Encoding is not supported: send the JSON uncompressed")
	}
	class := g.classify(c)
	limit := g.limits.of(class)
	if declared > limit {
		abandon(c)
		return ErrTooLarge
	}
	stream := c.Context().RequestBodyStream()
	if stream == nil {
		// A server that does not stream bodies has read it already.
		if len(req.Body()) > limit {
			return ErrTooLarge
		}
		return c.Next()
	}
	if class == Upload {
		b := &body{guard: g, stream: stream, declared: declared, limit: limit, large: declared < 0 || declared > g.limits.JSON}
		c.Locals(bodyKey{}, b)
		handled := false
		defer func() { b.finish(c, handled) }()
		err := c.Next()
		handled = err == nil
		return err
	}
	raw, err := readAll(stream, declared, limit)
	if err != nil {
		abandon(c)
		return err
	}
	req.SetBodyRaw(raw)
	return c.Next()
}

// readAll reads a body of declared length (or chunked, when declared is
// negative) into one slice of at most limit bytes.
func readAll(r io.Reader, declared, limit int) ([]byte, error) {
	if declared >= 0 {
		raw := make([]byte, declared)
		if _, err := io.ReadFull(r, raw); err != nil {
			return nil, errUnreadable
		}
		return raw, nil
	}
	// Grow by doubling, never past limit+1: the one byte more tells that
	// the body is over.
	raw := make([]byte, 0, min(4<<10, limit+1))
	for {
		if len(raw) == cap(raw) {
			grown := make([]byte, len(raw), min(2*cap(raw), limit+1))
			copy(grown, raw)
			raw = grown
		}
		n, err := r.Read(raw[len(raw):cap(raw)])
		raw = raw[:len(raw)+n]
		if len(raw) > limit {
			return nil, ErrTooLarge
		}
		if errors.Is(err, io.EOF) {
			return raw, nil
		}
		if err != nil {
			return nil, errUnreadable
		}
	}
}

// Stream returns the body of an upload for its handler to read: at most the
// route's limit, after which reads fail with ErrTooLarge. A large body
// first waits for a slot (ErrBusy if none frees up in time); the slot is
// held until the request ends. For any other request it returns the body
// the guard already read.
//
// An upload's body is a live stream: nothing else may read it (c.Body(),
// c.FormValue, c.MultipartForm would read all of it, past any limit).
func Stream(c *fiber.Ctx) (io.Reader, error) {
	b, ok := c.Locals(bodyKey{}).(*body)
	if !ok {
		return bytes.NewReader(c.Request().Body()), nil
	}
	if b.large && !b.slot {
		if err := b.guard.acquire(c.UserContext()); err != nil {
			return nil, err
		}
		b.slot = true
	}
	return b, nil
}

// IsUpload reports whether the request's body is an upload's live stream
// (read it only through Stream), rather than a body already in memory.
func IsUpload(c *fiber.Ctx) bool {
	_, ok := c.Locals(bodyKey{}).(*body)
	return ok
}

func (g *Guard) acquire(ctx context.Context) error {
	select {
	case g.slots <- struct{}{}:
		return nil
	default:
	}
	wait := time.NewTimer(g.limits.LargeWait)
	defer wait.Stop()
	select {
	case g.slots <- struct{}{}:
		return nil
	case <-wait.C:
		return ErrBusy
	case <-ctx.Done():
		return ErrBusy
	}
}

// body is an upload's body as its handler reads it.
type body struct {
	guard    *Guard
	stream   io.Reader
	declared int
	limit    int
	large    bool
	slot     bool
	read     int
	eof      bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.eof {
		return 0, io.EOF
	}
	if b.read > b.limit {
		return 0, ErrTooLarge
	}
	// Ask for one byte past the limit at most, to tell a body that ends at
	// the limit from one that goes on.
	if room := b.limit + 1 - b.read; len(p) > room {
		p = p[:room]
	}
	n, err := b.stream.Read(p)
	b.read += n
	if b.read > b.limit {
		return n - (b.read - b.limit), ErrTooLarge
	}
	if errors.Is(err, io.EOF) {
		b.eof = true
	}
	return n, err
}

// drainLimit is how much of an upload's body the guard reads after its
// handler answered, to keep the connection for the next request: the end of
// a form the handler parsed, or a small body it had no use for. Anything
// else is left unread and the connection closed.
const drainLimit = 64 << 10

// finish gives the slot back and makes sure the connection is not reused
// with part of this body still unread. handled is whether the handler
// answered without an error: a refused body is never read further.
func (b *body) finish(c *fiber.Ctx, handled bool) {
	if b.slot {
		<-b.guard.slots
		b.slot = false
	}
	if b.eof || handled && b.drain() {
		return
	}
	abandon(c)
}

// drain reads the rest of the body if it is small, and says whether it got
// to the end.
func (b *body) drain() bool {
	if b.read > b.limit || b.declared >= 0 && b.declared-b.read > drainLimit {
		return false
	}
	_, err := io.Copy(io.Discard, io.LimitReader(b, drainLimit))
	return err == nil && b.eof
}

// abandon closes the connection once the answer is written, since part of
// the body is still unread, and lets the connection linger so the client
// reads the answer rather than a reset.
func abandon(c *fiber.Ctx) {
	c.Context().SetConnectionClose()
	if lc, ok := c.Context().Conn().(*conn); ok {
		lc.lingerOnClose()
	}
}
