package memindex

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// smallIndex returns an index over n copies of one document: equal n give
// equal Bytes(), larger n larger ones.
func smallIndex(t testing.TB, n int) *Index {
	t.Helper()
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{Title: "Refunds", Text: "How to get a refund for an order", Vector: []float32{1, 0, 0, 0}}
	}
	return mustBuild(t, docs, 4)
}

// loaderOf returns a load function giving ix and counting its calls.
func loaderOf(ix *Index, calls *atomic.Int64) func() (*Index, string, error) {
	return func() (*Index, string, error) {
		calls.Add(1)
		return ix, "value", nil
	}
}

// noLoad fails the test if a load it was not meant to start runs.
func noLoad(t *testing.T) func() (*Index, string, error) {
	return func() (*Index, string, error) {
		t.Error("unexpected load")
		return nil, "", errors.New("unexpected load")
	}
}

func TestCacheGetPut(t *testing.T) {
	c := NewCache[string](1 << 20)
	if _, ok := c.Get("a"); ok {
		t.Fatal("hit on an empty cache")
	}
	ix := smallIndex(t, 2)
	if !c.Put("a", 1, ix, "v1") {
		t.Fatal("Put refused")
	}
	e, ok := c.Get("a")
	if !ok || e.Index != ix || e.Value != "v1" || e.Version != 1 {
		t.Fatalf("Get = %+v, %v", e, ok)
	}
	if _, ok := c.GetAtLeast("a", 2); ok {
		t.Fatal("GetAtLeast(2) hit a version-1 entry")
	}
	if _, ok := c.GetAtLeast("a", 1); !ok {
		t.Fatal("GetAtLeast(1) missed a version-1 entry")
	}
	s := c.Stats()
	if s.Entries != 1 || s.Bytes != ix.Bytes() || s.Hits != 2 || s.Misses != 2 || s.Budget != 1<<20 {
		t.Fatalf("Stats = %+v", s)
	}
	if c.Put("a", 2, nil, "") {
		t.Fatal("Put of a nil index accepted")
	}
}

func TestCacheVersions(t *testing.T) {
	type step struct {
		op      string // put, inv, below
		version int64
		want    bool // put's result
	}
	tests := []struct {
		name  string
		steps []step
		final int64 // version cached at the end, if any
		none  bool  // no entry at the end
	}{
		{"older put refused", []step{{"put", 2, true}, {"put", 1, false}}, 2, false},
		{"equal version replaces", []step{{"put", 2, true}, {"put", 2, true}}, 2, false},
		{"newer put replaces", []step{{"put", 2, true}, {"put", 3, true}}, 3, false},
		{"invalidate drops, keeps the floor", []step{{"put", 2, true}, {"inv", 0, false}, {"put", 1, false}}, 0, true},
		{"same version after invalidate", []step{{"put", 2, true}, {"inv", 0, false}, {"put", 2, true}}, 2, false},
		{"invalidate below raises the floor", []step{{"put", 2, true}, {"below", 5, false}, {"put", 4, false}, {"put", 5, true}}, 5, false},
		{"invalidate below keeps a current entry", []step{{"put", 5, true}, {"below", 5, false}}, 5, false},
		{"invalidate below drops an older entry", []step{{"put", 4, true}, {"below", 5, false}}, 0, true},
		{"invalidate of an unknown key", []step{{"inv", 0, false}, {"below", 9, false}, {"put", 1, true}}, 1, false},
		{"negative and zero versions", []step{{"put", -5, true}, {"put", -7, false}, {"put", 0, true}}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache[string](1 << 20)
			ix := smallIndex(t, 1)
			for i, s := range tt.steps {
				switch s.op {
				case "put":
					if got := c.Put("k", s.version, ix, ""); got != s.want {
						t.Fatalf("step %d: Put(%d) = %v, want %v", i, s.version, got, s.want)
					}
				case "inv":
					c.Invalidate("k")
				case "below":
					c.InvalidateBelow("k", s.version)
				}
			}
			e, ok := c.Get("k")
			switch {
			case tt.none && ok:
				t.Fatalf("entry %+v left, want none", e)
			case !tt.none && (!ok || e.Version != tt.final):
				t.Fatalf("Get = %+v, %v; want version %d", e, ok, tt.final)
			}
		})
	}
}

