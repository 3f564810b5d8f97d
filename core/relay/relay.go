// Package relay follows a conversation's live events for one client: the
// tokens and done of answers generated on any pod, USER messages, HUMAN
// replies and status changes, resumable from a Last-Event-ID on any pod.
//
// A stream subscribes first (confirmed), then replays what the client
// missed, then relays live events. The replay comes from the session's
// short-lived log while it still holds the client's position (answers
// still being generated live only there), otherwise from the stored
// messages, then the log for anything newer. Every event is identified by
// its message id and seq, and a stream remembers the highest seq it sent
// of each message, so replay and live events never repeat or skip: an
// event already sent is dropped, and a jump in a message's seq (events lost
// while the feed was reconnecting) holds the message back until it is
// stored, when the missing part is read from PostgreSQL.
//
// A stream outlives a Redis outage: it keeps sending keep-alives, and when
// the feed reports the Gap it catches up from the log and the stored
// messages, retrying while Redis is still coming back, for up to
// Options.OutageLimit.
package relay

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Deps are the relay's outside-world pieces.
type Deps struct {
	Feed ports.EventFeed
	// Recent is the sessions' short-lived log of recent events.
	Recent     ports.EventLog
	Transcript ports.Transcript
	// Conversations is read for the state of a followed session; the relay
	// writes nothing.
	Conversations ports.ConversationReader
	// Lifecycle finds the session a keyless caller follows.
	Lifecycle *conversation.Lifecycle
	Clock     ports.Clock
	Log       *slog.Logger
	// Workspace serves the workspaces' event streams (OpenWorkspace).
	Workspace WorkspaceDeps
}

// Options tune the relay; zero fields take the defaults.
type Options struct {
	// KeepAlive is how often a stream writes a keep-alive (default 15 s),
	// which keeps proxies from closing it and is how a vanished client is
	// noticed.
	KeepAlive time.Duration
	// PageSize is how many stored messages one replay read takes (default 100).
	PageSize int
	// OutageLimit is how long a stream retries a catch-up that Redis (or
	// PostgreSQL) cannot serve before it ends with an error event (default
	// 30 s); the feed bounds its own wait for Redis the same way.
	OutageLimit time.Duration
	// PositionWait is how long Open looks again for a Last-Event-ID that
	// neither the log nor PostgreSQL knows before refusing it (default
	// 1 s): a POST stream writes an answer's events before they are
	// logged, and its client may reconnect sooner.
	PositionWait time.Duration
}

// Service opens live streams.
type Service struct {
	d    Deps
	opts Options
}

// NewService returns the relay.
func NewService(d Deps, opts Options) *Service {
	if opts.KeepAlive <= 0 {
		opts.KeepAlive = 15 * time.Second
	}
	if opts.PageSize <= 0 {
		opts.PageSize = 100
	}
	if opts.OutageLimit <= 0 {
		opts.OutageLimit = 30 * time.Second
	}
	if opts.PositionWait <= 0 {
		opts.PositionWait = time.Second
	}
	return &Service{d: d, opts: opts}
}

// Request asks to follow a conversation.
type Request struct {
	// Session is the followed conversation and its caller. Without a
	// workspace (the widget) it needs a published agent and honours the
	// identity headers as the widget's message route does.
	Session conversation.SessionRef
	// LastEventID is the id of the last event the client has
	// ("<messageId>:<seq>"); "" starts live from now.
	LastEventID string
}

// Position is an event's place: the SSE id "<MessageID>:<Seq>".
type Position struct {
	MessageID string
	Seq       int
}

