package httpapitest

import (
	"context"

	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/relay"
)

// Turn is a scripted chat turn (sse.Turn): Run emits Events when it is
// given an emit (a stream), then returns Answer and Err.
type Turn struct {
	Events []domain.SessionEvent
	Answer domain.Answer
	Err    error
}

// Run emits the scripted events and returns the scripted answer.
func (t *Turn) Run(_ context.Context, emit chat.Emit) (domain.Answer, error) {
	if emit != nil {
		for _, ev := range t.Events {
			emit(ev)
		}
	}
	return t.Answer, t.Err
}

// LiveStream is a scripted live stream (sse.LiveStream): Run sends Events
// to the sink, then ends.
type LiveStream struct {
	Events []domain.SessionEvent
}

// Run sends the scripted events.
func (s *LiveStream) Run(_ context.Context, sink relay.Sink) error {
	for _, ev := range s.Events {
		if err := sink.Send(&domain.LiveEvent{SessionEvent: ev}); err != nil {
			return err
		}
	}
	return nil
}
