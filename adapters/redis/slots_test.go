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
	r3, ok3, _ := slots.TryAcquire(ctx, "ws_c", 1, time.Minute)
	if !ok1 || ok2 || !ok3 {
		t.Fatalf("acquire b, b, c = %v %v %v; want true false true", ok1, ok2, ok3)
	}
	r1()
	r3()
	r4, ok, _ := slots.TryAcquire(ctx, "ws_b", 1, time.Minute)
	if !ok {
		t.Fatal("a released slot was not free again")
	}
	r4()
}

// A slot is held as long as its holder runs, however long past the lease;
// a holder whose process died (here: whose Redis connection is gone, so it
// cannot renew) loses its slot once the lease runs out.
func TestSlotsLeaseLastsWhileTheHolderLives(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	slots := redisadapter.NewSlots(connect(t, url))
	ctx := t.Context()
	// Renewals come every third of a lease; the lease is long enough that
	// a renewal late by a loaded machine's pause (CI's -race suite once
	// missed a 150 ms lease) still comes in time.
	const lease = time.Second

	release, ok, err := slots.TryAcquire(ctx, "ws", 1, lease)
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	time.Sleep(3 * lease)
	if _, ok, _ := slots.TryAcquire(ctx, "ws", 1, time.Minute); ok {
		t.Fatal("acquired a slot whose holder still runs, after its first lease ran out")
	}
	release()
	release() // twice is harmless
	again, ok, err := slots.TryAcquire(ctx, "ws", 1, time.Minute)
	if !ok || err != nil {
		t.Fatalf("after release: %v, %v", ok, err)
	}
	again()

	dying := goredis.NewClient(mustParseURL(t, url))
	if _, ok, err := redisadapter.NewSlots(dying).TryAcquire(ctx, "ws", 1, lease); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if _, ok, _ := slots.TryAcquire(ctx, "ws", 1, time.Minute); ok {
		t.Fatal("acquired a slot held by an unexpired lease")
	}
	_ = dying.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, ok, err := slots.TryAcquire(ctx, "ws", 1, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			r()
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slot of a holder that stopped renewing never came free")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func mustParseURL(t *testing.T, url string) *goredis.Options {
	t.Helper()
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	return opts
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