func TestCacheLRU(t *testing.T) {
	size := smallIndex(t, 3).Bytes()
	c := NewCache[string](size*2 + size/2)
	for _, k := range []string{"a", "b"} {
		if !c.Put(k, 1, smallIndex(t, 3), k) {
			t.Fatalf("Put(%s) refused", k)
		}
	}
	c.Get("a") // b is now the least recently used
	if !c.Put("c", 1, smallIndex(t, 3), "c") {
		t.Fatal("Put(c) refused")
	}
	for k, want := range map[string]bool{"a": true, "b": false, "c": true} {
		if _, ok := c.Get(k); ok != want {
			t.Errorf("Get(%s) hit = %v, want %v", k, ok, want)
		}
	}
	s := c.Stats()
	if s.Entries != 2 || s.Bytes != 2*size || s.Evictions != 1 {
		t.Fatalf("Stats = %+v, want 2 entries of %d bytes, 1 eviction", s, size)
	}
	// A bigger entry evicts as many as it needs, oldest first.
	big := smallIndex(t, 200)
	c2 := NewCache[string](big.Bytes() + size)
	for _, k := range []string{"x", "y", "z"} {
		c2.Put(k, 1, smallIndex(t, 3), k)
	}
	if !c2.Put("big", 1, big, "") {
		t.Fatal("Put(big) refused")
	}
	if s := c2.Stats(); s.Bytes > s.Budget || s.Entries != 2 {
		t.Fatalf("after the big entry: %+v", s)
	}
	if _, ok := c2.Get("z"); !ok {
		t.Fatal("the most recent small entry was evicted")
	}
}

func TestCacheRefusesTooLarge(t *testing.T) {
	ix := smallIndex(t, 50)
	c := NewCache[string](ix.Bytes() - 1)
	if c.Put("a", 1, ix, "") {
		t.Fatal("an entry over the whole budget was accepted")
	}
	if s := c.Stats(); s.Entries != 0 || s.Bytes != 0 || s.Refused != 1 {
		t.Fatalf("Stats = %+v", s)
	}
	// A too-large newer version makes the older entry stale: it goes.
	if !c.Put("b", 1, smallIndex(t, 1), "") {
		t.Fatal("small Put refused")
	}
	if c.Put("b", 2, ix, "") {
		t.Fatal("too-large Put accepted")
	}
	if _, ok := c.Get("b"); ok {
		t.Fatal("the entry older than a too-large version is still served")
	}
	if c.Put("b", 1, smallIndex(t, 1), "") {
		t.Fatal("version 1 accepted after version 2 was seen")
	}
	for _, budget := range []int64{0, -1} {
		if NewCache[string](budget).Put("a", 1, smallIndex(t, 1), "") {
			t.Fatalf("budget %d cached an entry", budget)
		}
	}
}

// sized is a cache value that reports its own size.
type sized int64

func (s sized) Bytes() int64 { return int64(s) }

func TestCacheChargesSizerValues(t *testing.T) {
	ix := smallIndex(t, 2)
	c := NewCache[sized](ix.Bytes() + 100)
	if !c.Put("a", 1, ix, 100) {
		t.Fatal("Put within budget refused")
	}
	if got := c.Stats().Bytes; got != ix.Bytes()+100 {
		t.Fatalf("Bytes = %d, want index + value = %d", got, ix.Bytes()+100)
	}
	if c.Put("b", 1, ix, 101) {
		t.Fatal("Put of index + value over the budget accepted")
	}
}

