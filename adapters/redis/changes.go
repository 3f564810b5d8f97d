package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// agentChangesChannel carries agent and knowledge changes to every pod. Pub/sub
// channels are global to a Redis server, whatever the database number.
const agentChangesChannel = "concierge:agents:changed"

// agentChange is the wire form of a change. Version 0 means the agent's
// configuration changed (or it was deleted); otherwise its knowledge did.
// Without an agent id, the workspace's own settings changed.
type agentChange struct {
	V           int    `json:"v"`
	WorkspaceID string `json:"workspaceId"`
	AgentID     string `json:"agentId"`
	Version     int64  `json:"knowledgeVersion,omitempty"`
}

// Changes announces agent and knowledge changes over Redis pub/sub and
// delivers other pods' announcements.
type Changes struct {
	client goredis.UniversalClient
	log    *slog.Logger
}

var (
	_ ports.KnowledgeNotifier = (*Changes)(nil)
	_ ports.WorkspaceNotifier = (*Changes)(nil)
)

// NewChanges returns a Changes over client.
func NewChanges(client goredis.UniversalClient, log *slog.Logger) *Changes {
	return &Changes{client: client, log: log}
}

// KnowledgeChanged publishes the change. Returns an error wrapping
// domain.ErrUnavailable when Redis cannot be reached.
func (c *Changes) KnowledgeChanged(ctx context.Context, change ports.KnowledgeChange) error {
	return c.publish(ctx, agentChange{V: wireVersion, WorkspaceID: change.WorkspaceID, AgentID: change.AgentID, Version: change.Version})
}

// AgentChanged publishes a configuration change.
func (c *Changes) AgentChanged(ctx context.Context, workspaceID, agentID string) error {
	return c.publish(ctx, agentChange{V: wireVersion, WorkspaceID: workspaceID, AgentID: agentID})
}

// WorkspaceChanged publishes a change of the workspace's own settings.
func (c *Changes) WorkspaceChanged(ctx context.Context, workspaceID string) error {
	return c.publish(ctx, agentChange{V: wireVersion, WorkspaceID: workspaceID})
}

func (c *Changes) publish(ctx context.Context, ch agentChange) error {
	payload, err := json.Marshal(ch)
	if err != nil {
		return fmt.Errorf("agent changes: encode: %w", err)
	}
	if err := c.client.Publish(ctx, agentChangesChannel, payload).Err(); err != nil {
		return fmt.Errorf("agent changes: publish: %w: %w", domain.ErrUnavailable, err)
	}
	return nil
}

// Listen calls onChange for every change announced by any pod (this one
// included) until ctx ends; agentID is "" when the workspace's own
// settings changed. The subscription is confirmed before Listen
// calls ready, so a test or a caller can publish after it without losing the
// message. When the connection drops, go-redis resubscribes; because
// messages sent meanwhile are lost, onResubscribe is called then, so the
// caller can drop everything it caches (versions are checked on every agent
// lookup anyway).
func (c *Changes) Listen(ctx context.Context, ready func(), onChange func(workspaceID, agentID string, knowledgeVersion int64), onResubscribe func()) error {
	for ctx.Err() == nil {
		err := c.listenOnce(ctx, ready, onChange)
		ready = nil
		if ctx.Err() != nil {
			return nil
		}
		c.log.WarnContext(ctx, "agent change subscription lost; resubscribing", "error", err)
		onResubscribe()
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

func (c *Changes) listenOnce(ctx context.Context, ready func(), onChange func(string, string, int64)) error {
	sub := c.client.Subscribe(ctx, agentChangesChannel)
	defer sub.Close()
	// Subscribe returns before the server confirms; Receive waits for it.
	if _, err := sub.Receive(ctx); err != nil {
		return err
	}
	if ready != nil {
		ready()
	}
	for {
		msg, err := sub.ReceiveMessage(ctx)
		if err != nil {
			return err
		}
		var ch agentChange
		if err := json.Unmarshal([]byte(msg.Payload), &ch); err != nil || ch.V != wireVersion || ch.WorkspaceID == "" {
			c.log.WarnContext(ctx, "ignoring a malformed agent change", "payload_bytes", len(msg.Payload))
			continue
		}
		onChange(ch.WorkspaceID, ch.AgentID, ch.Version)
	}
}
