package conversation

import (
	"context"
	"errors"
	"strings"
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
	late.ContactName, late.ContactEmail = "Ada Lovelace", "ada@example.com"
	ada := domain.NewID(domain.PrefixUser)
	late.AssigneeID = ada
	w.store.Put(late)
	// The early conversation's answer was the fallback.
	answer := domain.Message{ID: domain.NewID(domain.PrefixMessage), WorkspaceID: w.ws.ID, ConversationID: early.ID,
		Role: domain.RoleAssistant, Content: "Sorry, I could not find that in the handbook.", CreatedAt: testNow,
		FallbackReason: domain.FallbackNoKnowledge}
	if _, _, err := w.store.AppendMessage(context.Background(), answer, ""); err != nil {
		t.Fatal(err)
	}
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
		{"with a fallback", ListFilter{Fallback: domain.FallbackFilterSome}, []string{early.ID}, nil},
		{"without a fallback", ListFilter{Fallback: domain.FallbackFilterNone}, []string{late.ID}, nil},
		// The memory store keeps no feedback: ratings are checked on
		// PostgreSQL (adapters/postgres); here they must pass validation.
		{"rated down", ListFilter{Rating: domain.RatingDown}, nil, nil},
		{"rated up", ListFilter{Rating: domain.RatingUp}, nil, nil},
		{"query on the contact's name", ListFilter{Query: "lovelace"}, []string{late.ID}, nil},
		{"query on the contact's email", ListFilter{Query: "ADA@example"}, []string{late.ID}, nil},
		{"query on a message, trimmed", ListFilter{Query: "  the handbook "}, []string{early.ID}, nil},
		{"query with agent and status", ListFilter{Query: "handbook", Status: domain.StatusHuman}, nil, nil},
		{"unknown fallback", ListFilter{Fallback: "maybe"}, nil, domain.ErrInvalidInput},
		{"unknown rating", ListFilter{Rating: "meh"}, nil, domain.ErrInvalidInput},
		{"assigned to a member", ListFilter{Assignee: ada}, []string{late.ID}, nil},
		{"assigned to nobody", ListFilter{Assignee: AssigneeNone}, []string{early.ID}, nil},
		{"assigned to another user", ListFilter{Assignee: domain.NewID(domain.PrefixUser)}, nil, nil},
		{"assignee not a user id", ListFilter{Assignee: "ada"}, nil, domain.ErrInvalidInput},
		{"assignee of another kind of id", ListFilter{Assignee: domain.NewID(domain.PrefixWorkspace)}, nil, domain.ErrInvalidInput},
		{"query too short", ListFilter{Query: " ab "}, nil, domain.ErrInvalidInput},
		{"query too long", ListFilter{Query: strings.Repeat("é", domain.MaxConversationQueryLength+1)}, nil, domain.ErrInvalidInput},
		{"query with a NUL", ListFilter{Query: "abc\x00"}, nil, domain.ErrInvalidInput},
		{"query not UTF-8", ListFilter{Query: "abc\xff"}, nil, domain.ErrInvalidInput},
	}
	// The bad values name their field, for the forms that show them.
	wantField := map[string]string{"unknown status": "status", "unknown fallback": "fallback", "unknown rating": "rating", "assignee not a user id": "assignee", "assignee of another kind of id": "assignee",
		"query too short": "q", "query too long": "q", "query with a NUL": "q", "query not UTF-8": "q",
		"a range ending where it starts": "activeBefore"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := svc.List(context.Background(), w.ws.ID, tt.filter, domain.PageRequest{Limit: 10})
			if !errors.Is(err, tt.wantErr) || (err == nil && !equal(ids(got), tt.want)) {
				t.Fatalf("List = %v, %v; want %v, %v", ids(got), err, tt.want, tt.wantErr)
			}
			if field := wantField[tt.name]; field != "" {
				var verr *domain.ValidationError
				if !errors.As(err, &verr) || verr.Fields[field] == "" {
					t.Errorf("err = %v, want an error on the field %q", err, field)
				}
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
