package delivery

import (
	"math/rand/v2"
	"time"
)

// Backoff is the retry schedule of a delivery: after attempt n fails, the
// next one waits a delay drawn uniformly from [c/2, c], where
// c = min(Base * 2^(n-1), Cap). The jitter spreads deliveries that failed
// together (a receiver's outage) so they do not all come back in the same
// instant; the floor of c/2 keeps the schedule's total predictable.
type Backoff struct {
	Base time.Duration
	Cap  time.Duration
}

// DefaultBackoff starts at 10 s and doubles to a cap of 2 h. With
// DefaultMaxAttempts that keeps a delivery trying for 31 to 63 hours: at
// least a day and a night of a receiver's outage, as the issue requires
// (TestDefaultScheduleSpansADay proves the minimum).
var DefaultBackoff = Backoff{Base: 10 * time.Second, Cap: 2 * time.Hour}

// DefaultMaxAttempts is the first attempt and 40 retries; the delivery task's
// MaxRetry (workers) matches it.
const DefaultMaxAttempts = 41

// Ceiling is the longest wait after attempt n (counting from 1).
func (b Backoff) Ceiling(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	c := b.Base
	for i := 1; i < n && c < b.Cap; i++ {
		c *= 2
	}
	return min(c, b.Cap)
}

// Delay is the wait after attempt n, drawn from [Ceiling(n)/2, Ceiling(n)].
func (b Backoff) Delay(n int) time.Duration {
	c := b.Ceiling(n)
	half := c / 2
	return half + rand.N(c-half+1)
}

// Span returns the shortest and longest time between the first and the
// last of maxAttempts attempts.
func (b Backoff) Span(maxAttempts int) (least, most time.Duration) {
	for n := 1; n < maxAttempts; n++ {
		c := b.Ceiling(n)
		least += c / 2
		most += c
	}
	return least, most
}

// valid reports whether the schedule can be used: both bounds positive and
// the cap not below the base.
func (b Backoff) valid() bool { return b.Base > 0 && b.Cap >= b.Base }
