package domain

import "time"

// Page limits, per PRODUCT.md.
const (
	DefaultPageLimit = 20
	MaxPageLimit     = 100
)

// PageRequest asks for one page of a keyset-paginated list.
type PageRequest struct {
	Limit int
	// After is the position of the last item of the previous page; nil for the first page.
	After *Position
}

// Position is a keyset position: lists are ordered by (Time, ID) descending,
// so an item written while a client pages never shifts the others.
type Position struct {
	Time time.Time
	ID   string
}

// Page is one page of results.
type Page[T any] struct {
	Items   []T
	HasMore bool
	// Next is the position to continue after, set when HasMore.
	Next *Position
}

// ValidatePageLimit returns the limit to use for a requested one (0 means default).
func ValidatePageLimit(limit int) (int, error) {
	if limit == 0 {
		return DefaultPageLimit, nil
	}
	if limit < 1 || limit > MaxPageLimit {
		return 0, InvalidField("limit", "must be between 1 and 100")
	}
	return limit, nil
}
