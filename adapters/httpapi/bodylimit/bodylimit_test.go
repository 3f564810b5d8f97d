package bodylimit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/adapters/httpapi/wire"
)

// The tests run a fiber app configured as the API's, on a real listener,
// and talk to it over TCP by hand: what matters is what crosses the wire
// and when (which bytes the server waits for before it answers).

var testLimits = Limits{Other: 1 << 10, JSON: 64 << 10, Upload: 1 << 20, LargeSlots: 2, LargeWait: 100 * time.Millisecond}

type testServer struct {
	addr string
	// uploadStarted receives the X-Hold header of each upload whose
	// handler holds its body stream (and its slot); closing release[id]
	// lets it read on.
	uploadStarted chan string
	release       map[string]chan struct{}
	released      map[string]*sync.Once
	guard         *Guard
}

// free lets the held upload id read on.
func (s *testServer) free(id string) {
	s.released[id].Do(func() { close(s.release[id]) })
}

func newTestServer(t *testing.T, l Limits) *testServer {
	t.Helper()
	s := &testServer{uploadStarted: make(chan string, 16), release: map[string]chan struct{}{}, released: map[string]*sync.Once{}}
	for _, id := range []string{"a", "b", "c"} {
		s.release[id], s.released[id] = make(chan struct{}), &sync.Once{}
	}
	classify := func(c *fiber.Ctx) Class {
		switch c.Path() {
		case "/json":
			return JSON
		case "/upload", "/upload-ignored":
			return Upload
		}
		return Other
	}
	s.guard = NewGuard(l, classify)
	app := fiber.New(Configure(fiber.Config{
		DisableStartupMessage: true,
		ReadTimeout:           10 * time.Second,
		ErrorHandler: func(c *fiber.Ctx, err error) error {
			status, body := wire.DescribeError(err)
			return c.Status(status).JSON(body)
		},
	}, l))
	app.Use(s.guard.Handler)
	app.Get("/small", func(c *fiber.Ctx) error { return c.SendString("read " + strconv.Itoa(len(c.Body()))) })
	app.Post("/json", func(c *fiber.Ctx) error { return c.SendString("read " + strconv.Itoa(len(c.Body()))) })
	app.Post("/upload", func(c *fiber.Ctx) error {
		body, err := Stream(c)
		if err != nil {
			return err
		}
		if id := c.Get("X-Hold"); id != "" {
			s.uploadStarted <- id
			<-s.release[id]
		}
		n, err := io.Copy(io.Discard, body)
		if err != nil {
			return err
		}
		return c.SendString("read " + strconv.FormatInt(n, 10))
	})
	app.Post("/upload-ignored", func(c *fiber.Ctx) error { return c.SendString("not read") })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = app.Listener(Listener(ln)) }()
	t.Cleanup(func() {
		for id := range s.release {
			s.free(id)
		}
		_ = app.Shutdown()
	})
	s.addr = ln.Addr().String()
	return s
}

// rawConn is one client connection written and read by hand.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func (s *testServer) dial(t *testing.T) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A safety net so a server that waits for the rest of a body fails the
	// test instead of hanging it; no answer takes more than a moment.
	_ = c.SetDeadline(time.Now().Add(15 * time.Second))
	return &rawConn{t: t, c: c, br: bufio.NewReader(c)}
}

func (rc *rawConn) write(s string) {
	rc.t.Helper()
	if _, err := io.WriteString(rc.c, s); err != nil {
		rc.t.Fatalf("writing: %v", err)
	}
}

// head writes a request's head; length < 0 sends the body chunked.
func (rc *rawConn) head(method, path string, length int, extra ...string) {
	rc.t.Helper()
	h := method + " " + path + " HTTP/1.1\r\nHost: test\r\n"
	if length < 0 {
		h += "Transfer-Encoding: chunked\r\n"
	} else {
		h += "Content-Length: " + strconv.Itoa(length) + "\r\n"
	}
	for _, e := range extra {
		h += e + "\r\n"
	}
	rc.write(h + "\r\n")
}

// chunk writes n bytes as one chunk of a chunked body.
func (rc *rawConn) chunk(n int) {
	rc.t.Helper()
	rc.write(fmt.Sprintf("%x\r\n%s\r\n", n, strings.Repeat("a", n)))
}

func (rc *rawConn) endChunks() { rc.t.Helper(); rc.write("0\r\n\r\n") }

