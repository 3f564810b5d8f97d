package redis_test

import (
	"errors"
	"log/slog"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

type change struct {
	workspaceID, agentID string
	version              int64
}

func TestChangesReachEveryListener(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	// Two "pods", each with its own connection.
	podA := redisadapter.NewChanges(connect(t, url), slog.New(slog.DiscardHandler))
	podB := redisadapter.NewChanges(connect(t, url), slog.New(slog.DiscardHandler))
	got := make(chan change, 10)
	ready := make(chan struct{})
	go func() {
		_ = podB.Listen(t.Context(), func() { close(ready) },
			func(ws, agent string, v int64) {
				if ws == "ws_1" {
					got <- change{ws, agent, v}
				}
			}, func() {})
	}()
	select {
	case <-ready:
	case <-time.After(5 * time.Second):
		t.Fatal("the subscription was never confirmed")
	}

	// Pub/sub channels are global to the Redis server, not per database, so
	// other tests' changes may arrive too: only this test's workspace counts.
	if err := podA.KnowledgeChanged(t.Context(), ports.KnowledgeChange{WorkspaceID: "ws_1", AgentID: "agt_1", Version: 7}); err != nil {
		t.Fatal(err)
	}
	if err := podA.AgentChanged(t.Context(), "ws_1", "agt_2"); err != nil {
		t.Fatal(err)
	}
	if err := podA.WorkspaceChanged(t.Context(), "ws_1"); err != nil {
		t.Fatal(err)
	}
	want := []change{{"ws_1", "agt_1", 7}, {"ws_1", "agt_2", 0}, {"ws_1", "", 0}}
	for _, w := range want {
		select {
		case c := <-got:
			if c != w {
				t.Fatalf("got %+v, want %+v", c, w)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("change %+v never arrived", w)
		}
	}
}

func TestChangesRedisDown(t *testing.T) {
	t.Parallel()
	client := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	err := redisadapter.NewChanges(client, slog.New(slog.DiscardHandler)).AgentChanged(t.Context(), "ws", "agt")
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("AgentChanged with Redis down = %v, want ErrUnavailable", err)
	}
}
