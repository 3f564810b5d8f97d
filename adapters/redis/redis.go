// Package redis adapts Redis (through go-redis) to Concierge's ports: the
// session event bus, the shared rate limiter and a health check. Every pod
// talks to the same Redis, which is what makes rate limits and live relay work
// across pods.
//
// The package is named after its folder; go-redis is imported as goredis here,
// and callers that need both usually import this package as redisadapter.
package redis

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// ConnectTimeout bounds the ping Connect makes, so a process starting against
// an unreachable Redis fails fast instead of hanging on go-redis's retries.
const ConnectTimeout = 3 * time.Second

// Connect parses a redis:// or rediss:// URL (go-redis options such as
// dial_timeout may be given as query parameters), opens a client and pings it.
// A malformed URL is a configuration error; an unreachable server wraps
// domain.ErrUnavailable. Errors never contain the URL, which may hold a password.
func Connect(ctx context.Context, rawURL string) (*goredis.Client, error) {
	opts, err := goredis.ParseURL(rawURL)
	if err != nil {
		// url.Error prints the whole URL, password included: keep only the reason.
		if uerr, ok := errors.AsType[*url.Error](err); ok {
			err = uerr.Err
		}
		return nil, fmt.Errorf("redis: invalid URL: %w", err)
	}
	client := goredis.NewClient(opts)
	pingCtx, cancel := context.WithTimeout(ctx, ConnectTimeout)
	defer cancel()
	if err := client.Ping(pingCtx).Err(); err != nil {
		_ = client.Close()
		return nil, domain.Unavailable("redis ping", err)
	}
	return client, nil
}

// Health checks that Redis answers, for readiness probes.
type Health struct {
	client goredis.UniversalClient
}

var _ ports.HealthChecker = (*Health)(nil)

// NewHealth returns a health check over client.
func NewHealth(client goredis.UniversalClient) *Health {
	return &Health{client: client}
}

// Ping returns an error wrapping domain.ErrUnavailable when Redis does not answer.
func (h *Health) Ping(ctx context.Context) error {
	if err := h.client.Ping(ctx).Err(); err != nil {
		return domain.Unavailable("redis ping", err)
	}
	return nil
}