// ParseEventID parses a Last-Event-ID; "" is no position (nil). Anything
// else than an id this service sends is a domain.ValidationError.
func ParseEventID(id string) (*Position, error) {
	if id == "" {
		return nil, nil
	}
	msg, seqText, ok := strings.Cut(id, ":")
	seq, err := strconv.Atoi(seqText)
	if !ok || err != nil || seq < 1 || strconv.Itoa(seq) != seqText || !domain.ValidID(domain.PrefixMessage, msg) {
		return nil, &domain.ValidationError{
			Message: "Last-Event-ID must be the id of an event of this stream (<messageId>:<seq>)",
			Fields:  map[string]string{"lastEventId": "is not an event id"},
		}
	}
	return &Position{MessageID: msg, Seq: seq}, nil
}

// errUnknownPosition is the answer to a well-formed Last-Event-ID that
// neither the log nor the stored messages of the conversation know.
var errUnknownPosition = &domain.ValidationError{
	Message: "Last-Event-ID is not an event of this conversation; reload its messages and reconnect without it",
	Fields:  map[string]string{"lastEventId": "is not an event of this conversation"},
}

// Open checks the caller's access, subscribes to the conversation's events
// (confirmed) and, with a Last-Event-ID, finds where its replay starts. Its
// errors come before anything is streamed: domain.ErrNotFound for a
// conversation the caller cannot see, a domain.ValidationError for a
// malformed or unknown Last-Event-ID, ErrUnauthorized for a bad identity
// signature, and errors wrapping domain.ErrUnavailable when Redis or
// PostgreSQL cannot be reached. The stream must be Run or Closed.
func (s *Service) Open(ctx context.Context, req Request) (*Stream, error) {
	from, err := ParseEventID(req.LastEventID)
	if err != nil {
		return nil, err
	}
	conv, err := s.conversation(ctx, req)
	if err != nil {
		return nil, err
	}
	sub, err := s.d.Feed.Subscribe(ctx, conv.ID)
	if err != nil {
		return nil, err
	}
	st := &Stream{s: s, conv: conv, sub: sub, seen: map[string]int{}, held: map[string]bool{}, openCount: conv.MessageCount}
	if err := st.positionWithin(ctx, from, req.LastEventID); err != nil {
		sub.Close()
		return nil, err
	}
	return st, nil
}

// positionRetry is how often positionWithin looks again.
const positionRetry = 25 * time.Millisecond

