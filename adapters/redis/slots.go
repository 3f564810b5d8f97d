package redis

import (
	"context"
	"fmt"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
)

// slotsPrefix starts the key of every slot set.
const slotsPrefix = "concierge:slots:"

// acquireSlot takes a slot if fewer than ARGV[1] unexpired leases exist.
// KEYS[1] is a sorted set of lease ids scored by expiry (ms); ARGV[2] is now
// (ms), ARGV[3] the new lease's expiry (ms), ARGV[4] its id. Expired leases
// (a worker that crashed holding one) are dropped first. The key expires with
// its longest lease, so idle workspaces leave nothing behind.
var acquireSlot = goredis.NewScript(`
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return 1
`)

// extendSlot pushes lease ARGV[2]'s expiry to ARGV[1] (ms) if it is still
// in KEYS[1]: a lease that expired meanwhile (and may have been taken over)
// is not brought back.
var extendSlot = goredis.NewScript(`
if not redis.call('ZSCORE', KEYS[1], ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
redis.call('PEXPIREAT', KEYS[1], redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
return 1
`)

// Slots is a counting semaphore per key, shared by every process through
// Redis, with leases that expire so a crashed holder cannot keep a slot.
type Slots struct {
	client goredis.UniversalClient
	clock  func() time.Time
}

// NewSlots returns Slots over client.
func NewSlots(client goredis.UniversalClient) *Slots {
	return &Slots{client: client, clock: time.Now}
}

// TryAcquire takes one of limit slots of key and holds it until release is
// called, however long that takes: the process renews the slot's lease
// every ttl/3. A holder whose process dies stops renewing, and its slot
// frees itself within ttl. ok is false when all are taken. Returns an
// error wrapping domain.ErrUnavailable when Redis cannot be reached.
func (s *Slots) TryAcquire(ctx context.Context, key string, limit int, ttl time.Duration) (func(), bool, error) {
	now := s.clock()
	lease := domain.NewID("lease_")
	k := slotsPrefix + key
	got, err := acquireSlot.Run(ctx, s.client, []string{k}, limit, now.UnixMilli(), now.Add(ttl).UnixMilli(), lease).Int()
	if err != nil {
		return nil, false, fmt.Errorf("slots: acquire %s: %w: %w", key, domain.ErrUnavailable, err)
	}
	if got != 1 {
		return nil, false, nil
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { s.keepAlive(k, lease, ttl, stop) })
	var once sync.Once
	release := func() {
		once.Do(func() {
			close(stop)
			wg.Wait()
			// A fresh context: the job's may be cancelled already, and a
			// slot not given back would idle until its lease expires.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			s.client.ZRem(ctx, k, lease)
		})
	}
	return release, true, nil
}

// keepAlive renews a lease until stop is closed. A renewal that fails
// (Redis unreachable for a moment) is tried again at the next tick; the
// lease lasts ttl, so two more tries come before it lapses.
func (s *Slots) keepAlive(key, lease string, ttl time.Duration, stop <-chan struct{}) {
	every := max(ttl/3, time.Millisecond)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), every)
		_ = extendSlot.Run(ctx, s.client, []string{key}, s.clock().Add(ttl).UnixMilli(), lease).Err()
		cancel()
	}
}
