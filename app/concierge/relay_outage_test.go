package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/adapters/postgres"
	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

// Live streams through real Redis outages: a private redis-server is killed
// (and restarted empty) or frozen (SIGSTOP) while streams are open on two
// pods and events are being published.

// relayFeeder plays an answer generated on a pod of another process: it
// publishes a reply's tokens through its own event bus at a steady pace and,
// while held (its publications failing because Redis is away), queues them,
// publishing the queue in batches once released, as core/chat's publisher
// does. finish stores the reply in PostgreSQL and then publishes its done.
type relayFeeder struct {
	t       testing.TB
	bus     *redisadapter.EventBus
	store   *postgres.Store
	ws      string
	session string
	id      string

	mu     sync.Mutex
	held   bool
	queue  []domain.SessionEvent
	text   strings.Builder
	ends   []int
	stop   chan struct{}
	done   chan struct{}
	failed error
}

// feederPace is how often the feeder produces a token.
const feederPace = 20 * time.Millisecond

func startFeeder(t testing.TB, bus *redisadapter.EventBus, store *postgres.Store, ws, session string) *relayFeeder {
	f := &relayFeeder{t: t, bus: bus, store: store, ws: ws, session: session, id: domain.NewID(domain.PrefixMessage),
		stop: make(chan struct{}), done: make(chan struct{})}
	go f.run()
	t.Cleanup(func() { f.halt() })
	return f
}

func (f *relayFeeder) run() {
	defer close(f.done)
	tick := time.NewTicker(feederPace)
	defer tick.Stop()
	for {
		select {
		case <-f.stop:
			return
		case <-tick.C:
		}
		f.mu.Lock()
		seq := len(f.ends) + 1
		tok := "w" + strconv.Itoa(seq) + " "
		f.text.WriteString(tok)
		f.ends = append(f.ends, f.text.Len())
		f.queue = append(f.queue, domain.SessionEvent{Type: domain.EventToken, SessionID: f.session, MessageID: f.id, Seq: seq, Content: tok})
		f.mu.Unlock()
		f.flush()
	}
}

// flush publishes the queue unless the feeder is held; a failure keeps it
// queued for the next tick.
func (f *relayFeeder) flush() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for !f.held && len(f.queue) > 0 {
		n := min(len(f.queue), 512)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := f.bus.Publish(ctx, f.queue[:n]...)
		cancel()
		if err != nil {
			return
		}
		f.queue = f.queue[n:]
	}
}

func (f *relayFeeder) hold() {
	f.mu.Lock()
	f.held = true
	f.mu.Unlock()
}

// release publishes what was queued, at once (one burst, as a publisher's
// retry does once Redis is back), and what follows as it comes.
func (f *relayFeeder) release() {
	f.mu.Lock()
	f.held = false
	f.mu.Unlock()
	f.flush()
}

func (f *relayFeeder) halt() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	<-f.done
}

// finish ends the answer: the last tokens, then the reply stored, then its
// done. It returns how many events the answer had.
func (f *relayFeeder) finish() int {
	f.t.Helper()
	f.halt()
	f.release()
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.queue) > 0 {
		f.t.Fatalf("feeder: %d events not published", len(f.queue))
	}
	reply := domain.Message{ID: f.id, WorkspaceID: f.ws, ConversationID: f.session, Role: domain.RoleAssistant,
		Content: f.text.String(), TokenEnds: f.ends, CreatedAt: time.Now()}
	stored, _, err := f.store.AppendMessage(context.Background(), reply, "")
	if err != nil {
		f.t.Fatalf("feeder: storing the reply: %v", err)
	}
	done := domain.SessionEvent{Type: domain.EventDone, SessionID: f.session, MessageID: f.id, Seq: len(f.ends) + 1,
		Answer: &domain.Answer{SessionID: f.session, Reply: stored}}
	if err := f.bus.Publish(context.Background(), done); err != nil {
		f.t.Fatalf("feeder: publishing done: %v", err)
	}
	return len(f.ends) + 1
}