func TestCacheFloorSurvivesEviction(t *testing.T) {
	size := smallIndex(t, 1).Bytes()
	c := NewCache[string](size)
	c.Put("a", 5, smallIndex(t, 1), "")
	c.Put("b", 1, smallIndex(t, 1), "") // evicts a
	if _, ok := c.Get("a"); ok {
		t.Fatal("a not evicted")
	}
	if c.Put("a", 4, smallIndex(t, 1), "") {
		t.Fatal("version 4 of a accepted after version 5 was cached")
	}
	if !c.Put("a", 5, smallIndex(t, 1), "") {
		t.Fatal("version 5 of a refused")
	}
}

func TestCacheSingleFlight(t *testing.T) {
	const callers = 100
	ix := smallIndex(t, 3)
	t.Run("LoadWait", func(t *testing.T) {
		c := NewCache[string](1 << 20)
		var calls atomic.Int64
		release := make(chan struct{})
		load := func() (*Index, string, error) {
			calls.Add(1)
			<-release
			return ix, "v", nil
		}
		var wg sync.WaitGroup
		entries := make([]*Entry[string], callers)
		errs := make([]error, callers)
		for i := range callers {
			wg.Go(func() { entries[i], errs[i] = c.LoadWait(context.Background(), "agent", 7, load) })
		}
		time.Sleep(20 * time.Millisecond) // let most callers join the flight
		close(release)
		wg.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("load ran %d times for %d callers, want 1", n, callers)
		}
		for i := range callers {
			if errs[i] != nil || entries[i] == nil || entries[i].Index != ix || entries[i].Version != 7 {
				t.Fatalf("caller %d: %+v, %v", i, entries[i], errs[i])
			}
		}
		if s := c.Stats(); s.Loads != 1 || s.Hits+s.Misses != callers {
			t.Fatalf("Stats = %+v", s)
		}
	})
	t.Run("Load", func(t *testing.T) {
		c := NewCache[string](1 << 20)
		var calls, started atomic.Int64
		release := make(chan struct{})
		load := func() (*Index, string, error) {
			calls.Add(1)
			<-release
			return ix, "v", nil
		}
		var wg sync.WaitGroup
		for range callers {
			wg.Go(func() {
				if c.Load("agent", 7, load) {
					started.Add(1)
				}
			})
		}
		wg.Wait() // every Load returned while the load was still blocked
		close(release)
		if _, err := c.LoadWait(context.Background(), "agent", 7, noLoad(t)); err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 1 || started.Load() != 1 {
			t.Fatalf("load ran %d times, Load reported %d starts; want 1 and 1", calls.Load(), started.Load())
		}
		if c.Load("agent", 7, noLoad(t)) || c.Load("agent", 6, noLoad(t)) {
			t.Fatal("Load started although the version is cached")
		}
	})
}

func TestCacheInvalidateDuringLoad(t *testing.T) {
	tests := []struct {
		name       string
		invalidate func(c *Cache[string])
	}{
		{"Invalidate", func(c *Cache[string]) { c.Invalidate("agent") }},
		{"InvalidateBelow a newer version", func(c *Cache[string]) { c.InvalidateBelow("agent", 2) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache[string](1 << 20)
			started, release := make(chan struct{}), make(chan struct{})
			stale := smallIndex(t, 1)
			type result struct {
				e   *Entry[string]
				err error
			}
			done := make(chan result)
			go func() {
				e, err := c.LoadWait(context.Background(), "agent", 1, func() (*Index, string, error) {
					close(started)
					<-release
					return stale, "old data", nil
				})
				done <- result{e, err}
			}()
			<-started
			tt.invalidate(c) // another pod re-indexed while we were reading
			close(release)
			r := <-done
			if !errors.Is(r.err, ErrStale) || r.e != nil {
				t.Fatalf("LoadWait = %+v, %v; want ErrStale", r.e, r.err)
			}
			if e, ok := c.Get("agent"); ok {
				t.Fatalf("the stale load was stored: %+v", e)
			}
			if s := c.Stats(); s.Loading != 0 {
				t.Fatalf("%d loads in flight after LoadWait returned", s.Loading)
			}
			// The next load reads fresh data and is stored.
			fresh := smallIndex(t, 2)
			e, err := c.LoadWait(context.Background(), "agent", 2, func() (*Index, string, error) { return fresh, "new", nil })
			if err != nil || e.Index != fresh {
				t.Fatalf("fresh LoadWait = %+v, %v", e, err)
			}
			if s := c.Stats(); s.Refused != 1 || s.Entries != 1 {
				t.Fatalf("Stats = %+v", s)
			}
		})
	}
}

