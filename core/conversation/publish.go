package conversation

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// The one publish policy of every session event, whoever publishes it (an
// answer's tokens, a visitor's message, a person's reply, a state change).
// Publishing is the live relay only: PostgreSQL holds what resuming clients
// replay, so a publication never fails its caller. A Redis restart or
// failover takes seconds, and events published late are still in order and
// complete, which a follower needs; so a failed publication is retried,
// with backoff, for up to PublishBudget of failures in a row, on a
// goroutine of its own, and the caller waits for its events to reach the
// bus for at most PublishWait: a bus that is down must never hold up a
// request, an answer or a worker. Past the budget what is queued is skipped
// and what comes next is published again: a follower sees the hole and
// fills it from PostgreSQL.
const (
	PublishBudget = 30 * time.Second
	PublishWait   = time.Second
)

const (
	// publishBackoffMin and publishBackoffMax bound the wait between two
	// attempts.
	publishBackoffMin = 50 * time.Millisecond
	publishBackoffMax = 2 * time.Second
	// publishBatch bounds one publication; an answer is a few thousand
	// events at most.
	publishBatch = 512
	// publishQueueMax bounds what waits for a bus that is down, far above
	// any answer (its tokens, plus its messages).
	publishQueueMax = 20_000
)

// publishPolicy is PublishBudget and PublishWait; tests shorten them.
type publishPolicy struct {
	budget, wait time.Duration
}

var defaultPublishPolicy = publishPolicy{budget: PublishBudget, wait: PublishWait}

// Publish publishes events, in order, under the publish policy, and
// returns once they reached the bus or PublishWait passed.
func (l *Lifecycle) Publish(ctx context.Context, events ...domain.SessionEvent) {
	if len(events) == 0 {
		return
	}
	p := l.NewPublication(ctx)
	p.Send(events...)
	p.Close()
}

// PublishMessages publishes the live events of stored messages
// (domain.MessageEvent), in order, as Publish does; like every publication
// it also publishes their workspace events (domain.MessageWorkspaceEvent).
// Internal notes (domain.Role.Internal) are never published to the
// session, whose followers are the visitor and integrations acting for
// them; they reach the workspace's followers, the team, only.
func (l *Lifecycle) PublishMessages(ctx context.Context, msgs ...domain.Message) {
	events := make([]domain.SessionEvent, 0, len(msgs))
	var internal []domain.WorkspaceEvent
	for _, m := range msgs {
		if m.Role.Internal() {
			internal = append(internal, domain.MessageWorkspaceEvent(m))
			continue
		}
		events = append(events, domain.MessageEvent(m))
	}
	l.Publish(ctx, events...)
	l.PublishWorkspace(ctx, internal...)
}

// Publication is an ordered stream of session events on their way to the
// bus under the publish policy: an answer's events, sent as they are
// generated. Send never waits for the bus. Close it when done.
//
// Every publication also derives the workspace events of what it sends (a
// message, an answer's done, a status change; not tokens), and appends them
// to the workspace's log under the same policy on a queue of their own, so
// no path that publishes a conversation's events can forget its workspace's
// followers, and neither log holds up the other.
type Publication struct {
	*pubQueue[domain.SessionEvent]
	// ws queues the derived workspace events; nil without a workspace log.
	ws *pubQueue[domain.WorkspaceEvent]
	// convID is the conversation the caller named
	// (NewConversationPublication) and owner its workspace and agent,
	// which its workspace events carry.
	convID string
	owner  ownerRef
}

// pubQueue is an ordered stream of events on their way to a publisher under
// the publish policy; Publication and PublishWorkspace share it.
type pubQueue[E any] struct {
	publish func(context.Context, []E) error
	// what names the events in logs, and key and id the field saying whose
	// they are.
	what, key string
	id        func(E) string
	log       *slog.Logger
	policy    publishPolicy

	mu      sync.Mutex
	pending []E
	closed  bool
	// dropped is set when the queue overflowed: the rest is not published.
	dropped bool

	wake chan struct{}
	done chan struct{}
}

// NewPublication starts a publication. Publishing outlives ctx's
// cancellation: followers on other pods must get the whole answer even if
// the asking client left.
func (l *Lifecycle) NewPublication(ctx context.Context) *Publication {
	p := startPublication(ctx, l.d.Bus, l.d.Log, l.publish)
	if l.d.WorkspaceEvents != nil {
		p.ws = l.startWorkspaceQueue(ctx)
	}
	return p
}

// NewConversationPublication is NewPublication for the events of one
// conversation the caller holds: its workspace events carry the
// conversation's workspace and agent, so appending them to the workspace's
// log looks nothing up (a new conversation is in no cache yet, and this
// saved a query per chat).
func (l *Lifecycle) NewConversationPublication(ctx context.Context, conv domain.Conversation) *Publication {
	p := l.NewPublication(ctx)
	p.convID, p.owner = conv.ID, ownerRef{workspaceID: conv.WorkspaceID, agentID: conv.AgentID}
	return p
}

