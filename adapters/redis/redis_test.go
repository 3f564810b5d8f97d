package redis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

// connect opens a client on a fresh database through the adapter's Connect.
func connect(t *testing.T, url string) *goredis.Client {
	t.Helper()
	client, err := redisadapter.Connect(t.Context(), url)
	if err != nil {
		t.Fatalf("Connect: %v", err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// deadURL points at a port nothing listens on.
const deadURL = "redis://127.0.0.1:1/0?dial_timeout=200ms&max_retries=-1"

func TestConnect(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		url         string
		wantErr     bool
		unavailable bool
		notInError  string
	}{
		{name: "reachable", url: redistest.URL(t)},
		{name: "unreachable", url: deadURL, wantErr: true, unavailable: true},
		{name: "bad scheme", url: "http://127.0.0.1:6379/0", wantErr: true},
		{name: "malformed url hides password", url: "redis://user:s3cret-pw@127.0.0.1:6379/%zz", wantErr: true, notInError: "s3cret-pw"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client, err := redisadapter.Connect(t.Context(), tt.url)
			if !tt.wantErr {
				if err != nil {
					t.Fatalf("Connect: %v", err)
				}
				_ = client.Close()
				return
			}
			if err == nil {
				_ = client.Close()
				t.Fatal("Connect succeeded, want an error")
			}
			if got := errors.Is(err, domain.ErrUnavailable); got != tt.unavailable {
				t.Errorf("errors.Is(err, ErrUnavailable) = %v, want %v (err: %v)", got, tt.unavailable, err)
			}
			if tt.notInError != "" && strings.Contains(err.Error(), tt.notInError) {
				t.Errorf("error %q leaks %q", err, tt.notInError)
			}
		})
	}
}

func TestHealth(t *testing.T) {
	t.Parallel()
	up := redisadapter.NewHealth(connect(t, redistest.URL(t)))
	if err := up.Ping(t.Context()); err != nil {
		t.Errorf("Ping on a live Redis: %v", err)
	}

	opts, err := goredis.ParseURL(deadURL)
	if err != nil {
		t.Fatal(err)
	}
	deadClient := goredis.NewClient(opts)
	t.Cleanup(func() { _ = deadClient.Close() })
	down := redisadapter.NewHealth(deadClient)
	if err := down.Ping(t.Context()); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("Ping on a dead Redis = %v, want ErrUnavailable", err)
	}
}

func TestRateLimiterAllowsLimitThenRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		perMinute int
	}{
		{name: "one a minute", perMinute: 1},
		{name: "five a minute", perMinute: 5},
		{name: "twenty a minute", perMinute: 20},
	}
	limiter := redisadapter.NewRateLimiter(connect(t, redistest.URL(t)))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Calls run far faster than GCRA refills (one per minute/perMinute,
			// 3 s at most here), so Remaining counts down exactly.
			ctx := t.Context()
			key := "key_" + strings.ReplaceAll(tt.name, " ", "-")
			for i := range tt.perMinute {
				rl, err := limiter.Allow(ctx, key, tt.perMinute)
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				if !rl.Allowed {
					t.Fatalf("call %d of %d refused: %+v", i+1, tt.perMinute, rl)
				}
				if rl.Limit != tt.perMinute || rl.Remaining != tt.perMinute-i-1 || rl.RetryAfter != 0 {
					t.Errorf("call %d: got %+v, want Limit %d, Remaining %d, RetryAfter 0", i+1, rl, tt.perMinute, tt.perMinute-i-1)
				}
				if rl.ResetAfter <= 0 || rl.ResetAfter > time.Minute {
					t.Errorf("call %d: ResetAfter = %v, want in (0, 1m]", i+1, rl.ResetAfter)
				}
			}
			rl, err := limiter.Allow(ctx, key, tt.perMinute)
			if err != nil {
				t.Fatal(err)
			}
			if rl.Allowed || rl.Remaining != 0 {
				t.Fatalf("call over the limit: got %+v, want refused with Remaining 0", rl)
			}
			// GCRA frees one call every minute/perMinute.
			interval := time.Minute / time.Duration(tt.perMinute)
			if rl.RetryAfter <= 0 || rl.RetryAfter > interval {
				t.Errorf("RetryAfter = %v, want in (0, %v]", rl.RetryAfter, interval)
			}
		})
	}
}

