package ports

import (
	"context"

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
