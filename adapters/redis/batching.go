package redis

import (
	"context"
	"sync"
	"time"

	"github.com/conciergehq/concierge/ports"
)

// Batching defaults. A reservation is meant to cover about batchSpan of a
// key's traffic and is dropped after batchHold.
const (
	batchSpan     = 100 * time.Millisecond
	batchHold     = time.Second
	maxBatch      = 100
	maxBatchKeys  = 10_000
	batchFraction = 100 // a batch is at most 1/100 of the per-minute limit
)

// BatchingRateLimiter amortises the Redis round trip of a busy key: it takes
// several calls' worth of the shared budget in one AllowN and spends them
// locally. Budget taken from Redis is gone for every other pod, so pods can
// only under-admit, never exceed the limit. The batch follows the key's own
// rate (about 100 ms of its traffic, at most 1 % of its per-minute limit and
// 100), so a slow caller is counted exactly, one Redis call per request, and
// at most one batch is lost when a burst stops. Remaining counts the budget
// this pod holds as still available.
type BatchingRateLimiter struct {
	inner *RateLimiter
	now   func() time.Time

	mu   sync.Mutex
	keys map[string]*reservation
}

type reservation struct {
	mu         sync.Mutex
	avail      int // calls this pod may still admit without asking Redis
	remaining  int // what Redis reported after the reservation
	resetAfter time.Duration
	takenAt    time.Time
	served     int // calls admitted since takenAt, to estimate the rate
}

var _ ports.RateLimiter = (*BatchingRateLimiter)(nil)

// NewBatchingRateLimiter wraps inner.
func NewBatchingRateLimiter(inner *RateLimiter) *BatchingRateLimiter {
	return &BatchingRateLimiter{inner: inner, now: time.Now, keys: make(map[string]*reservation)}
}

// Allow counts one call against key. See RateLimiter.Allow for the errors.
func (b *BatchingRateLimiter) Allow(ctx context.Context, key string, perMinute int) (ports.RateLimit, error) {
	ceiling := min(perMinute/batchFraction, maxBatch)
	if ceiling <= 1 {
		return b.inner.Allow(ctx, key, perMinute)
	}
	r := b.reservation(key)
	r.mu.Lock()
	defer r.mu.Unlock()
	now := b.now()
	fresh := now.Sub(r.takenAt) < batchHold
	if r.avail > 0 && fresh {
		r.avail--
		r.served++
		return ports.RateLimit{Allowed: true, Limit: perMinute, Remaining: r.remaining + r.avail, ResetAfter: r.resetAfter}, nil
	}
	n := 1
	if fresh {
		// The key used up its last batch within the hold: size the next one
		// to its rate since then.
		elapsed := max(now.Sub(r.takenAt), time.Millisecond)
		n = min(max(int(float64(r.served)*float64(batchSpan)/float64(elapsed)), 1), ceiling)
	}
	res, err := b.inner.allowN(ctx, key, perMinute, n)
	if err == nil && !res.Allowed && n > 1 {
		// Fewer than n remain: spend the last ones one call at a time.
		n = 1
		res, err = b.inner.allowN(ctx, key, perMinute, 1)
	}
	if err != nil || !res.Allowed {
		r.avail = 0
		return res, err
	}
	r.avail, r.remaining, r.resetAfter, r.takenAt, r.served = n-1, res.Remaining, res.ResetAfter, now, 1
	res.Remaining = r.remaining + r.avail
	return res, nil
}

func (b *BatchingRateLimiter) reservation(key string) *reservation {
	b.mu.Lock()
	defer b.mu.Unlock()
	if r, ok := b.keys[key]; ok {
		return r
	}
	if len(b.keys) >= maxBatchKeys {
		b.evictIdle()
	}
	r := &reservation{}
	b.keys[key] = r
	return r
}

// evictIdle drops reservations past their hold; called with b.mu held.
func (b *BatchingRateLimiter) evictIdle() {
	now := b.now()
	for k, r := range b.keys {
		if r.mu.TryLock() {
			idle := now.Sub(r.takenAt) >= batchHold
			r.mu.Unlock()
			if idle {
				delete(b.keys, k)
			}
		}
	}
}