func TestRateLimiterKeysAreIndependent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	limiter := redisadapter.NewRateLimiter(connect(t, redistest.URL(t)))
	for range 2 {
		if rl, err := limiter.Allow(ctx, "key_a", 2); err != nil || !rl.Allowed {
			t.Fatalf("key_a: %+v, %v", rl, err)
		}
	}
	if rl, _ := limiter.Allow(ctx, "key_a", 2); rl.Allowed {
		t.Fatal("key_a over its limit was allowed")
	}
	rl, err := limiter.Allow(ctx, "key_b", 2)
	if err != nil || !rl.Allowed || rl.Remaining != 1 {
		t.Errorf("key_b after key_a ran out: %+v, %v; want allowed with Remaining 1", rl, err)
	}
}

// Two clients stand for two pods: the budget is shared through Redis, not held in process.
func TestRateLimiterSharedAcrossClients(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := redistest.URL(t)
	podA := redisadapter.NewRateLimiter(connect(t, url))
	podB := redisadapter.NewRateLimiter(connect(t, url))

	const limit = 4
	for i := range limit {
		pod := podA
		if i%2 == 1 {
			pod = podB
		}
		rl, err := pod.Allow(ctx, "ip:203.0.113.9", limit)
		if err != nil || !rl.Allowed {
			t.Fatalf("call %d: %+v, %v", i+1, rl, err)
		}
		if rl.Remaining != limit-i-1 {
			t.Errorf("call %d: Remaining = %d, want %d", i+1, rl.Remaining, limit-i-1)
		}
	}
	for name, pod := range map[string]*redisadapter.RateLimiter{"A": podA, "B": podB} {
		rl, err := pod.Allow(ctx, "ip:203.0.113.9", limit)
		if err != nil {
			t.Fatal(err)
		}
		if rl.Allowed || rl.RetryAfter <= 0 {
			t.Errorf("pod %s after the shared budget ran out: %+v, want refused with RetryAfter > 0", name, rl)
		}
	}
	// The key really lives in Redis under our prefix.
	raw := connect(t, url)
	n, err := raw.Exists(ctx, "rate:"+redisadapter.RateLimitKeyPrefix+"ip:203.0.113.9").Result()
	if err != nil || n != 1 {
		t.Errorf("rate-limit key not found in Redis: exists=%d, err=%v", n, err)
	}
}

func TestRateLimiterErrors(t *testing.T) {
	t.Parallel()
	limiter := redisadapter.NewRateLimiter(connect(t, redistest.URL(t)))
	if _, err := limiter.Allow(t.Context(), "k", 0); err == nil || errors.Is(err, domain.ErrInvalidInput) {
		t.Errorf("perMinute 0: err = %v, want a plain configuration error", err)
	}

	opts, err := goredis.ParseURL(deadURL)
	if err != nil {
		t.Fatal(err)
	}
	dead := goredis.NewClient(opts)
	t.Cleanup(func() { _ = dead.Close() })
	if _, err := redisadapter.NewRateLimiter(dead).Allow(t.Context(), "k", 10); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("dead Redis: err = %v, want ErrUnavailable", err)
	}
}

// subscribe returns a subscription on the session's channel that Redis has
// confirmed: Subscribe returns before the subscription is active.
func subscribe(t *testing.T, client *goredis.Client, sessionID string) *goredis.PubSub {
	t.Helper()
	sub := client.Subscribe(t.Context(), redisadapter.ChannelFor(sessionID))
	t.Cleanup(func() { _ = sub.Close() })
	msg, err := sub.Receive(t.Context())
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	if _, ok := msg.(*goredis.Subscription); !ok {
		t.Fatalf("first reply is %T, want *redis.Subscription", msg)
	}
	return sub
}

