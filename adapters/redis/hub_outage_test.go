package redis_test

import (
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// The hub through real outages: a private redis-server killed (restarted
// empty) or frozen while followers are subscribed.

// quietClient connects to a private server with go-redis's own retries
// kept short, so a test's calls during an outage fail fast.
func quietClient(t *testing.T, url string) *goredis.Client {
	t.Helper()
	return connect(t, url+"?max_retries=1&dial_timeout=300ms&read_timeout=1s&write_timeout=1s")
}

// Redis killed (and restarted empty) or frozen for 3 s: followers stay
// subscribed; after a kill each gets one Gap once its channel is
// subscribed again; then they get every event published, including a
// publisher's burst of what it queued meanwhile, which is more than a
// follower's buffer holds.
func TestHubFollowersWaitThroughAnOutage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		outage  func(*redistest.Server)
		wantGap bool
	}{
		{"killed for 3 s", func(r *redistest.Server) { r.Restart(3 * time.Second) }, true},
		// Shorter than the hub's health checks: it sees a silence, not an
		// outage, and nothing was lost.
		{"frozen for 3 s", func(r *redistest.Server) { r.Pause(3 * time.Second) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			redis := redistest.StartServer(t)
			client := quietClient(t, redis.URL())
			const buffer = 8
			hub := newHub(t, client, redisadapter.HubOptions{Buffer: buffer})
			bus := redisadapter.NewEventBus(client)
			a := subscribeHub(t, hub, "ses_outage_a")
			b := subscribeHub(t, hub, "ses_outage_b")
			marker := subscribeHub(t, hub, "ses_outage_marker")
			if err := bus.Publish(t.Context(), token("ses_outage_a", 1), token("ses_outage_b", 1)); err != nil {
				t.Fatal(err)
			}
			next(t, a)
			next(t, b)

			tt.outage(redis)
			for name, sub := range map[string]ports.Subscription{"a": a, "b": b, "marker": marker} {
				select {
				case <-sub.Done():
					t.Fatalf("follower %s ended: %v", name, sub.Err())
				default:
				}
				if tt.wantGap {
					if ev := next(t, sub); !ev.Gap {
						t.Fatalf("follower %s: first event after the outage is %+v, want a Gap", name, ev.SessionEvent)
					}
				}
			}
			// The publisher's queue, sent at once.
			burst(t, bus, "ses_outage_a", 2, 4*buffer, marker, "ses_outage_marker")
			for seq := 2; seq < 2+buffer; seq++ {
				if ev := next(t, a); ev.Seq != seq {
					t.Fatalf("a: %+v, want seq %d", ev.SessionEvent, seq)
				}
			}
			if ev := next(t, a); !ev.Gap {
				t.Fatalf("a after its buffer: %+v, want a Gap", ev.SessionEvent)
			}
			// And live again.
			if err := bus.Publish(t.Context(), token("ses_outage_a", 100), token("ses_outage_b", 2)); err != nil {
				t.Fatal(err)
			}
			if ev := next(t, a); ev.Seq != 100 {
				t.Fatalf("a: %+v", ev.SessionEvent)
			}
			if ev := next(t, b); ev.Seq != 2 {
				t.Fatalf("b: %+v", ev.SessionEvent)
			}
		})
	}
}

// subscribeSoon subscribes on a goroutine and fails the test if Subscribe
// is still waiting after 10 s: with a confirmation timeout of a minute, it
// can only return sooner by knowing Redis is away.
func subscribeSoon(t *testing.T, hub *redisadapter.Hub, session string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		sub, err := hub.Subscribe(t.Context(), session)
		if err == nil {
			sub.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Subscribe still waiting for Redis after 10 s")
	}
	return nil
}

// waitEnded waits until a subscription ends and returns why.
func waitEnded(t *testing.T, sub ports.Subscription, within time.Duration) error {
	t.Helper()
	select {
	case <-sub.Done():
		return sub.Err()
	case <-time.After(within):
		t.Fatalf("the subscription is still open after %s", within)
	}
	return nil
}

// Past the outage limit every subscription ends with ErrUnavailable (its
// client resumes with Last-Event-ID), whether Redis is down or hangs; while
// the hub knows Redis is away, Subscribe fails at once instead of waiting
// for a confirmation that cannot come. Once Redis answers again,
// subscriptions work as before.
func TestHubEndsSubscriptionsPastTheOutageLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		down func(*redistest.Server)
		up   func(*redistest.Server)
	}{
		{"killed", (*redistest.Server).Kill, (*redistest.Server).Start},
		{"frozen", (*redistest.Server).Freeze, (*redistest.Server).Thaw},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			redis := redistest.StartServer(t)
			client := quietClient(t, redis.URL())
			hub := redisadapter.NewHub(client, slog.New(slog.NewTextHandler(io.Discard, nil)), redisadapter.HubOptions{
				ConfirmTimeout: time.Minute, HealthInterval: 200 * time.Millisecond, OutageLimit: time.Second,
			})
			t.Cleanup(func() { _ = hub.Close() })
			// The confirmation timeout is also how long a ping may go
			// unanswered: a minute would hide a hang. Subscribe before
			// Redis goes away, with a hub that notices a hang sooner.
			hangHub := redisadapter.NewHub(client, slog.New(slog.NewTextHandler(io.Discard, nil)), redisadapter.HubOptions{
				ConfirmTimeout: 500 * time.Millisecond, HealthInterval: 200 * time.Millisecond, OutageLimit: time.Second,
			})
			t.Cleanup(func() { _ = hangHub.Close() })
			sub := subscribeHub(t, hub, "ses_limit")
			hangSub := subscribeHub(t, hangHub, "ses_limit")

			tt.down(redis)
			if tt.name == "killed" {
				err := waitEnded(t, sub, 20*time.Second)
				if !errors.Is(err, domain.ErrUnavailable) {
					t.Fatalf("ended with %v, want ErrUnavailable", err)
				}
				if err := subscribeSoon(t, hub, "ses_limit_new"); !errors.Is(err, domain.ErrUnavailable) {
					t.Fatalf("Subscribe while Redis is down: %v, want ErrUnavailable", err)
				}
			}
			err := waitEnded(t, hangSub, 20*time.Second)
			if !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("ended with %v, want ErrUnavailable", err)
			}
			if err := subscribeSoon(t, hangHub, "ses_limit_new"); !errors.Is(err, domain.ErrUnavailable) {
				t.Fatalf("Subscribe while Redis is away: %v, want ErrUnavailable", err)
			}

			tt.up(redis)
			for name, h := range map[string]*redisadapter.Hub{"hub": hub, "hang hub": hangHub} {
				var again ports.Subscription
				deadline := time.Now().Add(20 * time.Second)
				for again == nil {
					s, err := h.Subscribe(t.Context(), "ses_limit")
					switch {
					case err == nil:
						again = s
						t.Cleanup(s.Close)
					case !errors.Is(err, domain.ErrUnavailable) || time.Now().After(deadline):
						t.Fatalf("%s: Subscribe after Redis came back: %v", name, err)
					default:
						time.Sleep(50 * time.Millisecond)
					}
				}
				if err := redisadapter.NewEventBus(client).Publish(t.Context(), token("ses_limit", 7)); err != nil {
					t.Fatal(err)
				}
				if ev := next(t, again); ev.Seq != 7 {
					t.Fatalf("%s: %+v", name, ev.SessionEvent)
				}
			}
		})
	}
}
