package redis

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// HubOptions tune a Hub; zero fields take the defaults.
type HubOptions struct {
	// Buffer is how many events a follower may fall behind before it gets a
	// Gap instead (default 256). Small on purpose: a follower that cannot
	// keep up catches up from the log, and big buffers only hide it while
	// costing memory on every stream.
	Buffer int
	// ConfirmTimeout bounds how long Subscribe waits for Redis to confirm
	// a subscription (default 5 s).
	ConfirmTimeout time.Duration
	// HealthInterval is how long the connection may stay silent before the
	// hub pings it (default 15 s). Any ping of the hub unanswered for
	// ConfirmTimeout means the connection is dead (Redis hung, or the
	// network path to it is gone): it is replaced.
	HealthInterval time.Duration
	// OutageLimit is how long the hub keeps its followers while Redis
	// cannot be reached (default 30 s): they wait, and catch up when it is
	// back. Past it every subscription ends with an error wrapping
	// domain.ErrUnavailable, so its client resumes (with Last-Event-ID)
	// once Redis is back, instead of waiting on a stream that may stay
	// silent for long; until Redis answers again, Subscribe fails at once.
	OutageLimit time.Duration
	// Observer hears how the live feed goes (metrics); nil hears nothing.
	Observer HubObserver
}

// HubObserver hears the hub's live feed: how late each event arrived, and
// each follower taken off the feed (it fell behind its buffer and was sent
// to the log, or an outage over the limit ended it). Its methods must
// return at once: the hub's one reader calls them.
type HubObserver interface {
	// RelayLag reports the time from an event's entry in the session's
	// log (its id's timestamp, Redis' clock) to its arrival here.
	RelayLag(time.Duration)
	SubscriberCutOff()
}

type nopHubObserver struct{}

func (nopHubObserver) RelayLag(time.Duration) {}
func (nopHubObserver) SubscriberCutOff()      {}

func (o HubOptions) withDefaults() HubOptions {
	if o.Observer == nil {
		o.Observer = nopHubObserver{}
	}
	if o.Buffer <= 0 {
		o.Buffer = 256
	}
	if o.ConfirmTimeout <= 0 {
		o.ConfirmTimeout = 5 * time.Second
	}
	if o.HealthInterval <= 0 {
		o.HealthInterval = 15 * time.Second
	}
	if o.OutageLimit <= 0 {
		o.OutageLimit = 30 * time.Second
	}
	return o
}

// Hub is a pod's one subscriber connection to the session channels, fanned
// out in process to every local follower. A subscription per follower would
// cost a Redis connection each and, measured, a tenfold p99; here each
// channel is subscribed once, while it has followers, and each message is
// decoded once for all of them.
//
// go-redis resubscribes by itself after the connection drops, but what was
// published meanwhile is lost: the hub then tells the followers of every
// channel (a Gap event) once the new subscriptions are confirmed, and they
// catch up from the log. Followers wait through an outage of up to
// OutageLimit; a longer one ends their subscriptions.
//
// A follower that falls behind (its buffer is full, as when a publisher
// sends at once what it queued while Redis was away) is not cut off: it
// gets a Gap and catches up from the log too.
type Hub struct {
	log  *slog.Logger
	opts HubOptions
	ps   *goredis.PubSub

	mu       sync.Mutex
	channels map[string]*hubChannel
	// ops are the SUBSCRIBE, UNSUBSCRIBE and PING commands waiting for the
	// writer, in the order the state changed: a channel left and joined
	// again must be unsubscribed before it is subscribed.
	ops     []hubOp
	pingSeq uint64
	// resyncSeq is the ping whose answer ends a resync after a lost
	// connection; 0 when none is going on.
	resyncSeq uint64
	// unanswered are the pings written or queued and not answered yet,
	// oldest first: one left unanswered for ConfirmTimeout means the
	// connection is dead.
	unanswered []sentPing
	// downSince is when the hub lost Redis (the connection failed, or a
	// ping went unanswered); zero while it is connected.
	downSince time.Time
	closed    bool

	wake chan struct{}
	stop chan struct{}
	wg   sync.WaitGroup
}