func TestEventBusPublish(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	bus := redisadapter.NewEventBus(connect(t, url))
	subscriber := connect(t, url) // another pod's connection
	created := time.Date(2026, 11, 21, 11, 0, 0, 123_456_789, time.FixedZone("CET", 3600))

	tests := []struct {
		name string
		ev   domain.SessionEvent
		want string
	}{
		{
			name: "assistant message with citations",
			ev: domain.SessionEvent{Type: "message", SessionID: "ses_1", Message: &domain.Message{
				ID: "msg_1", WorkspaceID: "ws_secret", ConversationID: "ses_1", Role: domain.RoleAssistant,
				Content: "Refunds take 5 days.", InboundEventID: "evt_1", TokensIn: 10, TokensOut: 5, CreatedAt: created,
				Citations: []domain.Citation{{DocumentName: "Refunds", SourceID: "src_1", SourceType: domain.SourceText, Snippet: "5 days", Score: 0.5}},
			}},
			want: `{"v":1,"type":"message","sessionId":"ses_1","message":{"id":"msg_1","role":"ASSISTANT","content":"Refunds take 5 days.","citations":[{"documentName":"Refunds","sourceId":"src_1","sourceType":"text","snippet":"5 days","score":0.5}],"createdAt":"2026-11-21T10:00:00.123Z"}}`,
		},
		{
			name: "user message without citations",
			ev: domain.SessionEvent{Type: "message", SessionID: "ses_2", Message: &domain.Message{
				ID: "msg_2", ConversationID: "ses_2", Role: domain.RoleUser, Content: "hi", CreatedAt: created,
			}},
			want: `{"v":1,"type":"message","sessionId":"ses_2","message":{"id":"msg_2","role":"USER","content":"hi","citations":[],"createdAt":"2026-11-21T10:00:00.123Z"}}`,
		},
		{
			name: "status change",
			ev:   domain.SessionEvent{Type: "status", SessionID: "ses_3", Status: domain.StatusHuman},
			want: `{"v":1,"type":"status","sessionId":"ses_3","status":"HUMAN"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sub := subscribe(t, subscriber, tt.ev.SessionID)
			if err := bus.Publish(t.Context(), tt.ev); err != nil {
				t.Fatalf("Publish: %v", err)
			}
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			defer cancel()
			msg, err := sub.ReceiveMessage(ctx)
			if err != nil {
				t.Fatalf("ReceiveMessage: %v", err)
			}
			if msg.Channel != "concierge:session:"+tt.ev.SessionID {
				t.Errorf("channel = %q", msg.Channel)
			}
			if got := withoutLogID(t, msg.Payload); got != tt.want {
				t.Errorf("payload\n got %s\nwant %s", got, tt.want)
			}
			if !json.Valid([]byte(msg.Payload)) {
				t.Error("payload is not valid JSON")
			}
		})
	}
}

// A subscriber of one session never receives another session's events.
func TestEventBusChannelsAreSeparate(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	bus := redisadapter.NewEventBus(connect(t, url))
	sub := subscribe(t, connect(t, url), "ses_mine")

	for i, session := range []string{"ses_other", "ses_mine"} {
		ev := domain.SessionEvent{Type: "status", SessionID: session, Status: domain.StatusAI}
		if err := bus.Publish(t.Context(), ev); err != nil {
			t.Fatalf("Publish %d: %v", i, err)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Redis delivers in publish order, so the first message received is the
	// only one of ses_mine unless ses_other's leaked through.
	if !strings.Contains(msg.Payload, `"sessionId":"ses_mine"`) {
		t.Errorf("received %s, want only ses_mine's event", msg.Payload)
	}
}

func TestEventBusErrors(t *testing.T) {
	t.Parallel()
	bus := redisadapter.NewEventBus(connect(t, redistest.URL(t)))
	if err := bus.Publish(t.Context(), domain.SessionEvent{Type: "status"}); err == nil {
		t.Error("Publish without a session id succeeded")
	}

	opts, err := goredis.ParseURL(deadURL)
	if err != nil {
		t.Fatal(err)
	}
	dead := goredis.NewClient(opts)
	t.Cleanup(func() { _ = dead.Close() })
	err = redisadapter.NewEventBus(dead).Publish(t.Context(), domain.SessionEvent{Type: "status", SessionID: "ses_x"})
	if !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("dead Redis: err = %v, want ErrUnavailable", err)
	}
}

// ExampleChannelFor shows the channel a subscriber listens on.
func ExampleChannelFor() {
	fmt.Println(redisadapter.ChannelFor("ses_0123"))
	// Output: concierge:session:ses_0123
}
