package redis_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// wsID is a workspace id unique to this test process: wake-up channels
// ignore the database.
func wsID(name string) string { return "ws_" + name + "_" + runID }

var at = time.Date(2026, 11, 27, 10, 0, 0, 123e6, time.UTC)

func wsMessage(ws, conv string, n int) domain.WorkspaceEvent {
	return domain.WorkspaceEvent{
		Type: domain.WorkspaceEventMessageCreated, WorkspaceID: ws, ConversationID: conv, AgentID: "agt_1", At: at,
		Message: &domain.Message{ID: fmt.Sprint("msg_", n), Role: domain.RoleUser, Content: fmt.Sprint("hello ", n), CreatedAt: at},
	}
}

// Events come back in append order, with the positions Append set, in full,
// and After a position gives only what was appended after it; each
// workspace has its own log.
func TestWorkspaceLogOrderAndResume(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	log := redisadapter.NewWorkspaceLog(client, redisadapter.LogRetention{})
	ws, other := wsID("order"), wsID("order_other")
	first := []domain.WorkspaceEvent{
		wsMessage(ws, "ses_a", 1),
		{Type: domain.WorkspaceEventConversationStatus, WorkspaceID: ws, ConversationID: "ses_a", Status: domain.StatusHandoffRequested, At: at},
		{Type: domain.WorkspaceEventConversationAssigned, WorkspaceID: ws, ConversationID: "ses_a", AssigneeID: "usr_1", Status: domain.StatusHuman, At: at},
		wsMessage(other, "ses_b", 9),
	}
	if err := log.Append(t.Context(), first); err != nil {
		t.Fatal(err)
	}
	second := []domain.WorkspaceEvent{wsMessage(ws, "ses_a", 2), wsMessage(ws, "ses_c", 3)}
	if err := log.Append(t.Context(), second); err != nil {
		t.Fatal(err)
	}
	want := append(append([]domain.WorkspaceEvent{}, first[:3]...), second...)
	for _, ev := range append(first, second...) {
		if ev.ID == "" {
			t.Fatalf("Append left an event without its position: %+v", ev)
		}
	}

	got, retained, err := log.After(t.Context(), ws, "", 100)
	if err != nil || !retained {
		t.Fatalf("After(start): retained %v, err %v", retained, err)
	}
	if len(got) != len(want) {
		t.Fatalf("After(start): %d events, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if g.ID != w.ID || g.Type != w.Type || g.WorkspaceID != ws || g.ConversationID != w.ConversationID || g.AgentID != w.AgentID ||
			g.Status != w.Status || g.AssigneeID != w.AssigneeID || !g.At.Equal(w.At) {
			t.Errorf("event %d: got %+v, want %+v", i, g, w)
		}
		if (w.Message == nil) != (g.Message == nil) {
			t.Fatalf("event %d: message %v, want %v", i, g.Message, w.Message)
		}
		if w.Message != nil && (g.Message.ID != w.Message.ID || g.Message.Content != w.Message.Content || g.Message.Role != w.Message.Role ||
			!g.Message.CreatedAt.Equal(w.Message.CreatedAt)) {
			t.Errorf("event %d: message %+v, want %+v", i, *g.Message, *w.Message)
		}
	}

	got, retained, err = log.After(t.Context(), ws, want[1].ID, 100)
	if err != nil || !retained || len(got) != 3 || got[0].ID != want[2].ID || got[2].ID != want[4].ID {
		t.Fatalf("After(2nd): %d events, retained %v, err %v", len(got), retained, err)
	}
	got, _, err = log.After(t.Context(), ws, want[0].ID, 2)
	if err != nil || len(got) != 2 || got[0].ID != want[1].ID {
		t.Fatalf("After with a limit of 2: %v, %v", got, err)
	}
	if tail, err := log.Tail(t.Context(), ws); err != nil || tail != want[4].ID {
		t.Fatalf("Tail = %q, %v; want %q", tail, err, want[4].ID)
	}
	if got, _, _ := log.After(t.Context(), other, "", 100); len(got) != 1 || got[0].ConversationID != "ses_b" {
		t.Fatalf("the other workspace's log: %+v", got)
	}
	if ttl := client.PTTL(t.Context(), redisadapter.WorkspaceLogKeyFor(ws)).Val(); ttl <= 0 || ttl > 24*time.Hour {
		t.Errorf("the log's expiry is %s, want refreshed to the retention's", ttl)
	}
}

func TestWorkspaceLogRejectsBadInput(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	log := redisadapter.NewWorkspaceLog(client, redisadapter.LogRetention{})
	ws := wsID("bad")
	for _, id := range []string{"abc", "1", "1-", "-1", "01-1", "1-x", "msg_1:1"} {
		_, _, err := log.After(t.Context(), ws, id, 10)
		var verr *domain.ValidationError
		if !errors.As(err, &verr) {
			t.Errorf("After(%q): %v, want a ValidationError", id, err)
		}
	}
	bad := []domain.WorkspaceEvent{
		{Type: domain.WorkspaceEventMessageCreated, WorkspaceID: ws, ConversationID: "ses_a"}, // no message
		{Type: "conversation.deleted", WorkspaceID: ws, ConversationID: "ses_a"},
		{Type: domain.WorkspaceEventConversationStatus, WorkspaceID: ws, ConversationID: "ses_a"}, // no status
		{Type: domain.WorkspaceEventConversationAssigned, ConversationID: "ses_a"},                // no workspace
	}
	for _, ev := range bad {
		if err := log.Append(t.Context(), []domain.WorkspaceEvent{wsMessage(ws, "ses_a", 1), ev}); err == nil || errors.Is(err, domain.ErrUnavailable) {
			t.Errorf("Append(%+v): %v, want a plain error", ev, err)
		}
	}
	if got, _, _ := log.After(t.Context(), ws, "", 10); len(got) != 0 {
		t.Errorf("a refused batch appended %d events", len(got))
	}
}

// A position older than what the log keeps (trimmed, or the log expired)
// is not retained: the follower starts over; a recent one still is.
func TestWorkspaceLogForgetsTrimmedPositions(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	log := redisadapter.NewWorkspaceLog(client, redisadapter.LogRetention{MaxLen: 10})
	ws := wsID("trim")
	batch := make([]domain.WorkspaceEvent, 0, 500)
	for i := range 500 {
		batch = append(batch, wsMessage(ws, "ses_a", i))
	}
	if err := log.Append(t.Context(), batch[:1]); err != nil {
		t.Fatal(err)
	}
	if err := log.Append(t.Context(), batch[1:]); err != nil {
		t.Fatal(err)
	}
	if n := client.XLen(t.Context(), redisadapter.WorkspaceLogKeyFor(ws)).Val(); n >= 500 {
		t.Fatalf("the log holds %d entries, want it trimmed", n)
	}
	if got, retained, err := log.After(t.Context(), ws, batch[0].ID, 100); err != nil || retained || len(got) != 0 {
		t.Fatalf("After(trimmed): %d events, retained %v, err %v", len(got), retained, err)
	}
	if got, retained, err := log.After(t.Context(), ws, batch[497].ID, 100); err != nil || !retained || len(got) != 2 {
		t.Fatalf("After(recent): %d events, retained %v, err %v", len(got), retained, err)
	}
	client.Del(t.Context(), redisadapter.WorkspaceLogKeyFor(ws)) // as when it expires
	if _, retained, err := log.After(t.Context(), ws, batch[497].ID, 100); err != nil || retained {
		t.Fatalf("After(expired log): retained %v, err %v", retained, err)
	}
}

// Appending wakes the workspace's followers on every pod (two hubs are two
// pods), and nobody else's.
func TestWorkspaceWakeUpsReachEveryPod(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	podA, podB := connect(t, url), connect(t, url)
	hubA, hubB := newHub(t, podA, redisadapter.HubOptions{}), newHub(t, podB, redisadapter.HubOptions{})
	ws, other := wsID("wake"), wsID("wake_other")
	watch := func(hub *redisadapter.Hub, ws string) ports.Subscription {
		sub, err := hub.Watch(t.Context(), ws)
		if err != nil {
			t.Fatalf("Watch: %v", err)
		}
		t.Cleanup(sub.Close)
		return sub
	}
	a, b, elsewhere := watch(hubA, ws), watch(hubB, ws), watch(hubB, other)
	// A session follower of the same hub is not woken either.
	session := subscribeHub(t, hubA, sess("wake"))
	log := redisadapter.NewWorkspaceLog(podA, redisadapter.LogRetention{})
	if err := log.Append(t.Context(), []domain.WorkspaceEvent{wsMessage(ws, "ses_a", 1)}); err != nil {
		t.Fatal(err)
	}
	for name, sub := range map[string]ports.Subscription{"pod A": a, "pod B": b} {
		if ev := next(t, sub); !ev.Gap {
			t.Errorf("%s: %+v, want a wake-up", name, ev)
		}
	}
	time.Sleep(100 * time.Millisecond)
	for name, sub := range map[string]ports.Subscription{"another workspace": elsewhere, "a session": session} {
		select {
		case ev := <-sub.Events():
			t.Errorf("%s was woken: %+v", name, ev)
		default:
		}
	}
}

// Redis restarted while a pod follows a workspace: the follower stays, is
// woken once its channel is subscribed again (it reads the log: a catch-up,
// not a loss), and wake-ups flow again.
func TestWorkspaceFollowerWakesAfterAnOutage(t *testing.T) {
	t.Parallel()
	redis := redistest.StartServer(t)
	client := quietClient(t, redis.URL())
	hub := newHub(t, client, redisadapter.HubOptions{})
	ws := wsID("outage")
	sub, err := hub.Watch(t.Context(), ws)
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Close()
	redis.Restart(2 * time.Second)
	if ev := next(t, sub); !ev.Gap {
		t.Fatalf("after the outage: %+v, want a wake-up", ev)
	}
	log := redisadapter.NewWorkspaceLog(client, redisadapter.LogRetention{})
	var appendErr error
	for range 50 { // go-redis may still hold a dead pooled connection
		if appendErr = log.Append(t.Context(), []domain.WorkspaceEvent{wsMessage(ws, "ses_a", 1)}); appendErr == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if appendErr != nil {
		t.Fatal(appendErr)
	}
	if ev := next(t, sub); !ev.Gap {
		t.Fatalf("after an append: %+v, want a wake-up", ev)
	}
	if got, _, err := log.After(t.Context(), ws, "", 10); err != nil || len(got) != 1 || !strings.HasPrefix(got[0].Message.Content, "hello") {
		t.Fatalf("the log after the outage: %+v, %v", got, err)
	}
}
