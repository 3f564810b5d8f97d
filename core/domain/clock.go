package domain

import "time"

// SystemClock is the real clock, in UTC truncated to microseconds: PostgreSQL
// keeps microseconds, so times read back compare equal to times written.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }
