package main

import (
	"context"
	"errors"

	"github.com/conciergehq/concierge/adapters/httpapi/sse"
	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/core/relay"
)

// startRelay builds a serving process's live relay: its hub (the pod's one
// Redis subscriber connection, fanned out to every live stream) and the
// relay use case over it. Close the hub at shutdown: live streams never end
// by themselves, and closing it ends them (their clients resume on another
// pod) so the drain of connections can finish.
func (s *system) startRelay() *redisadapter.Hub {
	opts := redisadapter.HubOptions{Buffer: s.cfg.RelayBuffer, OutageLimit: s.cfg.RelayOutageLimit}
	if s.metrics != nil {
		opts.Observer = s.metrics
	}
	hub := redisadapter.NewHub(s.redis, s.log.With("component", "relay"), opts)
	if s.metrics != nil {
		s.metrics.SetStreams(hub.Followers)
	}
	s.relay = relay.NewService(relay.Deps{
		Feed: hub, Recent: redisadapter.NewEventLog(s.redis), Transcript: s.store,
		Conversations: s.store, Lifecycle: s.lifecycle, Clock: s.clock, Log: s.log,
		Workspace: relay.WorkspaceDeps{
			Log: redisadapter.NewWorkspaceLog(s.redis, redisadapter.DefaultWorkspaceLogRetention), Feed: hub,
		},
	}, relay.Options{OutageLimit: s.cfg.RelayOutageLimit})
	return hub
}

// consoleEvents opens the inbox's workspace event streams on the relay;
// without a relay (a process that serves no streams) they answer 503.
type consoleEvents struct{ relay *relay.Service }

func (e consoleEvents) OpenWorkspace(ctx context.Context, workspaceID, lastEventID string) (sse.WorkspaceStream, error) {
	if e.relay == nil {
		return nil, domain.Unavailable("workspace events", errors.New("this process serves no live streams"))
	}
	st, err := e.relay.OpenWorkspace(ctx, workspaceID, lastEventID)
	if err != nil {
		return nil, err
	}
	return st, nil
}
