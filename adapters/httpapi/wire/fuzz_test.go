package wire

import (
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// FuzzCursor: any cursor a client sends is refused with a ValidationError
// or names a position of the list it was issued for: an id of the list's
// kind and a time after the epoch. What is accepted encodes back to itself.
func FuzzCursor(f *testing.F) {
	pos := domain.Position{Time: time.Date(2026, 11, 21, 9, 5, 7, 123456000, time.UTC), ID: domain.NewID(domain.PrefixSession)}
	good := encodeCursor(pos, "conversations|agent=a")
	for _, seed := range []string{good, good[:10], "", "!!!", good + "AA", "AQ", encodeCursor(pos, "other")} {
		f.Add(seed, "conversations|agent=a")
	}
	f.Fuzz(func(t *testing.T, raw, scope string) {
		got, err := decodeCursor(raw, scope, domain.PrefixSession)
		if err != nil {
			var verr *domain.ValidationError
			if !errors.As(err, &verr) || verr.Fields["cursor"] == "" {
				t.Fatalf("decodeCursor(%q) = %#v, want a ValidationError on cursor", raw, err)
			}
			return
		}
		if !domain.ValidID(domain.PrefixSession, got.ID) || !got.Time.After(time.Unix(0, 0)) {
			t.Fatalf("decodeCursor(%q) accepted %+v", raw, got)
		}
		if again := encodeCursor(got, scope); again != raw {
			t.Fatalf("decodeCursor(%q) = %+v, which encodes as %q", raw, got, again)
		}
	})
}
