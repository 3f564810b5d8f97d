package workers

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/domain"
)

// toAsynqError is the one place where a handler's error becomes asynq's
// decision. Errors that will fail the same way on every attempt (the event is
// gone, the input is invalid, the plan forbids it, a conflict, bad
// credentials) are wrapped with asynq.SkipRetry, so the task is archived at
// once instead of burning retries. Everything else, ErrUnavailable and unknown
// errors included, is returned as is and retried with backoff.
//
// ErrUnavailable wins over any permanent kind in the same chain: if a
// dependency failed, the outcome is unknown and another attempt may succeed.
func toAsynqError(err error) error {
	if err == nil || errors.Is(err, domain.ErrUnavailable) {
		return err
	}
	for _, permanent := range []error{
		domain.ErrNotFound,
		domain.ErrInvalidInput,
		domain.ErrForbidden,
		domain.ErrConflict,
		domain.ErrUnauthorized,
	} {
		if errors.Is(err, permanent) {
			return fmt.Errorf("%w: %w", err, asynq.SkipRetry)
		}
	}
	return err
}

// Retry backoff bounds.
const (
	retryBaseDelay = time.Second
	retryMaxDelay  = 5 * time.Minute
)

// RetryDelay is the server's asynq.RetryDelayFunc. A task waiting for its
// workspace's index slot comes back in 2 to 5 s. Otherwise, exponential backoff from
// one second, doubling per retry, capped at five minutes. Each delay is drawn
// from [d/2, d] so tasks that failed together (a Redis or Postgres blip) do not
// all come back in the same instant. asynq's default (n^4 + 15 s + jitter)
// makes the first retry of a message a person waits on take 15 s or more.
func RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	if errors.Is(err, errWorkspaceBusy) {
		return busyDelay()
	}
	d := retryMaxDelay
	// Beyond 2^9 s the cap applies anyway; checking first avoids overflow.
	if n >= 0 && n < 9 {
		d = min(retryBaseDelay<<n, retryMaxDelay)
	} else if n < 0 {
		d = retryBaseDelay
	}
	half := d / 2
	return half + rand.N(d-half+1)
}