var (
	_ ports.EventFeed     = (*Hub)(nil)
	_ ports.WorkspaceFeed = (*Hub)(nil)
)

// hubChannel is one subscribed channel and its local followers.
type hubChannel struct {
	name string
	// subs is replaced, never changed in place, so the reader can fan out
	// over a snapshot without holding the lock.
	subs []*hubSub
	// ready is closed once Redis confirmed the subscription.
	ready     chan struct{}
	confirmed bool
	// needPing is the ping whose answer proves the subscription active:
	// Redis answers commands of one connection in order.
	needPing uint64
	// stale marks a channel that was confirmed before the connection was
	// lost: its followers get a Gap once it is confirmed again.
	stale bool
}

type hubOpKind int

const (
	opSubscribe hubOpKind = iota
	opUnsubscribe
	opPing
)

type hubOp struct {
	kind    hubOpKind
	channel string
	seq     uint64
}

type sentPing struct {
	seq uint64
	at  time.Time
}

// pingPrefix marks the hub's own pings among the pongs.
const pingPrefix = "concierge-hub:"

// resyncRetry is how often a resync ping is repeated until answered: the
// first may have been written while Redis was still down.
const resyncRetry = 250 * time.Millisecond

// NewHub starts a hub on client. Close it at shutdown.
func NewHub(client goredis.UniversalClient, log *slog.Logger, opts HubOptions) *Hub {
	h := &Hub{
		log: log, opts: opts.withDefaults(),
		// No channels yet: go-redis connects on first use.
		ps:       client.Subscribe(context.Background()),
		channels: map[string]*hubChannel{},
		wake:     make(chan struct{}, 1),
		stop:     make(chan struct{}),
	}
	h.wg.Add(2)
	go h.write()
	go h.read()
	return h
}

// Subscribe follows a session: it returns once Redis confirmed the
// channel's subscription, so every event published from then on is
// delivered. Returns an error wrapping domain.ErrUnavailable at once while
// the hub has lost Redis, and if the confirmation takes longer than the
// confirmation timeout or ctx; ports.ErrFeedClosed after Close.
func (h *Hub) Subscribe(ctx context.Context, sessionID string) (ports.Subscription, error) {
	return h.subscribe(ctx, ChannelFor(sessionID))
}

// Watch follows a workspace's events (ports.WorkspaceFeed) on the same
// connection as the sessions: every message on the workspace's wake-up
// channel, and every lost connection, gives its followers a Gap marker, on
// which they read the workspace's log. Errors as Subscribe.
func (h *Hub) Watch(ctx context.Context, workspaceID string) (ports.Subscription, error) {
	return h.subscribe(ctx, WorkspaceChannelFor(workspaceID))
}

func (h *Hub) subscribe(ctx context.Context, name string) (ports.Subscription, error) {
	// One slot more than the buffer: it is kept for the Gap of a follower
	// that fell behind.
	sub := &hubSub{hub: h, buffer: h.opts.Buffer, events: make(chan *domain.LiveEvent, h.opts.Buffer+1), done: make(chan struct{})}
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ports.ErrFeedClosed
	}
	if !h.downSince.IsZero() {
		// Redis is known to be away: waiting for a confirmation would only
		// hold the client up.
		h.mu.Unlock()
		return nil, domain.Unavailable("redis subscribe", errors.New("Redis is unreachable"))
	}
	c := h.channels[name]
	if c == nil {
		c = &hubChannel{name: name, ready: make(chan struct{})}
		h.channels[name] = c
		h.queue(hubOp{kind: opSubscribe, channel: name})
		c.needPing = h.ping()
	}
	sub.channel = c
	c.subs = append(slices.Clip(c.subs), sub)
	ready := c.ready
	h.mu.Unlock()

	timer := time.NewTimer(h.opts.ConfirmTimeout)
	defer timer.Stop()
	select {
	case <-ready:
		return sub, nil
	case <-sub.done:
		return nil, sub.Err()
	case <-ctx.Done():
		sub.Close()
		return nil, domain.Unavailable("redis subscribe", ctx.Err())
	case <-timer.C:
		sub.Close()
		return nil, domain.Unavailable("redis subscribe", errors.New("subscription not confirmed in time"))
	}
}

