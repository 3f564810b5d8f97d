package httpapi

import (
	"context"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	"github.com/conciergehq/concierge/core/chat"
	"github.com/conciergehq/concierge/core/relay"
)

// chatTurns is the chat engine as the handlers' Chat interfaces see it:
// its Start returns the concrete *chat.Pending, which Go does not accept
// for a method returning sse.Turn.
type chatTurns struct{ engine *chat.Service }

func (t chatTurns) Start(ctx context.Context, req chat.Request) (sse.Turn, error) {
	p, err := t.engine.Start(ctx, req)
	if err != nil {
		return nil, err // not a nil *chat.Pending in a non-nil interface
	}
	return p, nil
}

// relayStreams is the relay as the handlers' Relay interfaces see it: its
// Open returns the concrete *relay.Stream.
type relayStreams struct{ relay *relay.Service }

func (r relayStreams) Open(ctx context.Context, req relay.Request) (sse.LiveStream, error) {
	st, err := r.relay.Open(ctx, req)
	if err != nil {
		return nil, err
	}
	return st, nil
}

func (r relayStreams) OpenWorkspace(ctx context.Context, workspaceID, lastEventID string) (sse.WorkspaceStream, error) {
	st, err := r.relay.OpenWorkspace(ctx, workspaceID, lastEventID)
	if err != nil {
		return nil, err
	}
	return st, nil
}
