package memindex

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
)

// Reasons an index is not cached; LoadWait returns them wrapped.
var (
	// ErrTooLarge means the entry alone exceeds the cache's budget. The
	// cache remembers it for that key and version and loads it no more.
	ErrTooLarge = errors.New("memindex: index larger than the cache budget")
	// ErrStale means a newer version is cached or required, or the key was
	// invalidated while the index was loading.
	ErrStale = errors.New("memindex: stale index version")
)

// Sizer is implemented by cache values that know their resident size; the
// cache then charges Index.Bytes() + Value.Bytes() against its budget, so a
// value holding the chunks' texts is counted too.
type Sizer interface {
	Bytes() int64
}

// Entry is one cached index with the caller's value. Entries are shared
// between readers: do not modify one.
type Entry[V any] struct {
	Index   *Index
	Value   V
	Version int64
}

// CacheStats is a snapshot of a cache's counters.
type CacheStats struct {
	Entries int
	// Bytes is the total charged for the entries; never above Budget.
	Bytes  int64
	Budget int64
	Hits   int64
	Misses int64
	// Evictions counts entries dropped to make room.
	Evictions int64
	// Invalidations counts entries dropped by Invalidate or InvalidateBelow.
	Invalidations int64
	// Refused counts indexes not stored: too large or stale.
	Refused    int64
	Loads      int64 // loads started
	LoadErrors int64 // loads whose function failed or panicked
	Loading    int   // loads in flight now
}

// noVersion marks an unset version in the key state.
const noVersion = math.MinInt64

// Cache holds one index per key (an agent id), bounded by the total of the
// entries' sizes, evicting the least recently used. Versions only move
// forward per key: a Put or load of a version below the highest stored or
// declared stale is refused. To that end a key keeps a small record (its
// floor version, some 50 bytes) after its entry is gone. Its methods are
// safe for concurrent use.
type Cache[V any] struct {
	budget int64

	mu      sync.Mutex
	keys    map[string]*keyState[V] // keys with an entry or a load in flight
	memo    map[string]keyMemo      // what idle keys must remember
	lru     keyState[V]             // sentinel of the LRU ring of keys with an entry
	entries int
	bytes   int64
	counts  CacheStats
}

type keyState[V any] struct {
	key        string
	entry      *Entry[V]
	size       int64
	prev, next *keyState[V]
	keyMemo
	// epoch counts Invalidate calls; a load started in an earlier epoch
	// read data that the invalidation declared old.
	epoch uint64
	loads []*loadCall[V]
}

// keyMemo is what a key keeps once it has neither entry nor load: a few
// bytes per key so versions never go backwards and an over-budget index is
// not rebuilt on every request.
type keyMemo struct {
	floor    int64 // lowest acceptable version, or noVersion
	tooLarge int64 // highest version refused for its size, or noVersion
}

type loadCall[V any] struct {
	version int64
	epoch   uint64
	done    chan struct{}
	entry   *Entry[V] // set before done is closed
	err     error
}

// NewCache returns a cache that keeps at most budget bytes of indexes (as
// told by Index.Bytes, plus Value.Bytes when the value is a Sizer). A
// budget of 0 or less caches nothing.
func NewCache[V any](budget int64) *Cache[V] {
	c := &Cache[V]{
		budget: budget,
		keys:   make(map[string]*keyState[V]),
		memo:   make(map[string]keyMemo),
	}
	c.lru.next, c.lru.prev = &c.lru, &c.lru
	return c
}

// Get returns key's entry, marking it recently used.
func (c *Cache[V]) Get(key string) (*Entry[V], bool) {
	return c.GetAtLeast(key, math.MinInt64)
}

// GetAtLeast returns key's entry if its version is at least version, marking
// it recently used; an older entry counts as a miss (and stays, for callers
// that accept it, until a newer version replaces it).
func (c *Cache[V]) GetAtLeast(key string, version int64) (*Entry[V], bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.keys[key]
	if st == nil || st.entry == nil || st.entry.Version < version {
		c.counts.Misses++
		return nil, false
	}
	c.counts.Hits++
	c.touch(st)
	return st.entry, true
}

