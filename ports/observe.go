package ports

import (
	"context"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// ChatObserver hears how each answer of the engine went, for the
// deployment's metrics. It must return at once and never fail the answer;
// the engine works without one.
type ChatObserver interface {
	// Answered reports one answer the engine finished: whether its caller
	// watched it being written (stream), how long it took until its first
	// text was composed (0 when it had none) and in all, and its fallback
	// reason (domain.FallbackNone for an answer from knowledge).
	Answered(ctx context.Context, stream bool, firstToken, total time.Duration, fallback domain.FallbackReason)
}

// HandoffObserver hears each conversation handed to people (moved to
// HANDOFF_REQUESTED), whoever asked: the visitor, the model's handoff tool
// or a member. It must return at once; the lifecycle works without one.
type HandoffObserver interface {
	HandedOff(ctx context.Context)
}

// Tracer marks the steps of a request for the deployment's tracing
// (adapters/tracing), so a trace shows where a request spent its time.
// Step starts the step name under ctx's current step and returns the
// context of the new step and the function that ends it, given the step's
// error (nil when it succeeded). It must never fail and must cost next to
// nothing when tracing is off; the engine works without one.
type Tracer interface {
	Step(ctx context.Context, name string) (context.Context, func(err error))
}
