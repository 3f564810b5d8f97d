package inbound

import (
	"context"
	"errors"
	"github.com/conciergehq/concierge/adapters/memory"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/conversation"
	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// Hand-written fakes of the ports this use case needs. The real PostgreSQL
// and Redis adapters are exercised by their own tests and the end-to-end suite.

// convs is the memory store with the views these tests assert on.
type convs struct{ *memory.Conversations }

func (c convs) byEvent() map[string]domain.Message {
	out := map[string]domain.Message{}
	for _, m := range c.Messages("") {
		if m.InboundEventID != "" {
			out[m.InboundEventID] = m
		}
	}
	return out
}

func (c convs) notices() []domain.Message {
	var out []domain.Message
	for _, m := range c.Messages("") {
		if m.Role == domain.RoleSystem {
			out = append(out, m)
		}
	}
	return out
}

func (c convs) status(id string) domain.ConversationStatus {
	conv, _ := c.Conversation(id)
	return conv.Status
}

func (c convs) setStatus(id string, st domain.ConversationStatus) {
	conv, _ := c.Conversation(id)
	conv.Status = st
	c.Put(conv)
}

// failNext fails the next message write once.
func (c convs) failNext(err error) {
	var once sync.Once
	c.FailMessages(func(domain.Message) error {
		var out error
		once.Do(func() { out = err })
		return out
	})
}

type fakeWorkspaces struct {
	ports.WorkspaceStore
	byID map[string]domain.Workspace
}

func (f *fakeWorkspaces) GetWorkspace(_ context.Context, id string) (domain.Workspace, error) {
	ws, ok := f.byID[id]
	if !ok {
		return domain.Workspace{}, domain.NotFound("workspace")
	}
	return ws, nil
}

type fakeDeliveries struct {
	mu       sync.Mutex
	enqueued []string
}

func (q *fakeDeliveries) EnqueueDelivery(_ context.Context, d domain.Delivery) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.enqueued = append(q.enqueued, d.ID)
	return nil
}

type fakeEvents struct {
	mu     sync.Mutex
	events map[string]domain.InboundEvent
}

func (f *fakeEvents) SaveInboundEvent(_ context.Context, ev domain.InboundEvent) (domain.InboundEvent, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ev.IdempotencyKey != "" {
		for _, e := range f.events {
			if e.WorkspaceID == ev.WorkspaceID && e.IdempotencyKey == ev.IdempotencyKey {
				return e, false, nil
			}
		}
	}
	f.events[ev.ID] = ev
	return ev, true, nil
}

func (f *fakeEvents) GetInboundEvent(_ context.Context, id string) (domain.InboundEvent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	e, ok := f.events[id]
	if !ok {
		return domain.InboundEvent{}, domain.NotFound("event")
	}
	return e, nil
}

func (f *fakeEvents) MarkInboundEvent(_ context.Context, id string, st domain.InboundStatus, msgID, errText string, at time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	e := f.events[id]
	e.Status, e.MessageID, e.Error, e.ProcessedAt = st, msgID, errText, &at
	f.events[id] = e
	return nil
}

func (f *fakeEvents) ListStaleInboundEvents(_ context.Context, before time.Time, limit int) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, e := range f.events {
		if e.Status == domain.InboundPending && e.ReceivedAt.Before(before) && len(ids) < limit {
			ids = append(ids, e.ID)
		}
	}
	return ids, nil
}

type fakeQueue struct {
	mu       sync.Mutex
	enqueued []string
	err      error
}

func (q *fakeQueue) EnqueueInboundEvent(_ context.Context, id string) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	q.enqueued = append(q.enqueued, id)
	return nil
}

type fakeBus struct {
	mu        sync.Mutex
	published []domain.SessionEvent
	err       error
}

func (b *fakeBus) Publish(_ context.Context, events ...domain.SessionEvent) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.published = append(b.published, events...)
	return b.err
}

type fixedClock struct{ t time.Time }

func (c *fixedClock) Now() time.Time { return c.t }

type fixture struct {
	svc    *Service
	wss    *fakeWorkspaces
	dq     *fakeDeliveries
	convs  convs
	events *fakeEvents
	queue  *fakeQueue
	bus    *fakeBus
	clock  *fixedClock
	ws     domain.Workspace
	other  domain.Workspace
	sessID string
}

