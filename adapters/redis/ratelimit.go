package redis

import (
	"context"
	"fmt"

	"github.com/go-redis/redis_rate/v10"
	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// RateLimitKeyPrefix namespaces our rate-limit keys. redis_rate adds its own
// "rate:" in front, so the stored key is "rate:concierge:rl:<key>".
const RateLimitKeyPrefix = "concierge:rl:"

// RateLimiter counts calls in Redis with GCRA (redis_rate), so every pod
// shares one budget per key. The state is one small key per caller that
// expires by itself once the caller is idle.
type RateLimiter struct {
	limiter *redis_rate.Limiter
}

var _ ports.RateLimiter = (*RateLimiter)(nil)

// NewRateLimiter returns a limiter storing its state through client.
func NewRateLimiter(client goredis.UniversalClient) *RateLimiter {
	return &RateLimiter{limiter: redis_rate.NewLimiter(client)}
}

// Allow counts one call against key, allowing perMinute calls a minute with a
// burst of perMinute, so an idle caller may spend its whole minute at once.
// key ends up in Redis and must not be a secret: pass an API key's id or hash,
// never the key itself. perMinute must be positive. Returns an error wrapping
// domain.ErrUnavailable if Redis cannot be reached.
func (l *RateLimiter) Allow(ctx context.Context, key string, perMinute int) (ports.RateLimit, error) {
	if perMinute <= 0 {
		// A configuration bug, not the caller's fault: not an ErrInvalidInput.
		return ports.RateLimit{}, fmt.Errorf("rate limiter: perMinute must be positive, got %d", perMinute)
	}
	return l.allowN(ctx, key, perMinute, 1)
}

// allowN takes n calls' worth of budget at once, or none if fewer remain.
func (l *RateLimiter) allowN(ctx context.Context, key string, perMinute, n int) (ports.RateLimit, error) {
	res, err := l.limiter.AllowN(ctx, RateLimitKeyPrefix+key, redis_rate.PerMinute(perMinute), n)
	if err != nil {
		return ports.RateLimit{}, domain.Unavailable("redis rate limit", err)
	}
	rl := ports.RateLimit{
		Allowed:    res.Allowed >= n,
		Limit:      perMinute,
		Remaining:  max(res.Remaining, 0),
		ResetAfter: max(res.ResetAfter, 0),
	}
	// redis_rate reports -1 when the call passed; the port promises 0.
	if !rl.Allowed {
		rl.RetryAfter = max(res.RetryAfter, 0)
	}
	return rl, nil
}