func TestCacheLoadFailures(t *testing.T) {
	boom := errors.New("database down")
	tests := []struct {
		name    string
		load    func() (*Index, string, error)
		wantErr func(error) bool
	}{
		{"error", func() (*Index, string, error) { return nil, "", boom }, func(err error) bool { return errors.Is(err, boom) }},
		{"panic", func() (*Index, string, error) { panic("bug") }, func(err error) bool { return err != nil && strings.Contains(err.Error(), "panicked: bug") }},
		{"nil index", func() (*Index, string, error) { return nil, "", nil }, func(err error) bool { return err != nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache[string](1 << 20)
			e, err := c.LoadWait(context.Background(), "a", 1, tt.load)
			if e != nil || !tt.wantErr(err) {
				t.Fatalf("LoadWait = %+v, %v", e, err)
			}
			if s := c.Stats(); s.LoadErrors != 1 || s.Entries != 0 {
				t.Fatalf("Stats = %+v", s)
			}
			// A failure is not remembered: the next request tries again.
			var calls atomic.Int64
			if _, err := c.LoadWait(context.Background(), "a", 1, loaderOf(smallIndex(t, 1), &calls)); err != nil || calls.Load() != 1 {
				t.Fatalf("retry: %v after %d calls", err, calls.Load())
			}
		})
	}
}

func TestCacheTooLargeIsRemembered(t *testing.T) {
	ix := smallIndex(t, 20)
	c := NewCache[string](ix.Bytes() / 2)
	var calls atomic.Int64
	for range 3 {
		if _, err := c.LoadWait(context.Background(), "a", 1, loaderOf(ix, &calls)); !errors.Is(err, ErrTooLarge) {
			t.Fatalf("LoadWait = %v, want ErrTooLarge", err)
		}
	}
	if c.Load("a", 1, loaderOf(ix, &calls)) {
		t.Fatal("Load started for a version known too large")
	}
	if calls.Load() != 1 {
		t.Fatalf("the too-large index was built %d times, want 1", calls.Load())
	}
	// A new version may be smaller: it is tried.
	if _, err := c.LoadWait(context.Background(), "a", 2, loaderOf(smallIndex(t, 1), &calls)); err != nil || calls.Load() != 2 {
		t.Fatalf("version 2: %v, %d calls", err, calls.Load())
	}
}

