package redis_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// runID keeps this process's channels apart from those of other test
// processes on the same server: pub/sub channels ignore the database.
var runID = domain.NewID("")

// sess is a session id unique to this test process.
func sess(name string) string { return "ses_" + name + "_" + runID }

func newHub(t *testing.T, client *goredis.Client, opts redisadapter.HubOptions) *redisadapter.Hub {
	t.Helper()
	hub := redisadapter.NewHub(client, slog.New(slog.NewTextHandler(io.Discard, nil)), opts)
	t.Cleanup(func() { _ = hub.Close() })
	return hub
}

func subscribeHub(t *testing.T, hub *redisadapter.Hub, session string) ports.Subscription {
	t.Helper()
	sub, err := hub.Subscribe(t.Context(), session)
	if err != nil {
		t.Fatalf("Subscribe(%s): %v", session, err)
	}
	t.Cleanup(sub.Close)
	return sub
}

// next returns the subscription's next event, failing after five seconds or
// if the subscription ends.
func next(t *testing.T, sub ports.Subscription) *domain.LiveEvent {
	t.Helper()
	select {
	case ev := <-sub.Events():
		return ev
	case <-sub.Done():
		t.Fatalf("subscription ended: %v", sub.Err())
	case <-time.After(5 * time.Second):
		t.Fatal("no event within 5 s")
	}
	return nil
}

func token(session string, seq int) domain.SessionEvent {
	return domain.SessionEvent{Type: domain.EventToken, SessionID: session, MessageID: "msg_a", Seq: seq, Content: fmt.Sprint("t", seq, " ")}
}

// Subscribe returns only once Redis confirmed: an event published right
// after it returns is always delivered, for new channels and for channels
// other followers already hold.
func TestHubSubscribeIsConfirmedBeforeReturning(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	hub := newHub(t, client, redisadapter.HubOptions{})
	bus := redisadapter.NewEventBus(client)
	for i := range 100 {
		session := sess(fmt.Sprint("confirm_", i%50)) // the second 50 join held channels
		sub := subscribeHub(t, hub, session)
		if err := bus.Publish(t.Context(), token(session, i)); err != nil {
			t.Fatal(err)
		}
		// Earlier followers of the channel got an earlier token; this one
		// gets exactly the token published after it joined.
		if ev := next(t, sub); ev.Seq != i || ev.LogID == "" {
			t.Fatalf("subscription %d got seq %d (log id %q), want %d", i, ev.Seq, ev.LogID, i)
		}
	}
}

// Every follower of a session gets every event in publish order, decoded
// once for all of them; followers of other sessions get none of them.
func TestHubFansOutInOrder(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	hub := newHub(t, client, redisadapter.HubOptions{Buffer: 512})
	bus := redisadapter.NewEventBus(client)
	subs := []ports.Subscription{subscribeHub(t, hub, sess("fan")), subscribeHub(t, hub, sess("fan")), subscribeHub(t, hub, sess("fan"))}
	other := subscribeHub(t, hub, sess("quiet"))

	const n = 300
	for start := 1; start <= n; start += 50 {
		batch := make([]domain.SessionEvent, 0, 50)
		for seq := start; seq < start+50; seq++ {
			batch = append(batch, token(sess("fan"), seq))
		}
		if err := bus.Publish(t.Context(), batch...); err != nil {
			t.Fatal(err)
		}
	}
	got := make([][]*domain.LiveEvent, len(subs))
	for i, sub := range subs {
		for seq := 1; seq <= n; seq++ {
			ev := next(t, sub)
			if ev.Seq != seq || ev.Content != fmt.Sprint("t", seq, " ") || ev.SessionID != sess("fan") {
				t.Fatalf("follower %d: event %d is %+v", i, seq, ev.SessionEvent)
			}
			got[i] = append(got[i], ev)
		}
	}
	for seq := range n {
		if got[0][seq] != got[1][seq] || got[1][seq] != got[2][seq] {
			t.Fatalf("event %d was decoded once per follower, not once per pod", seq+1)
		}
	}
	select {
	case ev := <-other.Events():
		t.Fatalf("a follower of another session got %+v", ev.SessionEvent)
	default:
	}
}