// Followers is how many subscriptions (live streams of sessions and of
// workspaces) the hub feeds now.
func (h *Hub) Followers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, c := range h.channels {
		n += len(c.subs)
	}
	return n
}

// Close ends every subscription with ports.ErrFeedClosed and closes the
// connection.
func (h *Hub) Close() error {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil
	}
	h.closed = true
	channels := h.channels
	h.channels = map[string]*hubChannel{}
	h.mu.Unlock()
	for _, c := range channels {
		for _, s := range c.subs {
			s.end(ports.ErrFeedClosed)
		}
	}
	close(h.stop)
	err := h.ps.Close()
	h.wg.Wait()
	return err
}

// queue hands a command to the writer. Call with h.mu held.
func (h *Hub) queue(op hubOp) {
	h.ops = append(h.ops, op)
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// ping queues a ping and returns its number. Call with h.mu held.
func (h *Hub) ping() uint64 {
	h.pingSeq++
	h.queue(hubOp{kind: opPing, seq: h.pingSeq})
	h.unanswered = append(h.unanswered, sentPing{seq: h.pingSeq, at: time.Now()})
	return h.pingSeq
}

// write sends the queued commands in order. A command that fails (the
// connection is down) is not retried: go-redis resubscribes every channel
// when it reconnects, and the reader's resync pings confirm them.
func (h *Hub) write() {
	defer h.wg.Done()
	for {
		select {
		case <-h.wake:
		case <-h.stop:
			return
		}
		h.mu.Lock()
		ops := h.ops
		h.ops = nil
		h.mu.Unlock()
		for _, op := range ops {
			ctx, cancel := context.WithTimeout(context.Background(), h.opts.ConfirmTimeout)
			var err error
			switch op.kind {
			case opSubscribe:
				err = h.ps.Subscribe(ctx, op.channel)
			case opUnsubscribe:
				err = h.ps.Unsubscribe(ctx, op.channel)
			case opPing:
				err = h.ps.Ping(ctx, pingPrefix+strconv.FormatUint(op.seq, 10))
			}
			cancel()
			if err != nil && !h.isClosed() {
				h.log.Debug("live feed: command failed; the connection will be restored", "error", err)
			}
		}
	}
}

// read receives everything the connection brings: messages to fan out,
// pongs that confirm subscriptions, errors that mean it was lost.
func (h *Hub) read() {
	defer h.wg.Done()
	ctx := context.Background()
	backoff := time.Duration(0)
	for {
		msg, err := h.ps.ReceiveTimeout(ctx, h.readTimeout())
		if h.isClosed() {
			return
		}
		h.endOutage()
		if err != nil {
			if netErr, ok := errors.AsType[net.Error](err); ok && netErr.Timeout() {
				h.idle(ctx)
				continue
			}
			h.lost(err, time.Now())
			// Redis is down (every read fails at once): retry gently.
			backoff = min(max(2*backoff, 50*time.Millisecond), time.Second)
			select {
			case <-h.stop:
				return
			case <-time.After(backoff):
			}
			continue
		}
		backoff = 0
		switch m := msg.(type) {
		case *goredis.Message:
			h.dispatch(m)
		case *goredis.Pong:
			h.pong(m.Payload)
		}
	}
}

// readTimeout is how long the next read may wait: until the oldest
// unanswered ping is overdue, a resync retry, or a silence worth a health
// ping.
func (h *Hub) readTimeout() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	timeout := h.opts.HealthInterval
	if h.resyncSeq != 0 {
		timeout = resyncRetry
	}
	if len(h.unanswered) > 0 {
		// At least a millisecond: go-redis reads without a deadline at 0.
		timeout = min(timeout, max(time.Until(h.unanswered[0].at.Add(h.opts.ConfirmTimeout)), time.Millisecond))
	}
	return timeout
}

