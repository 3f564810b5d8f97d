package main

import (
	redisadapter "github.com/conciergehq/concierge/adapters/redis"
	"github.com/conciergehq/concierge/core/relay"
)

// startRelay builds a serving process's live relay: its hub (the pod's one
// Redis subscriber connection, fanned out to every live stream) and the
// relay use case over it. Close the hub at shutdown: live streams never end
// by themselves, and closing it ends them (their clients resume on another
// pod) so the drain of connections can finish.
func (s *system) startRelay() *redisadapter.Hub {
	hub := redisadapter.NewHub(s.redis, s.log.With("component", "relay"),
		redisadapter.HubOptions{Buffer: s.cfg.RelayBuffer, OutageLimit: s.cfg.RelayOutageLimit})
	s.relay = relay.NewService(relay.Deps{
		Feed: hub, Recent: redisadapter.NewEventLog(s.redis), Transcript: s.store,
		Conversations: s.store, Lifecycle: s.lifecycle, Clock: s.clock, Log: s.log,
	}, relay.Options{OutageLimit: s.cfg.RelayOutageLimit})
	return hub
}