// Put stores ix and v as key's entry at version, evicting the least
// recently used entries as needed. It returns false, storing nothing, when
// ix is nil, when the entry alone is larger than the budget, or when
// version is below key's current or invalidated version. An equal version
// replaces the entry. Only Load and LoadWait can tell that an Invalidate
// came while the index was being read; prefer them.
func (c *Cache[V]) Put(key string, version int64, ix *Index, v V) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state(key)
	err := c.put(st, version, ix, v)
	c.release(st)
	return err == nil
}

// Invalidate drops key's entry, for when another pod re-indexed it. Loads
// of key in flight will not store their result: they read the old data.
func (c *Cache[V]) Invalidate(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.keys[key]
	if st == nil {
		return // no entry, no load: the next load reads fresh data
	}
	st.epoch++
	if c.drop(st) {
		c.counts.Invalidations++
	}
	c.release(st)
}

// InvalidateBelow declares every version of key below version stale: an
// older entry is dropped, and older Puts and loads in flight are refused.
// An entry at version or above stays. Use it when the invalidation message
// carries the new version. For a key this cache holds nothing about, there
// is nothing to record: any load started afterwards reads the new data.
func (c *Cache[V]) InvalidateBelow(key string, version int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.keys[key]
	if st == nil {
		if m, ok := c.memo[key]; ok && m.floor < version {
			m.floor = version
			c.memo[key] = m
		}
		return
	}
	if st.floor < version {
		st.floor = version
	}
	if st.entry != nil && st.entry.Version < version && c.drop(st) {
		c.counts.Invalidations++
	}
	c.release(st)
}

// Load starts load in the background unless key already has an entry of at
// least version, a load of at least version is in flight, or version is
// known stale or too large. It returns at once, reporting whether it
// started a load: the caller serves the current request some other way. The
// result is stored as by Put, unless key was invalidated meanwhile.
//
// load runs after the request that asked for it is over, so it must not
// use that request's context. A panic in load is recovered and counted as
// a load error.
func (c *Cache[V]) Load(key string, version int64, load func() (*Index, V, error)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := c.state(key)
	defer c.release(st)
	if st.entry != nil && st.entry.Version >= version {
		return false
	}
	if c.refusal(st, version) != nil || st.inFlight(version) != nil {
		return false
	}
	c.start(st, version, load)
	return true
}

// LoadWait returns key's entry if it has one of at least version;
// otherwise it joins the load in flight for at least version or starts
// one, and waits for it or for ctx. If ctx ends first the load goes on for
// the others and ctx's error is returned. It returns an error wrapping
// ErrTooLarge or ErrStale when the index is not to be cached, or load's own
// error.
func (c *Cache[V]) LoadWait(ctx context.Context, key string, version int64, load func() (*Index, V, error)) (*Entry[V], error) {
	c.mu.Lock()
	st := c.state(key)
	if st.entry != nil && st.entry.Version >= version {
		c.counts.Hits++
		c.touch(st)
		e := st.entry
		c.mu.Unlock()
		return e, nil
	}
	c.counts.Misses++
	if err := c.refusal(st, version); err != nil {
		c.release(st)
		c.mu.Unlock()
		return nil, err
	}
	call := st.inFlight(version)
	if call == nil {
		call = c.start(st, version, load)
	}
	c.mu.Unlock()

	select {
	case <-call.done:
		return call.entry, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Stats returns a snapshot of the cache's counters.
func (c *Cache[V]) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.counts
	s.Bytes = c.bytes
	s.Budget = c.budget
	s.Entries = c.entries
	return s
}

// start registers a load and runs it in its own goroutine. c.mu is held.
func (c *Cache[V]) start(st *keyState[V], version int64, load func() (*Index, V, error)) *loadCall[V] {
	call := &loadCall[V]{version: version, epoch: st.epoch, done: make(chan struct{})}
	st.loads = append(st.loads, call)
	c.counts.Loads++
	c.counts.Loading++
	go c.run(st.key, call, load)
	return call
}

func (c *Cache[V]) run(key string, call *loadCall[V], load func() (*Index, V, error)) {
	ix, v, err := safeLoad(load)

	c.mu.Lock()
	// The call in flight kept the key's state alive.
	st := c.keys[key]
	c.counts.Loading--
	for i, l := range st.loads {
		if l == call {
			st.loads = append(st.loads[:i], st.loads[i+1:]...)
			break
		}
	}
	switch {
	case err != nil:
		c.counts.LoadErrors++
	case call.epoch != st.epoch:
		c.counts.Refused++
		err = fmt.Errorf("key %q invalidated during load: %w", key, ErrStale)
	default:
		err = c.put(st, call.version, ix, v)
	}
	if err == nil {
		call.entry = st.entry
	}
	call.err = err
	c.release(st)
	c.mu.Unlock()
	close(call.done)
}

func safeLoad[V any](load func() (*Index, V, error)) (ix *Index, v V, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("memindex: load panicked: %v", r)
		}
	}()
	ix, v, err = load()
	if err == nil && ix == nil {
		err = errors.New("memindex: load returned no index")
	}
	return ix, v, err
}

