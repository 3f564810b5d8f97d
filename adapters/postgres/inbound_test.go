package postgres_test

import (
	"errors"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func newInboundEvent(workspaceID, key string, at time.Time) domain.InboundEvent {
	return domain.InboundEvent{
		ID:             domain.NewID(domain.PrefixInboundEvent),
		WorkspaceID:    workspaceID,
		Event:          string(domain.EventChatMessage),
		SessionID:      domain.NewID(domain.PrefixSession),
		Message:        "hello",
		IdempotencyKey: key,
		BodyHash:       domain.HashSecret("body"),
		Status:         domain.InboundPending,
		ReceivedAt:     at,
	}
}

func TestInboundEvents(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)

	ev := newInboundEvent(wsA.ID, "key-1", t0)
	stored, created, err := store.SaveInboundEvent(ctx, ev)
	if err != nil || !created {
		t.Fatalf("SaveInboundEvent = %v, %v", created, err)
	}
	want := ev
	want.ReceivedAt = micro(ev.ReceivedAt)
	if !reflect.DeepEqual(stored, want) {
		t.Fatalf("stored = %+v, want %+v", stored, want)
	}
	if got, err := store.GetInboundEvent(ctx, ev.ID); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("GetInboundEvent = %+v, %v", got, err)
	}

	// A retry with the same key returns the first event, whatever its body.
	retry := newInboundEvent(wsA.ID, "key-1", t0.Add(time.Second))
	retry.BodyHash = domain.HashSecret("another body")
	got, created, err := store.SaveInboundEvent(ctx, retry)
	if err != nil || created || got.ID != ev.ID || got.BodyHash != ev.BodyHash {
		t.Fatalf("retry = %+v, %v, %v; want the first event, not created", got, created, err)
	}
	if _, err := store.GetInboundEvent(ctx, retry.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("the retry was stored: err = %v", err)
	}
	// Keys are per workspace, and events without a key never collide.
	for _, e := range []domain.InboundEvent{
		newInboundEvent(wsB.ID, "key-1", t0),
		newInboundEvent(wsA.ID, "", t0),
		newInboundEvent(wsA.ID, "", t0),
	} {
		if got, created, err := store.SaveInboundEvent(ctx, e); err != nil || !created || got.ID != e.ID {
			t.Fatalf("SaveInboundEvent(%s, key %q) = %s, %v, %v; want created", e.WorkspaceID, e.IdempotencyKey, got.ID, created, err)
		}
	}

	// Concurrent senders with one key store one event.
	const senders = 8
	ids := make([]string, senders)
	createdCount := make([]bool, senders)
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			got, created, err := store.SaveInboundEvent(ctx, newInboundEvent(wsA.ID, "racing", t0))
			if err != nil {
				t.Errorf("sender %d: %v", i, err)
			}
			ids[i], createdCount[i] = got.ID, created
		})
	}
	wg.Wait()
	n := 0
	for i := range senders {
		if createdCount[i] {
			n++
		}
		if ids[i] != ids[0] {
			t.Fatalf("senders got different events: %v", ids)
		}
	}
	if n != 1 {
		t.Fatalf("%d senders created the event, want 1", n)
	}

	// Marking records the outcome and counts attempts.
	msgID := domain.NewID(domain.PrefixMessage)
	if err := store.MarkInboundEvent(ctx, ev.ID, domain.InboundFailed, "", "session gone", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := store.MarkInboundEvent(ctx, ev.ID, domain.InboundProcessed, msgID, "", t0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err = store.GetInboundEvent(ctx, ev.ID)
	if err != nil || got.Status != domain.InboundProcessed || got.MessageID != msgID || got.Error != "" || got.Attempts != 2 ||
		got.ProcessedAt == nil || !got.ProcessedAt.Equal(micro(t0.Add(2*time.Minute))) {
		t.Fatalf("after marking = %+v, %v", got, err)
	}

	tests := []struct {
		name string
		run  func() error
	}{
		{"get unknown", func() error {
			_, err := store.GetInboundEvent(ctx, domain.NewID(domain.PrefixInboundEvent))
			return err
		}},
		{"mark unknown", func() error {
			return store.MarkInboundEvent(ctx, domain.NewID(domain.PrefixInboundEvent), domain.InboundIgnored, "", "", t0)
		}},
		{"save for unknown workspace", func() error {
			_, _, err := store.SaveInboundEvent(ctx, newInboundEvent(domain.NewID(domain.PrefixWorkspace), "", t0))
			return err
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, domain.ErrNotFound) {
				t.Fatalf("err = %v, want ErrNotFound", err)
			}
		})
	}
}

func TestListStaleInboundEvents(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)

	save := func(ws string, at time.Time) string {
		t.Helper()
		ev := newInboundEvent(ws, "", at)
		if _, _, err := store.SaveInboundEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
		return ev.ID
	}
	old2 := save(wsB.ID, t0.Add(-2*time.Minute))
	old1 := save(wsA.ID, t0.Add(-3*time.Minute))
	done := save(wsA.ID, t0.Add(-4*time.Minute))
	if err := store.MarkInboundEvent(ctx, done, domain.InboundProcessed, "", "", t0); err != nil {
		t.Fatal(err)
	}
	save(wsA.ID, t0) // not before the cutoff
	old3 := save(wsA.ID, t0.Add(-time.Minute))

	tests := []struct {
		limit int
		want  []string
	}{
		{0, []string{old1, old2, old3}},
		{2, []string{old1, old2}},
	}
	for _, tt := range tests {
		got, err := store.ListStaleInboundEvents(ctx, t0, tt.limit)
		if err != nil || !reflect.DeepEqual(got, tt.want) {
			t.Fatalf("ListStaleInboundEvents(limit %d) = %v, %v; want %v", tt.limit, got, err, tt.want)
		}
	}
	if got, err := store.ListStaleInboundEvents(ctx, t0.Add(-time.Hour), 10); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("nothing stale = %#v, %v; want an empty slice", got, err)
	}
}