func newFixture() *fixture {
	f := &fixture{
		convs:  convs{memory.NewConversations()},
		events: &fakeEvents{events: map[string]domain.InboundEvent{}},
		queue:  &fakeQueue{},
		bus:    &fakeBus{},
		clock:  &fixedClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)},
		ws:     domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Plan: domain.PlanStandard},
		other:  domain.Workspace{ID: domain.NewID(domain.PrefixWorkspace), Plan: domain.PlanStandard},
		sessID: domain.NewID(domain.PrefixSession),
	}
	f.convs.Put(domain.Conversation{ID: f.sessID, WorkspaceID: f.ws.ID, Status: domain.StatusAI})
	f.wss = &fakeWorkspaces{byID: map[string]domain.Workspace{f.ws.ID: f.ws, f.other.ID: f.other}}
	f.dq = &fakeDeliveries{}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f.svc = NewService(Deps{
		Workspaces: f.wss, Conversations: f.convs, Events: f.events, Queue: f.queue,
		Lifecycle: conversation.New(conversation.Deps{Conversations: f.convs, Workspaces: f.wss, Deliveries: f.dq, Bus: f.bus, Clock: f.clock, Log: log}),
		Clock:     f.clock, Log: log,
	}, 20)
	return f
}

func TestReceiveValidation(t *testing.T) {
	f := newFixture()
	tests := []struct {
		name    string
		ws      *domain.Workspace
		req     Request
		wantErr error
		field   string
	}{
		{"missing event", &f.ws, Request{SessionID: f.sessID, Message: "hi"}, domain.ErrInvalidInput, "event"},
		{"missing session", &f.ws, Request{Event: "chat.message", Message: "hi"}, domain.ErrInvalidInput, "sessionId"},
		{"missing message", &f.ws, Request{Event: "chat.message", SessionID: f.sessID}, domain.ErrInvalidInput, "message"},
		{"blank message", &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "  \n"}, domain.ErrInvalidInput, "message"},
		{"message too long", &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "this message is longer than twenty"}, domain.ErrInvalidInput, "message"},
		{"malformed session id", &f.ws, Request{Event: "chat.message", SessionID: "nope", Message: "hi"}, domain.ErrNotFound, ""},
		{"unknown session", &f.ws, Request{Event: "chat.message", SessionID: domain.NewID(domain.PrefixSession), Message: "hi"}, domain.ErrNotFound, ""},
		{"session of another workspace", &f.other, Request{Event: "chat.message", SessionID: f.sessID, Message: "hi"}, domain.ErrNotFound, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.svc.Receive(context.Background(), tt.ws, tt.req)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("err = %v, want %v", err, tt.wantErr)
			}
			var verr *domain.ValidationError
			if tt.field != "" && (!errors.As(err, &verr) || verr.Fields[tt.field] == "") {
				t.Fatalf("err = %#v, want a reason for field %q", err, tt.field)
			}
		})
	}
	if len(f.events.events) != 0 || len(f.queue.enqueued) != 0 {
		t.Fatalf("refused requests stored %d events and enqueued %d", len(f.events.events), len(f.queue.enqueued))
	}
}

