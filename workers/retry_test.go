package workers

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/hibiken/asynq"

	"github.com/conciergehq/concierge/core/domain"
)

func TestToAsynqError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	tests := []struct {
		name      string
		err       error
		permanent bool
	}{
		{name: "not found", err: domain.NotFound("inbound event"), permanent: true},
		{name: "wrapped not found", err: fmt.Errorf("load event: %w", domain.ErrNotFound), permanent: true},
		{name: "invalid input", err: domain.Invalid("message is required"), permanent: true},
		{name: "forbidden by plan", err: &domain.PlanError{Feature: domain.FeatureAPIAccess, Plan: domain.PlanFree}, permanent: true},
		{name: "conflict", err: domain.Conflict("idempotency key reused"), permanent: true},
		{name: "unauthorized", err: domain.Unauthorized("bad secret"), permanent: true},
		{name: "unavailable", err: domain.Unavailable("postgres", boom)},
		{name: "rate limited", err: &domain.RateLimitError{RetryAfterSeconds: 3}},
		{name: "unknown", err: boom},
		{name: "deadline exceeded", err: context.DeadlineExceeded},
		{name: "unavailable wins over a permanent kind", err: domain.Unavailable("postgres", domain.NotFound("row"))},
		{name: "joined unavailable and not found", err: errors.Join(domain.ErrNotFound, domain.ErrUnavailable)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := toAsynqError(tt.err)
			if skip := errors.Is(got, asynq.SkipRetry); skip != tt.permanent {
				t.Errorf("SkipRetry = %v, want %v (err: %v)", skip, tt.permanent, got)
			}
			// The original chain survives for logs and errors.Is.
			if !errors.Is(got, tt.err) {
				t.Errorf("result %v no longer wraps %v", got, tt.err)
			}
		})
	}
	if got := toAsynqError(nil); got != nil {
		t.Errorf("toAsynqError(nil) = %v, want nil", got)
	}
}

func TestRetryDelayBounds(t *testing.T) {
	t.Parallel()
	ceiling := func(n int) time.Duration {
		switch {
		case n <= 0:
			return time.Second
		case n >= 9: // 2^9 s is past the 5 min cap
			return 5 * time.Minute
		default:
			return min(time.Second<<n, 5*time.Minute)
		}
	}
	for _, n := range []int{-1, 0, 1, 2, 3, 5, 8, 9, 10, 20, 25, 63, 64, 1000, math.MaxInt} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			hi := ceiling(n)
			lo := hi / 2
			seen := map[time.Duration]bool{}
			for range 500 {
				d := RetryDelay(n, errors.New("x"), nil)
				if d < lo || d > hi {
					t.Fatalf("RetryDelay(%d) = %v, want in [%v, %v]", n, d, lo, hi)
				}
				seen[d] = true
			}
			if len(seen) < 10 {
				t.Errorf("RetryDelay(%d) took only %d distinct values in 500 draws: no jitter?", n, len(seen))
			}
		})
	}
}
