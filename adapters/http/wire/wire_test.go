package wire

import (
	"testing"
	"time"
)

func TestTimeMatchesTheLayout(t *testing.T) {
	cases := []time.Time{
		time.Date(2026, 11, 21, 9, 5, 7, 123456789, time.UTC),
		time.Date(2026, 1, 2, 23, 59, 59, 999999999, time.FixedZone("x", 5*3600)),
		time.Date(1999, 12, 31, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 6, 1, 12, 0, 0, 1000, time.UTC),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		{},
	}
	for _, c := range cases {
		if got, want := Time(c), c.UTC().Format(TimeFormat); got != want {
			t.Errorf("Time(%v) = %s, want %s", c, got, want)
		}
	}
}

func BenchmarkTime(b *testing.B) {
	t := time.Date(2026, 11, 21, 9, 5, 7, 123456789, time.UTC)
	for b.Loop() {
		_ = Time(t)
	}
}
