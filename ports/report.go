package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// ReportStore reads reports from the rollups the worker keeps (issue 18),
// never from messages, so a report costs the same over a thousand
// conversations or a million.
type ReportStore interface {
	// Report sums q's rollups: the figures of the conversations of q's
	// workspace (and agent, when set) that started in q's range, a
	// ReportDay for every day of the range, the duration medians and the
	// token usage by agent and model (CostMicros left 0: pricing is the
	// caller's). An agent of another workspace yields an empty report, not
	// an error: the caller resolved the agent in q's workspace.
	Report(ctx context.Context, q domain.ReportQuery) (domain.Report, error)
}

// ReportRollups keeps the rollups reports read (issue 18): each
// conversation's facts, and their sums per workspace, day and agent. A
// conversation's facts are due from its start and again after every event
// and every change of its outcome; the store notices those itself.
type ReportRollups interface {
	// RollUpDueFacts claims up to limit conversations whose facts are due,
	// skipping any another worker holds, recomputes their facts and
	// applies the difference to their day's sums, all in one transaction:
	// rolling up the same conversation again changes nothing. It returns
	// how many it claimed; fewer than limit means none was left due, and
	// now becomes the reports' AsOf.
	RollUpDueFacts(ctx context.Context, now time.Time, limit int) (int, error)
}
