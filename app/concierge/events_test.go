package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// The live stream endpoints in one process: who may open them, what they
// refuse before streaming (JSON errors, as documented), and that a stream
// carries a turn's USER message, tokens and done with the POST stream's ids.
func TestLiveStreamEndpoints(t *testing.T) {
	s := newStack(t, stackOptions{env: map[string]string{"CONCIERGE_LOCAL_TOKEN_DELAY": "5ms"}})
	tn := s.newTenant(domain.PlanStandard)
	supportAgent(s, tn)
	session := s.startSession(tn, "support")
	other := s.newTenant(domain.PlanStandard)
	hobby := s.newTenant(domain.PlanHobby)
	// A session opened while its agent was published, which then is not
	// (no session is opened for an unpublished agent).
	s.mustStatus(s.do("POST", "/api/v2/agents", map[string]any{"slug": "draft", "name": "Draft"}, tn.auth()), 201)
	draftSession := s.startSession(tn, "draft")
	s.mustStatus(s.do("PATCH", "/api/v2/agents/draft", map[string]any{"published": false}, tn.auth()), 200)
	v2Path := "/api/v2/conversations/" + session + "/events"
	v1Path := "/api/chat/" + session + "/events"

	t.Run("refusals", func(t *testing.T) {
		tests := []struct {
			name      string
			path      string
			h         header
			status    int
			code      string
			detailKey string
		}{
			{"v2 without a key", v2Path, nil, 401, "UNAUTHORIZED", ""},
			{"v2 conversation of another workspace", v2Path, other.auth(), 404, "NOT_FOUND", ""},
			{"v2 unknown conversation", "/api/v2/conversations/" + domain.NewID(domain.PrefixSession) + "/events", tn.auth(), 404, "NOT_FOUND", ""},
			{"v2 not a conversation id", "/api/v2/conversations/nope/events", tn.auth(), 404, "NOT_FOUND", ""},
			{"v2 without apiAccess", "/api/v2/conversations/" + session + "/events", hobby.auth(), 403, "PLAN_UPGRADE_REQUIRED", ""},
			{"v2 malformed Last-Event-ID", v2Path, header{"Authorization": "Bearer " + tn.Key, "Last-Event-ID": "12"}, 400, "VALIDATION_ERROR", "lastEventId"},
			{"v2 Last-Event-ID of no event here", v2Path + "?lastEventId=" + domain.NewID(domain.PrefixMessage) + ":3", tn.auth(), 400, "VALIDATION_ERROR", "lastEventId"},
			{"v1 unknown session", "/api/chat/" + domain.NewID(domain.PrefixSession) + "/events", nil, 404, "NOT_FOUND", ""},
			{"v1 session of an unpublished agent", "/api/chat/" + draftSession + "/events", nil, 404, "NOT_FOUND", ""},
			{"v1 malformed lastEventId", v1Path + "?lastEventId=msg_x:1", nil, 400, "VALIDATION_ERROR", "lastEventId"},
			{"v1 half the identity headers", v1Path, header{"X-Service-Identity": "e30"}, 400, "VALIDATION_ERROR", ""},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := s.do("GET", tt.path, nil, tt.h)
				if r.Status != tt.status || r.errorCode(t) != tt.code {
					t.Fatalf("got %d %s, want %d %s", r.Status, r.Body, tt.status, tt.code)
				}
				if tt.detailKey != "" && !strings.Contains(string(r.Body), `"`+tt.detailKey+`"`) {
					t.Errorf("error does not name %s: %s", tt.detailKey, r.Body)
				}
			})
		}
	})

	t.Run("a turn on both streams, with the POST stream's ids", func(t *testing.T) {
		api := openLive(t, "GET", s.base+v2Path, nil, tn.auth())
		widget := openLive(t, "GET", s.base+v1Path, nil, nil)
		for h, want := range map[string]string{"Content-Type": "text/event-stream", "Cache-Control": "no-cache", "X-Accel-Buffering": "no"} {
			if got := api.resp.Header.Get(h); got != want {
				t.Errorf("%s = %q, want %q", h, got, want)
			}
		}
		if api.resp.Header.Get("X-Request-Id") == "" {
			t.Error("no X-Request-Id on the stream")
		}
		post := openLive(t, "POST", s.base+"/api/v2/chat", map[string]any{"sessionId": session, "message": "How long does standard shipping take?", "stream": true}, tn.auth())
		answer := post.until(isDone)
		text := answerText(t, answer)
		if !strings.Contains(text, "3 to 5") {
			t.Errorf("answer %q", text)
		}
		for name, stream := range map[string]*liveStream{"v2": api, "widget": widget} {
			question := stream.next()
			msg, _ := question.Data["message"].(map[string]any)
			if question.Data["type"] != "message" || msg["role"] != "USER" || question.ID != msg["id"].(string)+":1" {
				t.Fatalf("%s: first event %s %v, want the USER message", name, question.ID, question.Data)
			}
			sameEvents(t, name, stream.nextN(len(answer)), answer)
			// The response as documented: headers, and every event a StreamEvent.
			s.spec.ValidateResponse(t, stream.resp.Request, &http.Response{StatusCode: 200, Header: stream.resp.Header, Request: stream.resp.Request}, stream.body())
		}

		t.Run("a client that lost the POST stream resumes on the GET stream", func(t *testing.T) {
			post := openLive(t, "POST", s.base+"/api/v2/chat", map[string]any{"sessionId": session, "message": "How do returns work?", "stream": true}, tn.auth())
			first := post.nextN(2)
			post.close()
			resumed := openLive(t, "GET", s.base+v2Path, nil, header{"Authorization": "Bearer " + tn.Key, "Last-Event-ID": first[1].ID})
			rest := resumed.until(isDone)
			answerText(t, append(first, rest...))
			// The next events are new ones: the stream goes on live.
			s.mustStatus(s.do("POST", "/api/chat/"+session+"/message", map[string]any{"message": "thanks"}, nil), 200)
			if next := resumed.next(); next.Data["type"] != "message" {
				t.Fatalf("after the replay: %v", next.Data)
			}
		})
	})

	t.Run("shutdown ends live streams at once", func(t *testing.T) {
		stream := openLive(t, "GET", s.base+v2Path, nil, tn.auth())
		start := time.Now()
		s.shutdown()
		if err := stream.waitEnd(5 * time.Second); err != io.EOF {
			t.Fatalf("the stream ended with %v, want a clean end", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("shutdown took %s with a live stream open (its timeout is 5 s)", d)
		}
	})
}
