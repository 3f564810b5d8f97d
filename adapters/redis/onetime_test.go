package redis_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/adapters/redis/redistest"
	"github.com/conciergehq/concierge/core/domain"
)

func TestOneTimeStore(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	store := redisadapter.NewOneTimeStore(client)
	ctx := t.Context()

	if err := store.PutOnce(ctx, "k1", []byte("sealed"), time.Minute); err != nil {
		t.Fatal(err)
	}
	ttl, err := client.PTTL(ctx, redisadapter.OneTimeKeyPrefix+"k1").Result()
	if err != nil || ttl <= 0 || ttl > time.Minute {
		t.Fatalf("stored key's TTL = %v, %v; want within a minute", ttl, err)
	}
	got, err := store.TakeOnce(ctx, "k1")
	if err != nil || string(got) != "sealed" {
		t.Fatalf("first TakeOnce = %q, %v", got, err)
	}

	tests := []struct {
		name  string
		setup func() error
		key   string
	}{
		{name: "taken already", key: "k1"},
		{name: "never stored", key: "k2"},
		{name: "expired", key: "k3", setup: func() error {
			return store.PutOnce(ctx, "k3", []byte("x"), time.Millisecond)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.setup != nil {
				if err := tc.setup(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if v, err := store.TakeOnce(ctx, tc.key); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("TakeOnce = %q, %v; want domain.ErrNotFound", v, err)
			}
		})
	}

	if err := store.PutOnce(ctx, "k4", []byte("x"), 0); err == nil {
		t.Error("PutOnce with a zero TTL stored a value that would never expire")
	}
}

// TestOneTimeStoreSingleReader races readers for one value: exactly one
// gets it.
func TestOneTimeStoreSingleReader(t *testing.T) {
	t.Parallel()
	store := redisadapter.NewOneTimeStore(connect(t, redistest.URL(t)))
	ctx := t.Context()
	for round := range 20 {
		if err := store.PutOnce(ctx, "race", []byte{byte(round)}, time.Minute); err != nil {
			t.Fatal(err)
		}
		var got atomic.Int32
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				_, err := store.TakeOnce(ctx, "race")
				switch {
				case err == nil:
					got.Add(1)
				case !errors.Is(err, domain.ErrNotFound):
					t.Error(err)
				}
			})
		}
		wg.Wait()
		if n := got.Load(); n != 1 {
			t.Fatalf("round %d: %d readers got the value, want 1", round, n)
		}
	}
}

func TestOneTimeStoreUnavailable(t *testing.T) {
	t.Parallel()
	client := connect(t, redistest.URL(t))
	store := redisadapter.NewOneTimeStore(client)
	_ = client.Close()
	if err := store.PutOnce(t.Context(), "k", []byte("x"), time.Minute); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("PutOnce on a closed client = %v, want domain.ErrUnavailable", err)
	}
	if _, err := store.TakeOnce(t.Context(), "k"); !errors.Is(err, domain.ErrUnavailable) {
		t.Errorf("TakeOnce on a closed client = %v, want domain.ErrUnavailable", err)
	}
}
