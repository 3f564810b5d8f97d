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

func TestAgentCRUD(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)

	if _, err := store.FirstAgent(ctx, ws.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("FirstAgent of an empty workspace: err = %v, want ErrNotFound", err)
	}
	support := newAgent(t, store, ws.ID, "support", t0)
	sales := newAgent(t, store, ws.ID, "sales", t0.Add(time.Second))
	if support.Seq == 0 || sales.Seq <= support.Seq {
		t.Fatalf("seqs = %d, %d; want increasing and set", support.Seq, sales.Seq)
	}
	if !support.CreatedAt.Equal(micro(t0)) || support.CreatedAt != micro(t0) {
		t.Fatalf("CreateAgent left CreatedAt = %v, want the stored %v", support.CreatedAt, micro(t0))
	}

	bySlug, err := store.GetAgentBySlug(ctx, ws.ID, "support")
	if err != nil {
		t.Fatalf("GetAgentBySlug: %v", err)
	}
	if !reflect.DeepEqual(bySlug, support) {
		t.Fatalf("GetAgentBySlug = %+v, want %+v", bySlug, support)
	}
	byID, err := store.GetAgentByID(ctx, ws.ID, sales.ID)
	if err != nil || !reflect.DeepEqual(byID, sales) {
		t.Fatalf("GetAgentByID = %+v, %v; want %+v", byID, err, sales)
	}
	first, err := store.FirstAgent(ctx, ws.ID)
	if err != nil || first.ID != support.ID {
		t.Fatalf("FirstAgent = %s, %v; want %s", first.ID, err, support.ID)
	}

	// Update writes zero values too (unpublish, clear the questions).
	updated := support
	updated.Name = "Support desk"
	updated.Slug = "ignored" // the slug is immutable
	updated.Config = domain.AgentConfig{SystemPrompt: "Be brief.", FallbackMessage: "Ask a human."}
	updated.UpdatedAt = t0.Add(time.Hour)
	if err := store.UpdateAgent(ctx, &updated); err != nil {
		t.Fatalf("UpdateAgent: %v", err)
	}
	got, err := store.GetAgentByID(ctx, ws.ID, support.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := updated
	want.Slug = "support"
	want.UpdatedAt = micro(updated.UpdatedAt)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("after UpdateAgent = %+v, want %+v", got, want)
	}

	if err := store.DeleteAgent(ctx, ws.ID, support.ID); err != nil {
		t.Fatalf("DeleteAgent: %v", err)
	}
	if _, err := store.GetAgentByID(ctx, ws.ID, support.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("deleted agent: err = %v", err)
	}
	if first, err := store.FirstAgent(ctx, ws.ID); err != nil || first.ID != sales.ID {
		t.Fatalf("FirstAgent after delete = %s, %v; want %s", first.ID, err, sales.ID)
	}
	// The slug is free again.
	newAgent(t, store, ws.ID, "support", t0.Add(2*time.Hour))
}