func startPublication(ctx context.Context, bus ports.EventBus, log *slog.Logger, policy publishPolicy) *Publication {
	q := &pubQueue[domain.SessionEvent]{
		publish: func(ctx context.Context, evs []domain.SessionEvent) error { return bus.Publish(ctx, evs...) },
		what:    "session events", key: "sessionId",
		id:  func(ev domain.SessionEvent) string { return ev.SessionID },
		log: log, policy: policy,
	}
	q.start(ctx)
	return &Publication{pubQueue: q}
}

// Send queues events for the bus, after everything sent before, and their
// workspace events for the workspace's log.
func (p *Publication) Send(events ...domain.SessionEvent) {
	p.pubQueue.Send(events...)
	if p.ws != nil {
		p.ws.Send(p.owned(workspaceEvents(events))...)
	}
}

// owned fills in the workspace and agent of the events of the
// publication's conversation.
func (p *Publication) owned(events []domain.WorkspaceEvent) []domain.WorkspaceEvent {
	o := p.owner
	if p.convID == "" || o.workspaceID == "" {
		return events
	}
	for i := range events {
		ev := &events[i]
		if ev.ConversationID != p.convID || ev.WorkspaceID != "" && ev.WorkspaceID != o.workspaceID {
			continue
		}
		ev.WorkspaceID = o.workspaceID
		if ev.AgentID == "" {
			ev.AgentID = o.agentID
		}
	}
	return events
}

// Close waits until the queued events were handed to the bus (and the
// workspace's log), so what is published next does not overtake them, but
// at most PublishWait: a bus that is down must not hold up the caller. The
// events are still published, in order, as long as the retries last.
func (p *Publication) Close() {
	timeout := time.NewTimer(p.policy.wait)
	defer timeout.Stop()
	p.pubQueue.closeWithin(timeout.C)
	if p.ws != nil {
		p.ws.closeWithin(timeout.C)
	}
}

// workspaceEvents are the workspace events of session events: a message
// event's message, a status event's change and an answer's reply (on its
// done); the lifecycle's workspace queue finds their workspace and agent.
func workspaceEvents(events []domain.SessionEvent) []domain.WorkspaceEvent {
	var out []domain.WorkspaceEvent
	for _, ev := range events {
		switch {
		case ev.Type == domain.EventMessage && ev.Message != nil:
			out = append(out, domain.MessageWorkspaceEvent(*ev.Message))
		case ev.Type == domain.EventStatus && ev.Status != "":
			out = append(out, domain.WorkspaceEvent{
				Type: domain.WorkspaceEventConversationStatus, ConversationID: ev.SessionID, Status: ev.Status,
			})
		case ev.Type == domain.EventDone && ev.Answer != nil && ev.Answer.Reply.ID != "":
			reply := ev.Answer.Reply
			reply.ConversationID, reply.Role = ev.SessionID, domain.RoleAssistant
			out = append(out, domain.MessageWorkspaceEvent(reply))
		}
	}
	return out
}

// PublishWorkspace appends events to their workspaces' logs, waking every
// pod's followers, under the publish policy: it never fails, and returns
// once they were appended or PublishWait passed. An event without its
// agent (or workspace) gets its conversation's. Without a workspace log it
// does nothing.
func (l *Lifecycle) PublishWorkspace(ctx context.Context, events ...domain.WorkspaceEvent) {
	if len(events) == 0 || l.d.WorkspaceEvents == nil {
		return
	}
	q := l.startWorkspaceQueue(ctx)
	q.Send(events...)
	timeout := time.NewTimer(l.publish.wait)
	defer timeout.Stop()
	q.closeWithin(timeout.C)
}

func (l *Lifecycle) startWorkspaceQueue(ctx context.Context) *pubQueue[domain.WorkspaceEvent] {
	q := &pubQueue[domain.WorkspaceEvent]{
		publish: l.appendWorkspace,
		what:    "workspace events", key: "conversationId",
		id:  func(ev domain.WorkspaceEvent) string { return ev.ConversationID },
		log: l.d.Log, policy: l.publish,
	}
	q.start(ctx)
	return q
}