// positionWithin is position, looking again for up to PositionWait while
// the position is unknown: the event may be on its way to the log.
func (st *Stream) positionWithin(ctx context.Context, from *Position, lastEventID string) error {
	deadline := time.Now().Add(st.s.opts.PositionWait)
	for {
		err := st.position(ctx, from, lastEventID)
		if !errors.Is(err, errUnknownPosition) || time.Now().After(deadline) {
			return err
		}
		t := time.NewTimer(positionRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// conversation resolves the followed conversation as the chat routes do.
func (s *Service) conversation(ctx context.Context, req Request) (domain.Conversation, error) {
	if ws := req.Session.Workspace; ws != nil {
		// The v2 route names it a conversation.
		if !domain.ValidID(domain.PrefixSession, req.Session.ID) {
			return domain.Conversation{}, domain.NotFound("conversation")
		}
		conv, err := s.d.Conversations.GetConversation(ctx, ws.ID, req.Session.ID)
		if errors.Is(err, domain.ErrNotFound) {
			err = domain.NotFound("conversation")
		}
		return conv, err
	}
	found, err := s.d.Lifecycle.Find(ctx, req.Session)
	return found.Conversation, err
}

// Sink is where a stream writes. Both methods run on the stream's
// goroutine; an error (the client left) ends the stream.
type Sink interface {
	// Send writes one event.
	Send(ev *domain.LiveEvent) error
	// KeepAlive writes something the client ignores.
	KeepAlive() error
}

// Stream is one client's live stream.
type Stream struct {
	s    *Service
	conv domain.Conversation
	sub  ports.Subscription
	sink Sink

	// seen is the highest seq sent of each message.
	seen map[string]int
	// held are messages with a hole: their events wait for the stored copy.
	held map[string]bool
	// continuous holds while everything since the client's position came
	// from the log or the feed without a break: a message then first seen
	// at a seq past 1 began before that position, and the client has its
	// start. After a break it means a hole.
	continuous bool
	// lastLog is the log entry up to which the stream has taken the log
	// into account; lastStored the latest stored message it sent.
	lastLog    string
	lastStored string
	// openCount is how many messages the conversation had when the stream
	// opened: until it sends a stored message, a catch-up reads the stored
	// messages after them.
	openCount int

	// The replay Open planned: the stored messages from fromStored on
	// (none when the log still had the client's position), then the log's
	// events.
	fromStored []domain.Message
	replayLog  []*domain.LiveEvent
}

// position plans the replay from the client's last event, from (parsed
// from lastEventID).
func (st *Stream) position(ctx context.Context, from *Position, lastEventID string) error {
	log := st.s.d.Recent
	if from == nil {
		// Live from now: the log's tail is where a catch-up would start.
		tail, err := log.Tail(ctx, st.conv.ID)
		st.lastLog, st.continuous = tail, true
		return err
	}
	events, at, err := log.After(ctx, st.conv.ID, lastEventID)
	if err != nil {
		return err
	}
	st.seen[from.MessageID] = from.Seq
	st.replayLog = events
	if at != "" {
		// The client's place in the log is where a catch-up starts; the
		// replay moves it on.
		st.lastLog, st.continuous = at, true
		return nil
	}
	msgs, err := st.s.d.Transcript.MessagesFrom(ctx, st.conv.WorkspaceID, st.conv.ID, from.MessageID, st.s.opts.PageSize)
	if errors.Is(err, domain.ErrNotFound) {
		// Not stored: an answer still being generated, whose event the
		// log does not have yet (the client had it from its POST stream,
		// which is written before the log) or lost with the answer's
		// start (Redis restarted). It is resumed from what the log has of
		// the answer; the answer's events up to the client's are skipped
		// as seen. When the log has an event of the answer at or before
		// the client's, everything logged before the answer is older than
		// the client's position and is not sent again; when it lost them,
		// what it holds may be newer, and all of it is sent. Any other id
		// is not of this conversation.
		for i, ev := range events {
			if ev.MessageID == from.MessageID {
				if ev.Seq <= from.Seq {
					st.replayLog = events[i:]
				}
				return nil
			}
		}
		return errUnknownPosition
	}
	if err != nil {
		return err
	}
	st.fromStored = msgs
	return nil
}

// Close ends the stream's subscription; Run does it when it returns.
func (st *Stream) Close() { st.sub.Close() }

// unavailable is what a client is told, in a terminal error event without
// an id, when its stream cannot go on.
const unavailable = "the live stream is unavailable; reconnect with Last-Event-ID to continue"

// Catch-up retries while Redis comes back: soon at first, then every few
// seconds.
const (
	catchUpRetryMin = 100 * time.Millisecond
	catchUpRetryMax = 2 * time.Second
)

// Run replays what the client missed and relays live events to sink until
// ctx ends, the client leaves (sink fails) or the feed ends the
// subscription. The feed giving up on Redis, a replay that fails, or a
// catch-up that still fails after OutageLimit ends the stream with an error
// event (code UNAVAILABLE) telling the client to reconnect with its
// Last-Event-ID; the feed shutting down ends it without one, so the client
// simply reconnects. The returned error is for logs; nil when the client or
// the server went away.
func (st *Stream) Run(ctx context.Context, sink Sink) error {
	defer st.sub.Close()
	st.sink = sink
	if err := st.replay(ctx); err != nil {
		return st.fail(err)
	}
	keepAlive := time.NewTicker(st.s.opts.KeepAlive)
	defer keepAlive.Stop()
	var lag lagging
	defer lag.stop()
	for {
		select {
		case ev := <-st.sub.Events():
			var err error
			switch {
			case ev.Gap:
				err = st.catchUpOrWait(ctx, &lag)
			case lag.pending():
				// In the log, which the pending catch-up reads.
			case ev.LogID != "" && st.lastLog != "" && !st.s.d.Recent.Newer(ev.LogID, st.lastLog):
				// Logged no later than what the stream has taken from the
				// log: sent, or older than the client's position. The
				// pod's feed can hand a new follower events Redis sent it
				// just before the follower joined.
			default:
				err = st.deliver(ctx, ev)
			}
			if err != nil {
				return st.fail(err)
			}
		case <-lag.retry():
			if err := st.catchUpOrWait(ctx, &lag); err != nil {
				return st.fail(err)
			}
		case <-st.sub.Done():
			if err := st.sub.Err(); err != nil && !errors.Is(err, ports.ErrFeedClosed) {
				return st.fail(err)
			}
			return nil
		case <-keepAlive.C:
			if err := sink.KeepAlive(); err != nil {
				return nil
			}
		case <-ctx.Done():
			return nil
		}
	}
}

// errClientGone marks a failed write: nobody is left to tell.
var errClientGone = errors.New("client gone")

// fail ends the stream with a terminal error event, unless the client is
// the one that went away.
func (st *Stream) fail(err error) error {
	if errors.Is(err, errClientGone) {
		return nil
	}
	_ = st.sink.Send(&domain.LiveEvent{SessionEvent: domain.SessionEvent{
		Type: domain.EventError, SessionID: st.conv.ID, ErrorCode: domain.CodeUnavailable, ErrorMessage: unavailable,
	}})
	st.s.d.Log.Info("live stream ended with an error; the client resumes", "sessionId", st.conv.ID, "error", err)
	return fmt.Errorf("live stream of %s: %w", st.conv.ID, err)
}

func (st *Stream) emit(ev *domain.LiveEvent) error {
	if err := st.sink.Send(ev); err != nil {
		return fmt.Errorf("%w: %w", errClientGone, err)
	}
	return nil
}

// replay sends what Open planned.
func (st *Stream) replay(ctx context.Context) error {
	// MessagesFrom gives at least the client's own message, so a replay
	// from the stored messages is never empty.
	afterStored := len(st.fromStored) > 0
	if afterStored {
		if err := st.storedFrom(ctx, st.fromStored); err != nil {
			return err
		}
	}
	events := st.replayLog
	st.fromStored, st.replayLog = nil, nil
	return st.deliverLog(ctx, events, afterStored)
}

// deliverLog sends a run of the log, oldest first, and remembers where it
// ends. After a replay from the stored messages (afterStored), the log only
// adds answers not stored yet: a message, status or done event in it was
// published after its message was stored, before the stored messages were
// read, so that message was either just replayed or is older than the
// client's position.
func (st *Stream) deliverLog(ctx context.Context, events []*domain.LiveEvent, afterStored bool) error {
	var stored map[string]bool
	if afterStored {
		stored = map[string]bool{}
		for _, ev := range events {
			if ev.Type != domain.EventToken && ev.Type != domain.EventError {
				stored[ev.MessageID] = true
			}
		}
	}
	for _, ev := range events {
		if stored[ev.MessageID] {
			continue
		}
		if err := st.deliver(ctx, ev); err != nil {
			return err
		}
	}
	if len(events) > 0 {
		st.lastLog = events[len(events)-1].LogID
	}
	return nil
}

// lagging is a catch-up that has not succeeded yet, and its retry.
type lagging struct {
	since   time.Time
	backoff time.Duration
	timer   *time.Timer
}

func (l *lagging) pending() bool { return l.timer != nil }

// retry fires when the catch-up is due again; never while none waits.
func (l *lagging) retry() <-chan time.Time {
	if l.timer == nil {
		return nil
	}
	return l.timer.C
}

func (l *lagging) stop() {
	if l.timer != nil {
		l.timer.Stop()
	}
	*l = lagging{}
}

// catchUpOrWait catches up after a Gap. A catch-up that Redis or
// PostgreSQL cannot serve yet (Redis is still coming back) is retried with
// backoff, and live events wait in the log meanwhile, for up to
// OutageLimit; then its error ends the stream.
func (st *Stream) catchUpOrWait(ctx context.Context, lag *lagging) error {
	err := st.catchUp(ctx)
	if err == nil || errors.Is(err, errClientGone) || !errors.Is(err, domain.ErrUnavailable) {
		lag.stop()
		return err
	}
	now := st.s.d.Clock.Now()
	if lag.since.IsZero() {
		lag.since = now
	}
	if now.Sub(lag.since) >= st.s.opts.OutageLimit {
		return err
	}
	if lag.timer != nil {
		lag.timer.Stop()
	}
	lag.backoff = min(max(2*lag.backoff, catchUpRetryMin), catchUpRetryMax)
	lag.timer = time.NewTimer(lag.backoff)
	st.s.d.Log.DebugContext(ctx, "live stream: catch-up failed; retrying", "sessionId", st.conv.ID, "in", lag.backoff, "error", err)
	return nil
}

// catchUp follows a Gap: the feed was reconnected, or the stream fell
// behind, and events were not delivered. They are in the log after the
// stream's position if it still has it; otherwise (Redis lost it) the log
// has at most what was published since. Either way the stored messages the
// stream has not sent come first: a publication that failed while Redis was
// away left the stored copy alone.
func (st *Stream) catchUp(ctx context.Context) error {
	events, found, err := st.s.d.Recent.Since(ctx, st.conv.ID, st.lastLog)
	if err != nil {
		return err
	}
	if !found {
		st.continuous = false
	}
	if err := st.storedSince(ctx); err != nil {
		return err
	}
	// Without the position the log may start before it: what it has of
	// stored messages was just read from PostgreSQL, or is older.
	return st.deliverLog(ctx, events, !found)
}

// storedSince sends the stored messages the stream has not sent: those
// after the last one it sent or, before it sent any, those appended since
// it opened.
func (st *Stream) storedSince(ctx context.Context) error {
	if st.lastStored != "" {
		msgs, err := st.s.d.Transcript.MessagesFrom(ctx, st.conv.WorkspaceID, st.conv.ID, st.lastStored, st.s.opts.PageSize)
		if err != nil {
			return err
		}
		return st.storedFrom(ctx, msgs)
	}
	size := st.s.opts.PageSize
	var before *domain.Message // the last message older than the stream
	for read, from := 0, ""; ; {
		page, err := st.s.d.Transcript.MessagesFrom(ctx, st.conv.WorkspaceID, st.conv.ID, from, size)
		if err != nil {
			return err
		}
		next := page
		if from != "" {
			next = page[1:] // later pages start with the last message read
		}
		for _, m := range next {
			if read < st.openCount {
				before = &m
			} else if err := st.deliverStored(m); err != nil {
				return err
			}
			read++
		}
		if len(page) < size {
			break
		}
		from = page[len(page)-1].ID
	}
	if st.lastStored == "" && before != nil {
		// The client had it when the stream opened: the next catch-up
		// starts there, in one read.
		events := StoredEvents(*before)
		st.seen[before.ID] = max(st.seen[before.ID], events[len(events)-1].Seq)
		st.lastStored = before.ID
	}
	return nil
}

// storedFrom sends stored messages from the first page given on, reading
// further pages until the conversation's end.
func (st *Stream) storedFrom(ctx context.Context, page []domain.Message) error {
	size := st.s.opts.PageSize
	for skip := 0; ; skip = 1 { // later pages start with the last message sent
		for _, m := range page[skip:] {
			if err := st.deliverStored(m); err != nil {
				return err
			}
		}
		if len(page) < size {
			return nil
		}
		var err error
		if page, err = st.s.d.Transcript.MessagesFrom(ctx, st.conv.WorkspaceID, st.conv.ID, page[len(page)-1].ID, size); err != nil {
			return err
		}
	}
}

// deliverStored sends what the client has not seen of a stored message
// (nothing of an internal note).
// The stored copy is complete, so it also fills a held message's hole.
func (st *Stream) deliverStored(m domain.Message) error {
	if m.Role.Internal() {
		// An internal note never reaches a session's stream; it still
		// marks how far the stored messages were read.
		st.lastStored = m.ID
		return nil
	}
	for _, ev := range StoredEvents(m) {
		if ev.Seq <= st.seen[m.ID] {
			continue
		}
		st.seen[m.ID] = ev.Seq
		if err := st.emit(ev); err != nil {
			return err
		}
	}
	delete(st.held, m.ID)
	st.lastStored = m.ID
	return nil
}

// deliver sends a live or logged event unless the client has it.
func (st *Stream) deliver(ctx context.Context, ev *domain.LiveEvent) error {
	m := ev.MessageID
	if m == "" {
		return st.emit(ev)
	}
	have := st.seen[m]
	if ev.Seq <= have {
		return nil
	}
	// Not a repeat, so newer than anything taken from the log so far.
	if ev.LogID != "" {
		st.lastLog = ev.LogID
	}
	switch {
	case st.held[m]:
		if terminal(ev) {
			return st.fill(ctx, ev)
		}
		return nil
	case ev.Seq == have+1 || (have == 0 && st.continuous):
		st.seen[m] = ev.Seq
		st.noteStored(ev)
		return st.emit(ev)
	case terminal(ev):
		return st.fill(ctx, ev)
	default:
		// A hole in the message: hold it until it is stored.
		st.held[m] = true
		return nil
	}
}

// noteStored remembers the latest sent event whose message is stored
// (everything but an answer's tokens is published after its message was
// stored): a catch-up from PostgreSQL starts there.
func (st *Stream) noteStored(ev *domain.LiveEvent) {
	switch ev.Type {
	case domain.EventMessage, domain.EventStatus, domain.EventDone:
		st.lastStored = ev.MessageID
	}
}

func terminal(ev *domain.LiveEvent) bool {
	return ev.Type == domain.EventDone || ev.Type == domain.EventError
}

// fill completes a message with a hole at its terminal event: the missing
// tokens from the stored reply, then the event itself (which, unlike a
// stored reply, knows whether the answer was a fallback). An answer that
// failed was never stored: its error event ends it as it is.
func (st *Stream) fill(ctx context.Context, ev *domain.LiveEvent) error {
	m := ev.MessageID
	delete(st.held, m)
	if ev.Type == domain.EventDone {
		msgs, err := st.s.d.Transcript.MessagesFrom(ctx, st.conv.WorkspaceID, st.conv.ID, m, 1)
		switch {
		case errors.Is(err, domain.ErrNotFound):
			st.s.d.Log.WarnContext(ctx, "live stream: an answer announced done is not stored", "sessionId", st.conv.ID, "messageId", m)
		case err != nil:
			return err
		case len(msgs) == 1:
			for _, tok := range StoredEvents(msgs[0]) {
				if tok.Type != domain.EventToken || tok.Seq <= st.seen[m] || tok.Seq >= ev.Seq {
					continue
				}
				st.seen[m] = tok.Seq
				if err := st.emit(tok); err != nil {
					return err
				}
			}
		}
	}
	st.seen[m] = ev.Seq
	st.noteStored(ev)
	return st.emit(ev)
}

// StoredEvents are the live events of a stored message, as they were
// published (domain.StoredEvents), ready for the relay.
func StoredEvents(m domain.Message) []*domain.LiveEvent {
	events := domain.StoredEvents(m)
	out := make([]*domain.LiveEvent, len(events))
	for i, ev := range events {
		out[i] = &domain.LiveEvent{SessionEvent: ev}
	}
	return out
}