func TestCacheLoadWaitContext(t *testing.T) {
	c := NewCache[string](1 << 20)
	release := make(chan struct{})
	ix := smallIndex(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	_, err := c.LoadWait(ctx, "a", 1, func() (*Index, string, error) { <-release; return ix, "", nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LoadWait = %v, want the context's error", err)
	}
	close(release)
	// The load went on without the caller and is stored.
	e, err := c.LoadWait(context.Background(), "a", 1, noLoad(t))
	if err != nil || e.Index != ix {
		t.Fatalf("after the load: %+v, %v", e, err)
	}
}

func TestCacheJoinsNewerLoad(t *testing.T) {
	c := NewCache[string](1 << 20)
	release := make(chan struct{})
	ix := smallIndex(t, 1)
	if !c.Load("a", 3, func() (*Index, string, error) { <-release; return ix, "", nil }) {
		t.Fatal("Load did not start")
	}
	if c.Load("a", 2, noLoad(t)) {
		t.Fatal("Load of an older version started while a newer one is in flight")
	}
	done := make(chan error)
	go func() {
		e, err := c.LoadWait(context.Background(), "a", 2, noLoad(t))
		if err == nil && e.Version != 3 {
			err = fmt.Errorf("joined version %d", e.Version)
		}
		done <- err
	}()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A newer version than the one in flight starts its own load.
	var calls atomic.Int64
	if !c.Load("a", 4, loaderOf(smallIndex(t, 2), &calls)) {
		t.Fatal("Load of a newer version did not start")
	}
	if _, err := c.LoadWait(context.Background(), "a", 4, noLoad(t)); err != nil {
		t.Fatal(err)
	}
	if c.Load("a", 4, noLoad(t)) {
		t.Fatal("Load started for a cached version")
	}
}

// TestCacheConcurrent mixes every operation from many goroutines; run
// under -race. The byte accounting must match the entries at the end.
func TestCacheConcurrent(t *testing.T) {
	indexes := []*Index{smallIndex(t, 1), smallIndex(t, 4), smallIndex(t, 16)}
	c := NewCache[string](indexes[2].Bytes() * 3)
	keys := []string{"a", "b", "c", "d", "e", "f"}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 400 {
				key := keys[rng.IntN(len(keys))]
				ix := indexes[rng.IntN(len(indexes))]
				version := int64(rng.IntN(5))
				load := func() (*Index, string, error) { return ix, key, nil }
				switch rng.IntN(7) {
				case 0:
					c.Put(key, version, ix, key)
				case 1:
					c.Invalidate(key)
				case 2:
					c.InvalidateBelow(key, version)
				case 3:
					c.Load(key, version, load)
				case 4:
					ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
					c.LoadWait(ctx, key, version, load)
					cancel()
				case 5:
					if e, ok := c.GetAtLeast(key, version); ok && (e.Version < version || e.Value != key) {
						t.Errorf("GetAtLeast(%s, %d) = %+v", key, version, e)
					}
				default:
					c.Stats()
				}
			}
		})
	}
	wg.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Loading > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	s := c.Stats()
	if s.Loading != 0 {
		t.Fatalf("%d loads still in flight", s.Loading)
	}
	var sum int64
	entries := 0
	for _, k := range keys {
		if e, ok := c.Get(k); ok {
			entries++
			sum += e.Index.Bytes()
		}
	}
	if s.Bytes != sum || s.Entries != entries || s.Bytes > s.Budget {
		t.Fatalf("Stats = %+v; entries hold %d bytes in %d entries", s, sum, entries)
	}
}

// TestCacheInvalidateStartsFreshLoad: a request after an invalidation must
// not join the load that was reading the old data.
func TestCacheInvalidateStartsFreshLoad(t *testing.T) {
	c := NewCache[string](1 << 20)
	release := make(chan struct{})
	old, fresh := smallIndex(t, 1), smallIndex(t, 2)
	if !c.Load("a", 1, func() (*Index, string, error) { <-release; return old, "old", nil }) {
		t.Fatal("first Load did not start")
	}
	c.Invalidate("a")
	if !c.Load("a", 1, func() (*Index, string, error) { return fresh, "fresh", nil }) {
		t.Fatal("Load after Invalidate joined the stale load instead of starting")
	}
	e, err := c.LoadWait(context.Background(), "a", 1, noLoad(t))
	if err != nil || e.Index != fresh {
		t.Fatalf("LoadWait = %+v, %v; want the fresh index", e, err)
	}
	close(release) // the stale load ends now and must not replace it
	deadline := time.Now().Add(5 * time.Second)
	for c.Stats().Loading > 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if e, ok := c.Get("a"); !ok || e.Index != fresh {
		t.Fatalf("after the stale load ended: %+v, %v", e, ok)
	}
}
