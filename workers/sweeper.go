package workers

import (
	"context"
	"log/slog"
	"time"
)

// StaleRequeuer re-enqueues work whose task was lost (Redis down at enqueue
// time, a task archived by mistake, a killed worker): core/inbound for
// inbound events, core/knowledge for index jobs, core/delivery for
// deliveries.
type StaleRequeuer interface {
	// RequeueStale enqueues tasks for stale PENDING work and returns how
	// many it enqueued.
	RequeueStale(ctx context.Context) (int, error)
}

// DefaultSweepInterval is used when NewSweeper gets a non-positive interval.
const DefaultSweepInterval = time.Minute

// Sweeper calls a StaleRequeuer periodically.
//
// Every worker pod may run one, and no lock is taken: requeueing is idempotent
// (a task for work already done is a no-op, and the database dedupes the rest:
// a unique constraint on appended messages, a claim on each delivery), so
// concurrent sweeps only cost a few extra tasks.
type Sweeper struct {
	what     string
	requeuer StaleRequeuer
	interval time.Duration
	logger   *slog.Logger
}

// NewSweeper returns a sweeper calling requeuer every interval; what names
// the work it requeues in its logs ("inbound events", "deliveries").
func NewSweeper(what string, requeuer StaleRequeuer, interval time.Duration, logger *slog.Logger) *Sweeper {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	return &Sweeper{what: what, requeuer: requeuer, interval: interval, logger: logger.With("component", "sweeper")}
}

// Run sweeps immediately, so work lost while every worker was down is
// picked up at start, then every interval, until ctx is cancelled. A failed
// sweep is logged and the next one tried on schedule.
func (s *Sweeper) Run(ctx context.Context) {
	ticker := time.NewTicker(s.interval)
	defer ticker.Stop()
	for ctx.Err() == nil {
		s.sweep(ctx)
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (s *Sweeper) sweep(ctx context.Context) {
	// A hung store must not hold up the next sweep forever.
	sweepCtx, cancel := context.WithTimeout(ctx, s.interval)
	defer cancel()
	n, err := s.requeuer.RequeueStale(sweepCtx)
	switch {
	case err != nil && ctx.Err() != nil:
		// Shutting down: an interrupted sweep is expected, not worth a warning.
	case err != nil:
		s.logger.WarnContext(ctx, "sweep failed", "error", err, "requeued", n, "sweep", s.what)
	case n > 0:
		s.logger.InfoContext(ctx, "requeued stale "+s.what, "count", n)
	default:
		s.logger.DebugContext(ctx, "no stale "+s.what)
	}
}
