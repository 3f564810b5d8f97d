package conversation

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/conciergehq/concierge/core/domain"
	"github.com/conciergehq/concierge/ports"
)

// slugLookups is the agent store as List uses it: by slug only (the rest
// of the port panics if called).
type slugLookups struct {
	ports.AgentStore
	by agents
}

func (s slugLookups) GetAgentBySlug(ctx context.Context, workspaceID, slug string) (domain.Agent, error) {
	return s.by.GetAgentBySlug(ctx, workspaceID, slug)
}

// List passes its filter to the store by agent id, and refuses what it
// cannot mean: an unknown status, an unknown agent, a range that ends
// before it starts.
func TestListFilters(t *testing.T) {
	w := newWorld()
	svc := NewService(slugLookups{by: w.agentsByID}, w.store, w.lifecycle)
	early := w.session(w.agent, domain.StatusAI, "")
	late := domain.NewConversation(w.ws.ID, &w.draft, "", testNow.Add(2*time.Hour))
	late.Status = domain.StatusHuman
	w.store.Put(late)
	ids := func(p domain.Page[domain.Conversation]) []string {
		var out []string
		for _, c := range p.Items {
			out = append(out, c.ID)
		}
		return out
	}
	tests := []struct {
		name    string
		filter  ListFilter
		want    []string
		wantErr error
	}{
		{"all", ListFilter{}, []string{late.ID, early.ID}, nil},
		{"by agent", ListFilter{AgentSlug: "draft"}, []string{late.ID}, nil},
		{"by status", ListFilter{Status: domain.StatusAI}, []string{early.ID}, nil},
		{"active from", ListFilter{ActiveFrom: testNow.Add(time.Hour)}, []string{late.ID}, nil},
		{"active before", ListFilter{ActiveBefore: testNow.Add(time.Hour)}, []string{early.ID}, nil},
		{"a range holding both", ListFilter{ActiveFrom: testNow, ActiveBefore: testNow.Add(3 * time.Hour)}, []string{late.ID, early.ID}, nil},
		{"a range ending where it starts", ListFilter{ActiveFrom: testNow, ActiveBefore: testNow}, nil, domain.ErrInvalidInput},
		{"a range ending before it starts", ListFilter{ActiveFrom: testNow.Add(time.Hour), ActiveBefore: testNow}, nil, domain.ErrInvalidInput},
		{"unknown status", ListFilter{Status: "OPEN"}, nil, domain.ErrInvalidInput},
		{"unknown agent", ListFilter{AgentSlug: "nobody"}, nil, domain.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := svc.List(context.Background(), w.ws.ID, tt.filter, domain.PageRequest{Limit: 10})
			if !errors.Is(err, tt.wantErr) || (err == nil && !equal(ids(got), tt.want)) {
				t.Fatalf("List = %v, %v; want %v, %v", ids(got), err, tt.want, tt.wantErr)
			}
		})
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
