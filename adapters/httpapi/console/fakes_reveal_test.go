package console_test

import (
	"context"
	"sync"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// fakeOnce is a scripted ports.OneTimeStore with the Redis adapter's
// semantics (a take deletes; a missing key is domain.ErrNotFound). It
// keeps every value put, so tests can check what reached the store.
// adapters/redis tests the real one; TestSecretsShownOnceOnRedis runs the
// console on it.
type fakeOnce struct {
	mu     sync.Mutex
	values map[string][]byte
	// put records every value and TTL stored, by key.
	put  map[string][]byte
	ttls []time.Duration
	// fail, when set, is returned by every call.
	fail error
}

var _ ports.OneTimeStore = (*fakeOnce)(nil)

func newFakeOnce() *fakeOnce {
	return &fakeOnce{values: map[string][]byte{}, put: map[string][]byte{}}
}

func (f *fakeOnce) PutOnce(_ context.Context, key string, value []byte, ttl time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return f.fail
	}
	f.values[key] = append([]byte(nil), value...)
	f.put[key] = f.values[key]
	f.ttls = append(f.ttls, ttl)
	return nil
}

func (f *fakeOnce) TakeOnce(_ context.Context, key string) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail != nil {
		return nil, f.fail
	}
	v, ok := f.values[key]
	if !ok {
		return nil, domain.NotFound("one-time value")
	}
	delete(f.values, key)
	return v, nil
}

// puts says how many values were stored.
func (f *fakeOnce) puts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.put)
}
