package console_test

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/conciergehq/concierge/core/domain"
)

// Knowledge: fakeAgents' sources, kept as agent.Service keeps them:
// validated by domain.Source.Validate, PENDING when added, scoped to the
// workspace and agent, unknown or foreign ids domain.ErrNotFound.

type fakeSources struct {
	byID  map[string]domain.Source
	added []domain.Source // every source added, in order, with its file
	clock int64
}

func (f *fakeAgents) src() *fakeSources {
	if f.sources == nil {
		f.sources = &fakeSources{byID: map[string]domain.Source{}}
	}
	return f.sources
}

func (f *fakeAgents) AddSource(ctx context.Context, ws, slug string, s domain.Source) (domain.Source, error) {
	a, err := f.Get(ctx, ws, slug)
	if err != nil {
		return domain.Source{}, err
	}
	if err := s.Validate(); err != nil {
		return domain.Source{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	st := f.src()
	st.clock++
	s.ID, s.WorkspaceID, s.AgentID, s.Status = domain.NewID(domain.PrefixSource), ws, a.ID, domain.SourcePending
	s.CreatedAt = time.Unix(1_800_000_000+st.clock, 0)
	s.UpdatedAt = s.CreatedAt
	st.added = append(st.added, s)
	s.File = nil
	st.byID[s.ID] = s
	return s, nil
}

// seedSource stores a source of agent slug in ws_a as it is.
func (h *harness) seedSource(t interface{ Fatal(...any) }, slug string, s domain.Source) domain.Source {
	a, err := h.agents.Get(context.Background(), "ws_a", slug)
	if err != nil {
		t.Fatal(err)
	}
	h.agents.mu.Lock()
	defer h.agents.mu.Unlock()
	st := h.agents.src()
	st.clock++
	if s.ID == "" {
		s.ID = domain.NewID(domain.PrefixSource)
	}
	s.WorkspaceID, s.AgentID = "ws_a", a.ID
	s.CreatedAt = time.Unix(1_800_000_000+st.clock, 0)
	s.UpdatedAt = s.CreatedAt
	st.byID[s.ID] = s
	return s
}

func (f *fakeAgents) ListSources(ctx context.Context, ws, slug string, page domain.PageRequest) (domain.Page[domain.Source], error) {
	a, err := f.Get(ctx, ws, slug)
	if err != nil {
		return domain.Page[domain.Source]{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []domain.Source
	for _, s := range f.src().byID {
		if s.WorkspaceID == ws && s.AgentID == a.ID {
			out = append(out, s)
		}
	}
	// Newest first, by (created, id), and after the position asked for,
	// as the store pages.
	newer := func(a, b domain.Source) bool {
		return a.CreatedAt.After(b.CreatedAt) || a.CreatedAt.Equal(b.CreatedAt) && a.ID > b.ID
	}
	sort.Slice(out, func(i, j int) bool { return newer(out[i], out[j]) })
	if page.After != nil {
		at := domain.Source{CreatedAt: page.After.Time, ID: page.After.ID}
		out = slices.DeleteFunc(out, func(s domain.Source) bool { return !newer(at, s) })
	}
	p := domain.Page[domain.Source]{Items: out}
	if page.Limit > 0 && len(out) > page.Limit {
		p.Items, p.HasMore = out[:page.Limit], true
		p.Next = &domain.Position{Time: p.Items[page.Limit-1].CreatedAt, ID: p.Items[page.Limit-1].ID}
	}
	return p, nil
}

func (f *fakeAgents) GetSource(ctx context.Context, ws, slug, id string) (domain.Source, error) {
	a, err := f.Get(ctx, ws, slug)
	if err != nil {
		return domain.Source{}, err
	}
	if !domain.ValidID(domain.PrefixSource, id) {
		return domain.Source{}, domain.NotFound("source")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.src().byID[id]
	if !ok || s.WorkspaceID != ws || s.AgentID != a.ID {
		return domain.Source{}, domain.NotFound("source")
	}
	return s, nil
}

func (f *fakeAgents) Reindex(ctx context.Context, ws, slug, id string) (domain.Source, error) {
	s, err := f.GetSource(ctx, ws, slug, id)
	if err != nil {
		return domain.Source{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	s.Status, s.StatusReason, s.Generation = domain.SourcePending, "", s.Generation+1
	f.src().byID[id] = s
	return s, nil
}

func (f *fakeAgents) DeleteSource(ctx context.Context, ws, slug, id string) error {
	if _, err := f.GetSource(ctx, ws, slug, id); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.src().byID, id)
	return nil
}
