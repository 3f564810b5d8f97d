package postgres

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
)

// InsertDeliveries writes outbox rows outside any change, for the external
// tests of the delivery store; production code writes them only with the
// change they report.
func (s *Store) InsertDeliveries(ctx context.Context, ds ...domain.Delivery) error {
	return insertDeliveries(ctx, s.pool, ds)
}