// idle runs when the connection was silent for a while: a ping unanswered
// for ConfirmTimeout means the connection is dead (Redis hung, or the path
// to it is gone), and it is replaced; a resync not yet answered is pinged
// again; otherwise a health ping is sent.
func (h *Hub) idle(ctx context.Context) {
	now := time.Now()
	h.mu.Lock()
	overdue := len(h.unanswered) > 0 && !now.Before(h.unanswered[0].at.Add(h.opts.ConfirmTimeout))
	switch {
	case overdue:
		since, resyncing := h.unanswered[0].at, h.resyncSeq != 0
		h.mu.Unlock()
		if !resyncing {
			h.log.Warn("live feed: Redis did not answer a ping; reconnecting")
		}
		// A read past its deadline makes go-redis drop the connection; the
		// next read dials a new one and resubscribes.
		dead, cancel := context.WithDeadline(ctx, now)
		_, _ = h.ps.Receive(dead)
		cancel()
		h.lost(errors.New("ping unanswered"), since)
	case h.resyncSeq != 0:
		h.resync()
		h.mu.Unlock()
	case len(h.unanswered) == 0:
		h.ping()
		h.mu.Unlock()
	default:
		h.mu.Unlock()
	}
}

// lost marks every channel as needing confirmation on the connection that
// replaces the lost one, and starts a resync. since is when Redis stopped
// answering, as far as the hub knows.
func (h *Hub) lost(err error, since time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.resyncSeq == 0 && !h.closed {
		h.log.Warn("live feed: Redis connection lost; resubscribing", "error", err)
	}
	if h.downSince.IsZero() {
		h.downSince = since
	}
	for _, c := range h.channels {
		if c.confirmed {
			c.confirmed, c.stale = false, true
			c.ready = make(chan struct{})
		}
	}
	// Pings of the lost connection will never be answered.
	h.unanswered = nil
	h.resync()
}

// endOutage ends every subscription once Redis has been away for longer
// than OutageLimit: their clients resume when it is back, with
// Last-Event-ID, rather than wait on a stream that says nothing.
func (h *Hub) endOutage() {
	h.mu.Lock()
	if h.downSince.IsZero() || time.Since(h.downSince) < h.opts.OutageLimit {
		h.mu.Unlock()
		return
	}
	var subs []*hubSub
	for _, c := range h.channels {
		subs = append(subs, c.subs...)
	}
	down := time.Since(h.downSince).Round(time.Second)
	h.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	h.log.Warn("live feed: Redis unreachable for longer than the outage limit; ending live streams",
		"for", down, "limit", h.opts.OutageLimit, "streams", len(subs))
	err := domain.Unavailable("redis live feed", fmt.Errorf("Redis unreachable for %s", down))
	for _, s := range subs {
		s.end(err)
		h.opts.Observer.SubscriberCutOff()
	}
}

// resync pings the (new) connection; its answer confirms every channel
// not confirmed yet, which go-redis resubscribed before any command of
// ours reached the new connection. Call with h.mu held.
func (h *Hub) resync() {
	h.resyncSeq = h.ping()
	for _, c := range h.channels {
		if !c.confirmed {
			c.needPing = h.resyncSeq
		}
	}
}

// pong confirms the channels its ping proves active, and gives the
// followers of channels that were resubscribed a Gap.
func (h *Hub) pong(payload string) {
	n, err := strconv.ParseUint(strings.TrimPrefix(payload, pingPrefix), 10, 64)
	if err != nil || !strings.HasPrefix(payload, pingPrefix) {
		return
	}
	var gapped []*hubSub
	h.mu.Lock()
	answered := 0
	for answered < len(h.unanswered) && h.unanswered[answered].seq <= n {
		answered++
	}
	h.unanswered = h.unanswered[answered:]
	if h.resyncSeq != 0 && n >= h.resyncSeq {
		h.resyncSeq = 0
		h.log.Info("live feed: Redis subscriptions restored", "channels", len(h.channels), "after", time.Since(h.downSince).Round(time.Millisecond))
		h.downSince = time.Time{}
	}
	for _, c := range h.channels {
		if c.confirmed || c.needPing == 0 || c.needPing > n {
			continue
		}
		c.confirmed = true
		close(c.ready)
		if c.stale {
			c.stale = false
			gapped = append(gapped, c.subs...)
		}
	}
	h.mu.Unlock()
	for _, s := range gapped {
		s.send(gapMarker)
	}
}

