package postgres

import "github.com/conciergehq/concierge/core/domain"

// pageLimit is the number of items to return for a request: the default when
// unset, never more than the maximum, whatever the caller validated.
func pageLimit(req domain.PageRequest) int {
	switch {
	case req.Limit <= 0:
		return domain.DefaultPageLimit
	case req.Limit > domain.MaxPageLimit:
		return domain.MaxPageLimit
	default:
		return req.Limit
	}
}

// makePage turns rows fetched with LIMIT limit+1 into a page: the extra row
// only says there is more, and Next is the position of the last item kept.
func makePage[R, T any](rows []R, limit int, toDomain func(R) (T, error), position func(T) domain.Position) (domain.Page[T], error) {
	hasMore := len(rows) > limit
	if hasMore {
		rows = rows[:limit]
	}
	page := domain.Page[T]{Items: make([]T, 0, len(rows)), HasMore: hasMore}
	for _, r := range rows {
		item, err := toDomain(r)
		if err != nil {
			return domain.Page[T]{}, err
		}
		page.Items = append(page.Items, item)
	}
	if hasMore {
		next := position(page.Items[len(page.Items)-1])
		page.Next = &next
	}
	return page, nil
}