func TestReceiveStoresThenEnqueues(t *testing.T) {
	f := newFixture()
	ev, err := f.svc.Receive(context.Background(), &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "hello", BodyHash: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	if stored := f.events.events[ev.ID]; stored.Status != domain.InboundPending || stored.Message != "hello" {
		t.Fatalf("stored event = %+v", stored)
	}
	if len(f.queue.enqueued) != 1 || f.queue.enqueued[0] != ev.ID {
		t.Fatalf("enqueued = %v", f.queue.enqueued)
	}
}

func TestReceiveUnknownEventIsAcknowledgedNotProcessed(t *testing.T) {
	f := newFixture()
	ev, err := f.svc.Receive(context.Background(), &f.ws, Request{Event: "user.typing"})
	if err != nil {
		t.Fatal(err)
	}
	if ev.Status != domain.InboundIgnored || len(f.queue.enqueued) != 0 {
		t.Fatalf("status %s, enqueued %v", ev.Status, f.queue.enqueued)
	}
}

func TestReceiveIdempotencyKey(t *testing.T) {
	f := newFixture()
	req := Request{Event: "chat.message", SessionID: f.sessID, Message: "hello", IdempotencyKey: "k1", BodyHash: "h1"}
	first, err := f.svc.Receive(context.Background(), &f.ws, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.svc.Receive(context.Background(), &f.ws, req)
	if err != nil || again.ID != first.ID {
		t.Fatalf("retry: id %s err %v, want id %s", again.ID, err, first.ID)
	}
	other := req
	other.Message, other.BodyHash = "different", "h2"
	if _, err := f.svc.Receive(context.Background(), &f.ws, other); !errors.Is(err, domain.ErrConflict) {
		t.Fatalf("reused key with another body: err = %v, want conflict", err)
	}
	if len(f.events.events) != 1 {
		t.Fatalf("stored %d events, want 1", len(f.events.events))
	}
}

func TestReceiveSurvivesQueueOutage(t *testing.T) {
	f := newFixture()
	f.queue.err = domain.Unavailable("redis", errors.New("connection refused"))
	ev, err := f.svc.Receive(context.Background(), &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "hello"})
	if err != nil {
		t.Fatalf("the event is stored, so the request must succeed: %v", err)
	}
	f.queue.err = nil
	f.clock.t = f.clock.t.Add(StaleAfter + time.Second)
	n, err := f.svc.RequeueStale(context.Background())
	if err != nil || n != 1 || f.queue.enqueued[0] != ev.ID {
		t.Fatalf("requeue: n=%d err=%v enqueued=%v", n, err, f.queue.enqueued)
	}
}

func TestProcessIsIdempotent(t *testing.T) {
	f := newFixture()
	ev, err := f.svc.Receive(context.Background(), &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	// The first attempt fails after nothing was written; asynq retries.
	f.convs.failNext(domain.Unavailable("postgres", errors.New("gone")))
	if err := f.svc.ProcessInboundEvent(context.Background(), ev.ID); !errors.Is(err, domain.ErrUnavailable) {
		t.Fatalf("err = %v, want unavailable (retried by the queue)", err)
	}
	for range 3 {
		if err := f.svc.ProcessInboundEvent(context.Background(), ev.ID); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.convs.byEvent()) != 1 {
		t.Fatalf("appended %d messages, want 1", len(f.convs.byEvent()))
	}
	msg := f.convs.byEvent()[ev.ID]
	if msg.Role != domain.RoleUser || msg.Content != "hello" || msg.ConversationID != f.sessID {
		t.Fatalf("message = %+v", msg)
	}
	if got := f.events.events[ev.ID]; got.Status != domain.InboundProcessed || got.MessageID != msg.ID {
		t.Fatalf("event = %+v", got)
	}
	if len(f.bus.published) != 1 || f.bus.published[0].Message.ID != msg.ID {
		t.Fatalf("published %d events, want the message once", len(f.bus.published))
	}
}

func TestProcessDeletedSessionIsPermanent(t *testing.T) {
	f := newFixture()
	ev, err := f.svc.Receive(context.Background(), &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	f.convs.Delete(f.sessID)
	if err := f.svc.ProcessInboundEvent(context.Background(), ev.ID); err != nil {
		t.Fatalf("a vanished session is not worth retrying: %v", err)
	}
	if got := f.events.events[ev.ID]; got.Status != domain.InboundFailed {
		t.Fatalf("status = %s, want FAILED", got.Status)
	}
}

func TestProcessPublishFailureStillCompletes(t *testing.T) {
	f := newFixture()
	f.bus.err = errors.New("redis down")
	ev, _ := f.svc.Receive(context.Background(), &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "hello"})
	if err := f.svc.ProcessInboundEvent(context.Background(), ev.ID); err != nil {
		t.Fatal(err)
	}
	if f.events.events[ev.ID].Status != domain.InboundProcessed {
		t.Fatal("event not marked processed")
	}
}

// A webhook message follows the conversation's state rules like any user
// message (no answer is generated here in any state): while a person owns
// the conversation it also goes to the helpdesk; a resolved conversation
// goes back to AI with a notice; with an events URL it is a message.created
// event.
func TestProcessFollowsConversationState(t *testing.T) {
	tests := []struct {
		status        domain.ConversationStatus
		eventsURL     string
		wantStatus    domain.ConversationStatus
		wantTargets   []domain.DeliveryTarget
		wantPublished []string
	}{
		{domain.StatusAI, "", domain.StatusAI, nil, []string{domain.EventMessage}},
		{domain.StatusAI, "https://hooks.example/events", domain.StatusAI, []domain.DeliveryTarget{domain.TargetEvents}, []string{domain.EventMessage}},
		{domain.StatusHandoffRequested, "", domain.StatusHandoffRequested, []domain.DeliveryTarget{domain.TargetHelpdesk}, []string{domain.EventMessage}},
		{domain.StatusHuman, "https://hooks.example/events", domain.StatusHuman, []domain.DeliveryTarget{domain.TargetHelpdesk, domain.TargetEvents}, []string{domain.EventMessage}},
		{domain.StatusResolved, "", domain.StatusAI, nil, []string{domain.EventMessage, domain.EventStatus}},
	}
	for _, tt := range tests {
		t.Run(string(tt.status)+"/"+tt.eventsURL, func(t *testing.T) {
			f := newFixture()
			ws := f.ws
			ws.EventsURL = tt.eventsURL
			f.wss.byID[ws.ID] = ws
			f.convs.setStatus(f.sessID, tt.status)
			ev, err := f.svc.Receive(context.Background(), &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "hello"})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 { // a retried task changes nothing more
				if err := f.svc.ProcessInboundEvent(context.Background(), ev.ID); err != nil {
					t.Fatal(err)
				}
			}
			if got := f.convs.status(f.sessID); got != tt.wantStatus {
				t.Errorf("status %s, want %s", got, tt.wantStatus)
			}
			var targets []domain.DeliveryTarget
			for _, d := range f.convs.Deliveries() {
				targets = append(targets, d.Target)
				if d.Type != domain.EventMessageCreated || d.Message == nil || d.Message.Content != "hello" || d.ConversationID != f.sessID {
					t.Errorf("delivery %+v, want message.created of the message", d)
				}
			}
			if !slices.Equal(targets, tt.wantTargets) {
				t.Errorf("deliveries to %v, want %v", targets, tt.wantTargets)
			}
			if len(f.dq.enqueued) != len(tt.wantTargets) {
				t.Errorf("enqueued %d deliveries, want %d", len(f.dq.enqueued), len(tt.wantTargets))
			}
			var published []string
			for _, e := range f.bus.published {
				published = append(published, e.Type)
				if e.MessageID == "" || e.Seq != 1 {
					t.Errorf("event %+v has no resumable id", e)
				}
			}
			if !slices.Equal(published, tt.wantPublished) {
				t.Errorf("published %v, want %v", published, tt.wantPublished)
			}
			if tt.status == domain.StatusResolved {
				if len(f.convs.notices()) != 1 || f.convs.notices()[0].Role != domain.RoleSystem || f.convs.notices()[0].Status != domain.StatusAI {
					t.Errorf("notices %+v, want one SYSTEM notice of AI", f.convs.notices())
				}
			}
		})
	}
}

// TestProcessReopensTogether: a message that reopens a resolved conversation
// and the reopening are one write. A failed write leaves the conversation
// resolved without the message (the task is retried); before, the message
// was stored and the reopening, failing after it, only logged, leaving a
// resolved conversation with a question nobody answers. A task run again
// after the conversation was resolved once more stores nothing twice.
func TestProcessReopensTogether(t *testing.T) {
	f := newFixture()
	f.convs.setStatus(f.sessID, domain.StatusResolved)
	ctx := context.Background()
	ev, err := f.svc.Receive(ctx, &f.ws, Request{Event: "chat.message", SessionID: f.sessID, Message: "one more thing"})
	if err != nil {
		t.Fatal(err)
	}
	f.convs.failNext(errors.New("connection reset"))
	if err := f.svc.ProcessInboundEvent(ctx, ev.ID); err == nil {
		t.Fatal("a failed write was not returned for a retry")
	}
	if st := f.convs.status(f.sessID); st != domain.StatusResolved || len(f.convs.byEvent()) != 0 || len(f.convs.notices()) != 0 {
		t.Fatalf("after a failed write: status %s, %d messages, %d notices; want it untouched", st, len(f.convs.byEvent()), len(f.convs.notices()))
	}
	if err := f.svc.ProcessInboundEvent(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	if st := f.convs.status(f.sessID); st != domain.StatusAI || len(f.convs.byEvent()) != 1 || len(f.convs.notices()) != 1 {
		t.Fatalf("after the retry: status %s, %d messages, %d notices; want AI, one of each", st, len(f.convs.byEvent()), len(f.convs.notices()))
	}

	// Resolved again, and the task runs once more (at-least-once delivery
	// after a crash before the event was marked): nothing moves.
	f.convs.setStatus(f.sessID, domain.StatusResolved)
	stored := f.events.events[ev.ID]
	stored.Status = domain.InboundPending
	f.events.events[ev.ID] = stored
	if err := f.svc.ProcessInboundEvent(ctx, ev.ID); err != nil {
		t.Fatal(err)
	}
	if st := f.convs.status(f.sessID); st != domain.StatusResolved || len(f.convs.byEvent()) != 1 || len(f.convs.notices()) != 1 {
		t.Fatalf("a rerun reopened or stored again: status %s, %d messages, %d notices", st, len(f.convs.byEvent()), len(f.convs.notices()))
	}
}
