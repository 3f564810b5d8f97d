package workspace

import (
	"sync"
	"time"
)

// maxAuthCacheEntries bounds the cache; one entry per active API key.
const maxAuthCacheEntries = 10_000

// touchEvery is how often an API key's lastUsedAt is written while it is in use.
const touchEvery = time.Minute

// authCache remembers successful API-key authentications for a short TTL, so
// a busy key costs no database round trip per request. Only successes are
// cached, so a new key works at once. Changes made through this process
// (revocation, plan, add-ons) drop the workspace's entries at once; changes
// made elsewhere (another pod, the admin CLI) take effect within the TTL.
type authCache struct {
	ttl     time.Duration
	mu      sync.Mutex
	entries map[string]authEntry // by key hash
}

type authEntry struct {
	principal Principal
	expires   time.Time
	touched   time.Time
}

func newAuthCache(ttl time.Duration) *authCache {
	return &authCache{ttl: ttl, entries: make(map[string]authEntry)}
}

func (c *authCache) get(hash string, now time.Time) (authEntry, bool) {
	if c.ttl <= 0 {
		return authEntry{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[hash]
	if !ok || !now.Before(e.expires) {
		return authEntry{}, false
	}
	return e, true
}

func (c *authCache) put(hash string, p Principal, now, touched time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= maxAuthCacheEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < maxAuthCacheEntries {
				break
			}
			delete(c.entries, k) // map order is random: a fair enough eviction
		}
	}
	c.entries[hash] = authEntry{principal: p, expires: now.Add(c.ttl), touched: touched}
}

// markTouched records that lastUsedAt was written at t.
func (c *authCache) markTouched(hash string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[hash]; ok {
		e.touched = t
		c.entries[hash] = e
	}
}

// forgetWorkspace drops every entry of the workspace.
func (c *authCache) forgetWorkspace(workspaceID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.entries {
		if e.principal.Workspace.ID == workspaceID {
			delete(c.entries, k)
		}
	}
}

// clear drops every entry.
func (c *authCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.entries)
}
