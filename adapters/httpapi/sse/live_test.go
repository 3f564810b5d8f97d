package sse

import (
	"io"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gofiber/fiber/v2"

	"github.com/conciergehq/concierge/core/domain"
)

// A live stream writes each event as one frame, the POST stream's format,
// keep-alives as comments, and a stream's own terminal error without an id.
func TestLiveWritesFrames(t *testing.T) {
	user := domain.Message{ID: "msg_u", ConversationID: "ses_1", Role: domain.RoleUser, Content: "hi"}
	events := []*domain.LiveEvent{
		{SessionEvent: domain.MessageEvent(user)},
		{SessionEvent: domain.SessionEvent{Type: domain.EventToken, SessionID: "ses_1", MessageID: "msg_r", Seq: 1, Content: "Hel\nlo"}},
		{SessionEvent: domain.SessionEvent{Type: domain.EventStatus, SessionID: "ses_1", MessageID: "msg_n", Seq: 1, Status: domain.StatusHuman}},
		{SessionEvent: domain.SessionEvent{Type: domain.EventError, SessionID: "ses_1", ErrorCode: "UNAVAILABLE", ErrorMessage: "reconnect"}},
	}
	frames := NewFrames()
	app := fiber.New()
	app.Get("/live", func(c *fiber.Ctx) error {
		return Live(c, frames, func(sink *LiveSink) {
			for i, ev := range events {
				if err := sink.Send(ev); err != nil {
					t.Errorf("Send %d: %v", i, err)
				}
				if i == 1 {
					if err := sink.KeepAlive(); err != nil {
						t.Errorf("KeepAlive: %v", err)
					}
				}
			}
		})
	})
	resp, err := app.Test(httptest.NewRequest("GET", "/live", nil), -1)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
		if got := resp.Header.Get(h); got != want {
			t.Errorf("%s = %q, want %q", h, got, want)
		}
	}
	body, _ := io.ReadAll(resp.Body)
	want := ": ping\n\n" + // at once, so the client sees the stream open
		"id: msg_u:1\ndata: {\"type\":\"message\",\"message\":{\"id\":\"msg_u\",\"role\":\"USER\",\"content\":\"hi\",\"citations\":[],\"createdAt\":\"0001-01-01T00:00:00.000Z\"}}\n\n" +
		"id: msg_r:1\ndata: {\"type\":\"token\",\"content\":\"Hel\\nlo\"}\n\n" +
		": ping\n\n" +
		"id: msg_n:1\ndata: {\"type\":\"status\",\"status\":\"HUMAN\"}\n\n" +
		"data: {\"type\":\"error\",\"code\":\"UNAVAILABLE\",\"message\":\"reconnect\"}\n\n"
	if string(body) != want {
		t.Errorf("stream\n got %q\nwant %q", body, want)
	}
	// Rendered once, shared by every stream that writes the event.
	if a, b := frames.frame(events[1], renderLive), frames.frame(events[1], renderLive); &a[0] != &b[0] {
		t.Error("the frame is rendered again for every stream")
	}
}

func TestLastEventID(t *testing.T) {
	tests := []struct {
		name, header, query, want string
	}{
		{"none", "", "", ""},
		{"header", "msg_a:3", "", "msg_a:3"},
		{"query", "", "msg_a:2", "msg_a:2"},
		{"the header wins over the query", "msg_a:7", "msg_a:2", "msg_a:7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			app := fiber.New()
			var got string
			app.Get("/live", func(c *fiber.Ctx) error {
				got = LastEventID(c)
				return nil
			})
			req := httptest.NewRequest("GET", "/live?lastEventId="+tt.query, nil)
			if tt.header != "" {
				req.Header.Set("Last-Event-ID", tt.header)
			}
			if _, err := app.Test(req, -1); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("LastEventID = %q, want %q", got, tt.want)
			}
		})
	}
}

// Frames renders an event once however many streams write it, keeps at
// most two generations per shard whatever the traffic, and is safe for
// streams writing at once.
func TestFramesRenderOnceWithinBound(t *testing.T) {
	frames := NewFrames()
	var renders atomic.Int64
	render := func(ev *domain.LiveEvent) []byte {
		renders.Add(1)
		return []byte(ev.Content)
	}
	shared := &domain.LiveEvent{SessionEvent: domain.SessionEvent{Type: domain.EventToken, SessionID: "ses_1", MessageID: "msg_1", Seq: 1, Content: "x"}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 100 {
				if got := string(frames.frame(shared, render)); got != "x" {
					t.Errorf("frame = %q", got)
				}
			}
		}()
	}
	wg.Wait()
	// Followers racing on a new event may each render it once; then it is cached.
	if n := renders.Load(); n < 1 || n > 8 {
		t.Errorf("rendered %d times for 800 writes by 8 streams", n)
	}
	for i := range 100 * frameShards * frameShardSize {
		frames.frame(&domain.LiveEvent{SessionEvent: domain.SessionEvent{Seq: i}}, render)
	}
	for i := range frames.shards {
		sh := &frames.shards[i]
		if n := len(sh.cur) + len(sh.prev); n > 2*frameShardSize {
			t.Fatalf("shard %d holds %d frames, over its bound of %d", i, n, 2*frameShardSize)
		}
	}
	// A nil cache renders every time.
	before := renders.Load()
	var none *Frames
	none.frame(shared, render)
	none.frame(shared, render)
	if renders.Load()-before != 2 {
		t.Error("a nil Frames cached")
	}
}
