package agent

import (
	"context"
	"sync"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// maxCachedAgents bounds the cache; one entry per agent in use.
const maxCachedAgents = 10_000

var _ ports.AgentLookups = (*Cache)(nil)

// Cache remembers agent lookups for a short TTL, so a chat turn does not
// read its agent from PostgreSQL every time. Every pod drops an agent at
// once when any pod announces a change to it or its knowledge (Invalidate,
// called by the Redis listener); the TTL bounds staleness when an
// announcement is lost. Misses (unknown agents) are not cached, so a new
// agent answers at once.
type Cache struct {
	store ports.AgentLookups
	ttl   time.Duration
	clock ports.Clock

	mu      sync.Mutex
	entries map[cacheKey]cachedAgent
}

// cacheKey is a workspace and a slug; slug "" is the workspace's first
// agent, and "#" followed by an id is a lookup by id (slugs never hold '#').
// Widget addresses are service-wide: their keys have no workspace and a
// slug of "@" followed by the widget slug, or "#" and the id.
type cacheKey struct{ workspaceID, slug string }

type cachedAgent struct {
	agent   domain.Agent
	expires time.Time
}

// NewCache returns a cache over store; ttl <= 0 disables caching.
func NewCache(store ports.AgentLookups, ttl time.Duration, clock ports.Clock) *Cache {
	return &Cache{store: store, ttl: ttl, clock: clock, entries: make(map[cacheKey]cachedAgent)}
}

// GetAgentBySlug returns the agent, from the cache when fresh. Returns
// domain.ErrNotFound like the store.
func (c *Cache) GetAgentBySlug(ctx context.Context, workspaceID, slug string) (domain.Agent, error) {
	return c.lookup(ctx, cacheKey{workspaceID, slug}, func() (domain.Agent, error) {
		return c.store.GetAgentBySlug(ctx, workspaceID, slug)
	})
}

// GetAgentByID returns the agent, from the cache when fresh.
func (c *Cache) GetAgentByID(ctx context.Context, workspaceID, id string) (domain.Agent, error) {
	return c.lookup(ctx, cacheKey{workspaceID, "#" + id}, func() (domain.Agent, error) {
		return c.store.GetAgentByID(ctx, workspaceID, id)
	})
}

// FirstAgent returns the workspace's first agent, from the cache when fresh.
func (c *Cache) FirstAgent(ctx context.Context, workspaceID string) (domain.Agent, error) {
	return c.lookup(ctx, cacheKey{workspaceID, ""}, func() (domain.Agent, error) {
		return c.store.FirstAgent(ctx, workspaceID)
	})
}

func (c *Cache) lookup(_ context.Context, key cacheKey, read func() (domain.Agent, error)) (domain.Agent, error) {
	if c.ttl <= 0 {
		return read()
	}
	now := c.clock.Now()
	c.mu.Lock()
	e, ok := c.entries[key]
	c.mu.Unlock()
	if ok && now.Before(e.expires) {
		return e.agent, nil
	}
	a, err := read()
	if err != nil {
		return domain.Agent{}, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxCachedAgents {
		for k := range c.entries {
			delete(c.entries, k) // random order: a fair enough eviction
			if len(c.entries) < maxCachedAgents/2 {
				break
			}
		}
	}
	c.entries[key] = cachedAgent{agent: a, expires: now.Add(c.ttl)}
	return a, nil
}

// Invalidate drops every entry of the agent (by slug and as its workspace's
// first agent), or of the whole workspace when agentID is "". A first-agent
// entry of the workspace is dropped too, since a deleted agent may have been
// the first.
func (c *Cache) Invalidate(workspaceID, agentID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		ws := k.workspaceID
		if ws == "" {
			ws = e.agent.WorkspaceID // a widget address: the agent knows its workspace
		}
		if ws == workspaceID && (agentID == "" || e.agent.ID == agentID || k.slug == "") {
			delete(c.entries, k)
		}
	}
}

// Clear drops everything, for when announcements may have been lost.
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}

var _ ports.WidgetAgents = (*WidgetLookups)(nil)

// WidgetLookups finds agents by their public widget address through the
// cache: the widget page and its session endpoint are public hot paths.
// Entries share the cache's TTL, bound and invalidation, so an agent that
// is changed, unpublished or deleted is dropped at once on every pod (and a
// freed address is claimed afresh, since misses are not cached).
type WidgetLookups struct {
	cache *Cache
	store ports.WidgetAgents
}

// Widgets returns the cache's widget lookups over store.
func (c *Cache) Widgets(store ports.WidgetAgents) *WidgetLookups {
	return &WidgetLookups{cache: c, store: store}
}

// GetAgentByWidgetSlug returns the agent holding the widget slug, from the
// cache when fresh. Returns domain.ErrNotFound like the store.
func (w *WidgetLookups) GetAgentByWidgetSlug(ctx context.Context, slug string) (domain.Agent, error) {
	return w.cache.lookup(ctx, cacheKey{"", "@" + slug}, func() (domain.Agent, error) {
		return w.store.GetAgentByWidgetSlug(ctx, slug)
	})
}

// GetAgentByGlobalID returns the agent with the id, from the cache when
// fresh. Returns domain.ErrNotFound like the store.
func (w *WidgetLookups) GetAgentByGlobalID(ctx context.Context, id string) (domain.Agent, error) {
	return w.cache.lookup(ctx, cacheKey{"", "#" + id}, func() (domain.Agent, error) {
		return w.store.GetAgentByGlobalID(ctx, id)
	})
}
