package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// OneTimeKeyPrefix namespaces the one-time values' keys.
const OneTimeKeyPrefix = "concierge:once:"

// OneTimeStore keeps one-time values in Redis: SET with an expiry, so a
// value nobody reads vanishes by itself without a sweeper, and GETDEL, so
// exactly one reader gets it even when two race (Redis 6.2 or later).
// Neither keys nor values are logged here.
type OneTimeStore struct {
	client goredis.UniversalClient
}

var _ ports.OneTimeStore = (*OneTimeStore)(nil)

// NewOneTimeStore returns a store keeping its values through client.
func NewOneTimeStore(client goredis.UniversalClient) *OneTimeStore {
	return &OneTimeStore{client: client}
}

// PutOnce implements ports.OneTimeStore.
func (s *OneTimeStore) PutOnce(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		// A programming error, not the caller's input: not ErrInvalidInput.
		return fmt.Errorf("one-time store: ttl must be positive, got %s", ttl)
	}
	if err := s.client.Set(ctx, OneTimeKeyPrefix+key, value, ttl).Err(); err != nil {
		return domain.Unavailable("redis one-time store", err)
	}
	return nil
}

// TakeOnce implements ports.OneTimeStore.
func (s *OneTimeStore) TakeOnce(ctx context.Context, key string) ([]byte, error) {
	v, err := s.client.GetDel(ctx, OneTimeKeyPrefix+key).Bytes()
	if errors.Is(err, goredis.Nil) {
		return nil, domain.NotFound("one-time value")
	}
	if err != nil {
		return nil, domain.Unavailable("redis one-time store", err)
	}
	return v, nil
}
