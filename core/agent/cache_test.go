package agent

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

type countingLookups struct {
	agents map[string]domain.Agent // by slug
	calls  int
}

func (c *countingLookups) GetAgentBySlug(_ context.Context, _, slug string) (domain.Agent, error) {
	c.calls++
	if a, ok := c.agents[slug]; ok {
		return a, nil
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func (c *countingLookups) GetAgentByID(_ context.Context, _, id string) (domain.Agent, error) {
	c.calls++
	for _, a := range c.agents {
		if a.ID == id {
			return a, nil
		}
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func (c *countingLookups) FirstAgent(context.Context, string) (domain.Agent, error) {
	c.calls++
	return c.agents["support"], nil
}

type manualClock struct{ now time.Time }

func (m *manualClock) Now() time.Time { return m.now }

func TestCache(t *testing.T) {
	support := domain.Agent{ID: "agt_support", WorkspaceID: "ws_1", Slug: "support", Name: "v1"}
	sales := domain.Agent{ID: "agt_sales", WorkspaceID: "ws_1", Slug: "sales"}
	tests := []struct {
		name      string
		ttl       time.Duration
		steps     func(ctx context.Context, c *Cache, store *countingLookups, clock *manualClock)
		wantCalls int
		wantName  string
	}{
		{"fresh entries are reused", 5 * time.Second, func(ctx context.Context, c *Cache, _ *countingLookups, _ *manualClock) {
			for range 3 {
				_, _ = c.GetAgentBySlug(ctx, "ws_1", "support")
			}
		}, 1, "v1"},
		{"entries expire", 5 * time.Second, func(ctx context.Context, c *Cache, store *countingLookups, clock *manualClock) {
			_, _ = c.GetAgentBySlug(ctx, "ws_1", "support")
			store.agents["support"] = domain.Agent{ID: "agt_support", WorkspaceID: "ws_1", Slug: "support", Name: "v2"}
			clock.now = clock.now.Add(5 * time.Second)
		}, 2, "v2"},
		{"an invalidation drops the agent at once", time.Minute, func(ctx context.Context, c *Cache, store *countingLookups, _ *manualClock) {
			_, _ = c.GetAgentBySlug(ctx, "ws_1", "support")
			_, _ = c.GetAgentByID(ctx, "ws_1", "agt_support")
			_, _ = c.GetAgentBySlug(ctx, "ws_1", "sales")
			store.agents["support"] = domain.Agent{ID: "agt_support", WorkspaceID: "ws_1", Slug: "support", Name: "v2"}
			c.Invalidate("ws_1", "agt_support")
			_, _ = c.GetAgentBySlug(ctx, "ws_1", "sales") // still cached
			_, _ = c.GetAgentByID(ctx, "ws_1", "agt_support")
		}, 5, "v2"},
		{"misses are not cached", time.Minute, func(ctx context.Context, c *Cache, store *countingLookups, _ *manualClock) {
			if _, err := c.GetAgentBySlug(ctx, "ws_1", "new"); !errors.Is(err, domain.ErrNotFound) {
				panic(err)
			}
			store.agents["new"] = domain.Agent{ID: "agt_new", Slug: "new"}
			if _, err := c.GetAgentBySlug(ctx, "ws_1", "new"); err != nil {
				panic(err)
			}
		}, 3, "v1"},
		{"a ttl of 0 disables the cache", 0, func(ctx context.Context, c *Cache, _ *countingLookups, _ *manualClock) {
			_, _ = c.FirstAgent(ctx, "ws_1")
			_, _ = c.FirstAgent(ctx, "ws_1")
		}, 3, "v1"},
		{"clear drops everything", time.Minute, func(ctx context.Context, c *Cache, _ *countingLookups, _ *manualClock) {
			_, _ = c.FirstAgent(ctx, "ws_1")
			c.Clear()
		}, 2, "v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &countingLookups{agents: map[string]domain.Agent{"support": support, "sales": sales}}
			clock := &manualClock{now: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)}
			c := NewCache(store, tt.ttl, clock)
			tt.steps(t.Context(), c, store, clock)
			got, err := c.GetAgentBySlug(t.Context(), "ws_1", "support")
			if err != nil || got.Name != tt.wantName {
				t.Fatalf("support = %q, %v; want %q", got.Name, err, tt.wantName)
			}
			if store.calls != tt.wantCalls {
				t.Fatalf("store calls = %d, want %d", store.calls, tt.wantCalls)
			}
		})
	}
}

// widgetLookups is the store side of widget addresses, counting reads.
type widgetLookups struct {
	bySlug map[string]domain.Agent
	calls  int
}

func (w *widgetLookups) GetAgentByWidgetSlug(_ context.Context, slug string) (domain.Agent, error) {
	w.calls++
	if a, ok := w.bySlug[slug]; ok {
		return a, nil
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func (w *widgetLookups) GetAgentByGlobalID(_ context.Context, id string) (domain.Agent, error) {
	w.calls++
	for _, a := range w.bySlug {
		if a.ID == id {
			return a, nil
		}
	}
	return domain.Agent{}, domain.NotFound("agent")
}

func TestWidgetLookups(t *testing.T) {
	support := domain.Agent{ID: "agt_support", WorkspaceID: "ws_1", Slug: "support", WidgetSlug: "support", Name: "v1"}
	tests := []struct {
		name      string
		steps     func(ctx context.Context, c *Cache, w *WidgetLookups, store *widgetLookups)
		wantCalls int
		wantName  string
		wantErr   error
	}{
		{"fresh entries are reused", func(ctx context.Context, _ *Cache, w *WidgetLookups, _ *widgetLookups) {
			_, _ = w.GetAgentByWidgetSlug(ctx, "support")
			_, _ = w.GetAgentByWidgetSlug(ctx, "support")
		}, 1, "v1", nil},
		{"an invalidation of the agent's workspace drops its address", func(ctx context.Context, c *Cache, w *WidgetLookups, store *widgetLookups) {
			_, _ = w.GetAgentByWidgetSlug(ctx, "support")
			_, _ = w.GetAgentByGlobalID(ctx, "agt_support")
			store.bySlug["support"] = domain.Agent{ID: "agt_support", WorkspaceID: "ws_1", Slug: "support", WidgetSlug: "support", Name: "v2"}
			c.Invalidate("ws_1", "agt_support")
		}, 3, "v2", nil},
		{"another workspace's invalidation keeps it", func(ctx context.Context, c *Cache, w *WidgetLookups, _ *widgetLookups) {
			_, _ = w.GetAgentByWidgetSlug(ctx, "support")
			c.Invalidate("ws_2", "")
		}, 1, "v1", nil},
		{"a deleted agent's address is freed at once", func(ctx context.Context, c *Cache, w *WidgetLookups, store *widgetLookups) {
			_, _ = w.GetAgentByWidgetSlug(ctx, "support")
			delete(store.bySlug, "support")
			c.Invalidate("ws_1", "agt_support")
		}, 2, "", domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &widgetLookups{bySlug: map[string]domain.Agent{"support": support}}
			c := NewCache(&countingLookups{}, time.Minute, &manualClock{now: time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)})
			w := c.Widgets(store)
			tt.steps(t.Context(), c, w, store)
			got, err := w.GetAgentByWidgetSlug(t.Context(), "support")
			if !errors.Is(err, tt.wantErr) || got.Name != tt.wantName {
				t.Fatalf("support = %q, %v; want %q, %v", got.Name, err, tt.wantName, tt.wantErr)
			}
			if store.calls != tt.wantCalls {
				t.Fatalf("store calls = %d, want %d", store.calls, tt.wantCalls)
			}
		})
	}
}
