package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

// End-to-end tests of the live relay across pods: two `concierge serve`
// processes and a `concierge worker`, sharing PostgreSQL and Redis, with a
// client on one pod following what happens on the other.

const relayQuestion = "How long does standard shipping take, what does it cost, and how do I follow my parcel?"

// relayTurn asks a question with POST /api/v2/chat stream:true on pod p and
// returns the answer's events as its asker saw them.
func relayTurn(c *cluster, p *clusterProc, tn tenant, session string) []sseEvent {
	c.t.Helper()
	post := openLive(c.t, "POST", p.base+"/api/v2/chat", map[string]any{"sessionId": session, "message": relayQuestion, "stream": true}, tn.auth())
	answer := post.until(isDone)
	if n := len(answer); n < 15 {
		c.t.Fatalf("an answer of %d events is too short to test a relay", n)
	}
	answerText(c.t, answer)
	return answer
}

func conversationEvents(p *clusterProc, session string) string {
	return p.base + "/api/v2/conversations/" + session + "/events"
}

func withLastEventID(tn tenant, id string) header {
	return header{"Authorization": "Bearer " + tn.Key, "Last-Event-ID": id}
}

func TestRelayAcrossPods(t *testing.T) {
	c := newCluster(t, clusterOptions{pods: 2, workers: 1, env: map[string]string{"CONCIERGE_LOCAL_TOKEN_DELAY": "15ms"}})
	a, b := c.pods[0], c.pods[1]
	tn := c.newTenant(domain.PlanStandard)
	c.supportAgent(a, tn)

	t.Run("an answer generated on pod A reaches pod B in order and complete", func(t *testing.T) {
		session := c.startSession(a, tn)
		api := openLive(t, "GET", conversationEvents(b, session), nil, tn.auth())
		widget := openLive(t, "GET", b.base+"/api/chat/"+session+"/events", nil, nil)
		answer := relayTurn(c, a, tn, session)
		for name, stream := range map[string]*liveStream{"v2 on pod B": api, "widget on pod B": widget} {
			question := stream.next()
			if question.Data["type"] != "message" || question.Data["message"].(map[string]any)["content"] != relayQuestion {
				t.Fatalf("%s: first event %v, want the question", name, question.Data)
			}
			got := stream.nextN(len(answer))
			answerText(t, got)
			sameEvents(t, name, got, answer)
		}
	})

	t.Run("a client that drops mid-answer resumes on the other pod with exactly what it missed", func(t *testing.T) {
		session := c.startSession(a, tn)
		// reference follows the whole conversation on pod B without a break.
		reference := openLive(t, "GET", conversationEvents(b, session), nil, tn.auth())
		dropping := openLive(t, "GET", conversationEvents(b, session), nil, tn.auth())
		post := openLive(t, "POST", a.base+"/api/v2/chat", map[string]any{"sessionId": session, "message": relayQuestion, "stream": true}, tn.auth())
		const n = 6
		had := dropping.nextN(n)
		dropping.close()
		// Back at once, on pod A, while the answer is still being generated.
		resumed := openLive(t, "GET", conversationEvents(a, session), nil, withLastEventID(tn, had[n-1].ID))
		answer := post.until(isDone)
		all := reference.nextN(1 + len(answer))
		if !isDone(all[len(all)-1]) {
			t.Fatalf("reference stream: the answer did not end with done: %v", eventIDs(all))
		}
		sameEvents(t, "the first events", had, all[:n])
		sameEvents(t, "the resumed stream", resumed.nextN(len(all)-n), all[n:])
		// Nothing more, and the stream goes on: the next event is the next turn's.
		c.must(c.do(b, "POST", "/api/chat/"+session+"/message", map[string]any{"message": "Thanks!"}, nil), 200)
		if next := resumed.next(); next.Data["type"] != "message" || next.Data["message"].(map[string]any)["content"] != "Thanks!" {
			t.Fatalf("after the missed events came %s %v, want the next question", next.ID, next.Data)
		}

		t.Run("after its log is gone, from PostgreSQL", func(t *testing.T) {
			admin := goredisClient(t, c.env["CONCIERGE_REDIS_URL"])
			if err := admin.Del(context.Background(), redisadapter.LogKeyFor(session)).Err(); err != nil {
				t.Fatal(err)
			}
			for _, cut := range []int{1, n, len(all) - 2} {
				again := openLive(t, "GET", conversationEvents(b, session), nil, withLastEventID(tn, all[cut-1].ID))
				sameEvents(t, fmt.Sprintf("resumed after event %d from PostgreSQL", cut), again.nextN(len(all)-cut), all[cut:])
				thanks := again.next()
				if thanks.Data["type"] != "message" || thanks.Data["message"].(map[string]any)["content"] != "Thanks!" {
					t.Fatalf("after the answer came %s %v, want the next question", thanks.ID, thanks.Data)
				}
				again.close()
			}
		})
	})

	t.Run("a client that lost its POST stream resumes on the GET stream of the other pod", func(t *testing.T) {
		session := c.startSession(a, tn)
		post := openLive(t, "POST", a.base+"/api/v2/chat", map[string]any{"sessionId": session, "message": relayQuestion, "stream": true}, tn.auth())
		had := post.nextN(4)
		post.close()
		resumed := openLive(t, "GET", conversationEvents(b, session), nil, withLastEventID(tn, had[3].ID))
		answerText(t, append(had, resumed.until(isDone)...))
	})

	t.Run("a JSON call's answer reaches the streams once stored, as one token, and resumes the same from PostgreSQL", func(t *testing.T) {
		session := c.startSession(a, tn)
		live := openLive(t, "GET", conversationEvents(b, session), nil, tn.auth())
		r := c.do(a, "POST", "/api/v2/chat", map[string]any{"sessionId": session, "message": relayQuestion}, tn.auth())
		c.must(r, 200)
		answer := r.JSON(t)
		got := live.nextN(3)
		if got[0].Data["type"] != "message" || got[0].Data["message"].(map[string]any)["content"] != relayQuestion {
			t.Fatalf("first event %v, want the question", got[0].Data)
		}
		if text := answerText(t, got[1:]); text != answer["message"] || got[2].Data["messageId"] != answer["messageId"] {
			t.Fatalf("the streams got %q (%v), the call answered %q (%v)", text, got[2].Data["messageId"], answer["message"], answer["messageId"])
		}
		admin := goredisClient(t, c.env["CONCIERGE_REDIS_URL"])
		if err := admin.Del(context.Background(), redisadapter.LogKeyFor(session)).Err(); err != nil {
			t.Fatal(err)
		}
		again := openLive(t, "GET", conversationEvents(a, session), nil, withLastEventID(tn, got[0].ID))
		sameEvents(t, "resumed from PostgreSQL", again.nextN(2), got[1:])
	})

	t.Run("a message appended by the inbound webhook reaches the streams", func(t *testing.T) {
		session := c.startSession(a, tn)
		widget := openLive(t, "GET", b.base+"/api/chat/"+session+"/events", nil, nil)
		r := c.do(a, "POST", "/api/webhooks/inbound", map[string]any{"event": "chat.message", "sessionId": session, "message": "Order 1234 arrived broken"},
			header{"x-webhook-secret": tn.WebhookSecret})
		c.must(r, 200)
		ev := widget.next()
		msg, _ := ev.Data["message"].(map[string]any)
		if ev.Data["type"] != "message" || msg["role"] != "USER" || msg["content"] != "Order 1234 arrived broken" || ev.ID != msg["id"].(string)+":1" {
			t.Fatalf("widget got %s %v, want the webhook's USER message", ev.ID, ev.Data)
		}
	})
}