func TestAgentErrorsAndScoping(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	wsA, _, _ := newWorkspace(t, store, domain.PlanStandard)
	wsB, _, _ := newWorkspace(t, store, domain.PlanStandard)
	agentA := newAgent(t, store, wsA.ID, "support", t0)
	// The same slug in another workspace is fine.
	agentB := newAgent(t, store, wsB.ID, "support", t0)

	dup := agentA
	dup.ID = domain.NewID(domain.PrefixAgent)
	orphan := agentA
	orphan.ID, orphan.WorkspaceID = domain.NewID(domain.PrefixAgent), domain.NewID(domain.PrefixWorkspace)
	hijack := agentA
	hijack.WorkspaceID = wsB.ID
	hijack.Name = "hijacked"

	tests := []struct {
		name string
		run  func() error
		want error
	}{
		{"duplicate slug", func() error { return store.CreateAgent(ctx, &dup) }, domain.ErrConflict},
		{"unknown workspace", func() error { return store.CreateAgent(ctx, &orphan) }, domain.ErrNotFound},
		{"get unknown slug", func() error { _, err := store.GetAgentBySlug(ctx, wsA.ID, "nope"); return err }, domain.ErrNotFound},
		{"get A's agent by id from B", func() error { _, err := store.GetAgentByID(ctx, wsB.ID, agentA.ID); return err }, domain.ErrNotFound},
		{"update A's agent from B", func() error { return store.UpdateAgent(ctx, &hijack) }, domain.ErrNotFound},
		{"delete A's agent from B", func() error { return store.DeleteAgent(ctx, wsB.ID, agentA.ID) }, domain.ErrNotFound},
		{"delete unknown", func() error { return store.DeleteAgent(ctx, wsA.ID, domain.NewID(domain.PrefixAgent)) }, domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.run(); !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want %v", err, tt.want)
			}
		})
	}

	var conflict *domain.ConflictError
	if err := store.CreateAgent(ctx, &dup); !errors.As(err, &conflict) || conflict.Message != `an agent with slug "support" already exists` {
		t.Fatalf("duplicate slug error = %v", err)
	}
	var nf *domain.NotFoundError
	if _, err := store.GetAgentBySlug(ctx, wsA.ID, "nope"); !errors.As(err, &nf) || nf.What != "agent" {
		t.Fatalf("unknown slug error = %v, want a NotFoundError naming the agent", err)
	}

	got, err := store.GetAgentByID(ctx, wsA.ID, agentA.ID)
	if err != nil || got.Name != agentA.Name {
		t.Fatalf("A's agent after B's attempts = %+v, %v", got, err)
	}
	if got, err := store.GetAgentBySlug(ctx, wsB.ID, "support"); err != nil || got.ID != agentB.ID {
		t.Fatalf("B's slug resolves to %s, %v; want %s", got.ID, err, agentB.ID)
	}
	page, err := store.ListAgents(ctx, wsB.ID, domain.PageRequest{})
	if err != nil || len(page.Items) != 1 || page.Items[0].ID != agentB.ID {
		t.Fatalf("ListAgents(B) = %+v, %v", page, err)
	}
}

func TestListAgentsPaginates(t *testing.T) {
	t.Parallel()
	store := pgtest.NewStore(t)
	ctx := ctxT(t)
	ws, _, _ := newWorkspace(t, store, domain.PlanStandard)
	var want []string
	for i := range 7 {
		// Pairs share a creation time: the id breaks the tie.
		a := newAgent(t, store, ws.ID, fmt.Sprintf("agent-%d", i), t0.Add(time.Duration(i/2)*time.Second))
		want = append(want, a.ID)
	}
	// Expected order: (created_at, id) ascending.
	for i := 0; i+1 < len(want); i += 2 {
		if want[i] > want[i+1] {
			want[i], want[i+1] = want[i+1], want[i]
		}
	}

	var got []string
	req := domain.PageRequest{Limit: 3}
	for pages := 0; ; pages++ {
		if pages > 5 {
			t.Fatal("pagination does not end")
		}
		page, err := store.ListAgents(ctx, ws.ID, req)
		if err != nil {
			t.Fatalf("ListAgents: %v", err)
		}
		for _, a := range page.Items {
			got = append(got, a.ID)
		}
		if !page.HasMore {
			if page.Next != nil {
				t.Fatal("Next set on the last page")
			}
			break
		}
		if len(page.Items) != 3 || *page.Next != (domain.Position{Time: page.Items[2].CreatedAt, ID: page.Items[2].ID}) {
			t.Fatalf("page = %d items, next %+v", len(page.Items), page.Next)
		}
		req.After = page.Next
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("agents in pages = %v, want %v", got, want)
	}
	first, err := store.FirstAgent(ctx, ws.ID)
	if err != nil || first.ID != want[0] {
		t.Fatalf("FirstAgent = %s, %v; want the first listed %s", first.ID, err, want[0])
	}
}