// numSub is how many subscribers Redis counts on a session's channel.
func numSub(t *testing.T, client *goredis.Client, session string) int64 {
	t.Helper()
	counts, err := client.PubSubNumSub(t.Context(), redisadapter.ChannelFor(session)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return counts[redisadapter.ChannelFor(session)]
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// One Redis subscription per channel however many local followers, dropped
// with the last of them; closing twice is harmless.
func TestHubUnsubscribesWithTheLastFollower(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	hub := newHub(t, client, redisadapter.HubOptions{})
	a := subscribeHub(t, hub, sess("refs"))
	b := subscribeHub(t, hub, sess("refs"))
	if n := numSub(t, client, sess("refs")); n != 1 {
		t.Fatalf("%d Redis subscriptions for two followers, want 1", n)
	}
	a.Close()
	a.Close()
	if a.Err() != nil {
		t.Errorf("a closed subscription reports %v", a.Err())
	}
	time.Sleep(50 * time.Millisecond)
	if n := numSub(t, client, sess("refs")); n != 1 {
		t.Fatalf("%d Redis subscriptions with one follower left, want 1", n)
	}
	b.Close()
	waitFor(t, "the channel is unsubscribed", func() bool { return numSub(t, client, sess("refs")) == 0 })

	// Leaving and joining again in quick succession ends subscribed.
	for range 20 {
		subscribeHub(t, hub, sess("refs")).Close()
	}
	c := subscribeHub(t, hub, sess("refs"))
	if err := redisadapter.NewEventBus(client).Publish(t.Context(), token(sess("refs"), 1)); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, c); ev.Seq != 1 {
		t.Fatalf("got seq %d", ev.Seq)
	}
}

// killHubConnection kills the pub/sub connections of the test's database,
// which are the hub's: the database is the test's alone.
func killHubConnection(t *testing.T, client *goredis.Client, rawURL string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	db := "db=" + strings.TrimPrefix(u.Path, "/")
	list, err := client.ClientList(t.Context()).Result()
	if err != nil {
		t.Fatal(err)
	}
	killed := 0
	for _, line := range strings.Split(list, "\n") {
		fields := strings.Fields(line)
		var id string
		isOurs, subscribed := false, false
		for _, f := range fields {
			switch {
			case strings.HasPrefix(f, "id="):
				id = strings.TrimPrefix(f, "id=")
			case f == db:
				isOurs = true
			case strings.HasPrefix(f, "sub=") && f != "sub=0":
				subscribed = true
			}
		}
		if isOurs && subscribed {
			if err := client.Do(t.Context(), "CLIENT", "KILL", "ID", id).Err(); err != nil {
				t.Fatal(err)
			}
			killed++
		}
	}
	if killed == 0 {
		t.Fatal("no pub/sub connection of the hub to kill")
	}
}

// When the connection is killed, every channel is subscribed again, each
// follower is told that it may have missed events (a Gap), and events flow
// again; new followers join as before.
func TestHubResubscribesAfterTheConnectionIsKilled(t *testing.T) {
	t.Parallel()
	rawURL := redistest.URL(t)
	client := connect(t, rawURL)
	hub := newHub(t, client, redisadapter.HubOptions{})
	bus := redisadapter.NewEventBus(client)
	a := subscribeHub(t, hub, sess("kill_a"))
	b := subscribeHub(t, hub, sess("kill_b"))
	if err := bus.Publish(t.Context(), token(sess("kill_a"), 1)); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, a); ev.Seq != 1 {
		t.Fatalf("before the kill: seq %d", ev.Seq)
	}

	killHubConnection(t, client, rawURL)
	for name, sub := range map[string]ports.Subscription{"a": a, "b": b} {
		if ev := next(t, sub); !ev.Gap {
			t.Fatalf("follower %s: first event after the kill is %+v, want a Gap", name, ev.SessionEvent)
		}
	}
	// The Gap comes once the subscription is active again.
	if err := bus.Publish(t.Context(), token(sess("kill_a"), 2), token(sess("kill_b"), 2)); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, a); ev.Seq != 2 || ev.SessionID != sess("kill_a") {
		t.Fatalf("a after the kill: %+v", ev.SessionEvent)
	}
	if ev := next(t, b); ev.Seq != 2 || ev.SessionID != sess("kill_b") {
		t.Fatalf("b after the kill: %+v", ev.SessionEvent)
	}
	c := subscribeHub(t, hub, sess("kill_c"))
	if err := bus.Publish(t.Context(), token(sess("kill_c"), 1)); err != nil {
		t.Fatal(err)
	}
	if ev := next(t, c); ev.Seq != 1 || ev.Gap {
		t.Fatalf("a new follower after the kill: %+v", ev)
	}
}

// Close ends every subscription with ErrFeedClosed; later subscriptions
// are refused.
func TestHubClose(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	hub := redisadapter.NewHub(client, slog.New(slog.NewTextHandler(io.Discard, nil)), redisadapter.HubOptions{})
	sub, err := hub.Subscribe(t.Context(), sess("close"))
	if err != nil {
		t.Fatal(err)
	}
	if err := hub.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sub.Done():
	case <-time.After(time.Second):
		t.Fatal("subscription still open after Close")
	}
	if !errors.Is(sub.Err(), ports.ErrFeedClosed) {
		t.Errorf("Err = %v, want ErrFeedClosed", sub.Err())
	}
	if _, err := hub.Subscribe(t.Context(), sess("close")); !errors.Is(err, ports.ErrFeedClosed) {
		t.Errorf("Subscribe after Close: %v, want ErrFeedClosed", err)
	}
	if err := hub.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// Without Redis, Subscribe gives up after its confirmation timeout (or the
// caller's context) with ErrUnavailable.
func TestHubSubscribeWithoutRedis(t *testing.T) {
	t.Parallel()
	opts, err := goredis.ParseURL(deadURL)
	if err != nil {
		t.Fatal(err)
	}
	dead := goredis.NewClient(opts)
	t.Cleanup(func() { _ = dead.Close() })
	hub := newHub(t, dead, redisadapter.HubOptions{ConfirmTimeout: 300 * time.Millisecond})
	start := time.Now()
	if _, err := hub.Subscribe(t.Context(), sess("dead")); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Subscribe = %v, want ErrUnavailable", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := hub.Subscribe(ctx, sess("dead")); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("Subscribe with a short context = %v, want ErrUnavailable", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("took %s to give up", d)
	}
}
