// Package outcome is the worker's job that decides conversations' outcomes
// (domain.DecideOutcome) as they go quiet, and again when a later event or
// a boundary of the last decision comes.
package outcome

import (
	"context"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// DefaultBatch is how many conversations one transaction decides: large
// enough that a backlog (a fresh migration's every conversation) drains in
// few round trips, small enough that the claimed rows stay locked for
// milliseconds: a message appended to a claimed conversation waits for the
// claim (its trigger marks the row due again after it).
const DefaultBatch = 200

// maxBatchesPerSweep bounds one sweep's work, so a backlog is worked off
// over several sweeps instead of holding one for long.
const maxBatchesPerSweep = 200

// Service decides due outcomes.
type Service struct {
	store ports.OutcomeStore
	clock ports.Clock
	batch int
}

// NewService returns the job over store; batch <= 0 takes DefaultBatch.
func NewService(store ports.OutcomeStore, clock ports.Clock, batch int) *Service {
	if batch <= 0 {
		batch = DefaultBatch
	}
	return &Service{store: store, clock: clock, batch: batch}
}

// Sweep decides every conversation due now, a batch per transaction, and
// returns how many it decided. Any number of workers may sweep at once:
// each claims rows the others do not hold, and deciding a conversation
// again with the same signals changes nothing.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	now := s.clock.Now()
	total := 0
	for range maxBatchesPerSweep {
		n, err := s.store.DecideDueOutcomes(ctx, now, s.batch, domain.DecideOutcome)
		total += n
		if err != nil || n < s.batch {
			return total, err
		}
	}
	return total, nil
}
