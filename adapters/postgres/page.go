package postgres

import (
	"fmt"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

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

// keysetQuery builds the query of a keyset page, newest first: a SELECT
// whose WHERE the caller starts, optional equality filters, the position
// to read after, and the (time, id) DESC order with its LIMIT. Filters and
// position are parameters, numbered in the order they are added.
type keysetQuery struct {
	sql  strings.Builder
	args []any
}

// newKeysetQuery starts the query with selectWhere, whose parameters are
// args ($1...).
func newKeysetQuery(selectWhere string, args ...any) *keysetQuery {
	k := &keysetQuery{args: args}
	k.sql.WriteString(selectWhere)
	return k
}

// filter adds "AND column = value" unless value is empty (no filter).
func (k *keysetQuery) filter(column, value string) {
	if value == "" {
		return
	}
	k.args = append(k.args, value)
	fmt.Fprintf(&k.sql, " AND %s = $%d", column, len(k.args))
}

// and adds "AND condition", a condition without parameters.
func (k *keysetQuery) and(condition string) {
	k.sql.WriteString(" AND " + condition)
}

// since adds "AND column >= at" unless at is zero (no bound).
func (k *keysetQuery) since(column string, at time.Time) {
	if at.IsZero() {
		return
	}
	k.args = append(k.args, dbTime(at))
	fmt.Fprintf(&k.sql, " AND %s >= $%d", column, len(k.args))
}

// until adds "AND column < at" unless at is zero (no bound).
func (k *keysetQuery) until(column string, at time.Time) {
	if at.IsZero() {
		return
	}
	k.args = append(k.args, dbTime(at))
	fmt.Fprintf(&k.sql, " AND %s < $%d", column, len(k.args))
}

// notBefore adds "AND (timeColumn, idColumn) >= pos" unless pos is nil.
func (k *keysetQuery) notBefore(timeColumn, idColumn string, pos *domain.Position) {
	if pos == nil {
		return
	}
	k.args = append(k.args, dbTime(pos.Time), pos.ID)
	fmt.Fprintf(&k.sql, " AND (%s, %s) >= ($%d, $%d)", timeColumn, idColumn, len(k.args)-1, len(k.args))
}

// before adds "AND (timeColumn, idColumn) < pos" unless pos is nil: the
// rows after the position, in the newest-first order.
func (k *keysetQuery) before(timeColumn, idColumn string, pos *domain.Position) {
	if pos == nil {
		return
	}
	k.args = append(k.args, dbTime(pos.Time), pos.ID)
	fmt.Fprintf(&k.sql, " AND (%s, %s) < ($%d, $%d)", timeColumn, idColumn, len(k.args)-1, len(k.args))
}

// page ends the query: rows after the position (when there is one) in the
// order (timeColumn, idColumn) DESC, at most limit.
func (k *keysetQuery) page(timeColumn, idColumn string, after *domain.Position, limit int) (string, []any) {
	k.before(timeColumn, idColumn, after)
	k.args = append(k.args, limit)
	fmt.Fprintf(&k.sql, " ORDER BY %s DESC, %s DESC LIMIT $%d", timeColumn, idColumn, len(k.args))
	return k.sql.String(), k.args
}
