package wire

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
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

func TestCursorRoundTrip(t *testing.T) {
	pos := domain.Position{Time: time.Date(2026, 11, 21, 9, 5, 7, 123456000, time.UTC), ID: domain.NewID(domain.PrefixSession)}
	raw := encodeCursor(pos, "conversations|agent=a")
	got, err := decodeCursor(raw, "conversations|agent=a", domain.PrefixSession)
	if err != nil || !got.Time.Equal(pos.Time) || got.ID != pos.ID {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	tests := map[string]string{
		"other scope":    encodeCursor(pos, "conversations|agent=b"),
		"wrong prefix":   encodeCursor(domain.Position{Time: pos.Time, ID: domain.NewID(domain.PrefixAgent)}, "conversations|agent=a"),
		"zero time":      encodeCursor(domain.Position{Time: time.Unix(0, 0), ID: pos.ID}, "conversations|agent=a"),
		"truncated":      raw[:10],
		"not base64":     "!!!",
		"empty payload":  "",
		"too long":       raw + strings.Repeat("A", 300),
		"bit flipped id": raw[:len(raw)-3] + "zzz",
	}
	for name, c := range tests {
		if _, err := decodeCursor(c, "conversations|agent=a", domain.PrefixSession); !errors.Is(err, domain.ErrInvalidInput) {
			t.Errorf("%s: err = %v, want invalid input", name, err)
		}
	}
}