// answer reads one response; the error code of an error body, or "".
func (rc *rawConn) answer() (resp *http.Response, body, code string) {
	rc.t.Helper()
	resp, err := http.ReadResponse(rc.br, nil)
	if err != nil {
		rc.t.Fatalf("no answer: %v", err)
	}
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		rc.t.Fatalf("reading the answer: %v", err)
	}
	var e wire.ErrorBody
	_ = json.Unmarshal(raw, &e)
	return resp, string(raw), e.Error.Code
}

// mustBeClosedCleanly checks the server ends the connection with an orderly
// shutdown (EOF), not a reset that could have cost the client the answer.
func (rc *rawConn) mustBeClosedCleanly() {
	rc.t.Helper()
	n, err := io.Copy(io.Discard, rc.br)
	if err != nil {
		if errors.Is(err, syscall.ECONNRESET) {
			rc.t.Fatalf("the connection was reset after the answer (%d more bytes): the answer could have been lost", n)
		}
		rc.t.Fatalf("after the answer: %v (%d more bytes)", err, n)
	}
	if n != 0 {
		rc.t.Fatalf("%d bytes after the answer", n)
	}
}

func mustRefuse(t *testing.T, rc *rawConn, status int, code string) {
	t.Helper()
	resp, body, got := rc.answer()
	if resp.StatusCode != status || got != code {
		t.Fatalf("got %d %s, want %d %s", resp.StatusCode, body, status, code)
	}
	if !resp.Close {
		t.Fatalf("a refused body's answer must close the connection (Connection: %q)", resp.Header.Get("Connection"))
	}
}

// A body declared over its route's limit is refused before it is read: the
// client sends a little of it and reads the 413 without sending the rest.
func TestDeclaredOverLimitIsRefusedUnread(t *testing.T) {
	s := newTestServer(t, testLimits)
	tests := []struct {
		name, method, path string
		declared           int
	}{
		{"route without a body", "GET", "/small", testLimits.Other + 1},
		{"route without a body, large", "GET", "/small", 50 << 20},
		{"JSON route", "POST", "/json", testLimits.JSON + 1},
		{"JSON route, large", "POST", "/json", 50 << 20},
		{"upload", "POST", "/upload", testLimits.Upload + 1},
		{"upload, large", "POST", "/upload", 50 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := s.dial(t)
			rc.head(tt.method, tt.path, tt.declared)
			rc.write(strings.Repeat("a", 16<<10))
			mustRefuse(t, rc, 413, "PAYLOAD_TOO_LARGE")
			rc.mustBeClosedCleanly()
		})
	}
}

// A chunked body is refused once it passes the limit, without its end.
func TestChunkedOverLimitIsRefused(t *testing.T) {
	s := newTestServer(t, testLimits)
	tests := []struct {
		name, method, path string
		limit              int
	}{
		{"route without a body", "GET", "/small", testLimits.Other},
		{"JSON route", "POST", "/json", testLimits.JSON},
		{"upload", "POST", "/upload", testLimits.Upload},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rc := s.dial(t)
			rc.head(tt.method, tt.path, -1)
			for sent := 0; sent <= tt.limit; sent += 512 {
				rc.chunk(512)
			}
			// No last chunk: the server must not wait for it.
			mustRefuse(t, rc, 413, "PAYLOAD_TOO_LARGE")
			rc.mustBeClosedCleanly()
		})
	}
}

// A body of exactly its limit is read whole; one byte more is refused. The
// connection of an accepted body serves the next request.
func TestBodyAtTheLimit(t *testing.T) {
	s := newTestServer(t, testLimits)
	routes := []struct {
		method, path string
		limit        int
	}{
		{"GET", "/small", testLimits.Other},
		{"POST", "/json", testLimits.JSON},
		{"POST", "/upload", testLimits.Upload},
	}
	for _, r := range routes {
		for _, chunked := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s chunked=%v", r.path, chunked), func(t *testing.T) {
				rc := s.dial(t)
				send := func(n int) {
					if !chunked {
						rc.head(r.method, r.path, n)
						rc.write(strings.Repeat("a", n))
						return
					}
					rc.head(r.method, r.path, -1)
					for left := n; left > 0; left -= min(left, 1000) {
						rc.chunk(min(left, 1000))
					}
					rc.endChunks()
				}
				send(r.limit)
				resp, body, _ := rc.answer()
				if resp.StatusCode != 200 || body != "read "+strconv.Itoa(r.limit) {
					t.Fatalf("at the limit: %d %s", resp.StatusCode, body)
				}
				if resp.Close {
					t.Fatal("an accepted body closed the connection")
				}
				send(r.limit + 1)
				mustRefuse(t, rc, 413, "PAYLOAD_TOO_LARGE")
			})
		}
	}
}