// gapMarker is the one Gap event every follower shares.
var gapMarker = &domain.LiveEvent{Gap: true}

// dispatch decodes a message once and offers it to every follower of its
// channel. Followers of a channel resubscribed after a lost connection get
// nothing until their Gap: what arrives before it is in the log they read
// then, and delivered ahead of it would only look like a hole.
func (h *Hub) dispatch(m *goredis.Message) {
	h.mu.Lock()
	var subs []*hubSub
	if c := h.channels[m.Channel]; c != nil && !c.stale {
		subs = c.subs
	}
	h.mu.Unlock()
	if len(subs) == 0 {
		return
	}
	if strings.HasPrefix(m.Channel, workspaceChannelPrefix) {
		// A wake-up: the followers read the workspace's log.
		for _, s := range subs {
			s.send(gapMarker)
		}
		return
	}
	ev, err := decodeEvent([]byte(m.Payload), "")
	if err != nil {
		// Followers see the hole as a jump in the message's seq and catch up.
		h.log.Warn("live feed: ignoring an undecodable event", "channel", m.Channel, "error", err)
		return
	}
	if at, ok := logTime(ev.LogID); ok {
		h.opts.Observer.RelayLag(time.Since(at))
	}
	for _, s := range subs {
		s.send(ev)
	}
}

func (h *Hub) isClosed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.closed
}

// leave removes a follower; the channel is unsubscribed with its last one.
func (h *Hub) leave(s *hubSub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := s.channel
	if c == nil {
		return
	}
	i := slices.Index(c.subs, s)
	if i < 0 {
		return
	}
	c.subs = slices.Delete(slices.Clone(c.subs), i, i+1)
	if len(c.subs) == 0 && h.channels[c.name] == c {
		delete(h.channels, c.name)
		if !h.closed {
			h.queue(hubOp{kind: opUnsubscribe, channel: c.name})
		}
	}
}

// hubSub is one follower's subscription.
type hubSub struct {
	hub     *Hub
	channel *hubChannel
	// events holds up to buffer events, and one slot more for a Gap.
	events chan *domain.LiveEvent
	buffer int
	// behind is set while a Gap for falling behind waits in events; only
	// the reader, the one sender, touches it.
	behind bool
	done   chan struct{}
	once   sync.Once
	err    error
}

func (s *hubSub) Events() <-chan *domain.LiveEvent { return s.events }
func (s *hubSub) Done() <-chan struct{}            { return s.done }

// Err is read after Done is closed, which orders it after the write.
func (s *hubSub) Err() error {
	select {
	case <-s.done:
		return s.err
	default:
		return nil
	}
}

func (s *hubSub) Close() { s.end(nil) }

func (s *hubSub) end(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
		s.hub.leave(s)
	})
}

// send offers an event without ever blocking the reader. A follower whose
// buffer is full gets a Gap, in the slot kept for it, and misses what comes
// until it has taken the Gap: every event is in the session's log before
// it is published, and the follower reads the log when it takes the Gap.
// Once the Gap is taken (the follower's queue is empty, as nothing was
// added behind it) events flow again. Only the reader calls send, so
// nothing else fills the queue between the length check and the send.
func (s *hubSub) send(ev *domain.LiveEvent) {
	select {
	case <-s.done:
		return
	default:
	}
	if s.behind {
		if len(s.events) > 0 {
			return // ev is in the log, which the follower reads after the Gap
		}
		s.behind = false
	}
	if len(s.events) < s.buffer {
		s.events <- ev
		return
	}
	s.events <- gapMarker
	s.behind = true
	s.hub.opts.Observer.SubscriberCutOff()
}

// logTime reads the time in a session log entry's id ("<ms>-<seq>", a
// Redis stream id).
func logTime(logID string) (time.Time, bool) {
	ms, _, ok := strings.Cut(logID, "-")
	if !ok {
		return time.Time{}, false
	}
	n, err := strconv.ParseInt(ms, 10, 64)
	if err != nil || n <= 0 {
		return time.Time{}, false
	}
	return time.UnixMilli(n), true
}
