package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// OutcomeStore keeps each conversation's outcome (domain.ConversationOutcome).
// A conversation is due when it was never decided, when a later event
// touched it (a message, a state change, a rating, a new conversation of
// its verified user), or when the boundary its last decision named has
// come. The store notices those events itself, whatever path wrote them.
type OutcomeStore interface {
	// DecideDueOutcomes claims up to limit conversations due at now,
	// skipping any another worker holds, gathers their signals, calls
	// decide for each and stores the decision, all in one transaction: two
	// workers never decide one conversation at once, and deciding the same
	// signals again changes nothing (DecidedAt moves only when the outcome
	// does). It returns how many conversations it decided; fewer than
	// limit means none was left due.
	DecideDueOutcomes(ctx context.Context, now time.Time, limit int,
		decide func(domain.OutcomeSignals, time.Time) domain.OutcomeDecision) (int, error)
	// GetOutcome returns the conversation's outcome row. Returns
	// domain.ErrNotFound unless the conversation belongs to the workspace.
	GetOutcome(ctx context.Context, workspaceID, conversationID string) (domain.ConversationOutcome, error)
}
