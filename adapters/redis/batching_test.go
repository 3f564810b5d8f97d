package redis

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/adapters/redis/redistest"
)

func newPods(t *testing.T, n int) []*BatchingRateLimiter {
	t.Helper()
	url := redistest.URL(t)
	pods := make([]*BatchingRateLimiter, n)
	for i := range pods {
		client, err := Connect(t.Context(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = client.Close() })
		pods[i] = NewBatchingRateLimiter(NewRateLimiter(client))
	}
	return pods
}

func TestBatchingIsExactForSmallLimits(t *testing.T) {
	pod := newPods(t, 1)[0]
	for i, want := range []int{2, 1, 0} {
		res, err := pod.Allow(context.Background(), "small", 3)
		if err != nil || !res.Allowed || res.Remaining != want {
			t.Fatalf("call %d: %+v, %v; want allowed with %d remaining", i+1, res, err, want)
		}
	}
	if res, err := pod.Allow(context.Background(), "small", 3); err != nil || res.Allowed || res.RetryAfter <= 0 {
		t.Fatalf("fourth call: %+v, %v", res, err)
	}
}

// TestBatchingNeverExceedsTheSharedLimit hammers one key from two pods with
// far more calls than the budget allows.
func TestBatchingNeverExceedsTheSharedLimit(t *testing.T) {
	const limit = 1000 // batches of up to 10
	pods := newPods(t, 2)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, pod := range pods {
		for range 8 {
			wg.Go(func() {
				for range 200 {
					res, err := pod.Allow(context.Background(), "busy", limit)
					if err != nil {
						t.Error(err)
						return
					}
					if res.Allowed {
						allowed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	// GCRA refills limit/60 calls a second (about 17) while the test runs,
	// which on a loaded machine is several seconds; each pod may hold one
	// batch of 10 reserved beyond that.
	refilled := int64(time.Since(start).Seconds()*limit/60) + 1
	got := allowed.Load()
	if got > limit+refilled+2*10 {
		t.Fatalf("admitted %d calls against a limit of %d (+%d refilled while the test ran, +20 in batches)", got, limit, refilled)
	}
	// Unused reservations may strand at most one batch per pod.
	if got < limit-2*10 {
		t.Fatalf("admitted only %d of %d: batches wasted budget", got, limit)
	}
	t.Logf("admitted %d of 3200 calls against a limit of %d", got, limit)
}

// TestBatchingSlowCallersWasteNothing: a caller slower than the hold period
// is counted one call at a time, so Redis sees exactly its calls.
func TestBatchingSlowCallersWasteNothing(t *testing.T) {
	pod := newPods(t, 1)[0]
	now := time.Now()
	pod.now = func() time.Time { return now }
	ctx := context.Background()
	for range 5 {
		if res, err := pod.Allow(ctx, "slow", 6000); err != nil || !res.Allowed {
			t.Fatalf("%+v %v", res, err)
		}
		now = now.Add(2 * batchHold)
	}
	// Ask Redis directly, bypassing any local reservation.
	res, err := pod.inner.Allow(ctx, "slow", 6000)
	if err != nil {
		t.Fatal(err)
	}
	if res.Remaining < 6000-6-1 {
		t.Fatalf("Redis has %d left after 6 calls: slow calls reserved more than they used", res.Remaining)
	}
}

func TestBatchingRemainingNeverGrowsWithinABurst(t *testing.T) {
	pod := newPods(t, 1)[0]
	prev := 1 << 30
	for i := range 300 {
		res, err := pod.Allow(context.Background(), "burst", 6000)
		if err != nil || !res.Allowed {
			t.Fatalf("call %d: %+v %v", i, res, err)
		}
		// GCRA refills 100 calls a second; allow that much drift.
		if res.Remaining > prev+2 {
			t.Fatalf("call %d: remaining went from %d to %d", i, prev, res.Remaining)
		}
		prev = res.Remaining
	}
	if prev > 6000-300+20 || prev < 6000-300-60 {
		t.Fatalf("remaining after 300 calls = %d", prev)
	}
}

func TestBatchingReportsRedisOutage(t *testing.T) {
	client := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	pod := NewBatchingRateLimiter(NewRateLimiter(client))
	if _, err := pod.Allow(context.Background(), "k", 6000); err == nil {
		t.Fatal("want an error when Redis is down")
	}
}