// Compressed bodies are refused: they would inflate past any limit.
func TestCompressedBodyIsRefused(t *testing.T) {
	s := newTestServer(t, testLimits)
	rc := s.dial(t)
	rc.head("POST", "/json", 10, "Content-Encoding: gzip")
	rc.write(strings.Repeat("a", 10))
	mustRefuse(t, rc, 415, "UNSUPPORTED_MEDIA_TYPE")
}

// An upload its handler leaves unread keeps the connection when the rest is
// small, and closes it (gracefully) when it is not.
func TestUnreadUploadBody(t *testing.T) {
	s := newTestServer(t, testLimits)
	rc := s.dial(t)
	rc.head("POST", "/upload-ignored", 1000)
	rc.write(strings.Repeat("a", 1000))
	resp, body, _ := rc.answer()
	if resp.StatusCode != 200 || resp.Close {
		t.Fatalf("small unread upload: %d %s, close %v", resp.StatusCode, body, resp.Close)
	}
	rc.head("POST", "/upload-ignored", drainLimit*4)
	rc.write(strings.Repeat("a", drainLimit*2))
	resp, body, _ = rc.answer()
	if resp.StatusCode != 200 || !resp.Close {
		t.Fatalf("large unread upload: %d %s, close %v; want 200 closing the connection", resp.StatusCode, body, resp.Close)
	}
	rc.mustBeClosedCleanly()
}

// At most LargeSlots large bodies are read at once; the next waits
// LargeWait and is refused with a retryable 503. Small uploads need no slot.
func TestLargeBodySlots(t *testing.T) {
	s := newTestServer(t, testLimits)
	large := testLimits.JSON + 1
	// fasthttp reads up to 8 KiB of a body of known length before any
	// handler runs, so a held upload sends that much.
	const prefetched = 8 << 10

	// Fill the slots: each upload sends a little and its handler holds its
	// stream until released.
	chunkedHeld := s.dial(t)
	chunkedHeld.head("POST", "/upload", -1, "X-Hold: a")
	chunkedHeld.chunk(100)
	if id := <-s.uploadStarted; id != "a" {
		t.Fatalf("upload %s started", id)
	}
	declaredHeld := s.dial(t)
	declaredHeld.head("POST", "/upload", large, "X-Hold: b")
	declaredHeld.write(strings.Repeat("a", prefetched))
	if id := <-s.uploadStarted; id != "b" {
		t.Fatalf("upload %s started", id)
	}
	if got := s.guard.InUse(); got != testLimits.LargeSlots {
		t.Fatalf("%d slots in use, want %d", got, testLimits.LargeSlots)
	}

	for _, chunked := range []bool{false, true} {
		rc := s.dial(t)
		if chunked {
			rc.head("POST", "/upload", -1)
			rc.chunk(100)
		} else {
			rc.head("POST", "/upload", large)
			rc.write(strings.Repeat("a", prefetched))
		}
		mustRefuse(t, rc, 503, "UNAVAILABLE")
		rc.mustBeClosedCleanly()
	}

	// A small upload is bounded like a JSON body and needs no slot.
	rc := s.dial(t)
	rc.head("POST", "/upload", testLimits.JSON)
	rc.write(strings.Repeat("a", testLimits.JSON))
	if resp, body, _ := rc.answer(); resp.StatusCode != 200 {
		t.Fatalf("small upload while the slots are taken: %d %s", resp.StatusCode, body)
	}

	// Once one finishes, its slot serves the next large body.
	s.free("b")
	declaredHeld.write(strings.Repeat("a", large-prefetched))
	if resp, body, _ := declaredHeld.answer(); resp.StatusCode != 200 || body != "read "+strconv.Itoa(large) {
		t.Fatalf("held upload: %d %s", resp.StatusCode, body)
	}
	next := s.dial(t)
	next.head("POST", "/upload", large, "X-Hold: c")
	next.write(strings.Repeat("a", large))
	if id := <-s.uploadStarted; id != "c" {
		t.Fatalf("upload %s started", id)
	}
	s.free("c")
	if resp, body, _ := next.answer(); resp.StatusCode != 200 {
		t.Fatalf("upload after a slot freed: %d %s", resp.StatusCode, body)
	}
	s.free("a")
	chunkedHeld.endChunks()
	if resp, body, _ := chunkedHeld.answer(); resp.StatusCode != 200 || body != "read 100" {
		t.Fatalf("held chunked upload: %d %s", resp.StatusCode, body)
	}
	if got := s.guard.InUse(); got != 0 {
		t.Fatalf("%d slots still in use", got)
	}
}
