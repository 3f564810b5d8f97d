package report

import (
	"context"

	"github.com/conciergehq/concierge/ports"
)

// DefaultRollupBatch is how many conversations one rollup transaction
// recomputes: a fresh migration's backlog drains in few round trips, and
// the claimed rows stay locked for tens of milliseconds.
const DefaultRollupBatch = 500

// maxRollupBatchesPerSweep bounds one sweep's work, so a backlog is worked
// off over several sweeps instead of holding one for long.
const maxRollupBatchesPerSweep = 400

// Rollup is the worker's job that keeps the report rollups up to date.
type Rollup struct {
	store ports.ReportRollups
	clock ports.Clock
	batch int
}

// NewRollup returns the job over store; batch <= 0 takes DefaultRollupBatch.
func NewRollup(store ports.ReportRollups, clock ports.Clock, batch int) *Rollup {
	if batch <= 0 {
		batch = DefaultRollupBatch
	}
	return &Rollup{store: store, clock: clock, batch: batch}
}

// Sweep rolls up every conversation due now, a batch per transaction, and
// returns how many. Run it after the outcome sweep, so the facts carry the
// outcomes just decided (a later outcome change makes the facts due
// again anyway). Any number of workers may sweep at once.
func (r *Rollup) Sweep(ctx context.Context) (int, error) {
	now := r.clock.Now()
	total := 0
	for range maxRollupBatchesPerSweep {
		n, err := r.store.RollUpDueFacts(ctx, now, r.batch)
		total += n
		if err != nil || n < r.batch {
			return total, err
		}
	}
	return total, nil
}