// appendWorkspace completes events with their conversation's workspace
// and agent and appends them. An event of a conversation that no longer
// exists is dropped: nobody can open it.
func (l *Lifecycle) appendWorkspace(ctx context.Context, events []domain.WorkspaceEvent) error {
	out := make([]domain.WorkspaceEvent, 0, len(events))
	for _, ev := range events {
		if ev.WorkspaceID == "" || ev.AgentID == "" {
			ref, err := l.owners.of(ctx, l.d.Conversations, ev.ConversationID)
			if errors.Is(err, domain.ErrNotFound) {
				continue
			}
			if err != nil {
				return err
			}
			if ev.WorkspaceID == "" {
				ev.WorkspaceID = ref.workspaceID
			}
			if ev.AgentID == "" && ev.WorkspaceID == ref.workspaceID {
				ev.AgentID = ref.agentID
			}
		}
		if ev.At.IsZero() {
			ev.At = l.d.Clock.Now()
		}
		if ev.Message != nil && ev.Message.CreatedAt.IsZero() {
			m := *ev.Message
			m.CreatedAt = ev.At
			ev.Message = &m
		}
		out = append(out, ev)
	}
	if len(out) == 0 {
		return nil
	}
	return l.d.WorkspaceEvents.Append(ctx, out)
}

// owners remembers whose conversations are (workspace and agent never
// change), so deriving workspace events reads each conversation once.
type owners struct {
	mu   sync.Mutex
	refs map[string]ownerRef
}

type ownerRef struct{ workspaceID, agentID string }

// ownersMax bounds the memory: past it the map starts over.
const ownersMax = 10_000

func (o *owners) of(ctx context.Context, convs ports.ConversationReader, conversationID string) (ownerRef, error) {
	o.mu.Lock()
	ref, ok := o.refs[conversationID]
	o.mu.Unlock()
	if ok {
		return ref, nil
	}
	conv, err := convs.GetConversationBySession(ctx, conversationID)
	if err != nil {
		return ownerRef{}, err
	}
	ref = ownerRef{workspaceID: conv.WorkspaceID, agentID: conv.AgentID}
	o.mu.Lock()
	if o.refs == nil || len(o.refs) >= ownersMax {
		o.refs = map[string]ownerRef{}
	}
	o.refs[conversationID] = ref
	o.mu.Unlock()
	return ref, nil
}

func (q *pubQueue[E]) start(ctx context.Context) {
	q.wake, q.done = make(chan struct{}, 1), make(chan struct{})
	go q.run(context.WithoutCancel(ctx))
}

// Send queues events, after everything sent before.
func (q *pubQueue[E]) Send(events ...E) {
	if len(events) == 0 {
		return
	}
	q.mu.Lock()
	switch {
	case q.dropped:
	case len(q.pending)+len(events) > publishQueueMax:
		q.dropped = true
		q.pending = nil
		q.log.Warn(q.what+" queue full; skipping the rest of these events", q.key, q.id(events[0]))
	default:
		q.pending = append(q.pending, events...)
	}
	q.mu.Unlock()
	q.wakeUp()
}

func (q *pubQueue[E]) wakeUp() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take returns up to max queued events, and whether the queue is done
// (closed with nothing left, or dropped).
func (q *pubQueue[E]) take(batch []E, max int) ([]E, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.dropped {
		return nil, true
	}
	n := min(max, len(q.pending))
	batch = append(batch, q.pending[:n]...)
	q.pending = q.pending[n:]
	return batch, len(batch) == 0 && q.closed
}

func (q *pubQueue[E]) run(ctx context.Context) {
	defer close(q.done)
	var (
		batch        []E
		failingSince time.Time
		backoff      time.Duration
		stop         bool
	)
	for {
		// Whatever is queued goes in one publication, after what failed
		// last time: one round trip for the lot, in order.
		batch, stop = q.take(batch, publishBatch-len(batch))
		if stop {
			return
		}
		if len(batch) == 0 {
			<-q.wake
			continue
		}
		pctx, cancel := context.WithTimeout(ctx, q.policy.wait)
		err := q.publish(pctx, batch)
		cancel()
		if err == nil {
			batch, failingSince, backoff = batch[:0], time.Time{}, 0
			continue
		}
		now := time.Now()
		if failingSince.IsZero() {
			failingSince = now
			q.log.WarnContext(ctx, "publishing "+q.what+" failed; retrying", q.key, q.id(batch[0]), "error", err)
		}
		if now.Sub(failingSince) >= q.policy.budget {
			q.log.WarnContext(ctx, "publishing "+q.what+" kept failing; skipping what is queued",
				q.key, q.id(batch[0]), "events", len(batch), "for", now.Sub(failingSince).Round(time.Millisecond), "error", err)
			// Followers still live when the bus is back see a hole and
			// fill it from the stored messages: what comes next must
			// still reach them.
			q.mu.Lock()
			q.pending = nil
			q.mu.Unlock()
			batch, failingSince, backoff = batch[:0], time.Time{}, 0
			continue
		}
		backoff = min(max(2*backoff, publishBackoffMin), publishBackoffMax)
		time.Sleep(backoff)
	}
}

// closeWithin marks the queue closed and waits until what it queued was
// published, or timeout fires.
func (q *pubQueue[E]) closeWithin(timeout <-chan time.Time) {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.wakeUp()
	select {
	case <-q.done:
	case <-timeout:
	}
}
