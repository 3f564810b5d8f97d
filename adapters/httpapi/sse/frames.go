package sse

import (
	"hash/maphash"
	"sync"

	"github.com/conciergehq/concierge/core/domain"
)

// Frames caches live events' rendered frames, so however many streams of
// the pod follow a session, each event is rendered once: the relay hands
// every local follower the same *domain.LiveEvent, which is the key. A
// miss just renders again, so the cache may forget at will: it is sharded
// by event (no lock shared by all sessions' events) and each shard keeps
// two generations of at most frameShardSize frames, the older dropped
// whole when the newer fills up. Followers write an event within their
// relay buffer of each other, far fewer events than a generation holds, so
// they find it; memory stays bounded whatever the traffic.
type Frames struct {
	seed   maphash.Seed
	shards [frameShards]frameShard
}

const (
	frameShards    = 32
	frameShardSize = 256
)

type frameShard struct {
	mu        sync.Mutex
	cur, prev map[*domain.LiveEvent][]byte
}

// NewFrames returns an empty cache.
func NewFrames() *Frames {
	return &Frames{seed: maphash.MakeSeed()}
}

// frame returns ev rendered by render (which must depend on the event
// alone), rendering it only when the cache does not hold it. A nil Frames
// renders every time.
func (f *Frames) frame(ev *domain.LiveEvent, render func(*domain.LiveEvent) []byte) []byte {
	if f == nil {
		return render(ev)
	}
	sh := &f.shards[maphash.Comparable(f.seed, ev)%frameShards]
	sh.mu.Lock()
	b, ok := sh.cur[ev]
	if !ok {
		if b, ok = sh.prev[ev]; ok {
			sh.put(ev, b)
		}
	}
	sh.mu.Unlock()
	if ok {
		return b
	}
	// Rendered outside the lock: two followers racing on a new event may
	// both render it, which costs a little work, never a wrong frame.
	b = render(ev)
	sh.mu.Lock()
	sh.put(ev, b)
	sh.mu.Unlock()
	return b
}

// put stores a frame in the newer generation, starting a new one when it
// is full.
func (sh *frameShard) put(ev *domain.LiveEvent, b []byte) {
	if len(sh.cur) >= frameShardSize {
		sh.prev, sh.cur = sh.cur, nil
	}
	if sh.cur == nil {
		sh.cur = make(map[*domain.LiveEvent][]byte, frameShardSize)
	}
	sh.cur[ev] = b
}
