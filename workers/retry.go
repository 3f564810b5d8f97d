package workers

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/delivery"
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

// crawlContinueDelay is the pause between two attempts of a long crawl:
// enough for a job waiting for the index slot to take it first.
const crawlContinueDelay = time.Second

// Retry backoff bounds.
const (
	retryBaseDelay = time.Second
	retryMaxDelay  = 5 * time.Minute
)

// RetryDelay is the server's asynq.RetryDelayFunc. A task waiting for its
// workspace's index slot comes back in 2 to 5 s, a crawl that continues in
// its next attempt in one. Otherwise, exponential backoff from
// one second, doubling per retry, capped at five minutes. Each delay is drawn
// from [d/2, d] so tasks that failed together (a Redis or Postgres blip) do not
// all come back in the same instant. asynq's default (n^4 + 15 s + jitter)
// makes the first retry of a message a person waits on take 15 s or more.
//
// A delivery attempt that failed comes back exactly when its outbox row is
// due again (deliveryRetry carries the delay the row records, from the
// delivery schedule of core/delivery); a delivery task that failed before
// reaching the receiver (the store was down) takes the backoff above.
func RetryDelay(n int, err error, _ *asynq.Task) time.Duration {
	if errors.Is(err, errWorkspaceBusy) {
		return busyDelay()
	}
	if errors.Is(err, errCrawlContinues) {
		return crawlContinueDelay
	}
	var later *deliveryRetry
	if errors.As(err, &later) && later.in > 0 {
		return later.in
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

// deliveryRetry is a delivery attempt the receiver did not accept, to be
// tried again after `in` (the row's next attempt time). It is a failure for
// asynq (it uses up a retry) but not an error worth logging again: the
// delivery service logged the attempt.
type deliveryRetry struct {
	id        string
	in        time.Duration
	lastError string
}

func (e *deliveryRetry) Error() string {
	return fmt.Sprintf("delivery %s not accepted, retrying in %s: %s", e.id, e.in, e.lastError)
}

// deliveryFailed is a delivery that failed for good (refused by its
// receiver, or out of attempts): the row says FAILED, so no retry follows.
type deliveryFailed struct {
	id        string
	lastError string
}

func (e *deliveryFailed) Error() string {
	return fmt.Sprintf("delivery %s failed: %s", e.id, e.lastError)
}

// Unwrap makes the failure permanent for asynq.
func (e *deliveryFailed) Unwrap() error { return asynq.SkipRetry }

// deliveryOutcome turns an attempt's result into asynq's decision: nothing
// to do or delivered is success; a scheduled retry comes back when the row
// is due; a delivery that failed for good is archived without retries.
func deliveryOutcome(id string, res delivery.Result) error {
	switch {
	case !res.Attempted || res.Status == "" || res.Status == domain.DeliveryDelivered:
		return nil
	case res.Status == domain.DeliveryFailed:
		return &deliveryFailed{id: id, lastError: res.LastError}
	case res.RetryIn > 0:
		return &deliveryRetry{id: id, in: res.RetryIn, lastError: res.LastError}
	}
	return nil
}

// isDeliveryOutcome reports whether err is an outcome the delivery service
// already logged.
func isDeliveryOutcome(err error) bool {
	var later *deliveryRetry
	var failed *deliveryFailed
	return errors.As(err, &later) || errors.As(err, &failed)
}