// storeHumanReply stores a HUMAN reply and publishes it as the handoff use
// case does: once, best effort, with a short timeout. While Redis is away
// the publication fails and only PostgreSQL has the reply.
func storeHumanReply(store *postgres.Store, bus *redisadapter.EventBus, ws, session, text string) (string, error) {
	m := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: ws, ConversationID: session, Role: domain.RoleHuman,
		Content: text, AuthorName: "Ana", CreatedAt: time.Now()}
	stored, _, err := store.AppendMessage(context.Background(), m, "")
	if err != nil {
		return "", fmt.Errorf("storing a human reply: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = bus.Publish(ctx, domain.MessageEvent(stored))
	return stored.ID, nil
}

// messageEvents reads a live stream until every message of want has all its
// events (want maps a message id to its event count), and returns each
// message's events. It fails on an event of another message, an event
// twice, a hole, and a message that does not start at its first event
// unless joinable (an answer the stream joined midway).
func messageEvents(t testing.TB, name string, ls *liveStream, want map[string]int, joinable map[string]bool) map[string][]sseEvent {
	t.Helper()
	got := map[string][]sseEvent{}
	complete := 0
	for complete < len(want) {
		ev := ls.next()
		msg, seqText, _ := strings.Cut(ev.ID, ":")
		seq, _ := strconv.Atoi(seqText)
		n, ok := want[msg]
		if !ok {
			t.Fatalf("%s: unexpected event %q %v", name, ev.ID, ev.Data)
		}
		have := got[msg]
		switch {
		case len(have) == n:
			t.Fatalf("%s: %s after its message was complete", name, ev.ID)
		case len(have) == 0 && seq != 1 && !joinable[msg]:
			t.Fatalf("%s: %s starts at %s", name, msg, ev.ID)
		case len(have) > 0 && seq != sseSeq(have[len(have)-1])+1:
			t.Fatalf("%s: %s after %s", name, ev.ID, have[len(have)-1].ID)
		}
		got[msg] = append(have, ev)
		if seq == n {
			complete++
		}
	}
	return got
}

func sseSeq(ev sseEvent) int {
	_, seqText, _ := strings.Cut(ev.ID, ":")
	seq, _ := strconv.Atoi(seqText)
	return seq
}

// pings counts a stream's keep-alive comments so far.
func pings(ls *liveStream) int {
	return strings.Count(string(ls.body()), "\n: ping\n")
}

// waitResubscribed waits until both pods' hubs are subscribed to the
// session's channel again on the (restarted) server, so what is published
// from then on reaches their streams live.
func waitResubscribed(t testing.TB, admin *goredis.Client, session string, pods int64) {
	t.Helper()
	channel := redisadapter.ChannelFor(session)
	deadline := time.Now().Add(30 * time.Second)
	for {
		counts, err := admin.PubSubNumSub(context.Background(), channel).Result()
		if err == nil && counts[channel] == pods {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the pods did not subscribe again within 30 s (last: %v, %v)", counts, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Redis goes away for 3 s (killed and restarted empty), 3 s (frozen) and
// 20 s (killed) while live streams are open on both pods, an answer is
// being generated and another pod keeps publishing. Every stream stays open
// (keep-alives go on), and once Redis is back each one gets, exactly once
// and in order, what was published meanwhile, including the burst of
// queued events a publisher sends when Redis comes back, and what was
// stored in PostgreSQL while its publication failed; the answer generated
// during the outage is completed, stored, and ends every stream with its
// done. A new stream opened while Redis is down is refused with 503.
func TestLiveStreamsSurviveRedisOutages(t *testing.T) {
	redis := redistest.StartServer(t)
	c := newCluster(t, clusterOptions{pods: 2, workers: 1, redisURL: redis.URL(), env: map[string]string{
		// Long enough that the answer asked before the first outage is
		// generated during it.
		"CONCIERGE_LOCAL_TOKEN_DELAY": "150ms",
		// A small buffer, so that the queued events a publisher sends at
		// once when Redis is back are more than a stream holds. (The
		// default, 256, is about 3 s of an answer streamed at 100 tokens
		// a second.)
		"CONCIERGE_RELAY_BUFFER": "32",
		"CONCIERGE_LOG_LEVEL":    "info",
	}})
	a, b := c.pods[0], c.pods[1]
	tn := c.newTenant(domain.PlanStandard)
	c.supportAgent(a, tn)
	session := c.startSession(a, tn)

	admin := goredisClient(t, redis.URL())
	bus := redisadapter.NewEventBus(admin)
	db := admOpen(t, c.env["CONCIERGE_DATABASE_URL"])
	store := postgres.NewStore(db.Gorm, db.Pool)

	// Streams that follow the conversation through every outage.
	streams := map[string]*liveStream{
		"v2 on pod B":     openLive(t, "GET", conversationEvents(b, session), nil, tn.auth()),
		"widget on pod A": openLive(t, "GET", a.base+"/api/chat/"+session+"/events", nil, nil),
	}

	outages := []struct {
		name   string
		outage func()
		// answer asks a question before the outage, whose answer is
		// generated while Redis is away.
		answer bool
		// refused opens a new stream during the outage.
		refused bool
	}{
		{name: "killed for 3 s", outage: func() { redis.Restart(3 * time.Second) }, answer: true},
		{name: "frozen for 3 s", outage: func() { redis.Pause(3 * time.Second) }},
		{name: "killed for 20 s", outage: func() {
			redis.Kill()
			start := time.Now()
			r := c.do(b, "GET", "/api/v2/conversations/"+session+"/events", nil, tn.auth())
			if r.Status != 503 || r.errorCode(t) != "UNAVAILABLE" {
				t.Errorf("a stream opened while Redis is down: %d %s, want 503 UNAVAILABLE", r.Status, r.Body)
			}
			t.Logf("a stream opened while Redis was down was refused after %s", time.Since(start).Round(time.Millisecond))
			time.Sleep(20*time.Second - time.Since(start))
			redis.Start()
		}, refused: true},
	}
	for i, o := range outages {
		t.Logf("outage %d: Redis %s", i+1, o.name)
		var post *liveStream
		if o.answer {
			post = openLive(t, "POST", a.base+"/api/v2/chat", map[string]any{"sessionId": session, "message": relayQuestion, "stream": true}, tn.auth())
			for name, ls := range streams {
				if ev := ls.next(); ev.Data["type"] != "message" {
					t.Fatalf("%s: %s %v, want the question", name, ev.ID, ev.Data)
				}
			}
		}
		// A stream opened now has sent no stored message yet when Redis
		// goes away: what PostgreSQL gets meanwhile must still reach it.
		fresh := fmt.Sprintf("opened before outage %d", i+1)
		streams[fresh] = openLive(t, "GET", conversationEvents(b, session), nil, tn.auth())
		feeder := startFeeder(t, bus, store, tn.ID, session)
		time.Sleep(300 * time.Millisecond) // the streams follow the feeder's answer
		pingsBefore := map[string]int{}
		for name, ls := range streams {
			pingsBefore[name] = pings(ls)
		}

		feeder.hold()
		humanStored := make(chan string, 1)
		go func() {
			// While Redis is away (or frozen), a human reply is stored.
			time.Sleep(time.Second)
			id, err := storeHumanReply(store, bus, tn.ID, session, fmt.Sprintf("Ana here (outage %d).", i+1))
			if err != nil {
				t.Error(err)
			}
			humanStored <- id
		}()
		o.outage()
		human := <-humanStored
		if o.refused {
			for name, ls := range streams {
				if pings(ls) <= pingsBefore[name] {
					t.Errorf("%s: no keep-alive during the 20 s outage", name)
				}
			}
		}
		waitResubscribed(t, admin, session, 2)
		feeder.release()
		n := feeder.finish()

		want := map[string]int{feeder.id: n, human: 1}
		var answer []sseEvent
		var answerID string
		if o.answer {
			answer = post.until(isDone)
			answerText(t, answer)
			answerID, _, _ = strings.Cut(answer[0].ID, ":")
			want[answerID] = len(answer)
		}
		for name, ls := range streams {
			// A stream opened after the question joins its answer midway.
			joinable := map[string]bool{answerID: name == fresh}
			got := messageEvents(t, name, ls, want, joinable)
			if evs := got[human]; evs[0].Data["type"] != "message" || evs[0].Data["message"].(map[string]any)["role"] != "HUMAN" {
				t.Fatalf("%s: %v, want the human reply", name, evs[0].Data)
			}
			feed := got[feeder.id]
			if last := feed[len(feed)-1]; last.Data["type"] != "done" || !strings.HasSuffix(last.Data["message"].(string), fmt.Sprintf("w%d ", n-1)) {
				t.Fatalf("%s: the feeder's answer ended with %s %v", name, last.ID, last.Data)
			}
			if o.answer {
				evs := got[answerID]
				sameEvents(t, name+": the answer generated during the outage", evs, answer[len(answer)-len(evs):])
			}
		}
		if o.answer {
			// Stored, whole, as its asker saw it.
			var conv struct {
				Messages listBody[struct {
					ID      string `json:"id"`
					Content string `json:"content"`
				}] `json:"messages"`
			}
			r := c.do(a, "GET", "/api/v2/conversations/"+session, nil, tn.auth())
			c.must(r, 200)
			r.decode(t, &conv)
			found := false
			for _, m := range conv.Messages.Data {
				found = found || (m.ID == answerID && m.Content == answerText(t, answer))
			}
			if !found {
				t.Fatalf("the answer generated during the outage is not stored as sent: %s", r.Body)
			}
		}
	}

	// Every stream is still live.
	c.must(c.do(a, "POST", "/api/chat/"+session+"/message", map[string]any{"message": "Thanks!"}, nil), 200)
	for name, ls := range streams {
		ev := ls.next()
		if ev.Data["type"] != "message" || ev.Data["message"].(map[string]any)["content"] != "Thanks!" {
			t.Fatalf("%s: after the outages got %s %v, want the next question", name, ev.ID, ev.Data)
		}
	}
}

// openLiveWhenUp opens a live stream, retrying while the pod answers 503
// (its feed has not seen Redis back yet).
func openLiveWhenUp(t testing.TB, url string, h header) *liveStream {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.DefaultClient.Do(newRequest(t, context.Background(), "GET", url, nil, h))
		if err != nil {
			t.Fatal(err)
		}
		status := resp.StatusCode
		resp.Body.Close()
		switch {
		case status == http.StatusServiceUnavailable && time.Now().Before(deadline):
			time.Sleep(100 * time.Millisecond)
		case status == http.StatusOK:
			return openLive(t, "GET", url, nil, h)
		default:
			t.Fatalf("GET %s: %d", url, status)
		}
	}
}

// Past CONCIERGE_RELAY_OUTAGE_LIMIT live streams end with the terminal
// error event (UNAVAILABLE, without an id), so their clients know to
// resume; once Redis is back they resume with the last id they got and
// miss nothing, including what was stored while Redis was down.
func TestLiveStreamsEndPastTheOutageLimit(t *testing.T) {
	redis := redistest.StartServer(t)
	c := newCluster(t, clusterOptions{pods: 1, redisURL: redis.URL(), env: map[string]string{"CONCIERGE_RELAY_OUTAGE_LIMIT": "2s"}})
	p := c.pods[0]
	tn := c.newTenant(domain.PlanStandard)
	c.must(c.do(p, "POST", "/api/v2/agents", map[string]any{"slug": "support", "name": "Acme Support"}, tn.auth()), 201)
	session := c.startSession(p, tn)
	bus := redisadapter.NewEventBus(goredisClient(t, redis.URL()))
	db := admOpen(t, c.env["CONCIERGE_DATABASE_URL"])
	store := postgres.NewStore(db.Gorm, db.Pool)

	type follower struct {
		url  string
		auth header
		ls   *liveStream
		last string
	}
	followers := map[string]*follower{
		"v2":     {url: conversationEvents(p, session), auth: tn.auth()},
		"widget": {url: p.base + "/api/chat/" + session + "/events", auth: header{}},
	}
	for _, f := range followers {
		f.ls = openLive(t, "GET", f.url, nil, f.auth)
	}
	before, err := storeHumanReply(store, bus, tn.ID, session, "Ana here.")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range followers {
		ev := f.ls.next()
		if ev.ID != before+":1" {
			t.Fatalf("%s: %s %v, want the human reply", name, ev.ID, ev.Data)
		}
		f.last = ev.ID
	}

	redis.Kill()
	during, err := storeHumanReply(store, bus, tn.ID, session, "Are you still there?")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range followers {
		ev := f.ls.next()
		if ev.ID != "" || ev.Data["type"] != "error" || ev.Data["code"] != "UNAVAILABLE" || !strings.Contains(fmt.Sprint(ev.Data["message"]), "Last-Event-ID") {
			t.Fatalf("%s: %q %v, want the terminal error event", name, ev.ID, ev.Data)
		}
		if err := f.ls.waitEnd(15 * time.Second); !errors.Is(err, io.EOF) {
			t.Fatalf("%s: the stream ended with %v", name, err)
		}
	}

	redis.Start()
	for name, f := range followers {
		h := header{"Last-Event-ID": f.last}
		for k, v := range f.auth {
			h[k] = v
		}
		f.ls = openLiveWhenUp(t, f.url, h)
		if ev := f.ls.next(); ev.ID != during+":1" {
			t.Fatalf("%s resumed: %s %v, want the reply stored while Redis was down", name, ev.ID, ev.Data)
		}
	}
	after, err := storeHumanReply(store, bus, tn.ID, session, "Back.")
	if err != nil {
		t.Fatal(err)
	}
	for name, f := range followers {
		if ev := f.ls.next(); ev.ID != after+":1" {
			t.Fatalf("%s resumed: %s %v, want the next reply", name, ev.ID, ev.Data)
		}
	}
}
