package postgres_test

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/conciergehq/concierge/adapters/postgres/pgtest"
	"github.com/conciergehq/concierge/core/domain"
)

func newSource(workspaceID, agentID string, at time.Time) domain.Source {
	return domain.Source{
		ID:          domain.NewID(domain.PrefixSource),
		WorkspaceID: workspaceID,
		AgentID:     agentID,
		Type:        domain.SourceText,
		Name:        "Refund policy",
		Content:     "Refunds are accepted within 30 days of purchase.",
		Status:      domain.SourceReady,
		CreatedAt:   at,
		UpdatedAt:   at,
	}
}

func TestSources(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)

	text := newSource(ws.ID, agent.ID, t0)
	qa := domain.Source{
		ID: domain.NewID(domain.PrefixSource), WorkspaceID: ws.ID, AgentID: agent.ID,
		Type: domain.SourceQA, Name: "Shipping?", Question: "How long does shipping take?",
		Answer: "Three to five business days.", Status: domain.SourceFailed, StatusReason: "boom",
		ChunkCount: 2, TokenCount: 40, CreatedAt: t0.Add(time.Second), UpdatedAt: t0.Add(time.Second),
	}
	for _, src := range []*domain.Source{&text, &qa} {
		if err := store.CreateSource(ctx, src); err != nil {
			t.Fatalf("CreateSource: %v", err)
		}
	}
	got, err := store.GetSource(ctx, ws.ID, agent.ID, qa.ID)
	if err != nil || !reflect.DeepEqual(got, qa) {
		t.Fatalf("GetSource = %+v, %v; want %+v", got, err, qa)
	}

	if _, err := store.DeleteSource(ctx, ws.ID, agent.ID, text.ID); err != nil {
		t.Fatalf("DeleteSource: %v", err)
	}
	if _, err := store.GetSource(ctx, ws.ID, agent.ID, text.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("deleted source: err = %v", err)
	}
}

func TestSourceErrorsAndScoping(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agentA := newAgent(t, store, wsA.ID, "support", t0)
	otherA := newAgent(t, store, wsA.ID, "sales", t0)
	agentB := newAgent(t, store, wsB.ID, "support", t0)
	src := newSource(wsA.ID, agentA.ID, t0)
	if err := store.CreateSource(ctx, &src); err != nil {
		t.Fatal(err)
	}

	crossTenant := newSource(wsB.ID, agentA.ID, t0) // B's source on A's agent
	unknownAgent := newSource(wsA.ID, domain.NewID(domain.PrefixAgent), t0)
	tests := []struct {
		name string
		run  func() error
	}{
		{"create on another workspace's agent", func() error { return store.CreateSource(ctx, &crossTenant) }},
		{"create on unknown agent", func() error { return store.CreateSource(ctx, &unknownAgent) }},
		{"get from B", func() error { _, err := store.GetSource(ctx, wsB.ID, agentA.ID, src.ID); return err }},
		{"get via B's agent", func() error { _, err := store.GetSource(ctx, wsB.ID, agentB.ID, src.ID); return err }},
		{"get via A's other agent", func() error { _, err := store.GetSource(ctx, wsA.ID, otherA.ID, src.ID); return err }},
		{"delete from B", func() error { _, err := store.DeleteSource(ctx, wsB.ID, agentA.ID, src.ID); return err }},
		{"delete via A's other agent", func() error { _, err := store.DeleteSource(ctx, wsA.ID, otherA.ID, src.ID); return err }},
		{"delete unknown", func() error {
			_, err := store.DeleteSource(ctx, wsA.ID, agentA.ID, domain.NewID(domain.PrefixSource))
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
	if _, err := store.GetSource(ctx, wsA.ID, agentA.ID, src.ID); err != nil {
		t.Fatalf("A's source after B's attempts: %v", err)
	}
	page, err := store.ListSources(ctx, wsB.ID, agentA.ID, domain.PageRequest{})
	if err != nil || len(page.Items) != 0 || page.HasMore {
		t.Fatalf("ListSources(B, A's agent) = %+v, %v; want empty", page, err)
	}
}

func TestListSourcesPaginatesNewestFirst(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agent := newAgent(t, store, ws.ID, "support", t0)
	other := newAgent(t, store, ws.ID, "other", t0)
	var all []domain.Source
	for i := range 9 {
		s := newSource(ws.ID, agent.ID, t0.Add(time.Duration(i/3)*time.Second)) // ties in threes
		s.Name = fmt.Sprintf("source %d", i)
		if err := store.CreateSource(ctx, &s); err != nil {
			t.Fatal(err)
		}
		all = append(all, s)
		noise := newSource(ws.ID, other.ID, t0.Add(time.Duration(i)*time.Second))
		if err := store.CreateSource(ctx, &noise); err != nil {
			t.Fatal(err)
		}
	}
	want := sortedIDs(all, func(s domain.Source) string { return s.ID }, func(a, b domain.Source) bool {
		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}
		return a.ID > b.ID
	})

	var got []string
	req := domain.PageRequest{Limit: 4}
	for range 5 {
		page, err := store.ListSources(ctx, ws.ID, agent.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Items {
			got = append(got, s.ID)
		}
		if !page.HasMore {
			break
		}
		req.After = page.Next
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("sources in pages = %v, want %v", got, want)
	}
}