func goredisClient(t testing.TB, url string) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	client := goredis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// Redis restarts (without persistence) in the middle of an answer: the
// streams that were open stay open and get the whole answer, subscribers
// come back for what follows, and a client that was away resumes without
// losing anything, although the log of the answer died with Redis.
func TestRelaySurvivesARedisRestart(t *testing.T) {
	redis := redistest.StartServer(t)
	c := newCluster(t, clusterOptions{pods: 2, workers: 1, redisURL: redis.URL(), env: map[string]string{
		"CONCIERGE_LOCAL_TOKEN_DELAY": "40ms",
		// The hub's recovery is logged at info.
		"CONCIERGE_LOG_LEVEL": "info",
	}})
	a, b := c.pods[0], c.pods[1]
	tn := c.newTenant(domain.PlanStandard)
	c.supportAgent(a, tn)
	session := c.startSession(a, tn)

	onB := openLive(t, "GET", conversationEvents(b, session), nil, tn.auth())
	widgetOnA := openLive(t, "GET", a.base+"/api/chat/"+session+"/events", nil, nil)
	away := openLive(t, "GET", conversationEvents(b, session), nil, tn.auth())
	post := openLive(t, "POST", a.base+"/api/v2/chat", map[string]any{"sessionId": session, "message": relayQuestion, "stream": true}, tn.auth())

	// A few tokens in, one client leaves, and Redis dies and comes back.
	had := away.nextN(4)
	away.close()
	firstOnB := onB.nextN(4)
	// Down long enough for tokens to be generated meanwhile.
	redis.Restart(700 * time.Millisecond)

	want := post.until(isDone)
	for name, stream := range map[string]*liveStream{"v2 on pod B": onB, "widget on pod A": widgetOnA} {
		var got []sseEvent
		if stream == onB {
			got = append(got, firstOnB...)
		}
		got = append(got, stream.until(isDone)...)
		// The question, then the answer exactly as its asker saw it.
		if got[0].Data["type"] != "message" {
			t.Fatalf("%s: first event %v", name, got[0].Data)
		}
		sameAnswer(t, name, got[1:], want)
	}

	// The client that left resumes after the answer, with an id the new
	// Redis never saw: the rest comes from PostgreSQL.
	resumed := openLive(t, "GET", conversationEvents(a, session), nil, withLastEventID(tn, had[3].ID))
	sameAnswer(t, "resumed after the restart", append(had[1:], resumed.until(isDone)...), want)

	// The restart did hit the streams: both pods lost their subscription
	// connection, and the answer's publications on pod A had to wait.
	for _, p := range c.pods {
		if out := p.output.String(); !strings.Contains(out, "live feed: Redis connection lost") || !strings.Contains(out, "Redis subscriptions restored") {
			t.Errorf("%s did not report losing and restoring its subscriptions:\n%s", p.name, out)
		}
	}

	// Subscribers are back for what follows.
	c.must(c.do(a, "POST", "/api/chat/"+session+"/message", map[string]any{"message": "Thanks!"}, nil), 200)
	for name, stream := range map[string]*liveStream{"v2 on pod B": onB, "widget on pod A": widgetOnA, "resumed": resumed} {
		next := stream.next()
		if next.Data["type"] != "message" || next.Data["message"].(map[string]any)["content"] != "Thanks!" {
			t.Fatalf("%s: after the restart got %s %v, want the next question", name, next.ID, next.Data)
		}
	}
}

// sameAnswer compares answers as a client uses them: the same ids, tokens
// and final message. (A done rebuilt from PostgreSQL cannot say whether the
// answer was a fallback; this answer is not, so the rest matches too.)
func sameAnswer(t testing.TB, what string, got, want []sseEvent) {
	t.Helper()
	if strings.Join(eventIDs(got), " ") != strings.Join(eventIDs(want), " ") {
		t.Fatalf("%s: ids\n got %v\nwant %v", what, eventIDs(got), eventIDs(want))
	}
	if answerText(t, got) != answerText(t, want) {
		t.Fatalf("%s: another text", what)
	}
	sameEvents(t, what, got, want)
}
