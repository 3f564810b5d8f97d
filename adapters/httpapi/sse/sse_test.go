package sse

import (
	"bufio"
	"io"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
)

func TestServeWritesEventsAndHeartbeats(t *testing.T) {
	app := fiber.New()
	app.Get("/stream", func(c *fiber.Ctx) error {
		s := NewStream(8)
		s.heartbeat = 20 * time.Millisecond
		go func() {
			defer s.Close()
			s.Send(Event{ID: "msg_1:1", Data: map[string]string{"type": "token", "content": "Hello "}})
			time.Sleep(70 * time.Millisecond) // long enough for heartbeats in between
			s.Send(Event{ID: "msg_1:2", Data: map[string]any{"type": "done", "message": "Hello "}})
		}()
		return Serve(c, s)
	})
	resp, err := app.Test(httptest.NewRequest("GET", "/stream", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(h); got != want {
			t.Fatalf("%s = %q, want %q", h, got, want)
		}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	text := strings.Join(lines, "\n")
	wantEvents := []string{
		"id: msg_1:1\ndata: {\"content\":\"Hello \",\"type\":\"token\"}\n",
		"id: msg_1:2\ndata: {\"message\":\"Hello \",\"type\":\"done\"}\n",
	}
	for _, w := range wantEvents {
		if !strings.Contains(text+"\n", w) {
			t.Fatalf("stream lacks %q:\n%s", w, text)
		}
	}
	if pings := strings.Count(text, ": ping"); pings < 1 {
		t.Fatalf("no heartbeat in %q", text)
	}
	if !strings.HasSuffix(string(body), "\n\n") {
		t.Fatalf("the stream must end with a complete event: %q", body)
	}
}

func TestSendAfterTheClientLeftDoesNotBlock(t *testing.T) {
	s := NewStream(1)
	s.markGone()
	done := make(chan struct{})
	go func() {
		for range 100 {
			s.Send(Event{Data: "x"}) // the buffer holds one; the rest must be dropped
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Send blocked after the client left")
	}
}

// A client that stops reading is cut off once a flush has waited WriteStall
// (shortened here), on both kinds of stream: the writer goroutine ends, and
// with it the producer's wait and the live stream's subscription.
func TestStalledClientIsCutOff(t *testing.T) {
	big := strings.Repeat("x", 64<<10)
	for _, kind := range []string{"answer", "live"} {
		t.Run(kind, func(t *testing.T) {
			ended := make(chan struct{})
			app := fiber.New()
			app.Get("/stream", func(c *fiber.Ctx) error {
				if kind == "live" {
					return live(c, 200*time.Millisecond, nil, func(sink *LiveSink) {
						defer close(ended)
						for {
							// KeepAlive is enough to fill the socket; a
							// failing flush is the cut-off.
							if _, err := sink.w.WriteString(big); err != nil {
								return
							}
							if err := sink.KeepAlive(); err != nil {
								return
							}
						}
					})
				}
				s := NewStream(4)
				s.stall = 200 * time.Millisecond
				go func() {
					defer close(ended)
					for {
						select {
						case <-s.gone:
							return
						default:
							s.Send(Event{Data: big})
						}
					}
				}()
				return Serve(c, s)
			})
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			go func() { _ = app.Listener(ln) }()
			t.Cleanup(func() { _ = app.Shutdown() })

			conn, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_ = conn.(*net.TCPConn).SetReadBuffer(4 << 10)
			if _, err := conn.Write([]byte("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
				t.Fatal(err)
			}
			// The client never reads.
			select {
			case <-ended:
			case <-time.After(10 * time.Second):
				t.Fatal("the stream's writer still blocks on a client that stopped reading")
			}
		})
	}
}