// put stores an entry. c.mu is held.
func (c *Cache[V]) put(st *keyState[V], version int64, ix *Index, v V) error {
	if ix == nil {
		c.counts.Refused++
		return errors.New("memindex: nil index")
	}
	if err := c.refusal(st, version); err != nil {
		c.counts.Refused++
		return err
	}
	size := ix.Bytes()
	if s, ok := any(v).(Sizer); ok {
		size += s.Bytes()
	}
	if size > c.budget {
		c.counts.Refused++
		st.tooLarge = max(st.tooLarge, version)
		// Whatever older entry the key has is stale now.
		st.floor = max(st.floor, version)
		if c.drop(st) {
			c.counts.Invalidations++
		}
		return fmt.Errorf("key %q version %d: %d bytes over a budget of %d: %w",
			st.key, version, size, c.budget, ErrTooLarge)
	}
	c.drop(st)
	st.entry = &Entry[V]{Index: ix, Value: v, Version: version}
	st.size = size
	st.floor = version
	c.bytes += size
	c.entries++
	c.pushFront(st)
	for c.bytes > c.budget {
		victim := c.lru.prev // never st: it alone fits the budget
		c.drop(victim)
		c.counts.Evictions++
		c.release(victim)
	}
	return nil
}

// refusal tells why version of st cannot be stored, or nil. c.mu is held.
func (c *Cache[V]) refusal(st *keyState[V], version int64) error {
	if st.tooLarge != noVersion && version <= st.tooLarge {
		return fmt.Errorf("key %q version %d: %w", st.key, version, ErrTooLarge)
	}
	if version < st.floor {
		return fmt.Errorf("key %q version %d below %d: %w", st.key, version, st.floor, ErrStale)
	}
	return nil
}

// inFlight returns the load in flight of the highest version >= version
// that no Invalidate has made stale since it started.
func (st *keyState[V]) inFlight(version int64) *loadCall[V] {
	var best *loadCall[V]
	for _, l := range st.loads {
		if l.epoch == st.epoch && l.version >= version && (best == nil || l.version > best.version) {
			best = l
		}
	}
	return best
}

// state returns key's state, creating it from its memo. c.mu is held; pair
// with release.
func (c *Cache[V]) state(key string) *keyState[V] {
	if st := c.keys[key]; st != nil {
		return st
	}
	st := &keyState[V]{key: key, keyMemo: keyMemo{floor: noVersion, tooLarge: noVersion}}
	if m, ok := c.memo[key]; ok {
		st.keyMemo = m
		delete(c.memo, key)
	}
	c.keys[key] = st
	return st
}

// release forgets an idle key's state, keeping its memo. c.mu is held.
func (c *Cache[V]) release(st *keyState[V]) {
	if st.entry != nil || len(st.loads) > 0 || c.keys[st.key] != st {
		return
	}
	delete(c.keys, st.key)
	if st.floor != noVersion || st.tooLarge != noVersion {
		c.memo[st.key] = st.keyMemo
	}
}

// drop removes st's entry and reports whether it had one. c.mu is held.
func (c *Cache[V]) drop(st *keyState[V]) bool {
	if st.entry == nil {
		return false
	}
	c.unlink(st)
	c.bytes -= st.size
	c.entries--
	st.entry, st.size = nil, 0
	return true
}

func (c *Cache[V]) touch(st *keyState[V]) {
	c.unlink(st)
	c.pushFront(st)
}

func (c *Cache[V]) unlink(st *keyState[V]) {
	st.prev.next, st.next.prev = st.next, st.prev
	st.prev, st.next = nil, nil
}

func (c *Cache[V]) pushFront(st *keyState[V]) {
	st.prev, st.next = &c.lru, c.lru.next
	c.lru.next.prev = st
	c.lru.next = st
}
