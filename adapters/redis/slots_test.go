package redis_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestSlotsBoundConcurrentHolders(t *testing.T) {
	t.Parallel()
	slots := redisadapter.NewSlots(connect(t, redistest.URL(t)))
	ctx := t.Context()

	// 20 goroutines race for 2 slots of one key: never more than 2 holders.
	var holders, peak, done atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			for {
				release, ok, err := slots.TryAcquire(ctx, "ws_a", 2, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					time.Sleep(time.Millisecond)
					continue
				}
				n := holders.Add(1)
				for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
				}
				time.Sleep(2 * time.Millisecond)
				holders.Add(-1)
				release()
				done.Add(1)
				return
			}
		})
	}
	wg.Wait()
	if done.Load() != 20 || peak.Load() > 2 || peak.Load() < 1 {
		t.Fatalf("done %d, peak holders %d; want all 20 done with at most 2 at once", done.Load(), peak.Load())
	}

	// Keys are independent.
	r1, ok1, _ := slots.TryAcquire(ctx, "ws_b", 1, time.Minute)
	_, ok2, _ := slots.TryAcquire(ctx, "ws_b", 1, time.Minute)
	_, ok3, _ := slots.TryAcquire(ctx, "ws_c", 1, time.Minute)
	if !ok1 || ok2 || !ok3 {
		t.Fatalf("acquire b, b, c = %v %v %v; want true false true", ok1, ok2, ok3)
	}
	r1()
	if _, ok, _ := slots.TryAcquire(ctx, "ws_b", 1, time.Minute); !ok {
		t.Fatal("a released slot was not free again")
	}
}

func TestSlotsLeaseExpires(t *testing.T) {
	t.Parallel()
	slots := redisadapter.NewSlots(connect(t, redistest.URL(t)))
	ctx := t.Context()
	// A holder that crashed never releases: its lease frees the slot.
	if _, ok, err := slots.TryAcquire(ctx, "ws", 1, 100*time.Millisecond); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok, _ := slots.TryAcquire(ctx, "ws", 1, time.Minute); ok {
		t.Fatal("acquired a slot held by an unexpired lease")
	}
	time.Sleep(150 * time.Millisecond)
	if _, ok, err := slots.TryAcquire(ctx, "ws", 1, time.Minute); !ok || err != nil {
		t.Fatalf("after the lease expired: %v, %v", ok, err)
	}
}

func TestSlotsRedisDown(t *testing.T) {
	t.Parallel()
	client := goredis.NewClient(&goredis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = client.Close() })
	_, ok, err := redisadapter.NewSlots(client).TryAcquire(t.Context(), "ws", 1, time.Minute)
	if ok || !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("TryAcquire with Redis down = %v, %v; want ErrUnavailable", ok, err)
	}
}
